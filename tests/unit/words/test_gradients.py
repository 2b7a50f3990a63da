"""The gradient-flow page's sentences that depend on the data: each outcome."""

import math

import pytest

import resviz as rv
from resviz.recipes import gradients as R
from resviz.words.numbers import agreement_words


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
    assert (abs(rel) <= rv.words.AGREE_RTOL) is agrees
    if "stream shrinks" in r.why:
        s = r.ratio["stream_norm"]
        assert s.iloc[-1] < s.iloc[0]


def test_derivation_clamps_the_block_to_the_depth():
    r = R.derivation(depth=4, block=50)
    assert r.block == 4
    assert set(r.spectrum["matrix"]) == {"block", "branch J"}


def test_below_half_each_outcome():
    # Without batch norm df/dx is a step function (autocorrelation 1 - 2k/256 at lag k):
    # no net falls below 0.5 by lag 16.
    off = R.shattered(bn=False)
    for variant in ("plain", "residual"):
        for d in R.SHATTERED_DEPTHS:
            assert f"{variant} depth {d}: not by lag 16" in off.below_half
    on = R.shattered(bn=True)
    lag1 = on.lag1.set_index("depth")["plain lag-1 autocorrelation"]
    assert lag1[50] < 0.5 and "plain depth 50: lag 1" in on.below_half
    below = on.below.set_index(["variant", "depth"])
    first = on.acf[(on.acf["variant"] == "plain") & (on.acf["depth"] == 2) & (on.acf["lag"] > 0)]
    expect = int(first[first["corr"] < 0.5]["lag"].min())
    assert below.loc[("plain", 2), "first_lag_below"] == expect
    assert f"plain depth 2: lag {expect}" in on.below_half


def test_zero_singular_values_each_outcome():
    relu = R.derivation(act="relu")
    j = relu.spectrum[
        (relu.spectrum["variant"] == "residual: x + f(x)") & (relu.spectrum["matrix"] == "branch J")
    ]["sigma"]
    k = int((j <= j.max() * len(j) * 2.220446049250313e-16).sum())
    assert k > 0 and relu.zero_sv.startswith(f" {k} of J's {len(j)} singular values are 0")
    assert R.derivation(act="tanh").zero_sv == ""
