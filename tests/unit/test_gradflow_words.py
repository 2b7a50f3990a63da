"""The gradient-flow page's sentences that depend on the data: each outcome."""

import math

import pytest

from resviz.findings_words import agreement_words
from resviz.recipes import gradients as R


def _words(measured, reference, name="l^L", **kw):
    lg = lambda v: math.log10(v) if v > 0 else (-math.inf if v == 0 else math.nan)  # noqa: E731
    return agreement_words(lg(measured), lg(reference), name, **kw)


def test_agreement_words_each_outcome():
    assert _words(1.01, 1.0) == "agrees with l^L (1) within 1%"
    assert _words(1.0, 1.0) == "agrees with l^L (1) within 0.001%"
    assert _words(4.8e-3, 9.313e-10) == "is 5.15e6 times l^L (9.31e-10)"
    assert _words(0.5, 1.0) == "is 0.5 times l^L (1)"
    assert _words(3e-40, 0.0) == "is 3e-40, where l^L is exactly 0"
    assert _words(0.0, 0.0) == "is exactly 0, as is l^L"
    assert _words(math.nan, 1.0) == "is NaN: not comparable with l^L (1)"
    # Beyond float64's range: compared in log space.
    assert agreement_words(-420.0, -420.01, "l^L") == "agrees with l^L (9.77e-421) within 2.3%"
    # rtol is the line between the two wordings.
    assert _words(1.2, 1.0, "x", rtol=0.25).startswith("agrees")
    assert _words(1.2, 1.0, "x", rtol=0.1).startswith("is 1.2 times")


@pytest.mark.parametrize(
    ("settings", "agrees", "says"),
    [
        ({}, True, "nearly all that is left"),
        ({"l": 0.0}, False, "l = 0 is a plain stack"),
        ({"norm": "layer"}, False, "A layer norm sits before every branch here"),
        ({"small": False}, False, "are not small next to the identity term"),
        # l > 1: the stream grows, a norm layer's Jacobian shrinks, and l^L holds.
        ({"norm": "layer", "l": 1.5}, True, "nearly all that is left"),
    ],
)
def test_derivation_words_hold_for_the_run(settings, agrees, says):
    r = R.derivation(**settings)
    assert r.agrees is agrees
    assert says in r.why
    rel = r.measured / r.identity_term - 1 if r.identity_term else math.nan
    assert (abs(rel) <= R.AGREE_RTOL) is agrees
    if "stream shrinks" in r.why:
        s = r.ratio["stream_norm"]
        assert s.iloc[-1] < s.iloc[0]


def test_derivation_clamps_the_block_to_the_depth():
    r = R.derivation(depth=4, block=50)
    assert r.block == 4
    assert set(r.spectrum["matrix"]) == {"block", "branch J"}
