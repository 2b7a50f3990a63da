"""The gradient-flow page's sentences that depend on the data: each outcome."""

import math

import pytest

import resviz as rv
from resviz.gradients import recipes as R
from resviz.words.numbers import agreement_words
from resviz.words.seeds import log_span, span
from tests.margins import AT_INIT, assert_clear


def _words(measured, reference, name="λ^L", **kw):
    lg = lambda v: math.log10(v) if v > 0 else (-math.inf if v == 0 else math.nan)  # noqa: E731
    return agreement_words(lg(measured), lg(reference), name, **kw)


def test_agreement_words_each_outcome():
    assert _words(1.01, 1.0) == "agrees with λ^L (1) within 1%"
    assert _words(1.0, 1.0) == "agrees with λ^L (1) within 0.001%"
    assert _words(4.8e-3, 9.313e-10) == "is 5.15e6 times λ^L (9.31e-10)"
    assert _words(0.5, 1.0) == "is 0.5 times λ^L (1)"
    assert _words(3e-40, 0.0) == "is 3e-40, where λ^L is exactly 0"
    assert _words(0.0, 0.0) == "is exactly 0, as is λ^L"
    assert _words(math.nan, 1.0) == "is NaN: not comparable with λ^L (1)"
    # Beyond float64's range: compared in log space.
    assert agreement_words(-420.0, -420.01, "λ^L") == "agrees with λ^L (9.77e-421) within 2.3%"
    # rtol is the line between the two wordings.
    assert _words(1.2, 1.0, "x", rtol=0.25).startswith("agrees")
    assert _words(1.2, 1.0, "x", rtol=0.1).startswith("is 1.2 times")


@pytest.mark.parametrize(
    ("settings", "agrees", "says"),
    [
        ({}, True, "nearly all that is left"),
        ({"l": 0.0}, False, "λ = 0 is a plain stack"),
        ({"norm": "layer"}, False, "A layer norm sits before every branch here"),
        ({"small": False}, False, "are not small next to the identity term"),
        # l > 1: the stream grows, a norm layer's Jacobian shrinks, and λ^L holds.
        ({"norm": "layer", "l": 1.5}, True, "nearly all that is left"),
    ],
)
def test_derivation_words_hold_for_the_run(settings, agrees, says):
    for r in R.derivation(**settings).per_seed:  # every seed of the default 3
        _holds(r, agrees, says)


def _holds(r, agrees, says):
    assert r.agrees is agrees
    assert says in r.why
    rel = r.measured / r.identity_term - 1 if r.identity_term else math.nan
    if r.identity_term:  # at init, |rel| at least 5% clear of AGREE_RTOL (tests/margins.py)
        side = "below" if agrees else "above"
        what = "|measured / λ^L - 1|"
        assert_clear(
            abs(rel),
            rv.gradients.words.AGREE_RTOL,
            side=side,
            margin=AT_INIT,
            kind="factor",
            what=what,
        )
    assert (abs(rel) <= rv.gradients.words.AGREE_RTOL) is agrees
    if "stream shrinks" in r.why:
        s = r.ratio["stream_norm"]
        assert s.iloc[-1] < s.iloc[0]


def test_derivation_clamps_the_block_to_the_depth():
    r = R.derivation(depth=4, block=50)
    assert r.block == 4  # the same in every seed
    assert set(r.spectrum["matrix"]) == {"block", "branch J"}


def test_below_half_each_outcome():
    # Without batch norm df/dx is a step function (autocorrelation 1 - 2k/256 at lag k):
    # no net falls below 0.5 by lag 16.
    off = R.shattered.one(bn=False, seed=0)
    for variant in ("plain", "residual"):
        for d in R.SHATTERED_DEPTHS:
            assert f"{variant} depth {d}: not by lag 16" in off.below_half
    on = R.shattered.one(bn=True, seed=0)
    lag1 = on.lag1.set_index("depth")["plain lag-1 autocorrelation"]
    assert_clear(lag1[50], 0.5, side="below", margin=0.1, what="plain 50 lag 1")  # 0.0057
    assert lag1[50] < 0.5 and "plain depth 50: lag 1" in on.below_half
    below = on.below.set_index(["variant", "depth"])
    first = on.acf[(on.acf["variant"] == "plain") & (on.acf["depth"] == 2) & (on.acf["lag"] > 0)]
    expect = int(first[first["corr"] < 0.5]["lag"].min())
    assert below.loc[("plain", 2), "first_lag_below"] == expect
    assert f"plain depth 2: lag {expect}" in on.below_half


def test_zero_singular_values_each_outcome():
    relu = R.derivation.one(act="relu", seed=0)
    j = relu.spectrum[
        (relu.spectrum["variant"] == "residual: x + f(x)") & (relu.spectrum["matrix"] == "branch J")
    ]["sigma"]
    k = _zero_count_clear(j)
    assert k > 0 and relu.zero_sv.startswith(f" {k} of J's {len(j)} singular values are 0")
    assert R.derivation.one(act="tanh", seed=0).zero_sv == ""


def _zero_count_clear(sigma) -> int:  # noqa: ANN001 - a Series of singular values
    """How many singular values are 0 to float64's rank tolerance (``n eps max``), each
    side checked clear of it: a dead ReLU unit gives one 25 times or more under it
    (seeds 0-2), the others sit 1e12 times or more over it."""
    tol = float(sigma.max()) * len(sigma) * 2.220446049250313e-16
    zero, kept = sigma[sigma <= tol], sigma[sigma > tol]
    if len(zero):
        assert_clear(zero.max(), tol, side="below", margin=10, kind="factor", what="zero sigma")
    assert_clear(kept.min(), tol, side="above", margin=1e6, kind="factor", what="sigma")
    return len(zero)


# ------------------------------------------------------------------ over several seeds
# Each sentence below states a direction only when the seeds agree (resviz.words.seeds)
# and says how many do. The split cases are real settings, found by trying seeds 0-2
# at settings the page allows; the comments pin what each seed measured.
from resviz import gradients as G  # noqa: E402
from resviz.gradients import words as W  # noqa: E402


def _towards_input(r, frame, variant, y):
    return [
        run.frames[frame][run.frames[frame]["variant"] == variant]
        .sort_values("block", ascending=False)[y]
        .tolist()
        for run in r.per_seed
    ]


def _gains(r, variant):
    return [
        float(run.gains.set_index("variant").loc[variant, "log10_input_gain"]) for run in r.per_seed
    ]


def test_trend_over_seeds_agree_split_tie_and_one():
    # Defaults: in every seed the plain stack's weight gradient falls towards the input.
    r = R.per_layer(seeds=3)
    curves = _towards_input(r, "weights", G.PLAIN, "log10_grad_norm")
    factors = [10 ** (c[0] - c[-1]) for c in curves]
    text = W.trend_over_seeds("the plain stack's ||dL/dW||", curves, r.seeds)
    assert text == (
        f"In 3 of 3 seeds the plain stack's ||dL/dW|| falls by a factor of {span(factors, 2)}."
    )
    for f in factors:  # 18.6-24.8 at init, checked 5% clear of 10
        assert_clear(f, 10, side="above", margin=AT_INIT, kind="factor", what="fall of ||dL/dW||")
    # 6 ReLU blocks of width 32: seeds 0 and 2 fall by more than 10 from the last block to
    # the first (11.9 and 11.0 times), seed 1 stays within a factor of 10 (6.4 times).
    # Each is checked 5% clear of 10. (A 2-block sigmoid stack of width 64, the setting
    # this replaced, fell 10.8, 9.998 and 10.1 times: too near 10 to pin.)
    r = R.per_layer(seeds=3, depth=6, width=32, act="relu")
    curves = _towards_input(r, "weights", G.PLAIN, "log10_grad_norm")
    for c, side in zip(curves, ("above", "below", "above"), strict=True):
        assert_clear(
            10 ** (c[0] - c[-1]),
            10,
            side=side,
            margin=AT_INIT,
            kind="factor",
            what="fall of the plain stack's ||dL/dW|| towards the input",
        )
    assert [W.trend_kind(c) for c in curves] == ["falls", "stays", "falls"]
    text = W.trend_over_seeds("it", curves, r.seeds)
    assert text.startswith("The seeds disagree: in 2 of 3 (seeds 0, 2) it falls by a factor of ")
    assert "; in 1 of 3 (seed 1) it stays within a factor of " in text
    # Two of those seeds split evenly.
    text = W.trend_over_seeds("it", curves[:2], r.seeds[:2])
    assert text.startswith("The seeds split evenly: in 1 of 2 (seed 0) it falls by a factor")
    # One seed: its own numbers, and the reminder that one seed shows no spread.
    one = W.trend_over_seeds("it", curves[:1], [0])
    assert one.startswith("In the one seed run (seed 0) it falls by a factor of ")
    assert ", from " in one and one.endswith("run more seeds to see whether it holds.")


def test_larger_gradient_over_seeds_agree_split_tie():
    r = R.per_layer(seeds=3)
    p, q = _gains(r, G.PLAIN), _gains(r, G.RESIDUAL)
    _assert_each_clear([a - b for a, b in zip(p, q, strict=True)], "plain over residual gain")
    text = W.larger_gradient_over_seeds(p, q, r.seeds)
    assert text.startswith("In 3 of 3 seeds the residual stack passes the larger gradient")
    assert f"{log_span(p)} plain, {log_span(q)} residual" in text
    # 5 blocks of width 8, ReLU, LayerNorm: the seeds split, and each side quotes its own.
    r = R.per_layer(seeds=3, depth=5, width=8, act="relu", norm="layer")
    p, q = _gains(r, G.PLAIN), _gains(r, G.RESIDUAL)
    # Plain over residual: 1.125, 0.52 and 1.48 times (seeds 0-2).
    _assert_each_clear([a - b for a, b in zip(p, q, strict=True)], "plain over residual gain")
    says = ["plain" if a > b else "residual" for a, b in zip(p, q, strict=True)]
    assert len(set(says)) == 2, says
    text = W.larger_gradient_over_seeds(p, q, r.seeds)
    assert text.startswith("The seeds disagree: in 2 of 3 ")
    for s, who in zip(r.seeds, says, strict=True):
        assert f"seed {s}) the {who} stack" in text or f"{s}" in text
    i, j = says.index("plain"), says.index("residual")
    tie = W.larger_gradient_over_seeds([p[i], p[j]], [q[i], q[j]], [i, j])
    assert tie.startswith(f"The seeds split evenly: in 1 of 2 (seed {i}) the plain stack")


def _assert_each_clear(logs, what):
    """Each log10 ratio at least 5% (as a factor) clear of 1, on its own side."""
    for x in logs:
        side = "above" if x > 0 else "below"
        assert_clear(10**x, 1, side=side, margin=AT_INIT, kind="factor", what=what)


def test_stream_change_over_seeds_agree_and_split():
    r = R.per_layer(seeds=3)
    _assert_each_clear(_gains(r, G.PLAIN) + _gains(r, G.RESIDUAL), "input gain")
    text = W.stream_change_over_seeds(_gains(r, G.PLAIN), _gains(r, G.RESIDUAL), r.seeds)
    assert text.startswith(
        "In 3 of 3 seeds the plain stack's gradient shrinks from the output back to the input"
    )
    assert "the residual stack's grows" in text
    # 2 ReLU blocks of width 8, Xavier init: the plain stack's gradient shrinks in seeds
    # 0 and 2 (to 0.40 and 0.68 times) and grows in seed 1 (1.33 times); the residual
    # one's grows in all three (2.1-3.2 times). Each checked 5% clear of 1. (With small
    # init, the setting this replaced, the residual gain was 1.0004, 1.004 and 0.9993.)
    r = R.per_layer(seeds=3, depth=2, width=8, act="relu", init="xavier")
    p, q = _gains(r, G.PLAIN), _gains(r, G.RESIDUAL)
    _assert_each_clear(p + q, "input gain")
    kinds = {(a > 0, b > 0) for a, b in zip(p, q, strict=True)}
    assert len(kinds) > 1
    assert W.stream_change_over_seeds(p, q, r.seeds).startswith("The seeds disagree: in 2 of 3")


def test_agreement_over_seeds_holds_per_seed():
    r = R.derivation(seeds=3)
    ms = [run.values["log10_measured"] for run in r.per_seed]
    text = W.agreement_over_seeds(ms, r.log10_identity_term, r.seeds)
    for run in r.per_seed:  # 0.2-0.3% off λ^L, far inside AGREE_RTOL
        _holds(run, True, "nearly all that is left")
    worst = max(abs(run.measured / run.identity_term - 1) for run in r.per_seed)
    assert text == (
        "In 3 of 3 seeds the measurement at x_0 agrees with λ^L (9.31e-10) within "
        f"{rv.format_number(worst * 100, 2)}%."
    )
    assert worst <= rv.gradients.words.AGREE_RTOL
    # l = 0.9 with a LayerNorm before each branch: seeds 0 and 1 agree within 5%, seed 2
    # does not; the 5% must hold seed by seed, so the sentence says so.
    r = R.derivation(seeds=3, l=0.9, norm="layer")
    # Off λ^L by 4.0% and 3.4% (seeds 0-1) and 5.4% (seed 2), each 5% clear of 5%.
    for run, agrees in zip(r.per_seed, (True, True, False), strict=True):
        rel = abs(run.measured / run.identity_term - 1)
        side = "below" if agrees else "above"
        assert_clear(rel, rv.gradients.words.AGREE_RTOL, side=side, margin=AT_INIT, kind="factor")
    assert [run.agrees for run in r.per_seed] == [True, True, False]
    ms = [run.values["log10_measured"] for run in r.per_seed]
    text = W.agreement_over_seeds(ms, r.log10_identity_term, r.seeds)
    assert text.startswith("The seeds disagree: in 2 of 3 (seeds 0-1) the measurement at x_0 ")
    assert "agrees with λ^L" in text and "in 1 of 3 (seed 2) the measurement at x_0 is " in text
    tie = W.agreement_over_seeds(ms[1:], r.log10_identity_term, r.seeds[1:])
    assert tie.startswith("The seeds split evenly: in 1 of 2 (seed 1) the measurement")
    why = W.why_over_seeds([run.ratio for run in r.per_seed], r.seeds, 0.9, "layer", True)
    assert why.startswith("Seeds 0-1: With these near-zero branches")
    assert " Seed 2: " in why
    # l = 0: the identity term is exactly 0 in every seed.
    r = R.derivation(seeds=2, l=0.0)
    ms = [run.values["log10_measured"] for run in r.per_seed]
    assert ", where λ^L is exactly 0" in W.agreement_over_seeds(ms, r.log10_identity_term, r.seeds)


def test_why_over_seeds_one_reason_quotes_ranges():
    r = R.derivation(seeds=3, norm="layer")
    why = W.why_over_seeds([run.ratio for run in r.per_seed], r.seeds, 0.5, "layer", True)
    s0 = [run.ratio["stream_norm"].iloc[0] for run in r.per_seed]
    assert why.startswith("A layer norm sits before every branch here")
    assert f"its mean norm is {span(s0)} at x_0" in why
    # One seed: the recipe's own sentence.
    assert W.why_over_seeds([r.per_seed[0].ratio], [0], 0.5, "layer", True) == r.per_seed[0].why


def test_zero_sv_over_seeds_agree_split_and_none():
    relu = R.derivation(seeds=3, act="relu")
    text = W.zero_sv_over_seeds([run.spectrum for run in relu.per_seed], relu.seeds)
    ks = [W._zero_sv_counts(run.spectrum)[0] for run in relu.per_seed]
    for run, k in zip(relu.per_seed, ks, strict=True):
        s = run.spectrum
        j = s[(s["variant"] == "residual: x + f(x)") & (s["matrix"] == "branch J")]["sigma"]
        assert _zero_count_clear(j) == k
    assert min(ks) > 0
    assert text.startswith(f" In 3 of 3 seeds {span(ks)} of J's 64 singular values are 0")
    assert text.endswith("so I + J passes all of them.")
    tanh = R.derivation(seeds=3, act="tanh")
    assert W.zero_sv_over_seeds([run.spectrum for run in tanh.per_seed], tanh.seeds) == ""
    # A tanh branch (no zero) beside two ReLU ones: the split is said.
    mixed = [tanh.per_seed[0].spectrum, *(run.spectrum for run in relu.per_seed[1:])]
    text = W.zero_sv_over_seeds(mixed, [0, 1, 2])
    assert text.startswith(" The seeds disagree: in 2 of 3 (seeds 1-2) ")
    assert "in 1 of 3 (seed 0) none of J's singular values is 0" in text


def test_below_half_over_seeds_names_each_seeds_lag():
    r = R.shattered(seeds=3)
    text = W.below_half_over_seeds([run.below for run in r.per_seed], r.seeds)
    for net in ("plain", "residual"):
        for d in R.SHATTERED_DEPTHS:
            lags = []
            for run in r.per_seed:
                row = run.below.set_index(["variant", "depth"]).loc[(net, d)]
                lags.append(row["first_lag_below"])
            part = text.split(f"{net} depth {d}: ")[1].split(";")[0]
            if len(set(map(str, lags))) == 1:
                assert part.endswith("(seeds 0-2)"), part  # agreed: one lag, all seeds
            else:
                assert part.count("(seed") >= 2, part  # each lag with its seeds
    # Plain depth 50 is below 0.5 at lag 1 in every seed.
    assert "plain depth 50: lag 1 (seeds 0-2)" in text
    one = W.below_half_over_seeds([r.per_seed[0].below], [0])
    assert one == r.per_seed[0].below_half


def _first_over_last(r, variant):
    """Each seed's first-block over last-block gradient norm at its first and last
    step, each checked clear of 1: 5% at step 0 (init), 10% at the last (trained)."""
    out = []
    for s, run in zip(r.seeds, r.per_seed, strict=True):
        g = run.layers[run.layers["variant"] == variant]
        ratios = []
        for step, margin in ((g["step"].min(), AT_INIT), (g["step"].max(), 1.1)):
            at = g[g["step"] == step].set_index("block")["grad_norm"]
            q = float(at[at.index.min()] / at[at.index.max()])
            what = f"{variant}: first over last block, seed {s}, step {step}"
            side = "above" if q > 1 else "below"
            assert_clear(q, 1, side=side, margin=margin, kind="factor", what=what)
            ratios.append(q)
        out.append(ratios)
    return out


def test_first_vs_last_over_seeds_agree_tie_and_one():
    # 4 tanh blocks of width 64, 20 steps: in every seed the plain stack's first block
    # has the smaller gradient at step 0 (0.70-0.75 times) and at step 19 (0.77-0.87).
    r = R.training(seeds=3, depth=4, width=64, steps=20)
    assert all(a < 1 and b < 1 for a, b in _first_over_last(r, "plain: f(x)"))
    text = W.first_vs_last_over_seeds(r.layers, r.seeds)
    plain = text.split("residual: x + f(x): ")[0]
    assert plain.startswith(
        "plain: f(x): In 3 of 3 seeds the first block's gradient norm is smaller than the "
        "last block's at step 0 ("
    )
    ratios = []
    for run in r.per_seed:
        g = run.layers[(run.layers["variant"] == "plain: f(x)") & (run.layers["step"] == 0)]
        g = g.set_index("block")["grad_norm"]
        ratios.append(g.iloc[0] / g.iloc[-1])
    assert f"at step 0 ({span(ratios)} times)" in plain
    # 5 blocks of width 8: the residual stack's seeds each tell another story (first
    # block smaller then larger in seed 0, 0.89 then 1.16 times; smaller at both in seed
    # 1, 0.58 and 0.62; larger at both in seed 2, 1.14 and 1.29). At 4 blocks, the
    # setting this replaced, seed 1 ended 1.047 times: too near 1 after training.
    r = R.training(seeds=3, depth=5, width=8, steps=20)
    ratios = _first_over_last(r, "residual: x + f(x)")
    assert [(a > 1, b > 1) for a, b in ratios] == [(False, True), (False, False), (True, True)]
    text = W.first_vs_last_over_seeds(r.layers, r.seeds)
    resid = text.split("residual: x + f(x): ")[1]
    assert resid.startswith("The seeds split evenly: in 1 of 3 (seed 0) the first block's")
    assert "in 1 of 3 (seed 1)" in resid and "in 1 of 3 (seed 2)" in resid
    # One seed's run (what a frame without a seed column is).
    one = W.first_vs_last_over_seeds(r.per_seed[0].layers, [0])
    assert "In the one seed run (seed 0) the first block's gradient norm is" in one


def test_first_vs_last_over_seeds_a_zero_norm_is_not_a_division_error():
    import warnings

    import pandas as pd

    rows = [("a", 0, 1, 1.0), ("a", 0, 2, 0.0), ("a", 5, 1, 0.0), ("a", 5, 2, 0.0)]
    frame = pd.DataFrame(rows, columns=["variant", "step", "block", "grad_norm"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        text = W.first_vs_last_over_seeds(frame, [0])
    assert (
        "larger than the last block's at step 0 (infinitely many times) and equal at step 5" in text
    )
