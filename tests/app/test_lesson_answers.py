"""Every lesson question, driven as a participant: the answer shown is the one the
section's recipe gives at the settings on screen; and every question gives its
expected answer at each of the seeds 0-9 (a room's participants measure with theirs).

For each question step of the shipped lessons, at first seed 0 (the section's default
3 seeds: seeds 0-2; ``RESVIZ_LESSON_SEEDS=3`` drives first seeds 0-2 too, seeds 0-4 in
all, as before `make test` was cut to 15 minutes; seed 0 alone for a recipe without
seeds): open the step's link,
predict, lock in, and read the measured answer; then play with a setting, then go
"Back to this step's settings", each time checking the shown answer against
the recipe at the settings on screen (through the shared cache) read by the measure."""

from __future__ import annotations

import dataclasses
import os
import re

import pytest

from resviz.core import recipe_name, settings_of
from resviz.recipes import MEASURES, RECIPES
from tests.app.conftest import run_section_in_background
from ui.lessons import load_lessons
from ui.registry import PAGES
from ui.section import run_recipe
from ui.specs import SHARED, seeds_count
from ui.specs.pages import PAGE_NAMES, spec_of

LESSONS, _ = load_lessons()
# Each distinct question once: the 20- and 90-minute lessons reuse the 60-minute
# lesson's steps (tests/unit/ui/test_lessons.py checks that they are the same).
QUESTIONS = list(
    {
        dataclasses.replace(step, minutes=None): (lid, i)
        for lid, lesson in reversed(LESSONS.items())
        for i, step in reversed(list(enumerate(lesson.steps, 1)))
        if step.predict is not None
    }.values()
)[::-1]
PATH = {p.url_path: p.path for p in PAGES}
# First seed 0: at the sections' default Seeds (3) the run measures seeds 0-2. The
# answer's path from the page is the same at every seed, and every answer is checked at
# seeds 0-9 by the recipe itself (test_every_question_has_one_answer_at_seeds_0_to_9);
# RESVIZ_LESSON_SEEDS=3 drives first seeds 0-2 through the page as well.
SEEDS = range(int(os.environ.get("RESVIZ_LESSON_SEEDS", "1")))
SHOWN = re.compile(r"Measured: \*\*(.+?)\*\*")


def _section(step) -> str:  # noqa: ANN001
    return step.section or spec_of(step.page).sections[0]


def _on_screen(at, step) -> dict:  # noqa: ANN001
    """The settings the page's widgets hold now, by URL name."""
    spec = spec_of(step.page)
    names = settings_of(MEASURES[step.predict.measure].recipe)
    out = {}
    for name in names:
        if name == "seed":
            continue
        if name == "seeds":  # the sidebar's (shared), auto: the section's own default
            choice = at.session_state["seeds"] if "seeds" in at.session_state else "auto"
            out[name] = seeds_count(str(choice), int(names[name]))
            continue
        key = name
        out[name] = at.session_state[key] if key in at.session_state else spec.param(name).default
    return out


def _shown(at) -> str:  # noqa: ANN001
    run_section_in_background(at)
    text = " ".join(x.value for x in [*at.success, *at.warning])
    found = SHOWN.findall(text)
    assert len(found) == 1, text
    return found[0].strip("`")


def test_every_page_section_recipe_takes_the_page_settings():
    """A section's recipe is registered and its settings are the page's URL names."""
    for page in PAGE_NAMES:
        spec = spec_of(page)
        for section, name in spec.recipes.items():
            assert name in RECIPES, (page, section, name)
            unknown = set(settings_of(RECIPES[name])) - spec.names - SHARED.names
            assert not unknown, (page, section, sorted(unknown))


@pytest.mark.parametrize(("lesson_id", "index"), QUESTIONS, ids=[f"{a}-{b}" for a, b in QUESTIONS])
def test_question_reads_its_sections_recipe(lesson_id, index):
    step = LESSONS[lesson_id].steps[index - 1]
    m = MEASURES[step.predict.measure]
    assert spec_of(step.page).recipes.get(_section(step)) == recipe_name(m.recipe)
    assert set(step.predict.choices) == set(m.choices)
    assert step.predict.expect in m.choices


def _settings(step) -> dict:  # noqa: ANN001
    """The recipe's settings as a room participant's measurement takes them
    (``lesson_view._step_call``): the page's defaults, then the step's."""
    spec = spec_of(step.page)
    names = settings_of(MEASURES[step.predict.measure].recipe)
    settings = {n: spec.param(n).default for n in names if spec.param(n)}
    settings.update((k, v) for k, v in step.settings if k in settings)
    return settings


@pytest.mark.parametrize(("lesson_id", "index"), QUESTIONS, ids=[f"{a}-{b}" for a, b in QUESTIONS])
def test_every_question_has_one_answer_at_seeds_0_to_9(lesson_id, index):
    """A room measures each participant with their own seed (1, 2, 3, ...): a
    question whose answer split across seeds would show the room two answers. One
    call over seeds 0-9 (the recipes' batched path where they have one), read
    seed by seed; a recipe without seeds gives one answer for every seed."""
    step = LESSONS[lesson_id].steps[index - 1]
    m = MEASURES[step.predict.measure]
    settings = _settings(step)
    if "seeds" in settings_of(m.recipe):
        settings["seeds"] = 10
    result = m.recipe(**settings, seed=0)
    answers = [m.read(r).answer for r in result.per_seed]
    assert len(answers) == (10 if "seeds" in settings else 1)
    assert set(answers) == {step.predict.expect}, [m.read(r).sentence for r in result.per_seed]


def _change(at, step) -> None:  # noqa: ANN001
    """Move one of the recipe's numeric or choice settings off the step's value."""
    spec = spec_of(step.page)
    # The model picker last: another checkpoint may not run the section at all (a model
    # of one block has none to delete and heal), and then nothing is measured.
    names = sorted(settings_of(MEASURES[step.predict.measure].recipe), key=lambda n: n == "model")
    for name in names:
        p = spec.param(name)
        if p is None or p.kind not in ("int", "choice", "bool"):
            continue
        key = name
        current = at.session_state[key] if key in at.session_state else p.default
        if p.kind == "int":
            other = int(p.lo) if current != p.lo else int(p.lo + (p.step or 1))
            at.slider(key=key).set_value(other).run() if at.get("slider") and any(
                s.key == key for s in at.slider
            ) else at.number_input(key=key).set_value(other).run()
        elif p.kind == "choice":
            # The first other option the section can run at (the demo encoder has no
            # head to patch: the page says so, and measures nothing).
            other = next(o for o in p.options if o != current and _runs(step, name, o))
            widgets = [w for w in [*at.selectbox, *at.radio] if w.key == key]
            widgets[0].set_value(other).run()
        else:
            [w for w in at.toggle if w.key == key][0].set_value(not current).run()
        return
    # A recipe without settings of its own (the depth ladder runs on the models it
    # ships): nothing on screen can change its answer.


def _runs(step, name: str, value: object) -> bool:  # noqa: ANN001
    m = MEASURES[step.predict.measure]
    try:
        m.recipe(**{**_settings(step), name: value}, seed=0)
    except Exception:  # noqa: BLE001 - any refusal: the page shows it, measures nothing
        return False
    return True


def _seeded(lesson_id: str, index: int) -> bool:
    step = LESSONS[lesson_id].steps[index - 1]
    return "seeds" in settings_of(MEASURES[step.predict.measure].recipe)


# A recipe without seeds (a trained checkpoint's) gives one result at every seed: its
# question is driven at seed 0 only.
DRIVEN = [(lid, i, s) for lid, i in QUESTIONS for s in (SEEDS if _seeded(lid, i) else [0])]


@pytest.mark.parametrize(
    ("lesson_id", "index", "seed"), DRIVEN, ids=[f"{a}-{b}-{c}" for a, b, c in DRIVEN]
)
def test_participant_sees_the_answer_of_the_settings_on_screen(app, lesson_id, index, seed):
    step = LESSONS[lesson_id].steps[index - 1]
    m = MEASURES[step.predict.measure]
    at = app(PATH[step.page], **step.query(lesson_id, index), seed=str(seed)).run()
    at.radio(key=f"lesson:choice:{lesson_id}:{index}").set_value(step.predict.choices[0]).run()
    at.button(key="lesson:lock").click().run()
    assert not at.exception, [e.value for e in at.exception]

    def check() -> None:
        settings = {**_on_screen(at, step), "seed": seed}
        # The recipe at exactly these settings, through the app's shared cache: where
        # the page ran it with these settings this is its result, and where it did not
        # (a stale or default setting) this computes the right one and the check fails.
        result, _ = run_recipe(recipe_name(m.recipe), tuple(sorted(settings.items())), "cpu")
        assert _shown(at) == m.over(result).answer, settings

    check()
    _change(at, step)
    check()
    at.button(key="lesson:reset").click().run()
    for name, value in step.settings:
        if not SHARED.param(name):
            assert at.session_state[name] == value
    check()
