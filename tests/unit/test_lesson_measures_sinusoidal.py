"""Lesson measures of the sinusoidal page, on both outcomes where the data allow two."""

import torch

from resviz import positional as P
from resviz import sinusoidal_encoding
from ui.lesson_measures import MEASURES


def test_similarity_falls_steadily_over_a_few_positions_and_rises_again_over_many():
    few = MEASURES["similarity_monotone"]({"positions": 5}, 0)
    many = MEASURES["similarity_monotone"]({"positions": 100}, 0)
    assert few.answer == "falls steadily"
    assert many.answer == "rises again somewhere"
    by = P.similarity_by_offset(sinusoidal_encoding(100, 512, 10000.0, dtype=torch.float64))
    first_rise = int(by["offset"][by["dot"].diff() > 1e-9].iloc[0])
    assert f"first at k = {first_rise}." in many.sentence


def test_offset_only_is_measured_not_assumed():
    # An identity (sum of cos of the offset): every allowed setting answers the same,
    # and the sentence carries the measured gap.
    for settings in ({}, {"positions": 1000, "d_model": "16", "base": "100"}):
        m = MEASURES["offset_only"](settings, 0)
        assert m.answer == "only on p - q"
        gap = float(m.sentence.split(": ")[1].split(" ")[0])
        assert gap < 1e-9
