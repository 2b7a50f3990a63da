"""Workshop lessons: ordered steps read from TOML files, checked against the pages.

A lesson is a small file in ``lessons/`` (or the folder ``RESVIZ_LESSONS`` names)::

    title = "Why residual connections work"
    summary = "One sentence shown in the lesson list."

    [[steps]]
    title = "Gradients through a plain stack"
    page = "gradient_flow"          # a page's url path
    section = "Per layer"           # one of its sections (optional: the first)
    text = '''Two to four sentences of Markdown; $formulas$ allowed.'''
    [steps.settings]                # URL settings of that page, by their URL names
    depth = 30
    act = "sigmoid"
    seeds = 5                       # the sidebar's too: how many seeds each section runs
    [steps.predict]                 # optional: predict first, then measure
    question = "At block 1, whose gradient is larger?"
    choices = ["plain", "residual"]
    expect = "residual"             # what the lesson's author expects
    measure = "input_gradient_larger"   # computes the answer from the data shown

A step may also carry ``minutes`` (its share of the lesson's ``slot``), ``explain``
(the why: shown after the reveal, and in the handout) and ``notes`` (the presenter's
alone: the expected answer, typical wrong answers and what to say, a follow-up); a
question may carry an ``exercise``, the handout's take-home task beside a notebook
that measures the question (:func:`question_call`).
A lesson that declares ``slot = 60`` must give every step its minutes, summing to
the slot; ``references`` lists the works it cites (shown in the handout).

Every name and value is checked exactly as the page would check it from a URL
(``ui/specs``), so a step cannot open a page with a setting the page would refuse.
A file that fails is refused with a message naming the file, the step and the
field; the other lessons still load. A question's measure must read the recipe of
the step's section, with the same choices; its answer is what the seeds agree on, by
the captions' rule (``Measure.over``), with how many seeds give it. Nothing here imports torch until a
question is checked (its measure's registry, ``resviz.recipes``, does).
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .specs import SHARED, InvalidParam, fmt
from .specs.pages import PAGE_NAMES, spec_of

ROOT = Path(__file__).resolve().parents[1]
LESSONS_DIR = ROOT / "lessons"
MAX_BYTES = 200_000
MAX_STEPS = 60
STEP_FIELDS = {
    "title",
    "page",
    "section",
    "text",
    "settings",
    "predict",
    "minutes",
    "explain",
    "notes",
    "exercise",
}
PREDICT_FIELDS = {"question", "choices", "expect", "measure"}
LESSON_FIELDS = {"title", "summary", "slot", "references", "steps"}
MAX_MINUTES = 240


@dataclass(frozen=True)
class Predict:
    question: str
    choices: tuple[str, ...]
    expect: str
    measure: str


@dataclass(frozen=True)
class Step:
    title: str
    page: str
    section: str | None
    text: str
    settings: tuple[tuple[str, Any], ...] = ()
    predict: Predict | None = None
    minutes: float | None = None
    explain: str = ""  # the why: after the reveal, and in the handout
    notes: str = ""  # the presenter's alone: never shown to a participant
    exercise: str = ""  # a question's take-home exercise, in the handout with its notebook

    def query(self, lesson_id: str, index: int) -> dict[str, str]:
        """The URL parameters that open this step (``index`` counts from 1)."""
        q = {name: fmt(value) for name, value in self.settings}
        if self.section:
            q["section"] = self.section
        q.update(lesson=lesson_id, step=str(index))
        return q


@dataclass(frozen=True)
class Lesson:
    id: str  # the file's stem
    title: str
    summary: str
    steps: tuple[Step, ...]
    path: str = field(compare=False, default="")
    slot: float | None = None  # minutes: the steps' minutes sum to it
    references: tuple[str, ...] = ()


class LessonError(ValueError):
    """A lesson file that cannot be used: says which file, step and field."""


def _where(path: Path, step: int | None = None, name: str | None = None) -> str:
    out = path.name
    if step is not None:
        out += f", step {step}"
    if name is not None:
        out += f", {name}"
    return out


def _text(d: dict[str, Any], key: str, where: str, limit: int, required: bool = True) -> str:
    value = d.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or not value.strip():
        raise LessonError(f"{where}: `{key}` must be a non-empty string")
    if len(value) > limit:
        raise LessonError(f"{where}: `{key}` is longer than {limit} characters")
    return value.strip()


def parse_step(path: Path, index: int, raw: Any, measures: frozenset[str]) -> Step:
    where = _where(path, index)
    if not isinstance(raw, dict):
        raise LessonError(f"{where}: a step must be a table ([[steps]])")
    extra = sorted(set(raw) - STEP_FIELDS)
    if extra:
        raise LessonError(f"{where}: unknown field {extra[0]!r} (fields: {sorted(STEP_FIELDS)})")
    title = _text(raw, "title", where, 120)
    page = raw.get("page")
    if page not in PAGE_NAMES:
        raise LessonError(
            f"{_where(path, index, 'page')}: unknown page {page!r} (pages: {', '.join(PAGE_NAMES)})"
        )
    spec = spec_of(page)
    section = raw.get("section")
    if section is not None and section not in spec.sections:
        raise LessonError(
            f"{_where(path, index, 'section')}: {page} has no section {section!r} "
            f"(sections: {', '.join(spec.sections) or 'none'})"
        )
    text = _text(raw, "text", where, 2000)
    settings_raw = raw.get("settings", {})
    if not isinstance(settings_raw, dict):
        raise LessonError(f"{_where(path, index, 'settings')}: must be a table")
    settings = []
    for name, value in settings_raw.items():
        decl = spec.param(name) or SHARED.param(name)
        if decl is None:
            raise LessonError(
                f"{_where(path, index, 'settings.' + name)}: {page} has no setting {name!r}"
            )
        try:
            checked = decl.check(value)
        except InvalidParam as exc:
            raise LessonError(
                f"{_where(path, index, 'settings.' + name)}: {value!r} refused ({exc})"
            ) from None
        if decl.section is not None and decl.section != (section or spec.sections[0]):
            raise LessonError(
                f"{_where(path, index, 'settings.' + name)}: belongs to section "
                f"{decl.section!r}, not the step's"
            )
        settings.append((name, checked))
    predict = None
    if "predict" in raw:
        predict = parse_predict(path, index, raw["predict"], measures)
        check_given_away(path, index, title, text, predict)
        check_measure(path, index, page, section or spec.sections[0], predict)
    minutes = _minutes(raw.get("minutes"), _where(path, index, "minutes"))
    explain = _text(raw, "explain", where, 2000, required=False)
    notes = _text(raw, "notes", where, 4000, required=False)
    exercise = _text(raw, "exercise", where, 1000, required=False)
    if exercise and predict is None:
        raise LessonError(f"{where}: an exercise belongs to a question (its notebook measures it)")
    return Step(
        title, page, section, text, tuple(settings), predict, minutes, explain, notes, exercise
    )


def _minutes(value: Any, where: str, name: str = "minutes") -> float | None:
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not 0 < value <= MAX_MINUTES
    ):
        raise LessonError(f"{where}: `{name}` must be a number of minutes from 0 to {MAX_MINUTES}")
    return float(value)


def answer_given_away(answer: str, shown: str) -> bool:
    """Whether ``answer`` (a choice) stands in ``shown`` as a word or phrase of its
    own (case and spacing aside): "plain" in "a plain stack", not in "explained"."""
    words = [re.escape(w) for w in answer.split()]
    if not words:
        return False
    pattern = r"(?<![\w-])" + r"\s+".join(words) + r"(?![\w-])"
    return re.search(pattern, shown, flags=re.IGNORECASE) is not None


def check_given_away(path: Path, index: int, title: str, text: str, predict: Predict) -> None:
    """Refuse a question whose expected answer the room reads before it votes (the
    step's title and text): the vote would not split, and nothing would be
    predicted. The question itself may name every choice."""
    for name, shown in (("title", title), ("text", text)):
        if answer_given_away(predict.expect, shown):
            raise LessonError(
                f"{_where(path, index, name)}: gives the answer away: {predict.expect!r} "
                "is read before the vote (say it in `explain`, shown after the reveal)"
            )


def check_measure(path: Path, index: int, page: str, section: str, predict: Predict) -> None:
    """A question measured by a recipe (``resviz.recipes.MEASURES``) must be asked on
    the section that runs that recipe (``ui/specs``: the page's ``recipes``), and offer
    exactly the measure's choices: the answer is read from what the section shows.
    A name that is not a measure was refused by :func:`parse_predict` already."""
    from resviz.core import recipe_name
    from resviz.recipes import MEASURES  # imports torch: only once a question is checked

    m = MEASURES.get(predict.measure)
    if m is None:
        return
    where = _where(path, index, "predict")
    reads, runs = recipe_name(m.recipe), spec_of(page).recipes.get(section)
    if runs != reads:
        raise LessonError(
            f"{where}.measure: {predict.measure!r} reads the recipe {reads}, but section "
            f"{section!r} of {page} runs {runs or 'no recipe'}"
        )
    if set(predict.choices) != set(m.choices):
        raise LessonError(
            f"{where}.choices: {predict.measure!r} answers one of {list(m.choices)}, "
            f"not {list(predict.choices)}"
        )


def parse_predict(path: Path, index: int, raw: Any, measures: frozenset[str]) -> Predict:
    where = _where(path, index, "predict")
    if not isinstance(raw, dict):
        raise LessonError(f"{where}: must be a table")
    extra = sorted(set(raw) - PREDICT_FIELDS)
    if extra:
        raise LessonError(f"{where}: unknown field {extra[0]!r}")
    question = _text(raw, "question", where, 300)
    choices = raw.get("choices")
    if (
        not isinstance(choices, list)
        or not 2 <= len(choices) <= 6
        or not all(isinstance(c, str) and c.strip() for c in choices)
        or len(set(choices)) != len(choices)
    ):
        raise LessonError(f"{where}.choices: 2 to 6 different, non-empty strings")
    expect = raw.get("expect")
    if expect not in choices:
        raise LessonError(f"{where}.expect: {expect!r} is not one of the choices")
    measure = raw.get("measure")
    if measure not in measures:
        raise LessonError(
            f"{where}.measure: unknown measure {measure!r} (measures: {', '.join(sorted(measures))})"
        )
    return Predict(question, tuple(choices), expect, measure)


def parse_lesson(path: Path, data: str, measures: frozenset[str]) -> Lesson:
    """One lesson from its TOML text; :class:`LessonError` names what is wrong."""
    try:
        raw = tomllib.loads(data)
    except tomllib.TOMLDecodeError as exc:
        raise LessonError(f"{path.name}: not valid TOML ({exc})") from None
    extra = sorted(set(raw) - LESSON_FIELDS)
    if extra:
        raise LessonError(f"{path.name}: unknown field {extra[0]!r}")
    title = _text(raw, "title", path.name, 120)
    summary = _text(raw, "summary", path.name, 400, required=False)
    slot = _minutes(raw.get("slot"), path.name, "slot")
    refs = raw.get("references", [])
    if not isinstance(refs, list) or not all(
        isinstance(r, str) and r.strip() and len(r) <= 400 for r in refs
    ):
        raise LessonError(f"{path.name}: `references` must be a list of strings (400 at most)")
    steps_raw = raw.get("steps")
    if not isinstance(steps_raw, list) or not steps_raw:
        raise LessonError(f"{path.name}: no steps ([[steps]] tables)")
    if len(steps_raw) > MAX_STEPS:
        raise LessonError(f"{path.name}: more than {MAX_STEPS} steps")
    steps = tuple(parse_step(path, i, s, measures) for i, s in enumerate(steps_raw, start=1))
    check_minutes(path, slot, steps)
    return Lesson(path.stem, title, summary, steps, str(path), slot, tuple(r.strip() for r in refs))


def check_minutes(path: Path, slot: float | None, steps: tuple[Step, ...]) -> None:
    """A lesson with a slot gives every step its minutes, and they fill the slot;
    one without a slot gives none (there is nothing for them to add up to)."""
    timed = [i for i, s in enumerate(steps, start=1) if s.minutes is not None]
    if slot is None:
        if timed:
            raise LessonError(
                f"{_where(path, timed[0], 'minutes')}: the lesson declares no `slot` "
                "for the steps' minutes to fill"
            )
        return
    untimed = [i for i, s in enumerate(steps, start=1) if s.minutes is None]
    if untimed:
        raise LessonError(
            f"{_where(path, untimed[0], 'minutes')}: the lesson's slot is {fmt(slot)} "
            "minutes: every step says how many it takes"
        )
    total = sum(s.minutes or 0.0 for s in steps)
    if not math.isclose(total, slot, abs_tol=1e-6):
        raise LessonError(
            f"{path.name}, slot: the steps' minutes sum to {fmt(total)}, not the slot's {fmt(slot)}"
        )


def lesson_dirs() -> list[Path]:
    """The built-in folder, then the one ``RESVIZ_LESSONS`` names (a teacher's own)."""
    dirs = [LESSONS_DIR]
    extra = os.environ.get("RESVIZ_LESSONS")
    if extra:
        dirs.append(Path(extra))
    return dirs


def load_lessons(
    dirs: list[Path] | None = None, measures: frozenset[str] | None = None
) -> tuple[dict[str, Lesson], list[str]]:
    """Every ``*.toml`` lesson in ``dirs``, by id, and one message per refused file."""
    if measures is None:
        from resviz.recipes import MEASURES

        measures = frozenset(MEASURES)
    lessons: dict[str, Lesson] = {}
    errors: list[str] = []
    for folder in dirs if dirs is not None else lesson_dirs():
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.toml")):
            try:
                if path.stat().st_size > MAX_BYTES:
                    raise LessonError(f"{path.name}: larger than {MAX_BYTES} bytes")
                try:
                    data = path.read_text(encoding="utf-8")
                except UnicodeDecodeError:
                    raise LessonError(f"{path.name}: not UTF-8 text") from None
                lesson = parse_lesson(path, data, measures)
                if lesson.id in lessons:
                    raise LessonError(
                        f"{path.name}: a lesson named {lesson.id!r} is loaded already"
                    )
                lessons[lesson.id] = lesson
            except LessonError as exc:
                errors.append(str(exc))
    return lessons, errors


def question_call(page: str, step: Step, seed: int = 0) -> tuple[str, dict[str, Any]]:
    """The recipe call that answers ``step``'s question with ``seed``: the recipe's
    registered name (``"gradients.per_layer"``) and its settings (the page's defaults,
    then the step's; the step's seeds). The room, the lesson view and the handout's
    notebooks all measure through this call."""
    from resviz.core import recipe_name, settings_of
    from resviz.recipes import MEASURES

    from .specs import SEEDS_AUTO, seeds_count

    assert step.predict is not None
    m = MEASURES[step.predict.measure]
    spec = spec_of(page)
    names = settings_of(m.recipe)
    settings = {n: spec.param(n).default for n in names if spec.param(n)}
    settings.update((k, v) for k, v in step.settings if k in settings)
    settings["seed"] = seed
    if "seeds" in names:
        asked = dict(step.settings).get("seeds", SEEDS_AUTO)
        settings["seeds"] = seeds_count(str(asked), int(names["seeds"]))
    return recipe_name(m.recipe), settings
