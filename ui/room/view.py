"""The workshop room in Streamlit: a participant follows, votes and measures; the
presenter drives and watches the room's answers arrive.

Who is who:

* A participant's room identity is two URL parameters, ``room`` (the join code) and
  ``member`` (their own random token, never the presenter's key), kept in the URL on
  every page they visit, so a reload (a new session) finds them again and lands on
  the room's current step. A browser that joins again (the join link re-opened, a new
  tab, ``/workshop`` typed) gets the same participant back: :func:`browser_id` derives
  a stable id from the browser's own cookie (behind the workshop server, nginx's
  ``resviz_replica`` cookie: random, ``HttpOnly`` and ``Secure``; under ``make run``,
  Streamlit's XSRF cookie, whose token is the same in every tab of a browser and
  survives a server restart). Only an HMAC of it reaches the store, never the cookie.
  A private window is another browser: it joins as another participant (the presenter
  sees it and can remove it).
* The presenter holds the room's key (:attr:`RoomSession.host`). The session that
  opened the room (or took it back) shows the key on request only, as text, never
  while projecting (:func:`key_box`), and never in a link or a QR code; typed into
  :func:`reclaim_form` on any browser it makes that session the presenter again. A
  link that carries a key (``?present=CODE&key=KEY``) claims nothing
  (:func:`reclaim_from_url`). Streamlit cannot set a cookie from Python, so a reload
  of the presenter's own browser is recognised the other way round: the store keeps
  the hash of a credential derived from that browser's cookie (another HMAC, with
  another label than the participant's), and :func:`host` finds the room it
  presents. A participant's token, or any other browser's credential, is neither.

Following is a poll: a fragment re-run every second reads the room (one small read
from the store) and, when the presenter has moved to another step, opens that
step's page, section and settings with the participant's own seed; when only the
phase changed (a reveal, a second vote) it sends the measured answer if it is ready
and re-runs the page.

A step's measurement (the step's recipe with the participant's seed) starts in the
background as soon as the question is shown (``ui.jobs``), so it is usually ready
when the presenter reveals; a step that trains reports its progress to the room.

``lesson_view`` calls :func:`bar` at the top of a lesson banner, :func:`following`
to hide its Previous / Next, and :func:`question` for a step's question; nothing
else in the app knows the room. What a session keeps of the room, on either side, is
one :class:`RoomSession` in its session state (:func:`session`).
"""

from __future__ import annotations

import binascii
import hashlib
import hmac
import io
import logging
import math
import os
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Hashable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import streamlit as st

from .. import jobs
from ..lesson_state import explain, lessons, step_page_path
from ..lessons import Lesson, Step
from ..markdown import md_escape
from ..section import missing_extra, say_missing_extra
from ..st_internals import release_url_bindings
from .store import (
    CODE_LEN,
    MAX_MEMBERS,
    MAX_STEPS,
    ROUND_OF,
    Member,
    Room,
    RoomError,
    RoomStore,
    is_loopback,
    normalize_code,
    open_store,
    store_errors,
)

ROOM, MEMBER, JOIN = "room", "member", "join"
PRESENT, KEY = "present", "key"  # an old reclaim link's names: refused, removed
SESSION = "room:session"  # this session's RoomSession (session())
POLL_S = 1.0
# A poll this late (seconds since the one before, against POLL_S asked) means the server
# answered slowly: the page says so, and keeps following.
LATE_S = 5.0
# Each participant's answer is computed by the server that serves their page, with
# their own seed: nothing runs on a participant's device.
MEASURED_TITLE = "Measured by the server, one seed per participant"
MEASURE_LABEL = "room-measure"  # the jobs' label (its threads: resviz-room-measure)
_LOG = logging.getLogger(__name__)

_store: RoomStore | None = None
UNREACHABLE = (
    "The workshop room cannot be reached just now (its store is not answering); "
    "the page works on its own meanwhile."
)
NOT_SENT = "not sent: the room could not store it just now."


STORE_ERRORS = store_errors()

Vote = tuple[str, int, int]  # (code, step, round) of one vote


# ---------------------------------------------------------- the session's state
@dataclass
class RoomSession:
    """What this session keeps of the room, as a participant or as the presenter: one
    object in the session state, under :data:`SESSION` (:func:`session`). A widget's
    value stays under the widget's own key."""

    # A participant's side.
    me: tuple[str, Member] | None = None  # (code, Member) of the room this session follows
    seen: tuple[int, str] | None = None  # the (step, phase) the page was last moved for
    move: bool = False  # the poll saw the room move: the next full run opens its step
    removed: str | None = None  # the code of the room the presenter removed us from
    looked_up: tuple[str | None] | None = None  # (join code,): the browser was looked up
    job: tuple[str, int, Hashable] | None = None  # (code, step, key) of our measurement
    measured: dict[tuple[str, int], Any] = field(default_factory=dict)  # {(code, step): Answer}
    sent: set[tuple[str, int]] = field(default_factory=set)  # (code, step): the store has it
    unmeasured: tuple[str, int] | None = None  # the (code, step) that cannot be measured here
    reported: tuple[str, int, int, int] | None = None  # (code, step, done, total) written
    nudged: float = 0.0  # when (time.monotonic) the poll last re-ran a stalled page
    polled: float | None = None  # when (time.monotonic) the follow poll last ran
    acked: dict[Vote, str | None] = field(default_factory=dict)  # {vote: choice} the store has
    unsent: dict[Vote, str] = field(default_factory=dict)  # {vote: why} a send failed
    chosen: set[Vote] = field(default_factory=set)  # the votes picked in this session

    # A presenter's side.
    # (code, credential, lesson id) presented; (code, key) this session opened or
    # reclaimed the room with. Secrets: never in a repr (a log line printing the object).
    host: tuple[str, str, str] | None = field(default=None, repr=False)
    key: tuple[str, str] | None = field(default=None, repr=False)
    key_shown: str | None = None  # the code whose key is on screen (on request)
    sync: bool = False  # the presenter's page takes the room's lesson and step
    host_step: int | None = None  # the room's step as this presenter's page last set it
    host_looked: bool = False  # this session asked the store for its room once


def session() -> RoomSession:
    """This session's :class:`RoomSession`, made on first use."""
    held = st.session_state.get(SESSION)
    if not isinstance(held, RoomSession):
        held = RoomSession()
        st.session_state[SESSION] = held
    return held


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


class _OwnThreads(logging.Filter):
    """A measurement reads the section's cache from its own thread, where Streamlit
    warns that the thread has no script context (harmless: no spinner to draw)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.threadName or "").startswith(f"resviz-{MEASURE_LABEL}")


logging.getLogger("streamlit.runtime.scriptrunner_utils.script_run_context").addFilter(
    _OwnThreads()
)


# ------------------------------------------------------------- browser identity
XSRF_COOKIE = "_streamlit_xsrf"
REPLICA_COOKIE = "resviz_replica"  # set by the workshop server's nginx (serve.py)


def _xsrf_token(value: str) -> bytes | None:
    """The random token inside Streamlit's XSRF cookie. The cookie's text changes on
    every response (``2|mask|token XOR mask|time``: a new mask each time); the token
    under the mask is the browser's own, the same in every tab."""
    v = value.strip("\"'")
    parts = v.split("|")
    try:
        if len(parts) == 4 and parts[0] == "2":
            mask = binascii.a2b_hex(parts[1])
            masked = binascii.a2b_hex(parts[2])
            if len(mask) != 4 or len(masked) < 16:
                return None
            return bytes(b ^ mask[i % 4] for i, b in enumerate(masked))
        if re.fullmatch(r"[0-9a-f]{32,128}", v):  # the old, unmasked form
            return binascii.a2b_hex(v)
    except (binascii.Error, ValueError):
        return None
    return None


def browser_secret(cookies: Mapping[str, str]) -> bytes | None:
    """What identifies this browser among the request's cookies: the workshop server's
    replica cookie where nginx made it (``$request_id``: 32 random hex digits, and
    ``HttpOnly``, ``Secure``: no script of the page reads it, no network in between
    sees it), else the XSRF token (in every Streamlit app with XSRF protection, this
    app's setting: ``make run``); None where neither is present (the caller then
    treats the visitor as a new browser). Behind the workshop server, a copy of the
    XSRF cookie, which the page's own script reads, presents nothing."""
    sticky = cookies.get(REPLICA_COOKIE)
    if isinstance(sticky, str) and re.fullmatch(r"[0-9a-f]{32}", sticky):
        return b"replica:" + sticky.encode()
    raw = cookies.get(XSRF_COOKIE)
    token = _xsrf_token(raw) if isinstance(raw, str) else None
    if token:
        return b"xsrf:" + token
    return None


def _cookies() -> Mapping[str, str]:
    """The cookies of this session's first request (read-only: ``st.context``)."""
    try:
        return st.context.cookies
    except Exception:  # noqa: BLE001 - no context (a test, a thread): no cookie
        return {}


PLAIN_HTTP = (
    "This page reaches you over plain HTTP, so anyone on this network can read a room's "
    "cookies and tokens and present it. For a room of people you do not know, run "
    "`make workshop` (HTTPS) and open the Workshop page through it."
)


def plain_http_warning(url: str) -> str | None:
    """:data:`PLAIN_HTTP` where the page's own URL is plain HTTP to another machine
    (``make run`` or ``make workshop`` opened from the network); None over HTTPS or on
    this computer."""
    parts = urlsplit(url)
    if parts.scheme != "http" or is_loopback(parts.hostname or ""):
        return None
    return PLAIN_HTTP


def client_address() -> str | None:
    """The participant's address as the server sees it, for the join limit per address:
    behind the workshop server, the header its nginx writes (``RESVIZ_CLIENT_HEADER``,
    ``X-Real-IP``: nginx replaces whatever a client sent, and only nginx reaches the
    replicas); else the peer of this session's connection."""
    header = os.environ.get("RESVIZ_CLIENT_HEADER", "").strip()
    try:
        raw = st.context.headers.get(header) if header else st.context.ip_address
    except Exception:  # noqa: BLE001 - no context (a test, a thread): no address
        return None
    return raw.strip() if isinstance(raw, str) and raw.strip() else None


def browser_id(purpose: str) -> str | None:
    """A stable id of this browser for ``purpose`` (``member``: the participant it
    joined as; ``presenter``: the credential of a browser that presents): an HMAC of
    the browser's cookie token, so neither the cookie nor one purpose's id can be
    had from another's. None without a usable cookie."""
    secret = browser_secret(_cookies())
    if secret is None:
        return None
    return hmac.new(secret, f"resviz-room:{purpose}".encode(), hashlib.sha256).hexdigest()


# ------------------------------------------------------------------ participant
def me(lookup: bool = False) -> tuple[str, Member] | None:
    """This session's room membership: from the session, else from the URL (a
    reload or a shared link), checked against the store; with ``lookup`` (the
    Workshop page), else the participant this browser joined as (the join link's
    room, else the room it last joined)."""
    state = session()
    if state.me is not None:
        return state.me
    code = normalize_code(st.query_params.get(ROOM))
    token = st.query_params.get(MEMBER)
    try:
        if code is not None and token:
            member = store().member(code, token)
            if member is None and store().was_removed(code, token):
                state.removed = code
            if member is not None:
                state.me = (code, member)
                return code, member
        joining = normalize_code(st.query_params.get(JOIN))
        if not lookup or state.looked_up == (joining,):
            return None
        state.looked_up = (joining,)  # once per session and join link
        browser = browser_id("member")
        if browser is None:
            return None
        if joining is not None:
            member = store().member_of_browser(joining, browser)
            found = None if member is None else (joining, member)
        else:
            found = store().browser_room(browser)
    except STORE_ERRORS:  # a store outage must not break the page
        return None
    if found is not None:
        state.me = found
        state.seen = None  # a new session here: go to the room's step
    return found


def following() -> bool:
    """Whether this session follows a room (the lesson banner then leaves stepping
    to the presenter)."""
    return session().me is not None


def leave() -> None:
    """Forget this session's room (it has ended, or we were removed)."""
    state = session()
    state.me = None
    state.seen = None
    for k in (ROOM, MEMBER):
        if k in st.query_params:
            del st.query_params[k]


def join(code: str, name: str | None) -> None:
    """Join room ``code`` (this browser's participant again, if it joined before)
    and open its current step (a rerun on another page)."""
    member = store().join(code, name, browser_id("member"), client_address())
    state = session()
    state.removed = None
    state.me = (code, member)
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
    session().seen = (room.step, room.phase)
    step = lesson.steps[room.step - 1]
    for name in spec_of(step.page).names:
        st.session_state.pop(name, None)
    st.session_state.pop(f"_params_seen:{step.page}", None)
    st.session_state.pop("seed", None)  # read again from the URL: theirs
    query = step.query(lesson.id, room.step)
    query.pop("section", None)
    query.update({"seed": str(member.seed), ROOM: code, MEMBER: member.token})
    st.session_state["section"] = step.section or spec_of(step.page).sections[0]
    release_url_bindings()
    st.switch_page(step_page_path(step), query_params=query)


def _on_step(room: Room, page: str) -> bool:
    """Whether this page, at its URL, is the room's current step."""
    here = (st.query_params.get("lesson"), st.query_params.get("step"))
    lesson = _lesson(room.lesson)
    if here != (room.lesson, str(room.step)) or lesson is None:
        return False
    return 1 <= room.step <= len(lesson.steps) and lesson.steps[room.step - 1].page == page


def _misplaced(room: Room, page: str) -> bool:
    """The URL names the room's lesson but not where the room is: the room's step on
    another page, or another step. A rerun request that arrived while
    ``st.switch_page`` was under way (a poll, a click) is merged with the move by
    Streamlit, and the later request's page or query string wins (the new step's
    page with the last step's URL was seen in Chromium under load), so the move is
    made again. A participant who went elsewhere (no lesson in the URL) is left
    there: the strip's button brings them back."""
    if page == "workshop" or st.query_params.get("lesson") != room.lesson:
        return False
    return not _on_step(room, page)


def _removed(code: str) -> None:
    """We were removed from room ``code``: say so, forget the room, offer to join."""
    leave()
    session().removed = code


def late_note(last: float | None, now: float) -> str | None:
    """What the follow poll says when it ran ``now - last`` seconds after the one
    before (asked every :data:`POLL_S`): nothing on time, else that the server is busy."""
    gap = float("nan") if last is None else now - last
    if not (math.isfinite(gap) and gap >= LATE_S):  # NaN or inf: no figure to say
        return None
    return (
        f"The server is busy: this page last heard from the room {gap:.0f} s ago. "
        "It keeps following the room."
    )


@st.fragment(run_every=POLL_S)
def _follow(code: str, member: Member, page: str) -> None:
    state = session()
    now_s = time.monotonic()
    note = late_note(state.polled, now_s)
    state.polled = now_s
    # One placeholder on every run, filled or not: the fragment's elements keep their
    # places, so a note that comes and goes never shifts what the frontend holds.
    slot = st.empty()
    if note is not None:
        slot.caption(note)
    try:
        room, is_member = store().status(code, member.token)
    except STORE_ERRORS:
        st.caption("The room cannot be reached just now; retrying.")
        return
    if room is None or room.closed:
        leave()  # the next run of the page is the participant's own again
        st.info("This room has ended. Thank you!", icon=":material/door_open:")
        return
    if not is_member:
        if store().was_removed(code, member.token):
            _removed(code)
        else:
            leave()
        st.rerun(scope="app")
    now = (room.step, room.phase)
    if state.seen == now:
        if _misplaced(room, page):
            _move()
        _measure_tick(room, code, member, page)
        return
    if state.seen is not None and state.seen[0] == room.step:
        state.seen = now
        _send_ready_measure(room, code, member)  # a reveal: the answer goes at once
        st.rerun(scope="app")  # a reveal or a second vote: redraw the question
    _move()


def _move() -> None:
    """The room is elsewhere: open its step from a full run of the page (``_bar``),
    not from this poll. ``st.switch_page`` from a fragment's run left a participant's
    page blank under load in Chromium (Streamlit's frontend: 'Bad delta path index');
    from a full run it is the move a lesson's Next makes."""
    session().move = True
    st.rerun(scope="app")


def bar(page: str) -> None:
    """A participant's room strip (nothing for anyone else): who they are, where
    the room is, the button back to the room's step, and the poll that follows
    the presenter."""
    with guarded():
        _bar(page)


def _removed_notice() -> bool:
    code = session().removed
    if code is None:
        return False
    for k in (ROOM, MEMBER):
        if k in st.query_params:
            del st.query_params[k]
    with st.container(border=True, key="room-removed"):
        st.warning(
            f"The presenter removed you from room {code}. You can join it again.",
            icon=":material/person_remove:",
        )
        if st.button("Join again", key="room:rejoin", icon=":material/login:"):
            join(code, None)
    return True


def _bar(page: str) -> None:
    found = me()
    if found is None:
        _removed_notice()
        return
    code, member = found
    for k, v in ((ROOM, code), (MEMBER, member.token)):
        if st.query_params.get(k) != v:
            st.query_params[k] = v  # kept on every page, so a reload finds the room
    room = store().room(code)
    state = session()
    if state.move:  # the poll saw a move: as on a new session
        state.move = False
        state.seen = None
    if state.seen is None:
        # A reload, a late join or a new tab: if this is not the room's step, go there.
        if room is not None and not room.closed and not _on_step(room, page):
            open_room_step(room, code, member)
        elif room is not None:
            state.seen = (room.step, room.phase)
    with st.container(border=True, key="room-bar"):
        c1, c2 = st.columns([3, 2], vertical_alignment="center")
        who = f" as {md_escape(member.name, 40)}" if member.name else ""
        c1.markdown(f"**Room {code}**{who} · your seed **{member.seed}**")
        lesson = None if room is None else _lesson(room.lesson)
        if room is not None and lesson is not None and not _on_step(room, page):
            title = lesson.steps[room.step - 1].title if room.step <= len(lesson.steps) else ""
            c1.warning(
                f"You have left the room's step: the room is at step {room.step} of "
                f"{len(lesson.steps)}, {md_escape(title, 120)}. Your page follows the "
                "presenter again at the next step, or now with **Back to the room**.",
                icon=":material/call_split:",
            )
        if c2.button("Back to the room", key="room:back", icon=":material/groups:", type="primary"):
            room = store().room(code)
            if room is not None and not room.closed:
                open_room_step(room, code, member)
        _follow(code, member, page)


# ------------------------------------------------------------ measuring a step
@dataclass(frozen=True)
class Measurement:
    """A step's measurement with one seed: ``work(report, should_stop)`` returns the
    step's ``Answer`` (``report(frame, done, total)`` where it trains); ``key`` names
    the computation (recipe, settings, seed, device): equal keys share one run."""

    key: Hashable
    work: Callable[[jobs.Report, jobs.ShouldStop], Any]


@dataclass(frozen=True)
class _Missing:
    """The measurement needs an optional part that is not installed here."""


def _work(m: Measurement) -> jobs.Work:
    def run(report: jobs.Report, should_stop: jobs.ShouldStop) -> Any:
        try:
            return m.work(report, should_stop)
        except Exception as exc:
            if missing_extra(exc):
                return _Missing()
            raise

    return run


def _start(measure: Callable[[int], Measurement], code: str, index: int, seed: int) -> jobs.Job:
    """This participant's measurement, started (or joined) in the background."""
    m = measure(seed)
    session().job = (code, index, m.key)
    job = jobs.REGISTRY.get(m.key)
    if job is not None and job.live:
        jobs.REGISTRY.subscribe(m.key, jobs.session_id())
        return job
    if job is not None and job.state == "done":
        return job
    return jobs.REGISTRY.start(m.key, _work(m), 1, jobs.session_id(), label=MEASURE_LABEL)


def _job_of(code: str, index: int) -> jobs.Job | None:
    held = session().job
    if held is None or held[:2] != (code, index):
        return None
    return jobs.REGISTRY.get(held[2])


def _answer_of(code: str, index: int) -> Any:
    """This session's measured answer of the step (an ``Answer`` or ``_Missing``),
    once its run has finished; kept in the session, since the job table is bounded."""
    kept = session().measured
    if (code, index) in kept:
        return kept[(code, index)]
    job = _job_of(code, index)
    if job is None or job.state != "done":
        return None
    kept[(code, index)] = job.result
    return job.result


def _submit(code: str, member: Member, index: int, answer: Any) -> bool:
    """Send the measured answer; True once the store has it (acknowledged)."""
    sent = session().sent
    if (code, index) in sent:
        return True
    try:
        store().submit_measure(code, member.token, index, answer.answer)
    except RoomError:
        return False  # the room moved on meanwhile; the poll follows it
    except STORE_ERRORS:
        return False  # tried again at the next poll
    sent.add((code, index))
    return True


def _send_ready_measure(room: Room, code: str, member: Member) -> None:
    """At a reveal: a measurement that is ready goes to the room from the poll
    itself, before the page is redrawn."""
    if room.phase == "predict":
        return
    answer = _answer_of(code, room.step)
    if answer is not None and not isinstance(answer, _Missing):
        _submit(code, member, room.step, answer)


def _report(code: str, member: Member, index: int, job: jobs.Job) -> None:
    """A long measurement's progress to the room (when it changed)."""
    if job.total <= 1:
        return
    now = (code, index, job.step, job.total)
    state = session()
    if state.reported == now:
        return
    try:
        store().set_progress(code, member.token, index, min(job.step, job.total), job.total)
    except RoomError:
        return
    except STORE_ERRORS:
        return
    state.reported = now


def _measure_tick(room: Room, code: str, member: Member, page: str) -> None:
    """The poll's share of the measurement after a reveal: send a finished answer,
    report a running one's progress, and re-run a page whose measurement is neither
    (its run was cut short), at most every 3 s."""
    if room.phase == "predict" or not _on_step(room, page):
        return
    state = session()
    if (code, room.step) in state.sent:
        return
    if state.unmeasured == (code, room.step):
        return  # it cannot be measured here (ui.section said why)
    answer = _answer_of(code, room.step)
    if answer is not None and not isinstance(answer, _Missing):
        if _submit(code, member, room.step, answer):
            st.rerun(scope="app")  # the page shows the answer
        return
    job = _job_of(code, room.step)
    if job is not None and job.live:
        _report(code, member, room.step, job)
        return
    if time.monotonic() - state.nudged > 3.0:
        state.nudged = time.monotonic()
        st.rerun(scope="app")


def _await(code: str, member: Member, index: int, job: jobs.Job) -> None:
    """Wait in the page for a measurement still running at a reveal, showing (and
    reporting to the room) how far it is; a click re-runs the page meanwhile."""
    slot = st.empty()
    while job.live:
        if job.total > 1:
            text = f"Measuring with your seed {member.seed}: {job.step} of {job.total} steps."
            slot.progress(min(job.step / job.total, 1.0), text=text)
            _report(code, member, index, job)
        else:
            slot.caption(f"Measuring with your seed {member.seed}...")
        time.sleep(0.25)
    slot.empty()


def question(
    page: str,
    lesson: Lesson,
    index: int,
    step: Step,
    measure: Callable[[int], Measurement],
) -> bool | None:
    """A question step, the room's way: vote, wait for the reveal, measure with
    one's own seed (sent to the room), then perhaps vote again. ``None`` when this
    session is not in a room at this step (the page then asks on its own).
    ``measure(seed)`` is the step's :class:`Measurement` with ``seed``.
    True once the page may show the step's section."""
    try:
        return _question(lesson, index, step, measure)
    except STORE_ERRORS:  # a store outage: the page asks on its own
        st.warning(UNREACHABLE, icon=":material/cloud_off:")
        return None


def _question(
    lesson: Lesson, index: int, step: Step, measure: Callable[[int], Measurement]
) -> bool | None:
    found = me()
    if found is None or step.predict is None:
        return None
    code, member = found
    room = store().room(code)
    if room is None or room.closed or room.lesson != lesson.id or room.step != index:
        return None
    q = step.predict
    state = session()
    st.markdown(f"**Predict first:** {q.question}")
    first = store().votes(code, index, 1).get(member.token)
    if room.phase == "predict":
        _vote_form(code, member, index, 1, q.choices, first)
        # Measured meanwhile, in the background, shown only after the reveal.
        if state.unmeasured != (code, index):
            _start(measure, code, index, member.seed)
        return False
    said = f"You predicted {md_escape(first)}. " if first else ""
    answer = _answer_of(code, index)
    if answer is None and state.unmeasured != (code, index):
        job = _job_of(code, index)
        if job is None or not job.live:
            job = _start(measure, code, index, member.seed)
        _await(code, member, index, job)
        answer = _answer_of(code, index)
    measured = answer is not None and not isinstance(answer, _Missing)
    if isinstance(answer, _Missing):
        # A step whose measurement needs a part not installed here: the one line
        # instead of the measurement and of the section (which would need it too);
        # the room goes on (a second vote still counts) and the poll stops waiting.
        say_missing_extra("Measuring this step")
        state.unmeasured = (code, index)
        if said:
            st.caption(said)
    elif measured:
        _submit(code, member, index, answer)
        st.success(
            f"{said}Measured with your seed {member.seed}: **{md_escape(answer.answer)}**. "
            + answer.sentence,
            icon=":material/science:",
        )
    else:  # failed or stopped: said once, not started again on every poll
        state.unmeasured = (code, index)
        st.warning(
            f"{said}Your measurement did not finish (the server log says why); the room "
            "goes on without it.",
            icon=":material/error:",
        )
    if step.explain:
        explain(step.explain)  # after the reveal, never before the vote
    if room.phase == "second":
        second = store().votes(code, index, 2).get(member.token)
        _vote_form(code, member, index, 2, q.choices, second)
    return measured


def _vote_form(
    code: str,
    member: Member,
    index: int,
    round_: int,
    choices: tuple[str, ...],
    recorded: str | None,
) -> None:
    """The vote of one round. "Recorded" is said only of a vote the store holds (or
    has acknowledged to this session); a send that failed says so and can be sent
    again."""
    state = session()
    vote = (code, index, round_)
    recorded = recorded or state.acked.get(vote)
    what = "prediction" if round_ == 1 else "second vote"
    if recorded is not None:
        then = " Waiting for the presenter to reveal." if round_ == 1 else ""
        st.success(
            f"Your {what} is recorded: {md_escape(recorded)}.{then}",
            icon=":material/how_to_vote:",
        )
        return
    label = "Send my prediction" if round_ == 1 else "Send my second vote"
    choice = st.radio(
        "Your prediction" if round_ == 1 else "Your vote after the discussion",
        list(choices),
        index=None,
        key=f"room:vote:{code}:{index}:{round_}",
        horizontal=True,
        on_change=lambda: session().chosen.add(vote),  # picked in this session
    )
    if st.button(label, key=f"room:send:{round_}", type="primary", disabled=choice is None):
        try:
            store().vote(code, member.token, index, round_, choice)
        except RoomError as exc:
            state.unsent[vote] = str(exc)
        except Exception:  # noqa: BLE001 - any failure: not sent, said, never a traceback
            _LOG.exception("workshop room %s: a vote could not be stored", code)
            state.unsent[vote] = f"Your {what} was {NOT_SENT}"
        else:  # the store returned: the vote is committed
            state.unsent.pop(vote, None)
            state.acked[vote] = choice
            st.rerun()
    why = state.unsent.get(vote)
    if why is not None:
        st.error(f"{md_escape(why, 200)} Press **{label}** again.", icon=":material/sync_problem:")
    elif choice is not None and vote not in state.chosen:
        # A choice this session did not see picked: the browser kept it across a lost
        # connection (a replica restarted), so a Send pressed then never arrived.
        st.warning(
            f"Your {what} {md_escape(choice)} has not reached the room (the connection "
            f"dropped): press **{label}** again.",
            icon=":material/sync_problem:",
        )
    elif choice is not None:
        st.caption(f"Not sent yet: press **{label}**.")


# -------------------------------------------------------------------- presenter
def host() -> tuple[str, str, str] | None:
    """The room this session presents: (code, credential, lesson id), while it lives
    and the credential still opens it. A new session of a browser that presents a
    room (a reload, a replica restart) finds that room again from the browser's
    cookie (once per session)."""
    state = session()
    held = state.host
    try:
        if held is None and not state.host_looked:
            state.host_looked = True
            held = _restore()
        if held is None:
            return None
        ok = store().is_presenter(held[0], held[1])
        gone = not ok and store().room(held[0]) is None
    except STORE_ERRORS:  # an outage is not an expiry: keep the room
        st.warning(UNREACHABLE, icon=":material/cloud_off:")
        return held
    if not ok:
        state.host = None
        if not gone:
            st.info(
                f"This browser no longer presents room {held[0]}: open your presenter "
                "link to present it again.",
                icon=":material/key_off:",
            )
        return None
    return held


def _restore() -> tuple[str, str, str] | None:
    cred = browser_id("presenter")
    if cred is None:
        return None
    room = store().presented_by(cred)
    if room is None:
        return None
    state = session()
    state.host = (room.code, cred, room.lesson)
    state.sync = True
    return state.host


def reclaim_from_url() -> None:
    """An old presenter link (``/workshop?present=CODE&key=KEY``): the key leaves the
    URL at once and nothing is claimed with it, since a key in a URL is kept by the
    browser's history and may be shown or logged; the page says where to type it."""
    if st.query_params.get(PRESENT) is None and st.query_params.get(KEY) is None:
        return
    for k in (PRESENT, KEY):
        if k in st.query_params:
            del st.query_params[k]
    st.warning(
        "A presenter key is never taken from a link: type the room code and your key "
        "under **Present a room again** (on your own screen).",
        icon=":material/key:",
    )


def reclaim(raw_code: str, key: str) -> None:
    """This session presents room ``raw_code`` again with its key (typed by the
    presenter); this browser then presents it on a reload too. A wrong key (or a
    participant's token) is refused, said and logged (never the key itself)."""
    code = normalize_code(raw_code)
    if code is None or not key.strip():
        st.error("Type the room code and your presenter key.", icon=":material/key:")
        return
    with guarded():
        room = store().claim(code, key.strip(), browser_id("presenter"))
        state = session()
        state.host = (code, key.strip(), room.lesson)
        state.key = (code, key.strip())
        state.sync = True
        st.toast(f"You present room {code} again.", icon=":material/key:")
        st.rerun()


def reclaim_form() -> None:
    """The form a presenter takes a room back with, on any browser: the room code and
    the key, typed (the key hidden as it is typed), never in a URL."""
    with st.expander("Present a room again (your key)", icon=":material/key:"):
        with st.form("room:reclaim", border=False):
            code = st.text_input("Your room's code", max_chars=CODE_LEN, key="room:reclaim-code")
            key = st.text_input(
                "Presenter key", type="password", max_chars=200, key="room:reclaim-key"
            )
            if st.form_submit_button("Present this room"):
                reclaim(code, key)


def sync_page(lesson_key: str, step_key: str) -> None:
    """Before the presenter's page draws its lesson and step (the widgets' session
    keys): a room just reclaimed or restored, or moved by the presenter's other
    session (another device), sets them to the room's."""
    state = session()
    if state.host is None:
        return
    try:
        room = store().room(state.host[0])
    except STORE_ERRORS:
        return
    if room is None:
        return
    moved = state.host_step is not None and state.host_step != room.step
    if state.sync or moved:
        st.session_state[lesson_key] = room.lesson
        st.session_state[step_key] = room.step
    state.sync = False
    state.host_step = room.step


def follow_presenter(code: str, secret: str, index: int) -> None:
    """The room follows the presenter's page: its step, when the page moved."""
    room = store().room(code)
    if room is not None and room.step != index:
        store().go_to(code, secret, index)
    session().host_step = index


def open_room(lesson_id: str, step: int, hide_names: bool) -> tuple[str, str, str]:
    room, key = store().create(
        lesson_id, step=step, hide_names=hide_names, browser=browser_id("presenter")
    )
    state = session()
    state.host = (room.code, key, lesson_id)
    state.key = (room.code, key)
    state.host_step = step
    return state.host


def key_box(code: str, projecting: bool = False) -> None:
    """The presenter key of room ``code``, in the session that opened or reclaimed the
    room with it: shown only on request and never while projecting, as text to copy
    privately (no link, no QR code: nothing a browser history, a log or the room can
    keep). A presenter who has it can take the room back on any browser."""
    state = session()
    known = state.key
    if known is None or known[0] != code:
        return
    if projecting or state.key_shown != code:
        state.key_shown = None
        st.button(
            "Show my presenter key",
            key="room:show-key",
            icon=":material/key:",
            disabled=projecting,
            on_click=_show_key,
            args=(code,),
            help="Not while projecting. With the room code, the key makes any browser "
            "the presenter of this room again: after a closed laptop, a server restart, "
            "or on another device. Copy it somewhere private.",
        )
        return
    st.warning(
        f"Your presenter key for room {code}: copy it somewhere private. With the code it "
        "makes any browser the presenter (under **Present a room again**); anyone who "
        "has it can present. A reload of this browser presents again without it.",
        icon=":material/key:",
    )
    st.code(known[1], language=None)
    st.button(
        "Hide the key",
        key="room:hide-key",
        on_click=_show_key,
        args=(None,),
    )


def _show_key(code: str | None) -> None:
    session().key_shown = code


def forget_host() -> None:
    """This session no longer presents (the room was closed)."""
    state = session()
    state.host = state.key = state.key_shown = state.host_step = None
    state.sync = False


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


def _who(m: Member, hide: bool) -> str:
    if m.name and not hide:
        return md_escape(m.name, 40)
    return f"participant {m.seed}"


def _ago(t: float) -> str:
    s = max(0, int(time.time() - t))
    return f"{s} s ago" if s < 90 else f"{s // 60} min ago"


def _remove(code: str, secret: str, token: str) -> None:
    with guarded():
        if store().remove(code, secret, token):
            st.toast("Removed from the room.", icon=":material/person_remove:")


def _set_joining(code: str, secret: str) -> None:
    with guarded():
        store().set_joining(
            code,
            secret,
            bool(st.session_state.get("room:lock")),
            int(st.session_state.get("room:size") or 0),
        )


def _never_voted(code: str, members: list[Member], steps: list[int]) -> list[Member]:
    """The members with no vote in any round of the lesson's question ``steps`` (only
    a question takes votes). Read on every poll of the presenter's page: one read per
    question and round, not per step."""
    s = store()
    voted: set[str] = set()
    for step in steps:
        for round_ in (1, 2):
            voted |= set(s.votes(code, step, round_))
    return [m for m in members if m.token not in voted]


def _remove_all(code: str, secret: str, tokens: list[str]) -> None:
    with guarded():
        gone = sum(store().remove(code, secret, t) for t in tokens)
        st.toast(f"Removed {gone} from the room.", icon=":material/group_remove:")


def _joining(code: str, secret: str, room: Room, members: list[Member], steps: list[int]) -> None:
    """Who may come in: lock joins, the room's size, and removing at once everyone who
    has not voted (scripted members do not vote)."""
    c1, c2, c3 = st.columns([2, 2, 3], vertical_alignment="bottom")
    c1.toggle(
        "Lock joins",
        value=room.locked,
        key="room:lock",
        on_change=_set_joining,
        args=(code, secret),
        help="No one new joins; a participant who joined before comes back.",
    )
    c2.number_input(
        "Room size",
        min_value=0,
        max_value=MAX_MEMBERS,
        value=room.max_members,
        step=1,
        key="room:size",
        on_change=_set_joining,
        args=(code, secret),
        help="At most this many participants (0: no cap): new ones are refused once "
        "it is reached; those in the room stay.",
    )
    idle = _never_voted(code, members, steps)
    with c3.popover(f"Remove who never voted ({len(idle)})", disabled=not idle):
        st.caption(
            f"{len(idle)} of {len(members)} participants have not voted on any question "
            "yet. Removing them takes them out of the room; they may join again unless "
            "joins are locked."
        )
        st.button(
            f"Remove {len(idle)}",
            key="room:remove-idle",
            on_click=_remove_all,
            args=(code, secret, [m.token for m in idle]),
            type="primary",
        )


def _people(code: str, secret: str, room: Room, members: list[Member], index: int) -> None:
    """The member list: name (or a number, names hidden), joined, voted, measured;
    a button removes one (their votes go; their page says so)."""
    step_asks = room.step == index
    s = store()
    voted = s.votes(code, index, 1) if step_asks else {}
    second = s.votes(code, index, 2) if step_asks and room.phase == "second" else {}
    measured = s.measures(code, index) if step_asks and room.phase != "predict" else {}
    progress = s.progress(code, index) if step_asks and room.phase != "predict" else {}
    with st.expander(f"Participants ({len(members)})", key="room:people", icon=":material/group:"):
        lesson = _lesson(room.lesson)
        questions = (
            [i for i, st_ in enumerate(lesson.steps, 1) if st_.predict is not None]
            if lesson
            else list(range(1, MAX_STEPS + 1))
        )
        _joining(code, secret, room, members, questions)
        if not members:
            st.caption("No one has joined yet.")
        for m in members:
            c1, c2, c3 = st.columns([3, 4, 1], vertical_alignment="center")
            c1.markdown(f"{_who(m, room.hide_names)} · seed {m.seed}")
            state = [f"joined {_ago(m.joined)}"] if m.joined else []
            state.append("voted" if m.token in voted else "not voted")
            if second:
                state.append("voted again" if m.token in second else "no second vote")
            if m.token in measured:
                state.append("measured")
            elif m.token in progress:
                done, total = progress[m.token]
                state.append(f"measuring {done} of {total}")
            c2.caption(" · ".join(state))
            c3.button(
                "Remove",
                key=f"room:remove:{m.seed}",
                on_click=_remove,
                args=(code, secret, m.token),
                help="Take this participant out of the room (their votes go too).",
            )


def _live(code: str, secret: str, lesson: Lesson, index: int) -> None:
    s = store()
    room = s.room(code)
    if room is None:
        st.warning("This room has expired.")
        return
    if room.step != index and session().host_step != room.step:
        st.rerun(scope="app")  # moved from the presenter's other session: follow it
    members = s.members(code)
    n = len(members)
    st.markdown(
        f"**{n}** joined"
        + (f" of at most {room.max_members}" if room.max_members else "")
        + (" · the room is closed" if room.closed else "")
        + (" · joins are locked" if room.locked and not room.closed else "")
    )
    if members and not room.hide_names:
        names = [md_escape(m.name, 40) for m in members if m.name]
        if names:
            st.caption("In the room: " + ", ".join(names))
    step = lesson.steps[index - 1]
    if step.predict is None or room.step != index:
        _people(code, secret, room, members, index)
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
        _people(code, secret, room, members, index)
        return
    measured = s.measures(code, index)
    _bars(MEASURED_TITLE, counts(measured, q.choices), n)
    running = {t: p for t, p in s.progress(code, index).items() if t not in measured}
    if running:
        by_token = {m.token: m for m in members}
        st.caption(
            "Still measuring: "
            + ", ".join(
                f"{_who(by_token[t], room.hide_names)} {d} of {tot}"
                for t, (d, tot) in running.items()
                if t in by_token
            )
        )
    if step.explain:
        with st.container(border=True, key="room-explain"):
            st.markdown("**Why** (shown to the room after the reveal)")
            st.markdown(step.explain)
    if phase == "revealed":
        if b2.button("Second vote", key="room:second", help="Peer instruction: vote again"):
            s.set_phase(code, secret, "second")
            st.rerun()
    else:
        second = s.votes(code, index, 2)
        _bars("Second vote", counts(second, q.choices), n)
        moved = sum(1 for t, v in second.items() if t in first and first[t] != v)
        st.caption(f"{moved} of {len(second)} changed their answer since the first vote.")
    _people(code, secret, room, members, index)


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


def qr_png(text: str) -> bytes:
    """A QR code of ``text`` as PNG bytes (segno, drawn here)."""
    import segno

    png = io.BytesIO()
    segno.make(text, error="m").save(png, kind="png", scale=8, border=2)
    return png.getvalue()
