"""Lesson measures of the sinusoidal page (resviz.positional.recipes), read from the
Relative position recipe's result, on both outcomes where the data allow two."""

import math
import re

import numpy as np
import pytest
import torch

from resviz import positional as P
from resviz import sinusoidal_encoding
from resviz.positional import recipes as R
from resviz.recipes import MEASURES
from tests.margins import printed
from ui.specs.sinusoidal_encoding import SPEC

NUM = r"(-?\d+(?:\.\d+)?(?:e[-+]?\d+)?)"


def _at(name: str, seed: int = 0, **settings):
    for k, v in settings.items():  # every setting is one a lesson (or a URL) may carry
        SPEC.param(k).check(v)
    return MEASURES[name].at(settings, seed)


def _first_rise(d: int, base: float, upto: int) -> int:
    """The first offset where sum_i cos(k w_i) rises, computed here in numpy."""
    w = base ** (-np.arange(0, d, 2) / d)
    dot = np.cos(np.outer(np.arange(upto), w)).sum(axis=1)
    return int(np.nonzero(np.diff(dot) > 1e-9)[0][0]) + 1


def test_similarity_falls_steadily_over_a_few_positions_and_rises_again_over_many():
    few = _at("similarity_monotone", positions=5)
    many = _at("similarity_monotone", positions=100)
    assert few.answer == "falls steadily"
    assert many.answer == "rises again somewhere"
    first = _first_rise(512, 10000.0, 100)
    assert f"first at k = {first}." in many.sentence
    # Over 5 offsets it falls; the sentence says where it first rises, further out.
    assert f"it first rises again at k = {first}, beyond the positions on screen" in few.sentence
    m = re.search(rf"falls at every step, from {NUM} to {NUM}", few.sentence)
    assert m and float(m[1]) == 256
    assert float(m[2]) == printed(np.cos(4 * 10000.0 ** (-np.arange(0, 512, 2) / 512)).sum())


def test_similarity_at_a_small_width_rises_early():
    # d_model = 16, base 100: the first rise is at offset 5, inside 10 positions.
    out = _at("similarity_monotone", positions=10, d_model="16", base="100")
    assert out.answer == "rises again somewhere"
    assert f"first at k = {_first_rise(16, 100.0, 10)}." in out.sentence


@pytest.mark.parametrize("settings", [{}, {"positions": 1000, "d_model": "16", "base": "100"}])
def test_offset_only_is_measured_not_assumed(settings):
    # An identity (a sum of cosines of the offset): every allowed setting answers the
    # same, and the sentence carries the measured gap.
    m = _at("offset_only", **settings)
    assert m.answer == "only on p - q"
    gap = float(re.search(rf"positions: {NUM} ", m.sentence)[1])
    assert gap < 1e-9


def test_offset_only_says_on_p_too_for_a_table_that_depends_on_p():
    # The reader, on a result whose dot products depend on p (a learned table at init).
    pe = P.learned_encoding(50, 16, seed=0)
    r = R.relative(positions=50, d_model=16)
    fake = type(r)(
        {**r.frames, "by_offset": P.similarity_by_offset(pe.double())},
        {**r.values, "offset_error": P.offset_dependence(pe)},
    )
    out = MEASURES["offset_only"].read(fake)
    assert out.answer == "on p too"


def test_measures_read_the_recipes_frames():
    r = R.relative(positions=100, d_model=64, base=1000.0, k=7)
    pe = sinusoidal_encoding(100, 64, 1000.0, dtype=torch.float64)
    by = P.similarity_by_offset(pe)
    np.testing.assert_allclose(r.by_offset["dot"], by["dot"], rtol=1e-12)
    rises = by["offset"][by["dot"].diff() > 1e-9].tolist()
    assert r.rises == rises and r.first_rise == rises[0]
    assert r.k == 7 and r.rotation_error < 1e-9
    # k is at most positions - 1.
    assert R.relative(positions=3, k=100).k == 2
    dot = r.dot.drop(columns="p").to_numpy()
    np.testing.assert_allclose(dot, (pe @ pe.T).numpy(), rtol=1e-12)
    assert math.isclose(dot[3, 10], by["dot"][7], rel_tol=1e-9)
