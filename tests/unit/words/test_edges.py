"""Wording functions on NaN, Inf, ties, zeros, negatives, overflow and one seed (issue 34).

The seed-agreement phrase around each clause is tested in test_seeds.py; here the
clauses, compared through :mod:`tests.unit.words.agree`."""

import math

import pandas as pd
import pytest

from resviz.gradients import words as G
from resviz.norms import words as N
from resviz.norms.training_words import GRAD_PART, stability_finding
from resviz.words.numbers import ratio_words, trend_words
from resviz.words.sentences import change, compare, share_of, spread_vs, trend
from tests.unit.words.agree import lead, sentence

NAN, INF = math.nan, math.inf


@pytest.mark.parametrize(
    ("values", "said"),
    [
        ([1e-300, 1e300], "grows by a factor of 1e600, from 1e-300 to 1e300"),
        ([1e300, 1e-300], "falls by a factor of 1e600, from 1e300 to 1e-300"),
        (
            [1e300, NAN, 1e-300],
            "falls by a factor of 1e600, from 1e300 to 1e-300; 1 of 3 values are not finite",
        ),
        ([2.0, 2.0], "stays at 2, level to float64 resolution"),
        ([1.0, 1.0000000000000002], "stays at 1, level to float64 resolution"),
        ([0.0, 0.0], "is exactly 0 throughout"),
        ([NAN, INF], "is not finite"),
        ([-1.0, -2.0], "goes from -1 to -2"),
    ],
)
def test_trend_words_edges(values, said):
    assert trend_words(values) == said


@pytest.mark.parametrize(
    ("value", "reference", "said"),
    [
        (1e308, 1e-308, "1e616 times"),
        (1e-308, 1e308, "1e-616 times"),
        (-1e308, 1e-308, "-1e616 times"),
        (3.0, 0.0, "infinitely many times"),
        (-3.0, 0.0, "not a multiple of"),
        (0.0, 0.0, "exactly"),
        (0.0, 2.0, "0 times"),
        (-3.0, 2.0, "-1.5 times"),
        (NAN, 1.0, "not comparable with"),
        (1.0, -INF, "not comparable with"),
    ],
)
def test_ratio_words_edges(value, reference, said):
    assert ratio_words(value, reference) == said


@pytest.mark.parametrize(
    ("values", "said"),
    [
        ([1e-300, 1e300], "X rises from 1e-300 at a to 1e300 at b (a factor of 1e600)."),
        ([NAN], "X is NaN (not finite) at a."),
        ([INF, 1.0], "X is already Inf (not finite) at a."),
        ([1.0, -INF], "X goes from 1 at a to -Inf (not finite) at b."),
        ([0.0, 0.0], "X ends where it starts, at 0, from a to b."),
        ([3.0, 3.0], "X stays within a factor of 1 (3 to 3) from a to b."),
    ],
)
def test_trend_edges(values, said):
    assert trend(values, ["a", "b"][: len(values)], "x") == said


def test_compare_change_spread_share_edges():
    assert compare("a", 1e-300, "b", 1e300, "the loss") == (
        "The loss of a (1e-300) is lower than that of b (1e300), by a factor of 1e600."
    )
    assert compare("a", 0.5, "b", 0.5, "the loss") == (
        "The loss of a (0.5) is about the same as that of b (0.5), within 5%."
    )
    assert change(NAN, 1.0, "x") == "X goes from NaN to 1 (a value is not finite)."
    assert change(0.0, 0.0, "x") == "X stays at about 0 (0 to 0)."
    assert spread_vs([1e308, 1.0], 1e-308, "the w", "ref") == (
        "The w lie between 1 and 1e308; ref would give each 1e-308, and the largest is "
        "1e616 times that."
    )
    assert spread_vs([0.5, 0.5], 0.5, "the w", "ref") == (
        "The w all equal 0.5; ref would give each 0.5, and the largest is exactly that."
    )
    assert share_of([0.4, 0.4, 0.1], ["A", "B", "C"], "share") == (
        "The largest share, tied: A, B (0.4 each)."
    )
    assert share_of([0.1, NAN, 0.4], ["A", "B", "C"], "share") == "The largest share: C (0.4)."


PASSES = "passes the larger gradient back to its input"
NUMS = "(||dL/dx_0|| / ||dL/dx_L||: {} plain, {} residual)"


@pytest.mark.parametrize(
    ("plain", "residual", "said"),
    [
        ([1.0], [1.0], "the two stacks' gradients back at their input are the same "
         + NUMS.format(10, 10)),
        ([NAN], [1.0], "the two stacks' gradients back at their input are not comparable: one "
         "is not finite " + NUMS.format("NaN", 10)),
        ([2.0], [1.0], f"the plain stack {PASSES} " + NUMS.format(100, 10)),
        ([1.0, 1.0], [0.0, 0.0], f"the plain stack {PASSES} " + NUMS.format(10, 1)),
    ],
)  # fmt: skip
def test_larger_gradient_tie_nan_one_seed(plain, residual, said):
    seeds = list(range(len(plain)))
    assert G.larger_gradient_over_seeds(plain, residual, seeds) == sentence(said, seeds)


def test_first_vs_last_zero_and_overflow():
    rows = [(0, 1, 1.0), (0, 2, 0.0), (5, 1, 1e308), (5, 2, 1e-308)]
    frame = pd.DataFrame(rows, columns=["step", "block", "grad_norm"]).assign(variant="v")
    assert G.first_vs_last_over_seeds(frame, [0]) == "v: " + sentence(
        "the first block's gradient norm is larger than the last block's at step 0 "
        "(infinitely many times) and larger at step 5 (1e616 times)",
        [0],
    )


def _stream(a, b):
    return pd.DataFrame({"variant": "Pre-LN", "block": [0, 1], "sq_norm_per_dim": [a, b]})


@pytest.mark.parametrize(
    ("ends", "said"),
    [
        ([(0.0, 0.0)], "s ends within a factor of 1.25 of where it starts (from 0 to 0)"),
        ([(NAN, 1.0)], "s is not finite at an end (from NaN to 1)"),
        ([(1e-300, 1e300)], "s grows by a factor of 1e600, from 1e-300 to 1e300"),
        ([(2.0, 0.0)], "s falls from 2 to 0"),
        ([(0.0, 1.0), (1.0, 3.0)], "s grows by a factor of 3 where it starts above 0, from 0–1 "
         "to 1–3"),
        ([(1.0, 3.0), (1.0, 3.0)], "s grows by a factor of 3, from 1 to 3"),
    ],
)  # fmt: skip
def test_stream_seeds_edges(ends, said):
    frames, seeds = [_stream(a, b) for a, b in ends], list(range(len(ends)))
    assert N.stream_seeds(frames, seeds, "s") == sentence(said, seeds)


def _grads(post, pre):
    return pd.DataFrame(
        {"n_layers": [1, 1, 4, 4], "variant": ["Post-LN", "Pre-LN"] * 2,
         "ratio_to_L1": [1.0, 1.0, post, pre]}
    )  # fmt: skip


@pytest.mark.parametrize(
    ("post", "pre", "said"),
    [
        (NAN, NAN, "the two cannot be compared at L = 4: a ratio is not a number"),
        (0.5, NAN, "the two cannot be compared at L = 4: a ratio is not a number"),
        (0.5, 0.5, "the two are level at L = 4"),
        (0.5, 0.25, "Pre-LN's is the smaller at L = 4"),
    ],
)
def test_deepest_ratios_nan_and_tie(post, pre, said):
    text = N.deepest_ratios_seeds([_grads(post, pre)], [0])
    assert text.endswith(sentence(said, [0]))


def test_norms_nan_and_overflow():
    assert N.textbook_seeds([NAN], [1.0], [0]) == sentence(
        "the gap or the misfit is not a number, so the two cannot be compared", [0]
    )
    assert N.textbook_seeds([0.0], [0.0], [0]).startswith(lead([0]) + "the gap is within")
    ratio = pd.DataFrame({"view": ["BatchNorm"], "ratio": [NAN]})
    assert N.bn_halves_seeds([ratio], [0]) == sentence(
        "the ratio of the halves of sample 0 is not a number", [0]
    )

    def halves(a, b):
        return pd.DataFrame({"view": ["v"], "first_half": [a], "second_half": [b]})

    assert N.halves_words([halves(1e308, 1e-308), halves(2.0, 1.0)], "v") == (
        "seed 0: 1e616 times; seed 1: 2 times"
    )
    assert N.halves_words([halves(3.0, 1.0), halves(2.0, 1.0)], "v") == "2–3 times"


def test_stability_equal_zero_gradients_are_not_a_direction():
    rows = [("plain", s, 1.0, 0.0) for s in range(3)] + [("LN", s, 1.0, 0.0) for s in range(3)]
    history = pd.DataFrame(rows, columns=["variant", "step", "loss", "grad_norm"])
    assert stability_finding(history, ["plain"]) == sentence(
        "no run diverged, and the largest gradient norm of the stacks without a norm (0) and "
        f"of those with one (0) are less than {GRAD_PART:g} times apart; every run's loss over "
        "its last 10 steps is 1",
        [0],
    )


@pytest.mark.parametrize(
    ("plain", "want"),
    [
        (math.inf, "the plain stack's gradient overflows float64 from the output back to the "
                   "input and the residual stack's grows (to 2.51 times)"),
        (math.nan, "the plain stack's gradient cannot be measured from the output back to the "
                   "input and the residual stack's grows (to 2.51 times)"),
        (-math.inf, "the plain stack's gradient shrinks from the output back to the input (to 0 "
                    "times its size at the output) and the residual stack's grows"),
    ],
)  # fmt: skip
def test_stream_change_never_quotes_inf_or_nan_as_a_size(plain, want):
    said = G.stream_change_over_seeds([plain], [0.4], [0])
    assert want in said and "Inf times" not in said and "NaN times" not in said


def test_per_layer_headline_shows_no_nan_or_inf_figure():
    from resviz.gradients import headline as HG

    h = HG.per_layer([math.nan, -2.5], [math.inf, 0.4], [0, 1], 10)
    assert [f.value for f in h.figures] == ["not finite", "not finite"]
    assert "plain cannot be measured" in h.line and "residual overflows float64" in h.line
    ok = HG.per_layer([-math.inf], [0.4], [0], 10)  # exactly 0 at the input: a value
    assert [f.value for f in ok.figures] == ["0", "2.51"]
