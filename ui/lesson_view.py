"""A page opened from a lesson: the step's text, predict-then-measure, and navigation.

A link with ``lesson=<id>&step=<n>`` (the workshop page makes them) opens a page
at a lesson step. Above the page's sections this draws the step's text, Previous /
Next, a button that brings the view back to the step's settings after a
participant has played with it, and, for a step with a question, a prediction to
lock in before the step's section is shown; then the measured answer beside it.
Everything lives in the visitor's own session: nothing is shared, so it works the
same behind several replicas. A workshop room's participant (``ui/room/view.py``) gets
the room's strip above the banner, no Previous / Next (the presenter steps), and the
room's question, measured in the background with their own seed
(:func:`step_measurement`).
"""

from __future__ import annotations

import inspect
from typing import Any

import streamlit as st
import torch

import resviz as rv
from resviz.core import RECIPES, Answer
from resviz.device import pick_device
from resviz.recipes import MEASURES

from .lesson_state import clear_question, hold_question, lessons, step_page_path
from .lessons import Lesson, Step, question_call
from .markdown import md_escape
from .room import view as room_view
from .section import run_recipe
from .specs import fmt
from .specs.pages import spec_of
from .st_internals import release_url_bindings

LESSON, STEP = "lesson", "step"


def current(page: str) -> tuple[Lesson, int, Step] | None:
    """The lesson step named in the URL, if it is one of this page's steps."""
    lesson_id = st.query_params.get(LESSON)
    raw_step = st.query_params.get(STEP)
    if not lesson_id or not raw_step:
        return None
    lesson = lessons()[0].get(lesson_id)
    if lesson is None or not raw_step.isascii() or not raw_step.isdigit():
        return None
    index = int(raw_step)
    if not 1 <= index <= len(lesson.steps) or lesson.steps[index - 1].page != page:
        return None
    return lesson, index, lesson.steps[index - 1]


def go_to(lesson: Lesson, index: int) -> None:
    """Open step ``index`` with exactly its settings (a fresh view of its page)."""
    step = lesson.steps[index - 1]
    for name in spec_of(step.page).names:
        st.session_state.pop(name, None)
    st.session_state.pop(f"_params_seen:{step.page}", None)
    query = step.query(lesson.id, index)
    # The open section is a widget bound to the URL: it is set through its state.
    query.pop("section", None)
    st.session_state["section"] = step.section or spec_of(step.page).sections[0]
    release_url_bindings()
    st.switch_page(step_page_path(step), query_params=query)


def _step_call(page: str, step: Step, seed: int) -> tuple[str, tuple[tuple[str, Any], ...], str]:
    """The recipe call that answers the step's question with ``seed``
    (:func:`ui.lessons.question_call`) and the device."""
    name, settings = question_call(page, step, seed)
    device = str(pick_device(st.session_state.get("device", "auto")))
    return name, tuple(sorted(settings.items())), device


def step_measurement(page: str, step: Step, seed: int) -> room_view.Measurement:
    """The step's answer at exactly its own settings and ``seed`` (a workshop room's
    participant measures with their seed), as a background run: a recipe that
    trains reports its progress (and stops when asked); any other goes through the
    section's cache, so the section shown after the reveal finds it there."""
    assert step.predict is not None
    name, settings, device = _step_call(page, step, seed)
    m = MEASURES[step.predict.measure]
    fn = RECIPES[name]
    trains = "progress" in inspect.signature(fn).parameters

    def work(report: Any, should_stop: Any) -> Answer:
        if not trains:
            result, _ = run_recipe(name, settings, device)
            return m.over(result)
        kw = dict(settings)
        result, _ = rv.run_with_fallback(
            lambda d: fn(**kw, device=d, progress=report, should_stop=should_stop),
            torch.device(device),
        )
        return m.over(result)

    return room_view.Measurement(("room-measure", name, settings, device), work)


def banner(page: str) -> bool:
    """Draw the lesson step above the page's sections; False while the step's
    question waits for a prediction (the page then holds back its section)."""
    clear_question()
    room_view.bar(page)  # a workshop room's participant: follow the presenter
    # In a room the presenter steps: a participant's Previous / Next would leave it.
    in_a_room = room_view.following()
    found = current(page)
    if found is None:
        return True
    lesson, index, step = found
    n = len(lesson.steps)
    ready = True
    with st.container(border=True, key="lesson-banner"):
        st.caption(f"Lesson: {md_escape(lesson.title, 120)} · step {index} of {n}")
        st.subheader(step.title)
        st.markdown(step.text)
        if step.settings:
            st.caption(
                "This step's settings: "
                + ", ".join(
                    f"{md_escape(k, 30)} = {md_escape(fmt(v), 60)}" for k, v in step.settings
                )
            )
        c1, c2, c3 = st.columns([1, 1, 2])
        if not in_a_room and c1.button(
            "Previous", key="lesson:prev", disabled=index == 1, icon=":material/arrow_back:"
        ):
            go_to(lesson, index - 1)
        if not in_a_room and c2.button(
            "Next", key="lesson:next", disabled=index == n, icon=":material/arrow_forward:"
        ):
            go_to(lesson, index + 1)
        if c3.button(
            "Back to this step's settings",
            key="lesson:reset",
            icon=":material/restart_alt:",
            help="Undo your changes to the settings: the view the step opened with.",
        ):
            go_to(lesson, index)
        if step.predict is not None:
            # In a workshop room the room asks (votes, reveal, a measure with one's seed).
            in_room = room_view.question(
                page,
                lesson,
                index,
                step,
                lambda seed: step_measurement(page, step, seed),
            )
            ready = _predict(page, lesson, index, step) if in_room is None else in_room
        elif step.explain:
            # No question to reveal: the why waits, folded, for the discussion.
            with st.expander("Why (open it after the discussion)", icon=":material/lightbulb:"):
                st.markdown(step.explain)
    return ready


def _predict(page: str, lesson: Lesson, index: int, step: Step) -> bool:
    q = step.predict
    assert q is not None
    locked_key = f"lesson:locked:{lesson.id}:{index}"
    st.markdown(f"**Predict first:** {q.question}")
    choice = st.radio(
        "Your prediction",
        list(q.choices),
        index=None,
        key=f"lesson:choice:{lesson.id}:{index}",
        horizontal=True,
        disabled=locked_key in st.session_state,
    )
    if locked_key not in st.session_state:
        if st.button(
            "Lock in my prediction", key="lesson:lock", disabled=choice is None, type="primary"
        ):
            st.session_state[locked_key] = choice
            st.rerun()
        st.info("Lock in a prediction to see the measurement.", icon=":material/psychology:")
        return False
    predicted = st.session_state[locked_key]
    section = step.section or spec_of(page).sections[0]
    slot = st.empty()
    slot.info(
        f"Your prediction: **{md_escape(predicted)}**. The measurement appears here once "
        f"the section {md_escape(section)} below has run with the settings on screen.",
        icon=":material/hourglass_top:",
    )
    hold_question(step, predicted, slot)
    return True
