"""What a lesson's banner, the page sections and the workshop room share.

``ui/lesson_view.py`` draws a lesson step above its page and imports the sections
(``ui/section.py``: a step's answer is its section's recipe run) and the room
(``ui/room/view.py``); both of those need lesson state back. It lives here, below
all three, so that none imports a module that imports it back:

* :func:`lessons`: every lesson as loaded, re-read at most once a minute;
* :func:`step_page_path`: the page file a step opens;
* the open step's locked-in question (:func:`hold_question`, :func:`clear_question`),
  answered by :func:`answer` when its section's recipe has run, from exactly the
  data the section shows.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import streamlit as st

from resviz.core import Recipe, Result
from resviz.recipes import MEASURES

from .lessons import Lesson, Step, load_lessons
from .markdown import md_escape
from .registry import PAGES


@st.cache_data(ttl=60, show_spinner=False)
def lessons() -> tuple[dict[str, Lesson], list[str]]:
    """Every lesson, re-read at most once a minute (a teacher may add one meanwhile)."""
    return load_lessons()


def step_page_path(step: Step) -> str:
    """The file of the page ``step`` opens (for ``st.switch_page``)."""
    return next(p.path for p in PAGES if p.url_path == step.page)


# The locked-in question of this script run, waiting for its section's recipe to run
# (:func:`answer`). Cleared by the lesson banner at the start of every page run, so a
# run never sees an earlier run's question; each session's script runs in one thread.
_pending = threading.local()


@dataclass
class _Question:
    step: Step
    predicted: str
    slot: Any  # the container the answer is drawn in
    answered: bool = False


def clear_question() -> None:
    """No question waits in this script run (yet)."""
    _pending.question = None


def hold_question(step: Step, predicted: str, slot: Any) -> None:
    """``step``'s question, predicted ``predicted``, waits for its section's recipe;
    the answer is drawn in ``slot``."""
    _pending.question = _Question(step, predicted, slot)


def answer(fn: Recipe, result: Result) -> None:
    """A section ran the recipe ``fn``: if the open step's question is measured on it,
    draw the answer from ``result``, the data the section shows."""
    q: _Question | None = getattr(_pending, "question", None)
    if q is None or q.answered:
        return
    assert q.step.predict is not None
    m = MEASURES.get(q.step.predict.measure)
    if m is None or m.recipe is not fn:
        return
    q.answered = True
    measured = m.over(result)
    expect = q.step.predict.expect
    with q.slot.container():
        said = (
            f"You predicted **{md_escape(q.predicted)}**. "
            f"Measured: **{md_escape(measured.answer)}**. {measured.sentence}"
        )
        if measured.answer == q.predicted:
            st.success(said, icon=":material/check_circle:")
        else:
            st.warning(said, icon=":material/info:")
        if measured.answer != expect:
            st.caption(
                f"The lesson expected {md_escape(expect)}; with the settings on screen the "
                "measurement says otherwise."
            )
        if q.step.explain:
            explain(q.step.explain)


def explain(text: str) -> None:
    """A step's why (the lesson author's Markdown), shown once its answer is known."""
    with st.container(border=True, key="lesson-explain"):
        st.markdown("**Why**")
        st.markdown(text)
