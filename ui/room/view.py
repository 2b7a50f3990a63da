"""The workshop room in Streamlit: a participant follows, votes and measures; the
presenter drives and watches the room's answers arrive.

A participant's room identity is two URL parameters, ``room`` (the join code) and
``member`` (their own random token, never the presenter's secret), kept in the URL
on every page they visit, so a reload (a new session) finds them again and lands
on the room's current step. Streamlit's ``st.context.cookies`` can be read but not
set, so a cookie would need JavaScript; a URL parameter needs none. The presenter's
secret lives only in the presenter's ``st.session_state``.

Following is a poll: a fragment re-run every second reads the room (one small read
from the store) and, when the presenter has moved to another step, opens that
step's page, section and settings with the participant's own seed; when only the
phase changed (a reveal, a second vote) it re-runs the page.

``lesson_view`` calls :func:`bar` at the top of a lesson banner and
:func:`question` for a step's question; nothing else in the app knows the room.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import streamlit as st

from ..lesson_state import lessons, step_page_path
from ..lessons import Lesson, Step
from ..markdown import md_escape
from ..section import optional_part
from .store import ROUND_OF, Member, Room, RoomError, RoomStore, normalize_code, open_store

ROOM, MEMBER, JOIN = "room", "member", "join"
_ME = "room:me"  # (code, token, seed, name) of a participant
_SEEN = "room:seen"  # the (step, phase) this participant's page was last moved for
_UNMEASURED = "room:unmeasured"  # the (code, step) whose measure needs a missing part
HOST = "room:host"  # (code, secret, lesson id) of a presenter
POLL_S = 1.0

_store: RoomStore | None = None
UNREACHABLE = (
    "The workshop room cannot be reached just now (its store is not answering); "
    "the page works on its own meanwhile."
)


def _store_errors() -> tuple[type[BaseException], ...]:
    """What a store raises when it cannot answer (a locked or missing file, a
    network error, Redis down)."""
    import sqlite3

    errors: list[type[BaseException]] = [sqlite3.Error, OSError]
    try:
        from redis.exceptions import RedisError
    except ImportError:
        pass
    else:
        errors.append(RedisError)
    return tuple(errors)


STORE_ERRORS = _store_errors()


@contextmanager
def guarded() -> Iterator[None]:
    """Room refusals and store outages as a message, never a traceback. (Streamlit's
    rerun and stop are BaseExceptions: they pass through.)"""
    try:
        yield
    except RoomError as exc:
        st.warning(str(exc), icon=":material/groups:")
    except STORE_ERRORS:
        st.warning(UNREACHABLE, icon=":material/cloud_off:")


def store() -> RoomStore:
    """This process's store (Redis if ``REDIS_URL`` is set, else the SQLite file),
    opened and written to once on first use. One that cannot be written raises
    ``StoreUnavailable`` (an outage to :func:`guarded`), logged once by
    ``open_store``; the next call tries again."""
    global _store
    if _store is None:
        _store = open_store()
    return _store


def _probe_early() -> None:
    try:
        open_store()  # thrown away: store() opens its own when a page needs it
    except STORE_ERRORS:
        pass  # open_store logged why


# The store is opened and written to once, off the page's thread, as soon as a page
# that can show a room first runs in this process: one that cannot be written is in
# the server log before anyone opens a room, and a slow Redis delays no page.
threading.Thread(target=_probe_early, name="room-store-probe", daemon=True).start()


# ------------------------------------------------------------------ participant
def me() -> tuple[str, Member] | None:
    """This session's room membership: from the session, else from the URL (a
    reload or a shared link), checked against the store."""
    held = st.session_state.get(_ME)
    if held is not None:
        return held
    code = normalize_code(st.query_params.get(ROOM))
    token = st.query_params.get(MEMBER)
    if code is None or not token:
        return None
    try:
        member = store().member(code, token)
    except STORE_ERRORS:  # a store outage must not break the page
        member = None
    if member is None:
        return None
    st.session_state[_ME] = (code, member)
    return code, member


def leave() -> None:
    """Forget this session's room (it has ended)."""
    st.session_state.pop(_ME, None)
    st.session_state.pop(_SEEN, None)
    for k in (ROOM, MEMBER):
        if k in st.query_params:
            del st.query_params[k]


def join(code: str, name: str | None) -> None:
    """Join room ``code`` and open its current step (a rerun on another page)."""
    member = store().join(code, name)
    st.session_state[_ME] = (code, member)
    room = store().room(code)
    if room is not None:
        open_room_step(room, code, member)


def _lesson(lesson_id: str) -> Lesson | None:
    return lessons()[0].get(lesson_id)


def open_room_step(room: Room, code: str, member: Member) -> None:
    """Open the room's step as ``lesson_view.go_to`` opens a step (its page, section
    and settings, a fresh view), with this participant's seed and room in the URL."""
    from ..specs.pages import spec_of

    lesson = _lesson(room.lesson)
    if lesson is None or not 1 <= room.step <= len(lesson.steps):
        st.error("The room's lesson is not on this server.")
        return
    st.session_state[_SEEN] = (room.step, room.phase)
    step = lesson.steps[room.step - 1]
    prefix = f"{step.page}:"
    for key in [k for k in st.session_state if isinstance(k, str) and k.startswith(prefix)]:
        del st.session_state[key]
    st.session_state.pop(f"_params_seen:{step.page}", None)
    st.session_state.pop("shared:seed", None)  # read again from the URL: theirs
    query = step.query(lesson.id, room.step)
    query.pop("section", None)
    query.update({"seed": str(member.seed), ROOM: code, MEMBER: member.token})
    st.session_state["section"] = step.section or spec_of(step.page).sections[0]
    st.switch_page(step_page_path(step), query_params=query)


def _misplaced(room: Room, page: str) -> bool:
    """The URL names the room's step but this is another page: a rerun request
    that arrived while ``st.switch_page`` was under way (a poll, a click) can win
    the page it runs, so the move is made again."""
    if page == "workshop":
        return False
    here = (st.query_params.get("lesson"), st.query_params.get("step"))
    lesson = _lesson(room.lesson)
    if here != (room.lesson, str(room.step)) or lesson is None:
        return False
    return 1 <= room.step <= len(lesson.steps) and lesson.steps[room.step - 1].page != page


@st.fragment(run_every=POLL_S)
def _follow(code: str, member: Member, page: str) -> None:
    try:
        room = store().room(code)
    except STORE_ERRORS:
        st.caption("The room cannot be reached just now; retrying.")
        return
    if room is None or room.closed:
        leave()  # the next run of the page is the participant's own again
        st.info("This room has ended. Thank you!", icon=":material/door_open:")
        return
    now = (room.step, room.phase)
    seen = st.session_state.get(_SEEN)
    if seen == now:
        if _misplaced(room, page):
            open_room_step(room, code, member)
        _nudge(room, code, member)
        return
    if seen is not None and seen[0] == room.step:
        st.session_state[_SEEN] = now
        st.rerun(scope="app")  # a reveal or a second vote: redraw the question
    open_room_step(room, code, member)


def _nudge(room: Room, code: str, member: Member) -> None:
    """After a reveal, a page on the room's question step whose measurement has not
    reached the room (its run was cut short) runs again, at most every 3 s."""
    if room.phase == "predict" or (
        st.query_params.get("lesson"),
        st.query_params.get("step"),
    ) != (room.lesson, str(room.step)):
        return
    lesson = _lesson(room.lesson)
    if lesson is None or not 1 <= room.step <= len(lesson.steps):
        return
    if lesson.steps[room.step - 1].predict is None:
        return
    if st.session_state.get(_UNMEASURED) == (code, room.step):
        return  # it cannot be measured here (ui.section.optional_part said why)
    if member.token in store().measures(code, room.step):
        return
    last = st.session_state.get("room:nudged", 0.0)
    if time.monotonic() - last > 3.0:
        st.session_state["room:nudged"] = time.monotonic()
        st.rerun(scope="app")


def bar(page: str) -> None:
    """A participant's room strip (nothing for anyone else): who they are, the
    button back to the room's step, and the poll that follows the presenter."""
    with guarded():
        _bar(page)


def _bar(page: str) -> None:
    found = me()
    if found is None:
        return
    code, member = found
    for k, v in ((ROOM, code), (MEMBER, member.token)):
        if st.query_params.get(k) != v:
            st.query_params[k] = v  # kept on every page, so a reload finds the room
    if _SEEN not in st.session_state:
        # A reload or a late join: if this is not the room's step, go there.
        room = store().room(code)
        here = (st.query_params.get("lesson"), st.query_params.get("step"))
        if room is not None and not room.closed and here != (room.lesson, str(room.step)):
            open_room_step(room, code, member)
        elif room is not None:
            st.session_state[_SEEN] = (room.step, room.phase)
    with st.container(border=True, key="room-bar"):
        c1, c2 = st.columns([3, 2], vertical_alignment="center")
        who = f" as {md_escape(member.name, 40)}" if member.name else ""
        c1.markdown(f"**Room {code}**{who} · your seed **{member.seed}**")
        if c2.button("Back to the room", key="room:back", icon=":material/groups:"):
            room = store().room(code)
            if room is not None and not room.closed:
                open_room_step(room, code, member)
        _follow(code, member, page)


def question(
    page: str, lesson: Lesson, index: int, step: Step, measure: Callable[[int], Any]
) -> bool | None:
    """A question step, the room's way: vote, wait for the reveal, measure with
    one's own seed (sent to the room), then perhaps vote again. ``None`` when this
    session is not in a room at this step (the page then asks on its own).
    ``measure(seed)`` returns the lesson's ``Measured`` for the step with ``seed``.
    True once the page may show the step's section."""
    try:
        return _question(lesson, index, step, measure)
    except STORE_ERRORS:  # a store outage: the page asks on its own
        st.warning(UNREACHABLE, icon=":material/cloud_off:")
        return None


def _question(lesson: Lesson, index: int, step: Step, measure: Callable[[int], Any]) -> bool | None:
    found = me()
    if found is None or step.predict is None:
        return None
    code, member = found
    room = store().room(code)
    if room is None or room.closed or room.lesson != lesson.id or room.step != index:
        return None
    q = step.predict
    st.markdown(f"**Predict first:** {q.question}")
    first = store().votes(code, index, 1).get(member.token)
    if room.phase == "predict":
        if first is None:
            _vote_form(code, member, index, 1, q.choices, "Send my prediction")
        else:
            st.info(
                f"You predicted {md_escape(first)}. Waiting for the presenter to reveal.",
                icon=":material/hourglass_top:",
            )
        return False
    said = f"You predicted {md_escape(first)}. " if first else ""
    # A step whose measurement needs a part not installed here: the one line instead
    # of the measurement and of the section (which would need it too); the room goes
    # on (a second vote still counts) and the poll stops waiting for this measure.
    with optional_part("Measuring this step") as part:
        measured = measure(member.seed)
    if part.missing:
        st.session_state[_UNMEASURED] = (code, index)
        if said:
            st.caption(said)
    else:
        try:
            store().submit_measure(code, member.token, index, measured.answer)
        except RoomError:
            pass  # the room moved on meanwhile; the poll follows it
        st.success(
            f"{said}Measured with your seed {member.seed}: **{md_escape(measured.answer)}**. "
            + measured.sentence,
            icon=":material/science:",
        )
    if room.phase == "second":
        second = store().votes(code, index, 2).get(member.token)
        if second is None:
            _vote_form(code, member, index, 2, q.choices, "Send my second vote")
        else:
            st.caption(f"Your second vote: {md_escape(second)}.")
    return not part.missing


def _vote_form(
    code: str, member: Member, index: int, round_: int, choices: tuple[str, ...], label: str
) -> None:
    key = f"room:vote:{code}:{index}:{round_}"
    choice = st.radio(
        "Your prediction" if round_ == 1 else "Your vote after the discussion",
        list(choices),
        index=None,
        key=key,
        horizontal=True,
    )
    if st.button(label, key=f"room:send:{round_}", type="primary", disabled=choice is None):
        try:
            store().vote(code, member.token, index, round_, choice)
        except RoomError as exc:
            st.warning(str(exc))
            return
        st.rerun()


# -------------------------------------------------------------------- presenter
def host() -> tuple[str, str, str] | None:
    """The room this session presents: (code, secret, lesson id), while it lives."""
    held = st.session_state.get(HOST)
    if held is None:
        return None
    try:
        gone = store().room(held[0]) is None
    except STORE_ERRORS:  # an outage is not an expiry: keep the room
        st.warning(UNREACHABLE, icon=":material/cloud_off:")
        return held
    if gone:
        st.session_state.pop(HOST, None)
        return None
    return held


def open_room(lesson_id: str, step: int, hide_names: bool) -> tuple[str, str, str]:
    room, secret = store().create(lesson_id, step=step, hide_names=hide_names)
    st.session_state[HOST] = (room.code, secret, lesson_id)
    return st.session_state[HOST]


def counts(values: dict[str, str], choices: tuple[str, ...]) -> list[tuple[str, int]]:
    """How many chose each choice, every choice listed (0 included), in order;
    an answer outside the choices is counted under its own name, last."""
    c = Counter(values.values())
    return [(ch, c.get(ch, 0)) for ch in choices] + sorted(
        (k, v) for k, v in c.items() if k not in choices
    )


def _bars(title: str, rows: list[tuple[str, int]], n: int) -> None:
    import altair as alt
    import pandas as pd

    from ..views import altair

    df = pd.DataFrame(rows, columns=["answer", "count"])
    answered = int(df["count"].sum())
    st.markdown(f"**{title}**: {answered} of {n} answered")
    chart = (
        alt.Chart(df)
        .mark_bar()
        .encode(
            y=alt.Y("answer:N", sort=None, title=None),
            x=alt.X("count:Q", title="participants", axis=alt.Axis(tickMinStep=1)),
            tooltip=["answer", "count"],
        )
    )
    altair(chart, height=44 * len(df) + 50)


@st.fragment(run_every=POLL_S)
def live(code: str, secret: str, lesson: Lesson, index: int) -> None:
    """The presenter's view of the room at step ``index``: who is in, the
    predictions as they arrive, reveal and second-vote buttons, the measured spread."""
    with guarded():
        _live(code, secret, lesson, index)


def _live(code: str, secret: str, lesson: Lesson, index: int) -> None:
    s = store()
    room = s.room(code)
    if room is None:
        st.warning("This room has expired.")
        return
    members = s.members(code)
    n = len(members)
    st.markdown(f"**{n}** joined" + (" · the room is closed" if room.closed else ""))
    if members and not room.hide_names:
        names = [md_escape(m.name, 40) for m in members if m.name]
        if names:
            st.caption("In the room: " + ", ".join(names))
    step = lesson.steps[index - 1]
    if step.predict is None or room.step != index:
        return
    q = step.predict
    first = s.votes(code, index, 1)
    _bars("Predictions", counts(first, q.choices), n)
    phase = room.phase
    b1, b2 = st.columns(2)
    if phase == "predict":
        if b1.button("Reveal", key="room:reveal", type="primary"):
            s.set_phase(code, secret, "revealed")
            st.rerun()
        return
    measured = s.measures(code, index)
    _bars("Measured on their laptops (one seed each)", counts(measured, q.choices), n)
    if phase == "revealed":
        if b2.button("Second vote", key="room:second", help="Peer instruction: vote again"):
            s.set_phase(code, secret, "second")
            st.rerun()
    else:
        second = s.votes(code, index, 2)
        _bars("Second vote", counts(second, q.choices), n)
        moved = sum(1 for t, v in second.items() if t in first and first[t] != v)
        st.caption(f"{moved} of {len(second)} changed their answer since the first vote.")


def handout_data(code: str, lesson: Lesson) -> dict[int, dict[str, list[tuple[str, int]]]]:
    """Per question step: the room's counts of each round and of measured answers."""
    s = store()
    out: dict[int, dict[str, list[tuple[str, int]]]] = {}
    for i, step in enumerate(lesson.steps, start=1):
        if step.predict is None:
            continue
        ch = step.predict.choices
        out[i] = {
            "predictions": counts(s.votes(code, i, ROUND_OF["predict"]), ch),
            "second": counts(s.votes(code, i, ROUND_OF["second"]), ch),
            "measured": counts(s.measures(code, i), ch),
        }
    return out


def handout_button(lesson: Lesson, code: str) -> None:
    """The presenter's download: the lesson and this room's answers as one HTML file."""
    from . import handout

    st.download_button(
        "Download the handout (HTML)",
        handout.build(lesson, code, handout_data(code, lesson), len(store().members(code))),
        file_name=f"{lesson.id}-{code}.html",
        mime="text/html",
        key="room:handout",
        icon=":material/download:",
    )
