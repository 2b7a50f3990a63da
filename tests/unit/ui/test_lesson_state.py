"""ui/lesson_state.py: the open step's question is answered once, from its own
recipe's result, by the measure's reading of exactly that result."""

from __future__ import annotations

import contextlib
import dataclasses

import pytest
import streamlit as st

from resviz.recipes import MEASURES
from ui import lesson_state
from ui.lessons import Predict, Step
from ui.markdown import md_escape
from ui.registry import PAGES

MEASURE = "layernorm_keeps_halves"


class _Slot:
    def container(self) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()


@pytest.fixture
def drawn(monkeypatch) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for kind in ("success", "warning", "caption"):
        monkeypatch.setattr(st, kind, lambda text, kind=kind, **_: out.append((kind, text)))
    yield out
    lesson_state.clear_question()


def _step(predicted_choices: tuple[str, ...] = ("yes", "no"), expect: str = "yes") -> Step:
    return Step(
        title="LayerNorm and the halves",
        page="normalization",
        section=None,
        text="",
        predict=Predict(
            "Does LayerNorm keep the halves apart?", predicted_choices, expect, MEASURE
        ),
    )


def test_the_held_question_is_answered_once_from_its_own_recipe(drawn):
    m = MEASURES[MEASURE]
    result = m.recipe(seed=0)
    measured = m.over(result)
    assert measured.answer in m.choices
    other = MEASURES["similarity_monotone"].recipe
    assert other is not m.recipe

    lesson_state.hold_question(_step(expect=measured.answer), measured.answer, _Slot())
    lesson_state.answer(other, result)  # another section's recipe: not this question's
    assert drawn == []
    lesson_state.answer(m.recipe, result)
    assert drawn == [("success", drawn[0][1])]
    assert f"Measured: **{md_escape(measured.answer)}**. {measured.sentence}" in drawn[0][1]
    lesson_state.answer(m.recipe, result)  # a second section on the same recipe: once
    assert len(drawn) == 1


def test_a_wrong_prediction_and_an_unexpected_answer_are_said(drawn):
    m = MEASURES[MEASURE]
    result = m.recipe(seed=0)
    answer = m.over(result).answer
    wrong = next(c for c in m.choices if c != answer)
    lesson_state.hold_question(_step(expect=wrong), wrong, _Slot())
    lesson_state.answer(m.recipe, result)
    assert [kind for kind, _ in drawn] == ["warning", "caption"]
    assert f"You predicted **{md_escape(wrong)}**. Measured: **{md_escape(answer)}**" in drawn[0][1]
    assert f"The lesson expected {md_escape(wrong)}" in drawn[1][1]


def test_a_cleared_question_is_not_answered(drawn):
    m = MEASURES[MEASURE]
    result = m.recipe(seed=0)
    lesson_state.hold_question(_step(), "yes", _Slot())
    lesson_state.clear_question()  # the next page run starts without it
    lesson_state.answer(m.recipe, result)
    assert drawn == []


def test_a_step_opens_its_page_file():
    for page in PAGES:
        step = dataclasses.replace(_step(), page=page.url_path)
        assert lesson_state.step_page_path(step) == page.path
