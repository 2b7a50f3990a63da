"""Workshop mode in AppTest: every shipped lesson step opens with its settings, the
presenter's page moves through a lesson and opens a step, a participant predicts
before the measurement is shown and gets back to the step's settings."""

from __future__ import annotations

import dataclasses

import pytest

from tests.app.conftest import assert_no_notes, page_text, run_section_in_background
from ui.lessons import load_lessons
from ui.registry import PAGES
from ui.specs.pages import spec_of

LESSONS, ERRORS = load_lessons()
# Each distinct step once: the 20- and 90-minute lessons reuse the 60-minute lesson's
# steps (tests/unit/ui/test_lessons.py checks that a shared step is the same step).
STEPS = list(
    {
        dataclasses.replace(step, minutes=None): (lid, i)
        for lid, lesson in reversed(LESSONS.items())
        for i, step in reversed(list(enumerate(lesson.steps, 1)))
    }.values()
)[::-1]
PATH = {p.url_path: p.path for p in PAGES}


def test_shipped_lessons_load_without_errors():
    assert not ERRORS, ERRORS
    assert next(iter(LESSONS)) == "residuals"  # the Workshop page's default
    assert 8 <= len(LESSONS["residuals"].steps) <= 12
    # The built-in lesson is about residual connections, across the pages that show them.
    assert {s.page for s in LESSONS["residuals"].steps} == {
        "skip_connections",
        "gradient_flow",
        "normalization",
        "encoder_playground",
    }


def _open_step(app, lesson_id: str, index: int):
    step = LESSONS[lesson_id].steps[index - 1]
    return step, app(PATH[step.page], **step.query(lesson_id, index)).run()


@pytest.mark.parametrize(("lesson_id", "index"), STEPS, ids=[f"{a}-{b}" for a, b in STEPS])
def test_every_lesson_step_opens_with_its_settings(app, lesson_id, index):
    step, at = _open_step(app, lesson_id, index)
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert not at.warning, [w.value for w in at.warning]
    assert step.title in [s.value for s in at.subheader]
    spec = spec_of(step.page)
    # A step with a question holds its section back until a prediction is locked in.
    if step.predict:
        assert any("Lock in a prediction" in i.value for i in at.info)
        assert not at.get("vega_lite_chart")
        at.radio(key=f"lesson:choice:{lesson_id}:{index}").set_value(step.predict.choices[0]).run()
        at.button(key="lesson:lock").click().run()
        assert not at.exception, [e.value for e in at.exception]
        run_section_in_background(at)  # a training section: press its start button
        shown = " ".join(x.value for x in [*at.success, *at.warning])
        assert "Measured: " in shown
        if step.explain:  # the why, once the answer is shown
            assert step.explain in [m.value for m in at.markdown]
    # A participant's page (this is one) never shows the presenter's notes.
    assert_no_notes(at, step)
    for name, value in step.settings:
        key = name
        shown = at.session_state[key]
        want = spec.param(name).check(value) if spec.param(name) else value
        assert shown == want, (name, shown, want)
    if step.section:
        # The first section is the default, which the URL leaves out.
        assert at.query_params.get("section", spec.sections[0]) == step.section


def test_predict_then_measure_and_back_to_the_step(app):
    lesson = LESSONS["residuals"]
    index = next(
        i for i, s in enumerate(lesson.steps, 1) if s.page == "gradient_flow" and s.predict
    )
    step, at = _open_step(app, "residuals", index)
    assert not at.get("vega_lite_chart")
    at.radio(key=f"lesson:choice:residuals:{index}").set_value("residual").run()
    at.button(key="lesson:lock").click().run()
    assert not at.exception
    # The measured answer comes from the data on screen: plain at the step's settings
    # (Xavier init and a LayerNorm: the lesson's twist).
    said = " ".join(w.value for w in at.warning)
    assert "You predicted" in said and "Measured: **`plain`**" in said
    # Then the why, after the answer; never the presenter's notes.
    assert step.explain in [m.value for m in at.markdown]
    assert_no_notes(at, step)
    assert at.get("vega_lite_chart"), "the section is shown once a prediction is locked in"
    # A participant plays with the settings, then comes back to the step's.
    at.slider(key="depth").set_value(5).run()
    assert at.slider(key="depth").value == 5
    at.button(key="lesson:reset").click().run()
    assert at.slider(key="depth").value == dict(step.settings)["depth"]


def test_measured_answer_follows_the_settings_on_screen(app):
    """If a setting turns the expected answer around, the page says what was measured."""
    lesson = LESSONS["residuals"]
    index = next(
        i
        for i, s in enumerate(lesson.steps, 1)
        if s.predict and s.predict.measure == "gradflow_scaled_shortcut"
    )
    step, at = _open_step(app, "residuals", index)
    at.radio(key=f"lesson:choice:residuals:{index}").set_value("shrinks").run()
    at.button(key="lesson:lock").click().run()
    assert "Measured: " in " ".join(s.value for s in at.success)  # as the lesson expects
    at.slider(key="l").set_value(1.5).run()
    text = " ".join(w.value for w in at.warning)
    assert "Measured: " in text and "grows" in text
    assert any("the measurement says otherwise" in c.value for c in at.caption)


def test_presenter_steps_through_and_opens_a_step(app):
    at = app(PATH["workshop"]).run()
    assert not at.exception
    assert at.get("image"), "no QR code"
    link = at.code[0].value
    assert "lesson=residuals" in link and "step=1" in link
    at.button(key="workshop:next").click().run()
    assert at.number_input(key="step").value == 2
    assert "step=2" in at.code[0].value
    at.button(key="workshop:open").click().run()
    assert not at.exception
    second = LESSONS["residuals"].steps[1]
    assert second.title in [s.value for s in at.subheader]
    assert at.query_params["lesson"] == "residuals"


def test_projector_mode_enlarges_charts(app):
    from ui import projector

    at = app(PATH["workshop"], projector="true").run()
    assert at.session_state[projector.KEY] is True
    spec = {"config": {"axis": {"labelFontSize": 14}}}
    assert projector.scale_chart(spec)["config"]["axis"]["labelFontSize"] == round(
        14 * projector.SCALE, 1
    )
    assert spec["config"]["axis"]["labelFontSize"] == 14  # the memoised spec is untouched


def test_a_broken_teacher_lesson_is_reported_and_the_others_still_load(app, tmp_path, monkeypatch):
    (tmp_path / "mine.toml").write_text(
        "title = 'x'\n[[steps]]\ntitle='a'\npage='nope'\ntext='t'\n"
    )
    monkeypatch.setenv("RESVIZ_LESSONS", str(tmp_path))
    from ui import lesson_view

    lesson_view.lessons.clear()
    at = app(PATH["workshop"]).run()
    lesson_view.lessons.clear()
    errors = " ".join(e.value for e in at.error)
    assert "mine.toml" in errors and "step 1" in errors and "page" in errors
    assert at.code and "lesson=residuals" in at.code[0].value


def test_the_workshop_page_shows_minutes_and_no_answer_without_a_room(app):
    """Anyone can open the Workshop page (a participant too, by its URL): without a
    room, nobody there is known to present, so the step's notes, its expected answer,
    its why and a Reveal are not sent (a room's presenter gets them:
    tests/app/test_workshop_room.py)."""
    lesson = LESSONS["residuals"]
    index = next(i for i, s in enumerate(lesson.steps, 1) if s.predict)
    step = lesson.steps[index - 1]
    at = app(PATH["workshop"], step=str(index)).run()
    assert not at.exception
    assert_no_notes(at, step)
    assert not [e for e in at.expander if e.label.startswith(("Presenter notes", "Reveal"))]
    text = page_text(at)
    assert step.explain not in text and "Measured with" not in text
    assert f"**Predict first:** {step.predict.question}" in [m.value for m in at.markdown]
    assert any("once you open the lesson as a room" in c.value for c in at.caption)
    assert any(f"About {step.minutes:g} minutes." in c.value for c in at.caption)
    assert any("A 60-minute slot." in c.value for c in at.caption)
    steps = " ".join(m.value for m in at.markdown)
    assert f"({lesson.steps[0].minutes:g} min)" in steps
    # A step without a question: its why folded away for after the discussion.
    at.number_input(key="step").set_value(1).run()
    why = [e for e in at.expander if e.label.startswith("Why")]
    assert why and lesson.steps[0].explain in [m.value for m in why[0].markdown]
    assert_no_notes(at, lesson.steps[0])
