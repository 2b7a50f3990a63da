"""Workshop: a presenter steps through a lesson; participants follow each step by link,
or join the presenter's room once and follow it (ui/room)."""

from urllib.parse import urlencode, urlsplit

import streamlit as st

from ui import lesson_view, projector
from ui.params import PageParams, md_escape
from ui.registry import PAGES
from ui.room import view as room_view
from ui.room.store import CODE_LEN, NAME_MAX, RoomError, normalize_code
from ui.shell import page_setup
from ui.specs import fmt

page_setup(
    "Workshop",
    "Pick a lesson and step through it. **Open this step** shows the step's page with its "
    "settings and text; participants open the same step in their own session from the link "
    "or the QR code, change what they like, and come back to the step's settings with one "
    "button. **Open as a room** instead, and participants join once with a code and then "
    "follow your steps, vote and measure with their own seeds (docs/workshop.md). Lessons "
    "are TOML files in `lessons/` (see the README).",
)
p = PageParams("workshop")
room_view.reclaim_from_url()  # an old presenter link: the key leaves the URL, unused
hosting = room_view.host()
if hosting is None and room_view.me(lookup=True) is not None:
    room_view.bar("workshop")  # a participant (this session, or this browser): the room
    st.stop()
if hosting is None:
    room_view.bar("workshop")  # removed from a room: says so, offers to join again
    # A join link (a valid code in the URL): the join form alone.
    joining = normalize_code(st.query_params.get("join")) is not None
    with st.expander("Join a room", expanded=joining, icon=":material/login:"):
        raw_code = p.widget("join", placeholder="the code on the screen")
        name = st.text_input(
            "Your name (optional)",
            max_chars=NAME_MAX,
            key="room:name",
            placeholder="optional",
        )
        if st.button("Join", key="room:join", type="primary"):
            code = normalize_code(raw_code)
            if code is None:
                st.error(f"A room code is {CODE_LEN} letters and digits, as shown on the screen.")
            else:
                try:
                    room_view.join(code, name)
                except RoomError as exc:
                    st.error(str(exc))
                except room_view.STORE_ERRORS:
                    st.error(room_view.UNREACHABLE)
    if joining:
        st.stop()  # a participant's join link: nothing of the presenter's page
if hosting is not None:  # a room reclaimed, restored, or moved on another device
    room_view.sync_page("lesson", "step")
all_lessons, errors = lesson_view.lessons()
for message in errors:
    st.error("A lesson file was not loaded: " + md_escape(message, 400), icon=":material/error:")
if not all_lessons:
    st.info("No lesson is available: add a TOML file to `lessons/`.")
    st.stop()

ids = list(all_lessons)
c1, c2, c3 = st.columns([2, 1, 1])
with c1:
    lesson_id = p.widget("lesson", options=ids, format_func=lambda i: all_lessons[i].title)
lesson = all_lessons[lesson_id]
n = len(lesson.steps)
with c2:
    index = p.widget("step", help=f"1 to {n}")
was_on = projector.on()
with c3:
    st.session_state[projector.KEY] = p.widget("projector")
if projector.on() and not was_on:  # turned on in this run: the header ran without it
    projector.apply()
if index > n:
    st.warning(f"This lesson has {n} steps; showing the last.")
    index = n
step = lesson.steps[index - 1]
if hosting is not None and hosting[2] != lesson_id:
    st.info(
        f"Your room {hosting[0]} runs the lesson {md_escape(all_lessons[hosting[2]].title, 80)}; "
        "close it (at the end of that lesson's page) to open a room on this one."
        if hosting[2] in all_lessons
        else f"Your room {hosting[0]} runs a lesson that is no longer on this server."
    )
    hosting = None
elif hosting is not None:
    with room_view.guarded():
        room_view.follow_presenter(hosting[0], hosting[1], index)  # the room follows

if lesson.summary:
    st.caption(lesson.summary + (f" A {fmt(lesson.slot)}-minute slot." if lesson.slot else ""))
left, right = st.columns([3, 2])
with left:
    st.subheader(f"Step {index} of {n}: {step.title}")
    st.markdown(step.text)
    where = next(pg.title for pg in PAGES if pg.url_path == step.page)
    st.caption(
        f"Opens {where}"
        + (f", section {step.section}" if step.section else "")
        + "."
        + (f" About {fmt(step.minutes)} minutes." if step.minutes else "")
    )
    if step.notes and hosting is not None:
        # A room's presenter only: anyone can open this page, so without a room nobody
        # here is known to present (a participant's Workshop page stops above). Folded,
        # since this page is often on the projector.
        with st.expander(
            "Presenter notes: expected answer, wrong answers, follow-up (not for the room)",
            key="workshop:notes",
            icon=":material/speaker_notes:",
        ):
            st.markdown(step.notes)
    b1, b2, b3 = st.columns(3)

    def move(to: int) -> None:
        st.session_state["step"] = to

    b1.button(
        "Previous", key="workshop:prev", on_click=move, args=(index - 1,), disabled=index == 1
    )
    b2.button("Next", key="workshop:next", on_click=move, args=(index + 1,), disabled=index == n)
    if b3.button("Open this step", key="workshop:open", type="primary"):
        lesson_view.go_to(lesson, index)
    if hosting is not None:
        room_view.live(hosting[0], hosting[1], lesson, index)
    elif step.predict is not None:
        q = step.predict
        st.markdown(f"**Predict first:** {q.question}")
        st.markdown("\n".join(f"- {c}" for c in q.choices))
        # No answer here: anyone can open this page, a participant too.
        st.caption(
            "Each participant predicts on the step's page and sees the measurement once "
            "they have locked in their prediction. The answer, the why and your notes "
            "show on this page only once you open the lesson as a room."
        )
    elif step.notes:
        st.caption("Your notes for this step show here once you open the lesson as a room.")
    if step.predict is None and step.explain:
        with st.expander("Why (open it after the discussion)", icon=":material/lightbulb:"):
            st.markdown(step.explain)
    st.markdown("**Steps**")
    st.markdown(
        "\n".join(
            f"{i}. "
            + (f"**{s.title}**" if i == index else s.title)
            + (f" ({fmt(s.minutes)} min)" if s.minutes else "")
            + (" · question" if s.predict else "")
            for i, s in enumerate(lesson.steps, start=1)
        )
    )

with right:
    base = urlsplit(st.context.url or "http://localhost:8501/workshop")
    root = base.path.rsplit("/", 1)[0]
    if hosting is not None:
        link = f"{base.scheme}://{base.netloc}{root}/workshop?" + urlencode({"join": hosting[0]})
        st.subheader(f"Room code: {hosting[0]}")
        st.caption("Participants join once (this code, the link or the QR code), then follow you.")
    else:
        link = f"{base.scheme}://{base.netloc}{root}/{step.page}?" + urlencode(
            step.query(lesson.id, index)
        )
        st.markdown("**Participants: open this step**")
    if base.hostname in ("localhost", "127.0.0.1", "::1"):
        st.caption(
            "This link names this computer as localhost, which other devices cannot reach: "
            "open the Workshop page through this machine's network address (or the proxy "
            "of `make workshop`) and the link and QR code will use it."
        )
    st.code(link, language=None, wrap_lines=True)
    st.image(
        room_view.qr_png(link),
        width=360,
        caption="Scan to join the room" if hosting is not None else "Scan to open this step",
    )
    plain = room_view.plain_http_warning(st.context.url or "http://localhost/")
    if plain is not None:
        st.warning(plain, icon=":material/lock_open:")
    if hosting is None:
        with st.container(border=True):
            st.markdown("**Run it as a room**")
            st.caption(
                "Participants join once with a code and then follow you step by step; "
                "on a question you see their predictions and their measurements (each "
                "measures with their own seed). Your presenter key, shown on request "
                "(never while projecting), takes the room back on any browser (a "
                "reload of this browser needs nothing)."
            )
            # Off the projector by default: a stranger's name is whatever they type.
            hide = st.checkbox(
                "Hide participants' names",
                value=True,
                key="room:hide",
                help="Names stay off this page (and so off the projector); each "
                "participant is shown by number.",
            )
            if st.button("Open as a room", key="room:open", type="primary"):
                with room_view.guarded():
                    room_view.open_room(lesson.id, index, hide)
                    st.rerun()
        room_view.reclaim_form()
    else:
        room_view.key_box(hosting[0], projector.on())
        with room_view.guarded():
            room_view.handout_button(lesson, hosting[0])
        if st.button("Close the room", key="room:close"):
            with room_view.guarded():
                room_view.store().close(hosting[0], hosting[1])
            room_view.forget_host()
            st.rerun()
