"""The gradient-flow page's lesson measures: each answer flips at a setting the page
allows, and matches the numbers the page's section shows."""

import re

import pytest

from resviz import gradflow as G
from ui.lesson_measures import MEASURES, Measured
from ui.specs.gradient_flow import SPEC

NUM = r"(-?\d+(?:\.\d+)?(?:e[-+]?\d+)?)"


def _measure(name, seed=0, **settings):
    for k, v in settings.items():  # every setting is one a lesson (or a URL) may carry
        SPEC.param(k).check(v)
    out = MEASURES[name](settings, seed)
    assert isinstance(out, Measured)
    return out


@pytest.mark.parametrize(
    ("settings", "answer"),
    [({}, "residual"), ({"depth": 50, "act": "relu", "norm": "layer"}, "plain")],
)
def test_input_gradient(settings, answer):
    out = _measure("gradflow_input_gradient", **settings)
    assert out.answer == answer
    m = re.search(rf"is {NUM} in the plain stack and {NUM} in the residual one", out.sentence)
    assert m, out.sentence
    plain, resid = float(m[1]), float(m[2])
    assert (plain > resid) == (answer == "plain")


@pytest.mark.parametrize(("scale", "answer"), [(0.5, "shrinks"), (1.5, "grows")])
def test_scaled_shortcut(scale, answer):
    out = _measure("gradflow_scaled_shortcut", l=scale)
    assert out.answer == answer
    m = re.search(rf"is {NUM}; the identity term l\^L is {NUM}", out.sentence)
    assert m, out.sentence
    # Near-zero branches (the default): the measurement follows l^L.
    assert float(m[1]) == pytest.approx(scale**30, rel=0.05)
    assert float(m[2]) == pytest.approx(scale**30, rel=5e-3)  # 3 significant digits


@pytest.mark.parametrize(("bn", "answer"), [(True, "shattered"), (False, "smooth")])
def test_plain_shattered(bn, answer):
    out = _measure("gradflow_plain_shattered", bn=bn)
    assert out.answer == answer
    _, acf = G.shattered_summary((2, 10, 50), width=64, norm="batch" if bn else "none", seed=0)
    corr = G.lag_table(acf).set_index("depth").loc[50, "plain lag-1 autocorrelation"]
    m = re.search(rf"autocorrelation of df/dx is {NUM}", out.sentence)
    assert m and float(m[1]) == pytest.approx(corr, rel=5e-3, abs=1e-3), out.sentence


def test_the_seed_is_the_sidebar_seed():
    # Another seed, other weights: the sentence's numbers change with it.
    a = _measure("gradflow_input_gradient", seed=0).sentence
    b = _measure("gradflow_input_gradient", seed=1).sentence
    assert a != b and "seed 1" in b
