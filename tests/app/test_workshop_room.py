"""The workshop room in AppTest: the presenter opens a room, participants join by
code and follow the presenter's steps with their own seeds, vote once, measure
after the reveal, and the presenter sees the counts; a reload (a new session with
the participant's URL) lands on the room's current step; a participant cannot
drive the room; names are shown as inert text; the handout is escaped HTML.

And what a live workshop taught: the presenter's key, shown once, reclaims the room
from a fresh session (a restarted server: a new store object on the same file) and
a reload of the presenter's browser presents again; a participant's token or a
wrong key reclaims nothing; the same browser joining again is the same participant
(AppTest cannot send cookies: ``room_view._cookies`` gives each session the cookies
a browser would); a vote the store could not take says "not sent" and can be sent
again; the presenter removes a participant; ``/workshop`` and the banner keep a
participant in the room.

AppTest does not follow ``st.switch_page`` into later runs, so after a move the
test opens the page the URL names, as a browser would show it."""

from __future__ import annotations

import html
import logging
import re

import pytest

from resviz.recipes import MEASURES
from tests.app.conftest import assert_no_notes, page_text
from ui import jobs
from ui.lessons import load_lessons
from ui.registry import PAGES
from ui.room import handout
from ui.room import view as room_view
from ui.room.store import NAME_MAX, NotPresenter, SQLiteStore

LESSON = load_lessons()[0]["residuals"]
PATH = {p.url_path: p.path for p in PAGES}
QI = next(i for i, s in enumerate(LESSON.steps, 1) if s.predict and s.page == "gradient_flow")


def held(at) -> room_view.RoomSession:
    """The room view's state of a session (an empty one where the view never ran)."""
    state = at.session_state
    return state[room_view.SESSION] if room_view.SESSION in state else room_view.RoomSession()


def test_the_room_state_never_prints_its_secrets() -> None:
    """A presenter's key and browser credential live in the session's RoomSession; its
    repr (a log line, an error report) leaves them out and keeps the rest."""
    state = room_view.RoomSession()
    state.key, state.host, state.key_shown = (
        ("ABC234", "k-secret"),
        ("ABC234", "c-secret", "x"),
        "ABC234",
    )
    text = repr(state)
    assert "k-secret" not in text and "c-secret" not in text
    assert "key_shown='ABC234'" in text


def room_view_answer(seed: int):  # noqa: ANN201 - an Answer
    """The question step's answer at its own settings and ``seed``, computed here."""
    step = LESSON.steps[QI - 1]
    return MEASURES[step.predict.measure].at(dict(step.settings), seed)


@pytest.fixture
def store(tmp_path, monkeypatch):
    s = SQLiteStore(tmp_path / "rooms.sqlite3")
    monkeypatch.setattr(room_view, "_store", s)
    yield s
    jobs.REGISTRY.wait(120)  # no measurement left running past the test


def xsrf_cookie(token: bytes, mask: bytes) -> str:
    """Streamlit's XSRF cookie as it sends it: a new mask on every response."""
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(token))
    return f"2|{mask.hex()}|{masked.hex()}|1795715132"


class Browsers:
    """The cookies each AppTest session would have sent: ``use(name)`` makes the next
    sessions (and reruns) one browser's (a fresh mask each time, as Streamlit does)."""

    def __init__(self) -> None:
        self.current: str | None = None
        self.tokens: dict[str, bytes] = {}

    def use(self, name: str | None) -> None:
        self.current = name
        if name is not None:
            self.tokens.setdefault(name, bytes(range(len(self.tokens), len(self.tokens) + 16)))

    def cookies(self) -> dict[str, str]:
        if self.current is None:
            return {}
        import os

        return {"_streamlit_xsrf": xsrf_cookie(self.tokens[self.current], os.urandom(4))}


@pytest.fixture
def browsers(monkeypatch):
    b = Browsers()
    monkeypatch.setattr(room_view, "_cookies", b.cookies)
    return b


def _presenter(app):
    at = app(PATH["workshop"]).run()
    at.checkbox(key="room:hide").uncheck()
    at.button(key="room:open").click().run()
    assert not at.exception, [e.value for e in at.exception]
    code, secret, lesson_id = held(at).host
    return at, code, secret


def _follow(at):
    """Open the page the participant's URL names (where switch_page took them)."""
    at.switch_page(PATH[_page_of(at)])
    return at.run()


def _page_of(at) -> str:
    step = int(at.query_params["step"])
    return LESSON.steps[step - 1].page


def _join(app, code, name=None):
    at = app(PATH["workshop"], join=code).run()
    assert not at.exception
    if name is not None:
        at.text_input(key="room:name").set_value(name)
    at.button(key="room:join").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_presenter_gets_one_code_and_one_qr_for_the_join_link(app, store):
    """One QR code, the join link's; the presenter key is in no link and no QR code,
    and shows only on request, as text, never while projecting."""
    at, code, secret = _presenter(app)
    link = at.code[0].value
    assert link.endswith(f"/workshop?join={code}")
    assert secret not in link and "secret" not in link
    assert store.room(code).step == 1
    assert len(at.get("image")) == 1 and len(at.code) == 1
    assert secret not in page_text(at) and secret not in str(dict(at.query_params))
    at.button(key="room:show-key").click().run()
    assert [c.value for c in at.code] == [link, secret]  # the key alone: no link
    assert len(at.get("image")) == 1
    assert any("copy it somewhere private" in w.value for w in at.warning)
    at.button(key="room:hide-key").click().run()
    assert secret not in page_text(at)
    # Projector mode on: the key cannot be shown, and one on screen goes.
    at.button(key="room:show-key").click().run()
    assert secret in page_text(at)
    at.toggle(key="projector").set_value(True).run()
    assert secret not in page_text(at)
    assert at.button(key="room:show-key").disabled


def test_notes_and_the_answer_reach_the_rooms_presenter_only(app, store):
    """The presenter of a room sees the step's notes (folded) and, after Reveal, the
    why; another session opening the same step of the Workshop page by URL, as a
    participant could, gets neither, and no Reveal."""
    step = LESSON.steps[QI - 1]
    pres, code, secret = _presenter(app)
    pres.number_input(key="step").set_value(QI).run()
    notes = [e for e in pres.expander if e.label.startswith("Presenter notes")]
    assert len(notes) == 1 and step.notes in [m.value for m in notes[0].markdown]
    assert [b for b in pres.button if b.key == "room:reveal"]
    assert step.explain not in page_text(pres), "the why before the reveal"
    other = app(PATH["workshop"], lesson=LESSON.id, step=str(QI)).run()
    assert not other.exception
    assert_no_notes(other, step)
    assert not [b for b in other.button if b.key == "room:reveal"]
    assert not [e for e in other.expander if e.label.startswith("Reveal")]
    assert step.explain not in page_text(other)


def test_participants_follow_vote_once_measure_with_their_seed(app, store):
    pres, code, secret = _presenter(app)
    people = [_join(app, code, name) for name in ("Ada", None, "[x](http://evil.example)")]
    seeds = [int(p.query_params["seed"]) for p in people]
    assert seeds == [1, 2, 3]
    for p in people:  # each landed on the room's step with the room in its URL
        assert p.query_params["room"] == code and p.query_params["step"] == "1"
        assert p.query_params["member"] != secret
    # The presenter moves to a question step; each participant's poll follows.
    pres.number_input(key="step").set_value(QI).run()
    assert store.room(code).step == QI
    step = LESSON.steps[QI - 1]
    for p in people:
        p.run()
        assert p.query_params["step"] == str(QI)
        assert step.title in [s.value for s in p.subheader]
        _follow(p)
        assert not p.exception
        assert not p.get("vega_lite_chart"), "the section waits for the vote"
        assert step.explain not in [m.value for m in p.markdown], "the why waits too"
        assert_no_notes(p, step)
    for p, choice in zip(people, ["plain", "residual", "residual"], strict=True):
        p.radio(key=f"room:vote:{code}:{QI}:1").set_value(choice).run()
        p.button(key="room:send:1").click().run()
        said = " ".join(s.value for s in p.success)
        assert f"Your prediction is recorded: `{choice}`" in said
        assert "Waiting for the presenter" in said
        assert not [b for b in p.button if b.key == "room:send:1"], "one vote per round"
    # A second vote in the same round is refused by the store itself.
    token = people[0].query_params["member"]
    assert store.vote(code, token, QI, 1, "residual") is False
    pres.run()
    said = " ".join(m.value for m in pres.markdown)
    assert "**Predictions**: 3 of 3 answered" in said
    frame = pres.get("vega_lite_chart")
    assert frame, "no bar chart of the predictions"
    # A participant cannot reveal: their Workshop page has no controls, they hold no
    # secret, and the store refuses their token.
    people[1].switch_page(PATH["workshop"]).run()
    keys = {b.key for b in people[1].button}
    assert keys == {"room:back"}, keys
    assert held(people[1]).host is None
    _follow(people[1])
    with pytest.raises(NotPresenter):
        store.set_phase(code, token, "revealed")
    pres.button(key="room:reveal").click().run()
    measured = {}
    for p, seed in zip(people, seeds, strict=True):
        p.run()
        shown = " ".join(s.value for s in p.success)
        assert f"Measured with your seed {seed}:" in shown
        # The sentence's numbers are the step's measure at the step's settings and their seed.
        assert room_view_answer(seed).sentence in shown
        measured[seed] = re.search(r"seed \d+: \*\*`(\w+)`\*\*", shown).group(1)
        assert p.get("vega_lite_chart"), "the section shows after the reveal"
    pres.run()
    said = " ".join(m.value for m in pres.markdown)
    assert f"**{room_view.MEASURED_TITLE}**: 3 of 3 answered" in said
    # The why, after the reveal, on the presenter's page and every participant's;
    # the presenter's notes on the presenter's page only.
    assert step.explain in [m.value for m in pres.markdown]
    assert any(step.notes in [m.value for m in e.markdown] for e in pres.expander)
    for p in people:
        assert step.explain in [m.value for m in p.markdown]
        assert_no_notes(p, step)
    assert sorted(store.measures(code, QI).values()) == sorted(measured.values())
    # The names: inert code spans, never a link.
    caption = " ".join(c.value for c in pres.caption)
    assert "`[x](http://evil.example)`" in caption and "`Ada`" in caption
    # Second vote: the movement is counted.
    pres.button(key="room:second").click().run()
    people[0].run()
    people[0].radio(key=f"room:vote:{code}:{QI}:2").set_value("residual").run()
    people[0].button(key="room:send:2").click().run()
    pres.run()
    assert any("1 of 1 changed their answer" in c.value for c in pres.caption)


def test_a_reload_or_late_join_lands_on_the_current_step(app, store):
    pres, code, _ = _presenter(app)
    first = _join(app, code)
    url = dict(first.query_params)
    pres.number_input(key="step").set_value(QI).run()
    # A reload: a new session with the URL the participant had (step 1).
    again = app(PATH[LESSON.steps[0].page], **url).run()
    assert not again.exception
    assert again.query_params["step"] == str(QI)
    assert again.query_params["member"] == url["member"]
    assert again.query_params["seed"] == url["seed"]  # the same participant, same seed
    late = _join(app, code)
    assert late.query_params["step"] == str(QI) and late.query_params["seed"] == "2"


def test_a_forged_or_expired_member_is_not_in_the_room(app, store):
    pres, code, _ = _presenter(app)
    at = app(PATH["gradient_flow"], room=code, member="forged").run()
    assert not at.exception
    assert held(at).me is None
    assert not [m for m in at.markdown if f"Room {code}" in m.value]


def test_bad_join_codes_get_a_clear_message(app, store):
    at = app(PATH["workshop"], join="O0O0O0").run()
    at.button(key="room:join").click().run()
    assert any("letters and digits" in e.value for e in at.error)
    at = app(PATH["workshop"], join="ABCDEF").run()
    at.button(key="room:join").click().run()
    assert any("expired or does not exist" in e.value for e in at.error)
    assert not at.exception


def test_hidden_names_and_closing(app, store):
    """Names are off the presenter's page (the projector) unless the presenter asks."""
    at = app(PATH["workshop"]).run()
    assert at.checkbox(key="room:hide").value is True  # the default
    at.button(key="room:open").click().run()
    code, secret, _ = held(at).host
    grace = _join(app, code, "Grace")
    _follow(grace)
    at.run()
    assert not any("Grace" in c.value for c in at.caption)
    assert "**1** joined" in " ".join(m.value for m in at.markdown)
    at.button(key="room:close").click().run()
    assert store.room(code).closed and held(at).host is None
    grace.run()
    assert any("This room has ended" in i.value for i in grace.info)
    assert "room" not in grace.query_params and "member" not in grace.query_params
    grace.run()
    assert not [m for m in grace.markdown if f"Room {code}" in m.value]


def test_handout_is_self_contained_and_escaped(store):
    room, secret = store.create("residuals", step=QI)
    a = store.join(room.code, "<script>alert(1)</script>")
    store.vote(room.code, a.token, QI, 1, "plain")
    store.set_phase(room.code, secret, "revealed")
    store.submit_measure(room.code, a.token, QI, "residual")
    room_view._store = store
    page = handout.build(LESSON, room.code, room_view.handout_data(room.code, LESSON), 1)
    assert "<script" not in page.lower() and "http://" not in page.replace(
        'xmlns="http://www.w3.org/2000/svg"', ""
    )
    assert "<link" not in page and "src=" not in page
    for i, step in enumerate(LESSON.steps, 1):
        assert f"Step {i}. {html.escape(step.title)}" in page
        assert handout.render_text(step.text) in page
    # Charts for the one question the room answered (predictions, measured); the
    # other questions say that no one answered.
    assert page.count("<svg") == 2
    unanswered = sum(1 for s in LESSON.steps if s.predict) - 1
    assert page.count("predictions: no answers.") == unanswered
    assert "The room&#x27;s predictions (1 answers)" in page
    assert f"{room_view.MEASURED_TITLE} (1 answers)" in page
    # Each step's why as a takeaway, the references; never the presenter's notes.
    assert page.count("<strong>Takeaway.</strong>") == sum(1 for s in LESSON.steps if s.explain)
    for step in LESSON.steps:
        assert handout.render_text(step.explain) in page
        assert handout.render_text(step.notes) not in page
    assert "<h2>References</h2>" in page and html.escape(LESSON.references[0]) in page


def test_a_store_outage_is_a_message_not_a_traceback(app, monkeypatch):
    from tests.browser.conftest import free_port
    from ui.room.store import RedisStore

    down = RedisStore(f"redis://127.0.0.1:{free_port()}/0")  # nothing listens there
    monkeypatch.setattr(room_view, "_store", down)
    at = app(PATH["workshop"]).run()
    at.button(key="room:open").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("cannot be reached" in w.value for w in at.warning)
    at = app(PATH["workshop"], join="ABCDEF").run()
    at.button(key="room:join").click().run()
    assert not at.exception and any("cannot be reached" in e.value for e in at.error)
    # A participant's link while the store is down: the page draws, on its own.
    at = app(PATH["gradient_flow"], room="ABCDEF", member="x", lesson="residuals", step="4").run()
    assert not at.exception


def test_a_move_that_lands_on_the_wrong_page_is_made_again(app, store):
    """A rerun request racing ``st.switch_page`` can run the old page with the new
    step's URL; the poll notices and moves the participant again."""
    pres, code, _ = _presenter(app)
    p = _join(app, code)
    pres.number_input(key="step").set_value(QI).run()
    p.run()
    _follow(p)
    assert LESSON.steps[QI - 1].title in [s.value for s in p.subheader]
    assert LESSON.steps[0].page != LESSON.steps[QI - 1].page
    p.switch_page(PATH[LESSON.steps[0].page]).run()  # the old page, the new step's URL
    assert LESSON.steps[QI - 1].title in [s.value for s in p.subheader]


@pytest.mark.parametrize("back", [1, 2])
def test_a_move_that_lands_with_an_old_steps_url_is_made_again(app, store, back):
    """The other half of that race: the new step's page with an earlier step's query
    string (Chromium, under load: ``/gradient_flow?...&step=2`` with the room at 3).
    ``back`` 1: a step of this page; 2: a step of another page."""
    pres, code, _ = _presenter(app)
    p = _join(app, code)
    pres.number_input(key="step").set_value(QI).run()
    p.run()
    _follow(p)
    page = LESSON.steps[QI - 1].page
    stale = QI - back
    assert (LESSON.steps[stale - 1].page == page) == (back == 1)
    p.query_params["step"] = str(stale)
    p.run()
    assert not p.exception
    assert p.query_params["step"] == str(QI)
    assert LESSON.steps[QI - 1].title in [s.value for s in p.subheader]


# --------------------------------------------------------- the presenter's key
def _reclaim(app, code, key, **kw):
    """A fresh session types the room code and the key into the Workshop page's form."""
    at = app(PATH["workshop"], **kw).run()
    at.text_input(key="room:reclaim-code").input(code)
    at.text_input(key="room:reclaim-key").input(key)
    next(b for b in at.button if b.label == "Present this room").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_a_key_in_a_link_is_taken_off_the_url_and_claims_nothing(app, store):
    """An old presenter link (?present=CODE&key=KEY): a key in a URL is kept by the
    browser's history and can be shown or logged, so it is never used."""
    pres, code, key = _presenter(app)
    at = app(PATH["workshop"], present=code, key=key).run()
    assert not at.exception
    assert held(at).host is None
    assert "key" not in at.query_params and "present" not in at.query_params
    assert any("never taken from a link" in w.value for w in at.warning)


def test_the_key_reclaims_the_room_after_a_restart(app, store, tmp_path, monkeypatch):
    pres, code, key = _presenter(app)
    pres.number_input(key="step").set_value(3).run()
    assert store.room(code).step == 3
    # The server restarts: a new process, a new store object on the same file, and
    # the presenter's session is gone. The key, typed in a fresh session, presents.
    monkeypatch.setattr(room_view, "_store", SQLiteStore(tmp_path / "rooms.sqlite3"))
    at = _reclaim(app, code, key)
    assert held(at).host[0] == code
    assert "key" not in at.query_params and "present" not in at.query_params
    assert at.number_input(key="step").value == 3  # the room's step, not step 1
    assert at.subheader[-1].value == f"Room code: {code}" or any(
        s.value == f"Room code: {code}" for s in at.subheader
    )
    assert not [b for b in at.button if b.key == "room:open"], "no second room offered"
    assert not [c for c in at.code if key in c.value], "the key only on request"
    at.button(key="workshop:next").click().run()
    assert store.room(code).step == 4  # Next moves the room, not only this page
    participant = _join(app, code)
    assert participant.query_params["step"] == "4"


@pytest.mark.parametrize("wrong", ["member", "guess", "other-room"])
def test_a_participant_or_a_wrong_key_reclaims_nothing(app, store, caplog, wrong):
    pres, code, key = _presenter(app)
    pres.number_input(key="step").set_value(2).run()
    member = _join(app, code)
    token = member.query_params["member"]
    given = {"member": token, "guess": "x" * 32, "other-room": store.create("residuals")[1]}[wrong]
    caplog.set_level(logging.WARNING, logger="ui.room.store")
    at = _reclaim(app, code, given)
    assert held(at).host is None
    assert any("does not open that room" in w.value for w in at.warning)
    assert any(
        f"workshop room {code}: a wrong presenter key" in r.getMessage() for r in caplog.records
    )
    assert given not in caplog.text
    # The participant's own session cannot either, with their token.
    member.switch_page(PATH["workshop"]).run()
    assert held(member).host is None
    assert not [t for t in member.text_input if t.key == "room:reclaim-key"]
    room = store.room(code)
    assert (room.step, room.phase, room.closed) == (2, "predict", False)
    with pytest.raises(NotPresenter):
        store.go_to(code, token, 5)


def test_the_presenters_browser_presents_again_on_a_reload(app, store, browsers):
    browsers.use("laptop")
    pres, code, key = _presenter(app)
    pres.button(key="workshop:next").click().run()
    pres.button(key="workshop:next").click().run()
    assert store.room(code).step == 3
    # A reload of the same browser: a new session, the same cookie, no key anywhere.
    again = app(PATH["workshop"], lesson="residuals", step="1").run()
    assert held(again).host[0] == code
    assert again.number_input(key="step").value == 3
    again.button(key="workshop:next").click().run()
    assert store.room(code).step == 4
    # Another browser (a participant's) opening /workshop presents nothing.
    browsers.use("phone-of-a-participant")
    other = app(PATH["workshop"]).run()
    assert held(other).host is None
    assert [b for b in other.button if b.key == "room:open"]
    assert store.room(code).step == 4


# ------------------------------------------------------------ one browser, one member
def test_the_same_browser_joining_again_is_the_same_participant(app, store, browsers):
    pres, code, _ = _presenter(app)
    pres.number_input(key="step").set_value(QI).run()
    browsers.use("ada")
    first = _join(app, code, "Ada")
    _follow(first)
    first.radio(key=f"room:vote:{code}:{QI}:1").set_value("plain").run()
    first.button(key="room:send:1").click().run()
    # The join link again (a new tab, a re-scan): the same participant, their vote.
    again = app(PATH["workshop"], join=code).run()
    assert again.query_params["member"] == first.query_params["member"]
    assert again.query_params["seed"] == "1"
    _follow(again)
    assert any("Your prediction is recorded: `plain`" in s.value for s in again.success)
    # /workshop typed by hand: back in the room, at its step.
    typed = app(PATH["workshop"]).run()
    assert typed.query_params["step"] == str(QI) and typed.query_params["room"] == code
    assert len(store.members(code)) == 1
    pres.run()
    assert "**1** joined" in " ".join(m.value for m in pres.markdown)
    # Another browser (a private window) is another participant.
    browsers.use("private-window")
    other = _join(app, code)
    assert other.query_params["member"] != first.query_params["member"]
    assert len(store.members(code)) == 2


def test_joins_are_rate_limited_with_a_clear_message(app, store):
    from ui.room.store import JOINS_PER_MINUTE

    _, code, _ = _presenter(app)
    for _ in range(JOINS_PER_MINUTE):
        store.join(code)
    at = _join(app, code)
    assert any("Too many people are joining this room" in e.value for e in at.error)
    assert held(at).me is None
    assert len(store.members(code)) == JOINS_PER_MINUTE


# --------------------------------------------------------------- no silent loss
class FailOnce:
    """The store, whose next vote fails as a store that went away would."""

    def __init__(self, inner: SQLiteStore, error: BaseException) -> None:
        self.inner, self.error, self.failed = inner, error, False

    def __getattr__(self, name: str):  # noqa: ANN204
        return getattr(self.inner, name)

    def vote(self, *a, **kw):  # noqa: ANN002, ANN003, ANN201
        if not self.failed:
            self.failed = True
            raise self.error
        return self.inner.vote(*a, **kw)


@pytest.mark.parametrize(
    "error", [OSError("disk I/O error"), RuntimeError("a replica went away")], ids=["os", "any"]
)
def test_a_vote_the_store_did_not_take_says_not_sent_and_can_be_sent_again(
    app, store, monkeypatch, error
):
    pres, code, _ = _presenter(app)
    pres.number_input(key="step").set_value(QI).run()
    p = _follow(_join(app, code))
    token = p.query_params["member"]
    monkeypatch.setattr(room_view, "_store", FailOnce(store, error))
    p.radio(key=f"room:vote:{code}:{QI}:1").set_value("residual").run()
    assert any("Not sent yet" in c.value for c in p.caption)
    p.button(key="room:send:1").click().run()
    assert not p.exception
    assert not [s for s in p.success if "recorded" in s.value], "no success without the ack"
    assert any("not sent" in e.value and "again" in e.value for e in p.error)
    assert store.votes(code, QI, 1) == {}
    p.button(key="room:send:1").click().run()  # the choice is still selected
    assert any("Your prediction is recorded: `residual`" in s.value for s in p.success)
    assert not p.error
    assert store.votes(code, QI, 1) == {token: "residual"}


# ------------------------------------------------------------------------ removal
def test_the_presenter_removes_a_participant(app, store):
    pres, code, secret = _presenter(app)
    pres.number_input(key="step").set_value(QI).run()
    bo = _follow(_join(app, code, "Bo"))
    token = bo.query_params["member"]
    bo.radio(key=f"room:vote:{code}:{QI}:1").set_value("plain").run()
    bo.button(key="room:send:1").click().run()
    pres.run()
    people = " ".join(c.value for c in pres.caption)
    assert "voted" in people and "joined" in people
    pres.button(key="room:remove:1").click().run()
    assert store.members(code) == [] and store.votes(code, QI, 1) == {}
    assert "**0** joined" in " ".join(m.value for m in pres.markdown)
    bo.run()  # the poll notices
    bo.run()
    assert any("removed you from room" in w.value for w in bo.warning)
    assert "member" not in bo.query_params
    bo.button(key="room:rejoin").click().run()
    assert bo.query_params["member"] != token and bo.query_params["seed"] == "2"
    # A removed token cannot vote, and never presents.
    with pytest.raises(Exception, match="not in this room"):
        store.vote(code, token, QI, 1, "plain")
    assert not store.is_presenter(code, token)


def test_the_presenter_locks_joins_sizes_the_room_and_removes_who_never_voted(app, store):
    """Issue 47: against scripted members, the presenter locks joins, caps the room's
    size, and removes at once the members who never voted."""
    pres, code, secret = _presenter(app)
    pres.number_input(key="step").set_value(QI).run()
    voter = _follow(_join(app, code, "Ada"))
    voter.radio(key=f"room:vote:{code}:{QI}:1").set_value("plain").run()
    voter.button(key="room:send:1").click().run()
    _join(app, code, "bot1")
    _join(app, code, "bot2")
    pres.run()
    pres.toggle(key="room:lock").set_value(True).run()
    assert store.room(code).locked
    assert "joins are locked" in " ".join(m.value for m in pres.markdown)
    late = _join(app, code, "late")
    assert any("closed this room to new participants" in e.value for e in late.error)
    assert len(store.members(code)) == 3
    pres.button(key="room:remove-idle").click().run()
    assert [m.name for m in store.members(code)] == ["Ada"]
    pres.toggle(key="room:lock").set_value(False).run()
    pres.number_input(key="room:size").set_value(2).run()
    assert store.room(code).max_members == 2
    assert "of at most 2" in " ".join(m.value for m in pres.markdown)
    _join(app, code, "second")
    full = _join(app, code, "third")
    assert any("This room is full" in e.value for e in full.error)
    assert sorted(m.name for m in store.members(code)) == ["Ada", "second"]


def test_a_name_longer_than_a_browser_sends_is_cut_before_the_page_reads_it(app, store):
    """Issue 47: a 9 MB name, which a browser's box would not send, sent as a script
    sends it. Streamlit cuts a text box's value to its max_chars as it reads it, so the
    page and the session hold 40 characters, and the store keeps at most as many."""
    _, code, _ = _presenter(app)
    at = app(PATH["workshop"], join=code).run()
    at.text_input(key="room:name").set_value("x" * 9_000_000).run()  # as a script sends it
    assert at.session_state["room:name"] == "x" * NAME_MAX
    at.button(key="room:join").click().run()
    assert not at.exception
    assert [m.name for m in store.members(code)] == ["x" * NAME_MAX]


# ------------------------------------------------------------- staying in the room
def test_workshop_and_the_banner_keep_a_participant_in_the_room(app, store):
    pres, code, _ = _presenter(app)
    pres.number_input(key="step").set_value(2).run()
    p = _follow(_join(app, code))
    keys = {b.key for b in p.button}
    assert "lesson:next" not in keys and "lesson:prev" not in keys  # the presenter steps
    assert "lesson:reset" in keys
    # To the Workshop page in the same session: the room, never the presenter's page.
    p.switch_page(PATH["workshop"]).run()
    assert {b.key for b in p.button} == {"room:back"}
    assert any("You have left the room's step" in w.value for w in p.warning)
    assert not p.get("image") and not [c for c in p.checkbox if c.key == "room:hide"]
    p.button(key="room:back").click().run()
    assert p.query_params["step"] == "2" and p.query_params["room"] == code


# ------------------------------------------------------- a measurement that trains
def test_a_long_measurement_shows_its_progress_to_the_presenter(app, store, monkeypatch):
    """A step that trains: the participant's measurement reports k of N to the room
    as it goes; the presenter sees it per participant until the answer arrives. (A
    stand-in for the training, so that the test takes seconds.)"""
    import time

    from resviz.core import Answer
    from ui import lesson_view

    def slow(page, step, seed):  # noqa: ANN001, ANN202
        def work(report, should_stop):  # noqa: ANN001, ANN202
            for k in range(1, 5):
                time.sleep(0.4)
                report(None, k, 8)
            return Answer("residual", f"Trained with seed {seed}.")

        return room_view.Measurement(("test-slow", page, seed), work)

    monkeypatch.setattr(lesson_view, "step_measurement", slow)
    jobs.REGISTRY.clear()
    pres, code, secret = _presenter(app)
    pres.number_input(key="step").set_value(QI).run()
    p = _follow(_join(app, code, "Ada"))
    token = p.query_params["member"]
    p.radio(key=f"room:vote:{code}:{QI}:1").set_value("plain").run()
    p.button(key="room:send:1").click().run()
    store.set_phase(code, secret, "revealed")
    p.run()  # waits for its measurement, reporting its progress on the way
    assert store.progress(code, QI)[token][1] == 8
    assert store.measures(code, QI) == {token: "residual"}
    assert any("Trained with seed 1." in s.value for s in p.success)
    # The presenter's view of a participant still measuring.
    bo = store.join(code, "Bo")
    store.set_progress(code, bo.token, QI, 120, 800)
    pres.run()
    assert any("Still measuring: `Bo` 120 of 800" in c.value for c in pres.caption)
    assert any("measuring 120 of 800" in c.value for c in pres.caption)
    assert f"**{room_view.MEASURED_TITLE}**: 1 of 2 answered" in " ".join(
        m.value for m in pres.markdown
    )


@pytest.mark.parametrize(
    ("last", "now", "said"),
    [
        (None, 100.0, None),  # the first poll of a page
        (99.0, 100.0, None),  # on time
        (100.0 - room_view.LATE_S + 0.01, 100.0, None),  # just under the limit
        (100.0 - room_view.LATE_S, 100.0, "5 s ago"),  # at the limit
        (88.0, 100.0, "12 s ago"),
        (101.0, 100.0, None),  # a clock that went back
        (float("nan"), 100.0, None),
        (float("-inf"), 100.0, None),  # no figure that means nothing
    ],
)
def test_a_late_poll_says_the_server_is_busy(last, now, said) -> None:
    note = room_view.late_note(last, now)
    if said is None:
        assert note is None
    else:
        assert note is not None and said in note and note.startswith("The server is busy")


def test_a_participants_page_says_so_when_its_poll_ran_late(app, store, monkeypatch):
    """The follow poll measures the gap since its last run; a page whose server
    answered 12 s late says the server is busy, and the next poll on time says nothing."""
    pres, code, _ = _presenter(app)
    p = _follow(_join(app, code))
    assert not any("server is busy" in c.value for c in p.caption)
    clock = [1000.0]
    monkeypatch.setattr(room_view.time, "monotonic", lambda: clock[0])
    p.run()
    clock[0] += 12.0
    p.run()
    assert any("last heard from the room 12 s ago" in c.value for c in p.caption)
    clock[0] += room_view.POLL_S
    p.run()
    assert not any("server is busy" in c.value for c in p.caption)
