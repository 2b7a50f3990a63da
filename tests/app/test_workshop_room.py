"""The workshop room in AppTest: the presenter opens a room, participants join by
code and follow the presenter's steps with their own seeds, vote once, measure
after the reveal, and the presenter sees the counts; a reload (a new session with
the participant's URL) lands on the room's current step; a participant cannot
drive the room; names are shown as inert text; the handout is escaped HTML.

AppTest does not follow ``st.switch_page`` into later runs, so after a move the
test opens the page the URL names, as a browser would show it."""

from __future__ import annotations

import html
import re

import pytest

from resviz.recipes import MEASURES
from ui.lessons import load_lessons
from ui.registry import PAGES
from ui.room import handout
from ui.room import view as room_view
from ui.room.store import NotPresenter, SQLiteStore

LESSON = load_lessons()[0]["residuals"]
PATH = {p.url_path: p.path for p in PAGES}
QI = next(i for i, s in enumerate(LESSON.steps, 1) if s.predict and s.page == "gradient_flow")


def room_view_answer(seed: int):  # noqa: ANN201 - an Answer
    """The question step's answer at its own settings and ``seed``, computed here."""
    step = LESSON.steps[QI - 1]
    return MEASURES[step.predict.measure].at(dict(step.settings), seed)


@pytest.fixture
def store(tmp_path, monkeypatch):
    s = SQLiteStore(tmp_path / "rooms.sqlite3")
    monkeypatch.setattr(room_view, "_store", s)
    return s


def _presenter(app):
    at = app(PATH["workshop"]).run()
    at.checkbox(key="room:hide").uncheck()
    at.button(key="room:open").click().run()
    assert not at.exception, [e.value for e in at.exception]
    code, secret, lesson_id = at.session_state[room_view.HOST]
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
    at, code, secret = _presenter(app)
    assert len(at.get("image")) == 1
    link = at.code[0].value
    assert link.endswith(f"/workshop?join={code}")
    assert secret not in link and "secret" not in link
    assert store.room(code).step == 1


def test_participants_follow_vote_once_measure_with_their_seed(app, store):
    pres, code, secret = _presenter(app)
    people = [_join(app, code, name) for name in ("Ada", None, "[x](http://evil.example)")]
    seeds = [int(p.query_params["seed"]) for p in people]
    assert seeds == [1, 2, 3]
    for p in people:  # each landed on the room's step with the room in its URL
        assert p.query_params["room"] == code and p.query_params["step"] == "1"
        assert p.query_params["member"] != secret
    # The presenter moves to a question step; each participant's poll follows.
    pres.number_input(key="workshop:step").set_value(QI).run()
    assert store.room(code).step == QI
    step = LESSON.steps[QI - 1]
    for p in people:
        p.run()
        assert p.query_params["step"] == str(QI)
        assert step.title in [s.value for s in p.subheader]
        _follow(p)
        assert not p.exception
        assert not p.get("vega_lite_chart"), "the section waits for the vote"
    for p, choice in zip(people, ["plain", "residual", "residual"], strict=True):
        p.radio(key=f"room:vote:{code}:{QI}:1").set_value(choice).run()
        p.button(key="room:send:1").click().run()
        assert any("Waiting for the presenter" in i.value for i in p.info)
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
    assert room_view.HOST not in people[1].session_state
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
    assert "**Measured on their laptops (one seed each)**: 3 of 3 answered" in said
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
    pres.number_input(key="workshop:step").set_value(QI).run()
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
    assert room_view._ME not in at.session_state
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
    at = app(PATH["workshop"]).run()
    at.checkbox(key="room:hide").check()
    at.button(key="room:open").click().run()
    code, secret, _ = at.session_state[room_view.HOST]
    grace = _join(app, code, "Grace")
    _follow(grace)
    at.run()
    assert not any("Grace" in c.value for c in at.caption)
    assert "**1** joined" in " ".join(m.value for m in at.markdown)
    at.button(key="room:close").click().run()
    assert store.room(code).closed and room_view.HOST not in at.session_state
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
        assert html.escape(step.text) in page
    # Charts for the one question the room answered (predictions, measured); the
    # other questions say that no one answered.
    assert page.count("<svg") == 2
    unanswered = sum(1 for s in LESSON.steps if s.predict) - 1
    assert page.count("predictions: no answers.") == unanswered
    assert "The room&#x27;s predictions (1 answers)" in page
    assert "one seed each (1 answers)" in page


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
    pres.number_input(key="workshop:step").set_value(QI).run()
    p.run()
    _follow(p)
    assert LESSON.steps[QI - 1].title in [s.value for s in p.subheader]
    assert LESSON.steps[0].page != LESSON.steps[QI - 1].page
    p.switch_page(PATH[LESSON.steps[0].page]).run()  # the old page, the new step's URL
    assert LESSON.steps[QI - 1].title in [s.value for s in p.subheader]
