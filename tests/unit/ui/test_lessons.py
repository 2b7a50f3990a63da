"""Lesson files: parsed and checked against the pages' declared settings; each kind of
mistake refused with the file, the step and the field named; other lessons still load."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from ui.lessons import LessonError, answer_given_away, load_lessons, parse_lesson

MEASURES = frozenset({"offset_only"})
GOOD = """
title = "Positions"
summary = "Where a token stands."

[[steps]]
title = "The table"
page = "sinusoidal_encoding"
text = "Position $k$ gets a vector."
[steps.settings]
text = "I am a robot"
d = 8

[[steps]]
title = "Relative position"
page = "sinusoidal_encoding"
section = "Relative position"
text = "The dot product depends on the offset only."
[steps.settings]
positions = 50
k = 7
seed = 3
[steps.predict]
question = "Does PE(p).PE(q) depend on p itself?"
choices = ["only on p - q", "on p too"]
expect = "only on p - q"
measure = "offset_only"
"""


def _parse(text: str):
    return parse_lesson(Path("mine.toml"), text, MEASURES)


def test_a_good_lesson_parses_with_typed_values_and_links():
    lesson = _parse(GOOD)
    assert lesson.id == "mine" and len(lesson.steps) == 2
    first, second = lesson.steps
    assert dict(first.settings) == {"text": "I am a robot", "d": 8}
    assert second.predict.choices == ("only on p - q", "on p too")
    assert second.query("mine", 2) == {
        "positions": "50",
        "k": "7",
        "seed": "3",
        "section": "Relative position",
        "lesson": "mine",
        "step": "2",
    }


BAD = [
    ("title = 'x'\n[[steps]\n", "mine.toml: not valid TOML"),
    ("title = 'x'\n", "mine.toml: no steps"),
    ("title = 'x'\ncolour = 1\n[[steps]]\n", "mine.toml: unknown field 'colour'"),
    (
        "title='x'\n[[steps]]\ntitle='a'\npage='nope'\ntext='t'\n",
        "mine.toml, step 1, page: unknown page 'nope'",
    ),
    (
        "title='x'\n[[steps]]\ntitle='a'\npage='sinusoidal_encoding'\nsection='Nope'\ntext='t'\n",
        "mine.toml, step 1, section: sinusoidal_encoding has no section 'Nope'",
    ),
    (
        "title='x'\n[[steps]]\ntitle='a'\npage='sinusoidal_encoding'\ntext='t'\n"
        "[steps.settings]\nwidth=3\n",
        "mine.toml, step 1, settings.width: sinusoidal_encoding has no setting 'width'",
    ),
    (
        "title='x'\n[[steps]]\ntitle='a'\npage='sinusoidal_encoding'\ntext='t'\n"
        "[steps.settings]\nd=3\n",
        "mine.toml, step 1, settings.d: 3 refused (not one of 2, 4, 6",
    ),
    (
        "title='x'\n[[steps]]\ntitle='a'\npage='sinusoidal_encoding'\ntext='t'\n"
        "[steps.settings]\nd=400\n",
        "mine.toml, step 1, settings.d: 400 refused (outside 2 to 32)",
    ),
    (
        "title='x'\n[[steps]]\ntitle='a'\npage='sinusoidal_encoding'\ntext='t'\n"
        "[steps.settings]\nd='8'\n",
        "mine.toml, step 1, settings.d: '8' refused (not a whole number)",
    ),
    (
        "title='x'\n[[steps]]\ntitle='a'\npage='sinusoidal_encoding'\ntext='t'\n"
        "[steps.settings]\nk=5\n",
        "mine.toml, step 1, settings.k: belongs to section 'Relative position'",
    ),
    (
        "title='x'\n[[steps]]\ntitle='a'\npage='sinusoidal_encoding'\n",
        "mine.toml, step 1: `text` must be a non-empty string",
    ),
    (
        "title='x'\n[[steps]]\ntitle='a'\npage='sinusoidal_encoding'\ntext='t'\nextra=1\n",
        "mine.toml, step 1: unknown field 'extra'",
    ),
    (
        "title='x'\n[[steps]]\ntitle='a'\npage='sinusoidal_encoding'\ntext='t'\n"
        "[steps.predict]\nquestion='q'\nchoices=['a']\nexpect='a'\nmeasure='offset_only'\n",
        "mine.toml, step 1, predict.choices: 2 to 6 different",
    ),
    (
        "title='x'\n[[steps]]\ntitle='a'\npage='sinusoidal_encoding'\ntext='t'\n"
        "[steps.predict]\nquestion='q'\nchoices=['a','b']\nexpect='c'\nmeasure='offset_only'\n",
        "mine.toml, step 1, predict.expect: 'c' is not one of the choices",
    ),
    (
        "title='x'\n[[steps]]\ntitle='a'\npage='sinusoidal_encoding'\ntext='t'\n"
        "[steps.predict]\nquestion='q'\nchoices=['a','b']\nexpect='a'\nmeasure='guess'\n",
        "mine.toml, step 1, predict.measure: unknown measure 'guess'",
    ),
]


@pytest.mark.parametrize(("text", "message"), BAD, ids=[m.split(":")[0] + m[-20:] for _, m in BAD])
def test_each_mistake_is_named(text, message):
    with pytest.raises(LessonError) as exc:
        _parse(text)
    assert str(exc.value).startswith(message), str(exc.value)


# A question measured by a recipe (resviz.recipes.MEASURES): asked on the section that
# runs the recipe, with the measure's own choices.
QUESTION = (
    "title='x'\n[[steps]]\ntitle='a'\npage='sinusoidal_encoding'\nsection='{section}'\n"
    "text='t'\n[steps.predict]\nquestion='q'\nchoices={choices}\nexpect='on p too'\n"
    "measure='offset_only'\n"
)
RIGHT_CHOICES = "['on p too', 'only on p - q']"  # the measure's, in another order


def test_a_measured_question_on_its_recipes_section_parses():
    lesson = _parse(QUESTION.format(section="Relative position", choices=RIGHT_CHOICES))
    assert lesson.steps[0].predict.measure == "offset_only"


@pytest.mark.parametrize(
    ("section", "choices", "message"),
    [
        (
            "Table",
            RIGHT_CHOICES,
            "mine.toml, step 1, predict.measure: 'offset_only' reads the recipe "
            "positional.relative, but section 'Table' of sinusoidal_encoding runs "
            "positional.table",
        ),
        (
            "Relative position",
            "['on p too', 'only on p']",
            "mine.toml, step 1, predict.choices: 'offset_only' answers one of "
            "['only on p - q', 'on p too'], not ['on p too', 'only on p']",
        ),
        (
            "Relative position",
            "['on p too', 'only on p - q', 'neither']",
            "mine.toml, step 1, predict.choices: 'offset_only' answers one of",
        ),
    ],
)
def test_a_measure_must_read_its_sections_recipe_and_choices(section, choices, message):
    with pytest.raises(LessonError) as exc:
        _parse(QUESTION.format(section=section, choices=choices))
    assert str(exc.value).startswith(message), str(exc.value)


def test_the_shipped_lessons_pass_the_recipe_check():
    lessons, errors = load_lessons()
    assert not errors, errors
    assert any(
        s.predict and s.predict.measure == "gradflow_input_gradient"
        for s in lessons["residuals"].steps
    )


def test_second_step_is_named_in_the_message():
    text = GOOD.replace("k = 7", "k = 700")
    with pytest.raises(LessonError, match=r"mine.toml, step 2, settings.k: 700 refused"):
        _parse(text)


def test_a_broken_file_does_not_stop_the_others(tmp_path):
    (tmp_path / "good.toml").write_text(GOOD)
    (tmp_path / "broken.toml").write_text("title = 'x'\n[[steps]\n")
    (tmp_path / "binary.toml").write_bytes(b"\xff\xfe\x00")
    lessons, errors = load_lessons([tmp_path], MEASURES)
    assert list(lessons) == ["good"]
    assert len(errors) == 2
    assert any(e.startswith("broken.toml: not valid TOML") for e in errors)
    assert any(e.startswith("binary.toml: not UTF-8") for e in errors)


@pytest.mark.parametrize(("value", "url"), [("5", "5"), ("auto", "auto"), ("10", "10")])
def test_a_step_may_set_the_sidebars_seeds(value, url):
    text = GOOD.replace("seed = 3", f"seed = 3\nseeds = {value if value == 'auto' else int(value)}")
    text = text.replace("seeds = auto", 'seeds = "auto"')
    second = _parse(text).steps[1]
    assert second.query("mine", 2)["seeds"] == url


@pytest.mark.parametrize("bad", ["11", "0", '"many"', "2.5"])
def test_a_seeds_value_the_sidebar_cannot_hold_is_refused(bad):
    with pytest.raises(LessonError, match="seeds"):
        _parse(GOOD.replace("seed = 3", f"seed = 3\nseeds = {bad}"))


# ------------------------------------------------------------ a lesson that teaches
TIMED = (
    GOOD.replace(
        'summary = "Where a token stands."', 'summary = "x"\nslot = 12\nreferences = ["A (2016)."]'
    )
    .replace(
        'text = "Position $k$ gets a vector."', 'text = "Position $k$ gets a vector."\nminutes = 5'
    )
    .replace(
        'text = "The dot product depends on the offset only."',
        'text = "The dot product is a sum of cosines."\nminutes = 7\n'
        'explain = "Only on $p - q$: each term is $\\\\cos((p - q)\\\\omega_i)$."\n'
        'notes = "Expected: only on p - q. Wrong: on p too (say: expand the cosines)."',
    )
)


def test_minutes_explain_notes_slot_and_references_parse():
    lesson = _parse(TIMED)
    assert lesson.slot == 12 and lesson.references == ("A (2016).",)
    first, second = lesson.steps
    assert (first.minutes, second.minutes) == (5, 7)
    assert second.explain.startswith("Only on") and second.notes.startswith("Expected:")
    assert first.explain == "" and first.notes == ""


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            ("slot = 12", "slot = 13"),
            "mine.toml, slot: the steps' minutes sum to 12, not the slot's 13",
        ),
        (("slot = 12\n", ""), "mine.toml, step 1, minutes: the lesson declares no `slot`"),
        (("minutes = 5\n", ""), "mine.toml, step 1, minutes: the lesson's slot is 12 minutes"),
        (
            ("minutes = 5", 'minutes = "5"'),
            "mine.toml, step 1, minutes: `minutes` must be a number",
        ),
        (("minutes = 5", "minutes = -1"), "mine.toml, step 1, minutes: `minutes` must be a number"),
        (("slot = 12", "slot = true"), "mine.toml: `slot` must be a number"),
        (("minutes = 7", "minutes = 7\nhint = 'x'"), "mine.toml, step 2: unknown field 'hint'"),
        (('notes = "', "notes = 3 #"), "mine.toml, step 2: `notes` must be a non-empty string"),
        (('references = ["A (2016)."]', "references = [1]"), "mine.toml: `references` must be"),
    ],
    ids=["sum", "no-slot", "untimed", "text", "negative", "bool", "unknown", "notes", "refs"],
)
def test_a_timed_lesson_mistake_is_named(change, message):
    with pytest.raises(LessonError) as exc:
        _parse(TIMED.replace(*change))
    assert str(exc.value).startswith(message), str(exc.value)


def test_a_lesson_without_slot_or_minutes_still_loads():
    assert _parse(GOOD).slot is None


@pytest.mark.parametrize(
    ("where", "shown"),
    [("text", "The dot product depends ONLY on  P - Q here."), ("title", "Only on p - q")],
)
def test_a_question_whose_text_gives_the_answer_away_is_refused(where, shown):
    text = GOOD.replace("The dot product depends on the offset only.", "Dot products.")
    old = 'title = "Relative position"' if where == "title" else 'text = "Dot products."'
    text = text.replace(old, f'{where} = "{shown}"')
    with pytest.raises(LessonError) as exc:
        _parse(text)
    assert str(exc.value).startswith(
        f"mine.toml, step 2, {where}: gives the answer away: 'only on p - q' is read before the vote"
    ), str(exc.value)


def test_the_question_may_name_the_choices_and_other_words_may_contain_the_answer():
    assert not answer_given_away("plain", "It is explained; a plainly planar plain-text view.")
    assert answer_given_away("plain", "The Plain stack.")
    assert answer_given_away("all below 1", "all  below\n1, yes")
    assert not answer_given_away("all below 1", "all below 10")
    text = GOOD.replace("The dot product depends on the offset only.", "Dot products.")
    assert _parse(text).steps[1].predict.question.startswith("Does PE(p).PE(q)")


# ------------------------------------------------------------- the shipped lessons
SHIPPED, SHIPPED_ERRORS = load_lessons()
RESIDUALS = {k: v for k, v in SHIPPED.items() if k.startswith("residuals")}


def test_the_residuals_lessons_come_in_20_60_and_90_minutes_with_60_first():
    assert not SHIPPED_ERRORS, SHIPPED_ERRORS
    assert {k: v.slot for k, v in RESIDUALS.items()} == {
        "residuals_20": 20,
        "residuals": 60,
        "residuals_90": 90,
    }
    assert next(iter(SHIPPED)) == "residuals"  # the Workshop page's default
    for lesson in RESIDUALS.values():
        assert sum(s.minutes for s in lesson.steps) == lesson.slot
        questions = [s for s in lesson.steps if s.predict]
        # At most six in the hour (a question and its discussion take 6-9 minutes); the
        # 90-minute lesson adds the real model's test as a seventh.
        assert 2 <= len(questions) <= (7 if lesson.slot == 90 else 6), lesson.id
        assert all(s.explain and s.notes for s in questions), lesson.id
        assert lesson.references


def test_no_question_s_answer_is_in_the_text_shown_before_the_vote():
    """What the room reads before it votes is the step's title and text (the page and
    its settings come after the vote): the expected answer is in neither."""
    for lesson in SHIPPED.values():
        for i, step in enumerate(lesson.steps, 1):
            if step.predict is not None:
                for shown in (step.title, step.text):
                    assert not answer_given_away(step.predict.expect, shown), (lesson.id, i)


def test_a_step_shared_by_the_variants_is_the_same_step():
    """The 20- and 90-minute lessons reuse the 60-minute lesson's steps: a step of the
    same title is the same step everywhere (only its minutes differ)."""
    seen = {}
    for lesson in RESIDUALS.values():
        for step in lesson.steps:
            same = dataclasses.replace(step, minutes=None)
            assert seen.setdefault(step.title, same) == same, (lesson.id, step.title)
    main = {s.title for s in RESIDUALS["residuals"].steps}
    assert {s.title for s in RESIDUALS["residuals_20"].steps} <= main
    assert main <= {s.title for s in RESIDUALS["residuals_90"].steps}
