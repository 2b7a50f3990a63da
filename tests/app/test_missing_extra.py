"""A missing optional part never crashes a page: with the pretrained models' packages
(transformers, safetensors: the library's `pretrained` extra) unimportable, the
Pretrained page says so in one line, and the lesson step on it (the shipped lesson's
last, "the same test on a real trained model") shows that line in place of its
section or its measurement, in the lesson view and for a room's participant, while the
lesson and the room go on (the Workshop page measures nothing before a room's Reveal).

The packages are hidden for the test only: ``None`` in ``sys.modules`` makes an
import raise ModuleNotFoundError and ``importlib.util.find_spec`` (what
``resviz.pretrained.require_extra`` asks) return None; the real modules are put
back afterwards. AppTest runs the app in this process, so it sees the same."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import json
import sys

import pytest

from ui import lesson_state, section
from ui.lessons import Step, load_lessons
from ui.registry import PAGES
from ui.room import view as room_view
from ui.room.store import SQLiteStore

HIDDEN = ("transformers", "safetensors")
PATH = {p.url_path: p.path for p in PAGES}
# The shipped lesson with a question on the Pretrained page (the 90-minute one).
LESSON_ID = "residuals_90"
SHIPPED = load_lessons()[0][LESSON_ID]
AT = next(i for i, s in enumerate(SHIPPED.steps, 1) if s.page == "pretrained")
STEP = SHIPPED.steps[AT - 1]  # on the Pretrained page, measured through a recipe
N = len(SHIPPED.steps)
SAYS = "needs the pretrained models' packages (transformers, safetensors)"
HINT = "`pip install -r requirements.txt`"


@pytest.fixture(autouse=True)
def without_extra(monkeypatch):
    """transformers and safetensors unimportable, and no result computed with them
    earlier in this process served from a cache."""
    for name in list(sys.modules):
        if name.split(".")[0] in HIDDEN:
            monkeypatch.delitem(sys.modules, name)
    for name in HIDDEN:
        monkeypatch.setitem(sys.modules, name, None)
        assert importlib.util.find_spec(name) is None
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(name)
    section.run_recipe.clear()
    section.run_recipe_large.clear()
    yield
    section.run_recipe.clear()
    section.run_recipe_large.clear()


def said(at) -> list[str]:
    """Every message on the page that says the packages are missing."""
    boxes = [*at.warning, *at.error, *at.info, *at.success, *at.caption, *at.markdown]
    return [b.value for b in boxes if SAYS in b.value]


def clean(at) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def test_the_shipped_step_is_measured_on_the_pretrained_page():
    assert STEP.page == "pretrained" and STEP.predict is not None
    assert STEP.predict.measure == "pretrained_rank_collapse"


def test_pretrained_page_says_it_once_in_the_open_section(app):
    at = app(PATH["pretrained"]).run()
    clean(at)
    lines = said(at)
    assert len(lines) == 1, lines
    assert lines[0].startswith("This section needs") and HINT in lines[0]
    assert "[pretrained]" not in lines[0]  # the library's hint, not the app's
    assert [w.value for w in at.warning] == lines  # a warning, one line
    assert not [i for i in at.info if "Load a model" in i.value]
    # Another section: the same one line, still once.
    at.session_state["section"] = STEP.section
    at.query_params["section"] = STEP.section
    at.run()
    clean(at)
    assert len(said(at)) == 1


def test_presenter_at_the_shipped_step(app):
    at = app(PATH["workshop"], lesson=LESSON_ID, step=str(AT), projector="true").run()
    clean(at)
    assert f"Step {AT} of {N}: {STEP.title}" in [s.value for s in at.subheader]
    markdown = [m.value for m in at.markdown]
    assert f"**Predict first:** {STEP.predict.question}" in markdown  # the question stays
    # Without a room nothing is measured here (no answer before a vote), so nothing
    # is missing yet: the question and its choices, and no line about the extra.
    assert said(at) == []
    assert not [m for m in markdown if m.startswith("Measured with")]
    at.button(key="workshop:prev").click().run()
    clean(at)
    assert at.number_input(key="step").value == AT - 1


def test_lesson_view_at_the_shipped_step(app):
    at = app(PATH["pretrained"], **STEP.query(LESSON_ID, AT)).run()
    clean(at)
    assert STEP.title in [s.value for s in at.subheader]
    at.radio(key=f"lesson:choice:{LESSON_ID}:{AT}").set_value(STEP.predict.choices[0]).run()
    at.button(key="lesson:lock").click().run()
    clean(at)
    assert any(STEP.predict.question in m.value for m in at.markdown)
    assert any("Your prediction" in i.value for i in at.info)
    lines = said(at)
    assert len(lines) == 1 and HINT in lines[0], lines
    at.button(key="lesson:prev").click().run()
    clean(at)
    assert at.query_params["step"] == str(AT - 1)


def _toml_step(step: Step) -> str:
    """A lesson step as TOML (JSON strings are TOML basic strings)."""
    out = ["[[steps]]"]
    out += [f"{k} = {json.dumps(getattr(step, k))}" for k in ("title", "page", "text")]
    # Minutes belong to a lesson with a slot; a teacher's lesson here has none.
    out += [
        f"{k} = {json.dumps(getattr(step, k))}" for k in ("explain", "notes") if getattr(step, k)
    ]
    if step.section:
        out.append(f"section = {json.dumps(step.section)}")
    if step.settings:
        out.append("[steps.settings]")
        out += [f"{k} = {json.dumps(v)}" for k, v in step.settings]
    if step.predict:
        p = step.predict
        out.append("[steps.predict]")
        out += [f"{k} = {json.dumps(getattr(p, k))}" for k in ("question", "expect", "measure")]
        out.append(f"choices = {json.dumps(list(p.choices))}")
    return "\n".join(out) + "\n"


@pytest.fixture
def first_then_more(tmp_path, monkeypatch):
    """A teacher's lesson whose first step is the shipped pretrained step, then the
    shipped lesson's first step: the lesson must go on after it (Next)."""
    body = 'title = "A real model first"\nsummary = "Then a toy."\n\n'
    body += _toml_step(STEP) + "\n" + _toml_step(SHIPPED.steps[0])
    (tmp_path / "pretrained_first.toml").write_text(body, encoding="utf-8")
    monkeypatch.setenv("RESVIZ_LESSONS", str(tmp_path))
    lesson_state.lessons.clear()
    lesson = lesson_state.lessons()[0]["pretrained_first"]
    untimed = tuple(dataclasses.replace(s, minutes=None) for s in (STEP, SHIPPED.steps[0]))
    assert lesson.steps == untimed
    yield lesson
    lesson_state.lessons.clear()


def test_next_goes_on_from_the_step(app, first_then_more):
    at = app(PATH["workshop"], lesson="pretrained_first", step="1").run()
    clean(at)
    assert said(at) == []  # nothing measured on this page without a room
    at.button(key="workshop:next").click().run()
    clean(at)
    assert at.number_input(key="step").value == 2
    # The lesson view on the page itself.
    at = app(PATH["pretrained"], **STEP.query("pretrained_first", 1)).run()
    clean(at)
    at.button(key="lesson:next").click().run()
    clean(at)
    assert at.query_params["step"] == "2"


@pytest.fixture
def store(tmp_path, monkeypatch):
    s = SQLiteStore(tmp_path / "rooms.sqlite3")
    monkeypatch.setattr(room_view, "_store", s)
    return s


def test_a_room_goes_on_past_the_step(app, store, first_then_more):
    pres = app(PATH["workshop"], lesson="pretrained_first", step="1").run()
    pres.button(key="room:open").click().run()
    clean(pres)
    code, _, lesson_id = pres.session_state[room_view.SESSION].host
    assert lesson_id == "pretrained_first"
    p = app(PATH["workshop"], join=code).run()
    p.button(key="room:join").click().run()
    p.switch_page(PATH["pretrained"]).run()  # where the join took them
    clean(p)
    assert p.query_params["step"] == "1" and p.query_params["room"] == code
    p.radio(key=f"room:vote:{code}:1:1").set_value(STEP.predict.choices[0]).run()
    p.button(key="room:send:1").click().run()
    clean(p)
    pres.run()
    pres.button(key="room:reveal").click().run()
    clean(pres)
    p.run()
    clean(p)
    # The question stays; the one line stands in place of the measurement and of the
    # section (held back: it would need the same packages); nothing reaches the room.
    assert any(STEP.predict.question in m.value for m in p.markdown)
    lines = said(p)
    assert lines == [f"Measuring this step {SAYS}: install them with {HINT} in the checkout."]
    assert not [s for s in p.success if "Measured with your seed" in s.value]
    assert store.measures(code, 1) == {}
    p.run()  # the poll does not rerun the page for a measure that cannot come
    clean(p)
    # The presenter goes on; the participant follows.
    pres.button(key="workshop:next").click().run()
    clean(pres)
    assert store.room(code).step == 2
    p.run()
    assert p.query_params["step"] == "2"
    p.switch_page(PATH[SHIPPED.steps[0].page]).run()
    clean(p)
    assert SHIPPED.steps[0].title in [s.value for s in p.subheader]
