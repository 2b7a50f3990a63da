"""The measured sentences: every outcome (up, down, flat; lower, higher, level; NaN)
gives a sentence that states it, with the figures in it."""

import math

import pandas as pd
import pytest

import resviz as rv
from resviz import findings_stack as fs

BLOCKS = ["block 1", "block 2", "block 3", "block 4"]


def test_num_three_significant_digits_and_non_finite():
    assert fs.num(0.012345) == "0.0123"
    assert fs.num(12345.0) == "1.23e+04"
    assert fs.num(0) == "0"
    assert (fs.num(math.nan), fs.num(math.inf), fs.num(-math.inf)) == ("NaN", "Inf", "-Inf")


def test_trend_rises_falls_and_stays_flat():
    up = fs.trend([1.0, 10.0, 100.0, 1000.0], BLOCKS, "the norm")
    assert up == "The norm rises from 1 at block 1 to 1e+03 at block 4 (a factor of 1e+03)."
    down = fs.trend([8.0, 4.0, 2.0, 1.0], BLOCKS, "the norm")
    assert down == "The norm falls from 8 at block 1 to 1 at block 4 (a factor of 8)."
    flat = fs.trend([1.0, 1.2, 1.1, 1.3], BLOCKS, "the norm")
    assert flat == "The norm stays within a factor of 1.3 (1 to 1.3) from block 1 to block 4."
    # A wider band is not called flat.
    assert "rises" in fs.trend([1.0, 1.2, 1.1, 1.6], BLOCKS, "the norm")
    assert "stays" in fs.trend([1.0, 1.2, 1.1, 1.6], BLOCKS, "the norm", flat=2.0)


def test_trend_names_a_peak_or_dip_beyond_both_ends():
    peak = fs.trend([1.0, 50.0, 3.0, 2.0], BLOCKS, "x")
    assert peak.startswith("X rises from 1 at block 1 to 2 at block 4")
    assert "peaks at 50 at block 2" in peak
    dip = fs.trend([5.0, 0.1, 3.0, 2.0], BLOCKS, "x")
    assert "falls" in dip and "dips to 0.1 at block 2" in dip
    assert "peaks" not in fs.trend([1.0, 2.0, 3.0, 4.0], BLOCKS, "x")


def test_trend_zero_sign_change_and_non_finite():
    to_zero = fs.trend([0.9, 0.3, 0.0, 0.0], BLOCKS, "the distance")
    assert to_zero == "The distance falls from 0.9 at block 1 to 0 at block 4."
    signs = fs.trend([-0.5, 0.1, 0.2, 0.4], BLOCKS, "the cosine")
    assert signs == "The cosine rises from -0.5 at block 1 to 0.4 at block 4."
    blown = fs.trend([1.0, 1e30, math.inf, math.nan], BLOCKS, "the norm")
    assert blown == "The norm goes from 1 at block 1 to Inf (not finite) at block 3."
    assert fs.trend([math.nan, 1.0], BLOCKS[:2], "y") == "Y is already NaN at block 1."
    assert fs.trend([2.0], BLOCKS[:1], "y") == "Y is 2 at block 1."
    assert fs.trend([3.0, 3.0, 1.0, 3.0], BLOCKS, "y").startswith("Y ends where it starts, at 3")
    with pytest.raises(ValueError):
        fs.trend([1.0, 2.0], BLOCKS, "y")


def test_compare_and_order_every_outcome():
    assert fs.order(1.0, 2.0) == -1 and fs.order(2.0, 1.0) == 1 and fs.order(1.0, 1.01) == 0
    assert fs.order(math.nan, 1.0) is None
    lower = fs.compare("A", 0.5, "B", 2.0, "loss")
    assert lower == "Loss of A (0.5) is lower than that of B (2), by a factor of 4."
    higher = fs.compare("A", 3.0, "B", 1.0, "the loss")
    assert higher == "The loss of A (3) is higher than that of B (1), by a factor of 3."
    level = fs.compare("A", 1.0, "B", 1.02, "the loss")
    assert level == "The loss of A (1) is about the same as that of B (1.02), within 5%."
    assert fs.compare("A", -1.0, "B", 1.0, "the cosine") == (
        "The cosine of A (-1) is lower than that of B (1)."
    )
    assert fs.compare("A", math.nan, "B", 1.0, "loss").endswith("only that of B is finite.")
    assert fs.compare("A", math.inf, "B", math.nan, "loss").endswith("neither is finite.")


def test_depth_effect_states_degradation_or_not():
    worse = fs.depth_effect("plain", 4, 0.4, 16, 0.9)
    assert worse == (
        "Plain: the loss of the 16-block stack (0.9) is higher than that of the 4-block one "
        "(0.4), by a factor of 2.25; so here the deeper plain stack trains worse (degradation)."
    )
    better = fs.depth_effect("residual", 4, 0.4, 16, 0.1)
    assert better.endswith("; so here the deeper residual stack trains better.")
    assert "lower than that of the 4-block one (0.4)" in better
    same = fs.depth_effect("plain", 4, 1.0, 16, 1.01)
    assert same.endswith("within 5%; so here depth makes little difference.")
    assert fs.depth_effect("plain", 4, 1.0, 16, math.nan).endswith("cannot be compared.")


def test_crossing_every_outcome():
    steps = [10, 20, 30, 40]
    assert fs.crossing(steps, [1, 1, 1, 1], [2, 2, 2, 2], "a", "b") == (
        "A is below b at every step (10 to 40)."
    )
    assert fs.crossing(steps, [3, 1, 3, 1], [2, 2, 2, 2], "a", "b") == (
        "A is below b from step 40 on."
    )
    assert fs.crossing(steps, [1, 1, 3, 3], [2, 2, 2, 2], "a", "b") == (
        "A is not below b at the last step (40)."
    )
    assert fs.crossing(steps, [3, 3, 3, math.nan], [2, 2, 2, 2], "a", "b") == (
        "A is not below b at the last step (40); it is not below at any step from 10."
    )
    assert "no steps" in fs.crossing([], [], [], "a", "b")


def test_value_range_change_spread_and_share():
    assert fs.value_range([0.3, 0.1, math.nan, 0.9], BLOCKS, "the share") == (
        "The share ranges from 0.1 (block 2) to 0.9 (block 4) (1 value(s) not finite)."
    )
    assert fs.value_range([1.0, 1.0], BLOCKS[:2], "y") == "Y is 1 everywhere."
    assert (
        fs.value_range([math.nan], BLOCKS[:1], "y")
        == "Y has no finite value (1 value(s) not finite)."
    )
    assert fs.change(0.9, 0.45, "d") == "D falls from 0.9 to 0.45 (a factor of 2)."
    assert fs.change(0.1, 0.5, "d") == "D rises from 0.1 to 0.5 (a factor of 5)."
    assert fs.change(0.9, 0.91, "d") == "D stays at about 0.9 (0.9 to 0.91)."
    assert fs.spread_vs([0.05, 0.21, 0.1], 0.1, "the weights", "uniform attention") == (
        "The weights lie between 0.05 and 0.21; uniform attention would give each 0.1, and "
        "the largest is 2.1 times that."
    )
    assert fs.spread_vs([0.25] * 4, 0.25, "w", "uniform").startswith("W all equal 0.25")
    assert fs.share_of([0.1, 0.6, 0.3], ["embedding", "L1 attn", "L1 ffn"], "share") == (
        "The largest share: L1 attn (0.6)."
    )


@pytest.mark.parametrize(
    ("residual", "norm", "position", "words"),
    [
        (True, "layer", "pre", "with residuals and pre-ln, each sublayer adds its output"),
        (True, "none", "post", "with residuals and no norm"),
        (True, "rms", "post", "passes through rmsnorm"),
        (False, "layer", "post", "output, passed through layernorm"),
        (False, "layer", "pre", "that sublayer's output."),
    ],
)
def test_encoder_stream_rule_follows_the_config(residual, norm, position, words):
    assert words in fs.encoder_stream_rule(residual, norm, position).lower()


def test_exported_from_the_package():
    assert rv.findings_stack is fs
    assert rv.trend is fs.trend and rv.compare is fs.compare and rv.crossing is fs.crossing


def test_stack_norm_rule_follows_the_shortcut():
    assert "f(x) alone" in fs.stack_norm_rule("none")
    assert "can fall only where u points against x" in fs.stack_norm_rule("add")
    assert "can fall only" in fs.stack_norm_rule("scaled")
    assert "act(x + u)" in fs.stack_norm_rule("add", "before_act")
    assert "input's norm is kept." in fs.stack_norm_rule("concat")
    assert "projection P" in fs.stack_norm_rule("concat", concat_project=True)


def _curves(rows):
    return pd.DataFrame(rows, columns=["variant", "kind", "depth", "step", "loss"])


def test_degradation_summary_both_outcomes_and_uneven_steps():
    degraded = _curves([
        ("plain, 4", "plain", 4, 0, 1.1), ("plain, 4", "plain", 4, 40, 0.4),
        ("plain, 16", "plain", 16, 0, 1.1), ("plain, 16", "plain", 16, 40, 0.9),
        ("res, 4", "residual", 4, 40, 0.5), ("res, 16", "residual", 16, 40, 0.1),
    ])  # fmt: skip
    text = fs.degradation_summary(degraded, 4, 16)
    assert text.startswith("At each stack's last evaluation (step 40): Plain: the loss of the 16")
    assert "deeper plain stack trains worse (degradation)" in text
    assert "(0.9) is higher than that of the 4-block one (0.4)" in text
    assert "deeper residual stack trains better" in text
    # The other outcome: the deep plain stack ends lower; one stack stopped early.
    fine = _curves([
        ("plain, 4", "plain", 4, 40, 0.9), ("plain, 16", "plain", 16, 20, 0.3),
        ("res, 4", "residual", 4, 40, 0.5), ("res, 16", "residual", 16, 40, 0.5),
    ])  # fmt: skip
    text = fs.degradation_summary(fine, 4, 16)
    assert "(steps 20 to 40)" in text and "deeper plain stack trains better" in text
    assert "degradation)" not in text and "depth makes little difference" in text
    assert fs.degradation_summary(fine.iloc[:0], 4, 16) == "No evaluation yet."


def test_stage_change_per_group_skips_groups_never_drawn():
    frame = pd.DataFrame({
        "variant": ["a", "a", "a", "a", "b", "b", "c", "c"],
        "stage": ["init", "init", "trained", "trained", "init", "trained", "init", "trained"],
        "cosine": [0.4, 0.6, 0.1, 0.3, 0.2, math.nan, math.nan, math.nan],
    })  # fmt: skip
    text = fs.stage_change(frame, "cosine", "variant", "stage", "init", "trained", "the cosine")
    assert text == (
        "a: the cosine falls from 0.5 to 0.2 (a factor of 2.5). "
        "b: no finite value of the cosine at trained."
    )


def _race(a, b):
    n = len(a)
    return pd.DataFrame({
        "variant": ["mine"] * n + ["other"] * len(b),
        "step": list(range(1, n + 1)) + list(range(1, len(b) + 1)),
        "loss": a + b,
    })  # fmt: skip


def test_loss_race_both_outcomes():
    ahead = fs.loss_race(_race([5.0, 4.0, 3.0, 2.0], [5.0, 5.0, 5.0, 5.0]), "mine", "other", 2)
    assert ahead == (
        'Over steps 3 to 4: the mean loss of "mine" (2.5) is lower than that of "other" (5), '
        'by a factor of 2. The 2-step mean of "mine" is below that of "other" from step 2 on.'
    )
    behind = fs.loss_race(_race([5.0, 5.0, 6.0, 6.0], [5.0, 4.0, 3.0, 2.0]), "mine", "other", 2)
    assert '(6) is higher than that of "other" (2.5)' in behind
    assert behind.endswith('is not below that of "other" at the last step (4); it is not below '
                           "at any step from 1.")  # fmt: skip
    # The other curve ended early (diverged): compared on the steps both have.
    short = fs.loss_race(_race([3.0, 2.0, 1.0, 1.0], [3.0, 3.0]), "mine", "other", 10)
    assert short.startswith('Over steps 1 to 2: the mean loss of "mine" (2.5) is lower')
    assert "No step" in fs.loss_race(_race([1.0], []), "mine", "other")
