"""The gradient-flow page's captions and accounts (resviz.gradients.words.captions),
each outcome once, on small results built by hand: one seed and several, zeros,
NaN, Inf, ties and negatives. The directions they quote (trend_over_seeds,
agreement_over_seeds, ...) are pinned in test_words.py; here each account is checked
to hold its section's own sentences around them."""

import math

import numpy as np
import pandas as pd
import pytest

from resviz.core import Result, combine
from resviz.gradients import PLAIN, RESIDUAL
from resviz.gradients import words as W
from resviz.words.numbers import format_log10, format_number
from resviz.words.seeds import band_words

INF, NAN = math.inf, math.nan


def _streams(logs: dict[str, list[float]]) -> pd.DataFrame:
    """A per-block frame: each variant's log10s at blocks 1, 2, ... (input side first)."""
    rows = [(v, b + 1, y) for v, ys in logs.items() for b, y in enumerate(ys)]
    return pd.DataFrame(rows, columns=["variant", "block", "log10_act_grad"])


# --------------------------------------------------------------------------- flagged
def test_flagged_one_seed_counts_zeros_nan_and_inf_not_negatives():
    df = _streams({PLAIN: [-3.0, -INF, NAN], RESIDUAL: [INF, -0.5, 0.0]})
    said = W.flagged(df, "log10_act_grad", "gradient", ("variant", "block"))
    assert (
        said == " 3 gradient(s) are exactly 0 or not finite: the triangles at the bottom mark them."
    )
    finite = _streams({PLAIN: [-300.0, -2.0], RESIDUAL: [0.0, 1.0]})
    assert W.flagged(finite, "log10_act_grad", "gradient", ("variant", "block")) == ""


def test_flagged_over_seeds_marks_only_the_non_finite_medians():
    by = ("variant", "block")
    # Blocks 1 and 2 are -inf in both seeds: 4 values, 2 medians marked. Then block 2
    # is -inf in one seed of three: counted, but its median is finite and not marked.
    one = [_streams({PLAIN: [-INF, -INF, 1.0]}) for _ in range(2)]
    said = W.flagged(combine([Result({"s": f}) for f in one], [0, 1]).s, "log10_act_grad", "x", by)
    assert said == (
        " 4 x(s) of the 2 seeds are exactly 0 or not finite; the triangles at the bottom "
        "mark the 2 point(s) whose median over the seeds is."
    )
    three = [
        _streams({PLAIN: [1.0, -INF]}),
        _streams({PLAIN: [1.0, 2.0]}),
        _streams({PLAIN: [1.0, 3.0]}),
    ]
    df = combine([Result({"s": f}) for f in three], [0, 1, 2]).s
    assert W.flagged(df, "log10_act_grad", "x", by) == (
        " 1 x(s) of the 3 seeds are exactly 0 or not finite; no median over the seeds is, "
        "so no triangle marks them."
    )


@pytest.mark.parametrize(("n", "said"), [(1, ""), (0, ""), (2, " (median of 2 seeds)")])
def test_median_note(n, said):
    assert W.median_note(n) == said


# ------------------------------------------------------------------------- per layer
def _per_layer(
    plain: list[list[float]], resid: list[list[float]], gains: list[tuple[float, float]]
):
    """A per-layer result over len(plain) seeds: each seed's weight and stream log10s
    (blocks 1..n) and input gains (plain, residual)."""
    runs = []
    for p, q, (gp, gq) in zip(plain, resid, gains, strict=True):
        logs = {PLAIN: p, RESIDUAL: q}
        streams = _streams(logs)
        weights = streams.rename(columns={"log10_act_grad": "log10_grad_norm"})
        g = pd.DataFrame({"variant": [PLAIN, RESIDUAL], "log10_input_gain": [gp, gq]})
        runs.append(Result({"weights": weights, "streams": streams, "gains": g}))
    if len(runs) == 1:
        return runs[0]
    return combine(runs, list(range(len(runs))))


def test_input_gains_per_seed_as_measured():
    r = _per_layer([[0.0]] * 3, [[0.0]] * 3, [(-2.0, 0.5), (-INF, 0.0), (NAN, INF)])
    assert W.input_gains(r, PLAIN)[0] == -2.0 and W.input_gains(r, PLAIN)[1] == -INF
    assert math.isnan(W.input_gains(r, PLAIN)[2])
    assert W.input_gains(r, RESIDUAL) == [0.5, 0.0, INF]


def test_towards_input_reads_each_seed_from_the_last_block_back():
    r = _per_layer([[-3.0, -1.0, 0.0], [-0.5, -0.2, 0.0]], [[0.0] * 3] * 2, [(0, 0)] * 2)
    said = W.towards_input(r, "streams", PLAIN, "log10_act_grad", "it", (0, 1))
    # From the output (block 3) back to the input (block 1): falls by 10^3 and 10^0.5.
    assert said == W.trend_over_seeds("it", [[0.0, -1.0, -3.0], [0.0, -0.2, -0.5]], (0, 1))
    assert said.startswith("The seeds split evenly: in 1 of 2 (seed 0) it falls by a factor of 1")


@pytest.mark.parametrize(
    ("norm", "entering"), [("none", "block)"), ("layer", "block, after the norm layer)")]
)
def test_weights_account_names_the_norm_layer_only_where_there_is_one(norm, entering):
    r = _per_layer([[-2.0, 0.0]], [[0.0, 0.0]], [(-2.0, 0.0)])
    said = W.weights_account(r, (4,), norm)
    plain = W.trend_over_seeds(
        "the plain stack's ||dL/dW|| (from the last block back to the first)", [[0.0, -2.0]], (4,)
    )
    resid = W.trend_over_seeds(
        "the residual stack's ||dL/dW|| (from the last block back to the first)", [[0.0, 0.0]], (4,)
    )
    assert said == (
        "Weight gradients after one MSE backward pass on a Gaussian batch of 32, measured in "
        f"float64. {plain} {resid} A weight gradient is a sum of outer products of the "
        "gradient at the layer's output with the layer's input, so it scales with the size "
        f"of that input (the stream entering the {entering} as well as with the gradient. "
        + band_words((4,))
    )


def test_streams_account_residual_first_then_plain_then_the_zeros():
    r = _per_layer([[-INF, -1.0], [-2.0, 0.0]], [[0.5, 0.0], [0.5, 0.0]], [(0, 0)] * 2)
    said = W.streams_account(r, (0, 1))
    subject = "the {} stack's ||dL/dx_l|| (from the output x_L back to the input x_0)"
    resid = W.trend_over_seeds(subject.format("residual"), [[0.0, 0.5]] * 2, (0, 1))
    plain = W.trend_over_seeds(subject.format("plain"), [[-1.0, -INF], [0.0, -2.0]], (0, 1))
    assert said.startswith(
        "The gradient with respect to the stream itself, dL/dx_l: the quantity the Derivation "
        f"section's formula multiplies block by block. {resid} {plain} 1 gradient(s) of the 2 seeds"
    )
    assert said.endswith(" " + band_words((0, 1)))


# ------------------------------------------------------------------------ derivation
def _derivation(measured: list[float], log_t: float, block: int = 1) -> Result:
    """A derivation result: each seed's measured log10 gain, a shared identity term
    (log10), its norms table and spectrum (residual J's singular values 0.5 and 0.25,
    I + J's 1.5 and 0.75, shifted by the seed's index), and a flat gain curve."""
    runs = []
    for i, m in enumerate(measured):
        norms = pd.DataFrame(
            {
                "variant": [PLAIN, RESIDUAL],
                "||J|| (branch)": [0.5 + i, 0.5 + i],
                "||block Jacobian||": [0.5 + i, 1.5 + i],
            }
        )
        spectrum = pd.DataFrame(
            {
                "variant": [RESIDUAL] * 4,
                "matrix": ["branch J", "branch J", "block", "block"],
                "sigma": [0.5 + i, 0.25 + i, 1.5 + i, 0.75 + i],
                "curve": ["J"] * 2 + ["I + J"] * 2,
            }
        )
        curve = pd.DataFrame({"curve": ["measured"], "blocks_above": [0], "log10_ratio": [0.0]})
        ratio = pd.DataFrame(
            {"log10_measured": [m], "log10_identity_term": [log_t], "stream_norm": [1.0]}
        )
        values = {
            "log10_measured": m,
            "log10_identity_term": log_t,
            "identity_term": 0.0 if log_t == -INF else 10**log_t,
            "block": block,
        }
        frames = {"norms": norms, "spectrum": spectrum, "ratio_curves": curve, "ratio": ratio}
        runs.append(Result(frames, values))
    return runs[0] if len(runs) == 1 else combine(runs, list(range(len(runs))))


def test_derivation_figures_median_and_ratio():
    r = _derivation([-9.0, -8.0, -7.5], -9.0)
    got = W.derivation_figures(r, 0.5, 30)
    assert [f.label for f in got] == [
        "measured ||dL/dx_0|| / ||dL/dx_L|| (median of 3 seeds)",
        "λ^L = 0.5^30",
        "measured / λ^L (median of 3 seeds)",
    ]
    assert [f.value for f in got] == ["1e-8", format_number(1e-9, 4), "10"]
    assert W.measured_logs(r) == [-9.0, -8.0, -7.5]


def test_derivation_figures_zero_identity_term_nan_and_one_seed():
    zero = W.derivation_figures(_derivation([-3.0, -2.0], -INF), 0.0, 5)
    assert zero[1].label == "λ^L = 0^5" and zero[1].value == "0"
    assert zero[2].value == "undefined (λ^L = 0)"
    nan = W.derivation_figures(_derivation([NAN], -1.0), 0.1, 1)
    assert nan[0].label == "measured ||dL/dx_0|| / ||dL/dx_L||"  # one seed: no median
    assert nan[0].value == format_log10(NAN, 4) == "NaN" and nan[2].value == "NaN"


def test_norms_account_ranges_over_seeds_and_one_seed():
    many = W.norms_account(_derivation([0.0, 0.0], 0.0, block=3), (0, 1))
    assert many == (
        "Spectral norms (largest singular value) of block 3's Jacobians for one sample, in "
        "float64. With the shortcut the block Jacobian is I + J, whose norm lies between "
        "1 - ||J|| and 1 + ||J||: here ||J|| = 0.5–1.5 and ||I + J|| = 1.5–2.5 (over seeds "
        "0-1, lowest to highest). Without, the block Jacobian is J itself (here 0.5–1.5)."
    )
    one = W.norms_account(_derivation([0.0], 0.0), (7,))
    assert "here ||J|| = 0.5 and ||I + J|| = 1.5. Without" in one and "over" not in one


def test_spectrum_account_smallest_to_largest_over_every_seed():
    r = _derivation([0.0, 0.0], 0.0)
    said = W.spectrum_account(r, (0, 1))
    assert said.startswith(
        "All singular values. In the residual stack's block J's run from 0.25 to 1.5 and "
        "those of I + J from 0.75 to 2.5 (over seeds 0-1, lowest to highest). "
    )
    zeros = W.zero_sv_over_seeds([run.spectrum for run in r.per_seed], (0, 1))
    assert said.endswith("no direction of the gradient is lost." + zeros + " " + band_words((0, 1)))


@pytest.mark.parametrize(("log_t", "line"), [(-1.0, True), (-INF, False)])
def test_ratio_account_says_the_straight_line_only_where_lambda_l_is_not_0(log_t, line):
    r = _derivation([-1.0], log_t)
    said = W.ratio_account(r, (0,), 0.0 if log_t == -INF else 0.1, "none", True)
    assert (" On a log scale λ^(L-l) is a straight line." in said) is line
    agree = W.agreement_over_seeds([-1.0], log_t, (0,))
    why = W.why_over_seeds([r.ratio], (0,), 0.0 if log_t == -INF else 0.1, "none", True)
    assert f" {agree} {why} " in said and said.endswith(band_words((0,)))


# ----------------------------------------------------------------------- depth sweep
def _sweep(per_seed: dict[int, dict[str, list[float]]], depths=(1, 10, 100)) -> pd.DataFrame:
    rows = [
        (s, "tanh", v, d, y)
        for s, curves in per_seed.items()
        for v, ys in curves.items()
        for d, y in zip(depths, ys, strict=False)
    ]
    return pd.DataFrame(rows, columns=["seed", "activation", "variant", "depth", "log10_gain"])


def test_sweep_words_each_variant_and_a_seed_still_running():
    df = _sweep({0: {"plain": [0.0, -2.0, -5.0], "residual": [0.0, 0.5, 0.4]}, 1: {"plain": [0.0]}})
    said = W.sweep_words(df, "log10_gain", (0, 1))
    plain = W.trend_over_seeds(
        "the plain curve (depth 1 to 100)", [[0.0, -2.0, -5.0], [0.0]], (0, 1)
    )
    resid = W.trend_over_seeds("the residual curve (depth 1 to 100)", [[0.0, 0.5, 0.4]], (0,))
    assert said == f"{plain} {resid}"
    # One seed's frame without a seed column.
    alone = df[df["seed"] == 0].drop(columns="seed")
    assert W.sweep_words(alone, "log10_gain", (3,)).startswith(
        W.trend_over_seeds("the plain curve (depth 1 to 100)", [[0.0, -2.0, -5.0]], (3,))
    )


def test_sweep_account_no_zero_one_seed_and_over_seeds():
    head = "Each point is a fresh stack of that depth (width, init and norm as set above), "
    none = W.sweep_account(_sweep({0: {"plain": [0.0, -1.0, -400.0]}}), "log10_gain", (0,))
    assert none.startswith(head) and " No point is 0 or not finite. " in none
    one = W.sweep_account(_sweep({0: {"plain": [0.0, -INF, NAN]}}), "log10_gain", (0,))
    assert (
        " 2 point(s) are exactly 0 or not finite (the triangles at the bottom of their plots, "
        f"first at depth 10). {band_words((0,))}"
    ) in one
    # Depth 100 is -inf in all three seeds (its median is marked); depth 10 in one.
    curves = ([0.0, -INF, -INF], [0.0, 1.0, -INF], [0.0, 2.0, -INF])
    df = _sweep({s: {"plain": c} for s, c in enumerate(curves)})
    many = W.sweep_account(df, "log10_gain", (0, 1, 2))
    assert many.startswith("Each point is the median of 3 fresh stacks of that depth, one per seed")
    assert (
        " 4 point(s) of the 3 seeds are exactly 0 or not finite (first at depth 10); the "
        "triangles at the bottom of their plots mark the 1 whose median over the seeds is."
    ) in many
    df = _sweep({0: {"plain": [0.0, -INF]}, 1: {"plain": [0.0, 1.0]}, 2: {"plain": [0.0, 2.0]}})
    assert "no median over the seeds is, so no triangle marks them." in W.sweep_account(
        df, "log10_gain", (0, 1, 2)
    )


@pytest.mark.parametrize(("n", "per"), [(1, ""), (3, " for each of 3 seeds")])
def test_sweep_caption(n, per):
    assert W.sweep_caption(24, (1, 8, 100), 64, n) == (
        f"**Sweep** builds 24 stacks of 1 to 100 blocks at width 64{per} (the wider, the "
        "longer it takes) and backpropagates once through each. Finished results are kept "
        "for a while, so a second visit with the same settings shows them at once."
    )


# -------------------------------------------------------------------------- training
def test_training_seeds_caption():
    assert W.training_seeds_caption(0, 1) == ""
    assert W.training_seeds_caption(2, 3) == (
        "3 seeds train one after another (seeds 2-4), each from its own weights and "
        "batches: the progress counts the steps of all of them."
    )


def _trained(divergence: list[dict[str, str]], norms_in_float64: bool = True) -> Result:
    layers = pd.DataFrame(
        {
            "variant": ["a"] * 4,
            "step": [0, 0, 1, 1],
            "block": [1, 2, 1, 2],
            "grad_norm": [1.0, 2.0, 3.0, 0.5],
        }
    )
    runs = [
        Result({"layers": layers}, {"divergence": d, "norms_in_float64": norms_in_float64})
        for d in divergence
    ]
    return runs[0] if len(runs) == 1 else combine(runs, list(range(len(runs))))


def test_divergence_warnings_per_seed_dashed_only_for_one_seed():
    assert W.divergence_warnings(_trained([{}]), (0,)) == []
    one = W.divergence_warnings(_trained([{"plain": "at step 1 its loss reached 9"}]), (4,))
    assert one == [
        "plain (seed 4) diverged: at step 1 its loss reached 9; its training stopped there "
        "(dashed vertical line)."
    ]
    two = W.divergence_warnings(
        _trained([{"plain": "w"}, {}, {"plain": "v", "res": "u"}]), (0, 1, 2)
    )
    assert two == [
        "plain (seed 0) diverged: w; its training stopped there.",
        "plain (seed 2) diverged: v; its training stopped there.",
        "res (seed 2) diverged: u; its training stopped there.",
    ]


@pytest.mark.parametrize(
    ("zeros", "f64", "note"),
    [
        (0, True, ""),
        (
            2,
            True,
            " 2 cell(s) have a gradient norm of exactly 0 (log10 = -inf): every float32 "
            "gradient entry of that block was 0 at that step. They are drawn in the lowest colour.",
        ),
        (
            1,
            False,
            " 1 cell(s) have a gradient norm of exactly 0 (log10 = -inf) as summed in float32 "
            "on this device, where a small enough norm underflows to 0. They are drawn in the "
            "lowest colour.",
        ),
    ],
)
def test_heatmap_account_zero_cells(zeros, f64, note):
    r = _trained([{}], norms_in_float64=f64)
    said = W.heatmap_account(r, (0,), zeros)
    assert said == (
        "Rows are blocks (input side at the top), columns are steps; colour is log10 of the "
        "block's gradient norm, on one scale for all panels. Grey is not run (yet, or after "
        "a run diverged and stopped) or not finite. "
        + W.first_vs_last_over_seeds(r.layers, (0,))
        + " Adam divides each step by the gradient's running size, so a cold block is not "
        "necessarily a slow learner until its gradient's entries near Adam's eps (1e-8)." + note
    )


def test_heatmap_account_names_the_seed_it_shows_over_seeds():
    r = _trained([{}, {}])
    assert "The heatmaps show seed 0 (of seeds 0-1); the sentence on the first and last block" in (
        W.heatmap_account(r, (0, 1), 0)
    )
    assert "The heatmaps show" not in W.heatmap_account(_trained([{}]), (0,), 0)


# ------------------------------------------------------------------------- shattered
def test_shattered_captions_one_seed_and_several():
    assert W.gradients_shown_caption((3,)) == "df/dx of seed 3's nets."
    assert W.gradients_shown_caption((0, 1, 2)) == (
        "df/dx of seed 0's nets (the first of seeds 0-2; the CSV has every seed's)."
    )
    base = (
        "Correlation of df/dx at neighbouring inputs: near 1 is smooth, near 0 is white "
        "noise. A NaN means the gradient was constant (or not finite) along the line."
    )
    assert W.lag1_caption((0,)) == base
    assert W.lag1_caption((0, 1)) == base + " One row per seed and depth."


def test_acf_account_quotes_each_nets_first_lag_below_half():
    below = pd.DataFrame(
        {
            "variant": ["plain"],
            "depth": [50],
            "first_lag_below": [np.nan],
            "max_lag": [16],
            "defined": [False],
        }
    )
    r = combine([Result({"below": below}), Result({"below": below})], [0, 1])
    said = W.acf_account(r, (0, 1))
    assert said == (
        "The autocorrelation function of each gradient. The first lag at which it falls below "
        "0.5 (the sooner, the rougher the gradient): plain depth 50: undefined (gradient "
        f"constant or not finite) (seeds 0-1). {band_words((0, 1))}"
    )


def test_shattered_intro_names_the_width_it_is_given():
    assert "measure it on these nets (width 7). **Batch" in W.shattered_intro(7)
    assert "(width 64)" in W.shattered_intro(64) and "(width 7)" not in W.shattered_intro(64)
