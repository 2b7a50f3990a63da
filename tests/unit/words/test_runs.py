"""Sentences about training runs and stacks: every outcome (deeper worse or better,
ahead or behind, a stage with no finite value) gives a sentence that states it."""

import math

import pandas as pd
import pytest

import resviz as rv
from resviz.words import runs as fr


def test_depth_effect_states_degradation_or_not():
    worse = fr.depth_effect("plain", 4, 0.4, 16, 0.9)
    assert worse == (
        "Plain: the loss of the 16-block stack (0.9) is higher than that of the 4-block one "
        "(0.4), by a factor of 2.25; so here the deeper plain stack trains worse (degradation)."
    )
    better = fr.depth_effect("residual", 4, 0.4, 16, 0.1)
    assert better.endswith("; so here the deeper residual stack trains better.")
    assert "lower than that of the 4-block one (0.4)" in better
    same = fr.depth_effect("plain", 4, 1.0, 16, 1.01)
    assert same.endswith("within 5%; so here depth makes little difference.")
    assert fr.depth_effect("plain", 4, 1.0, 16, math.nan).endswith("cannot be compared.")


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
    assert words in fr.encoder_stream_rule(residual, norm, position).lower()


def test_exported_from_the_package():
    assert rv.words.runs is fr
    assert rv.words.loss_race is fr.loss_race and rv.words.depth_effect is fr.depth_effect
    assert rv.words.loss_race is fr.loss_race


def test_stack_norm_rule_follows_the_shortcut():
    assert "f(x) alone" in fr.stack_norm_rule("none")
    assert "can fall only where u points against x" in fr.stack_norm_rule("add")
    assert "can fall only" in fr.stack_norm_rule("scaled")
    assert "act(x + u)" in fr.stack_norm_rule("add", "before_act")
    assert "input's norm is kept." in fr.stack_norm_rule("concat")
    assert "projection P" in fr.stack_norm_rule("concat", concat_project=True)


def _curves(rows):
    return pd.DataFrame(rows, columns=["variant", "kind", "depth", "step", "loss"])


def test_degradation_summary_both_outcomes_and_uneven_steps():
    degraded = _curves([
        ("plain, 4", "plain", 4, 0, 1.1), ("plain, 4", "plain", 4, 40, 0.4),
        ("plain, 16", "plain", 16, 0, 1.1), ("plain, 16", "plain", 16, 40, 0.9),
        ("res, 4", "residual", 4, 40, 0.5), ("res, 16", "residual", 16, 40, 0.1),
    ])  # fmt: skip
    text = fr.degradation_summary(degraded, 4, 16)
    assert text.startswith("At each stack's last evaluation (step 40): Plain: the loss of the 16")
    assert "deeper plain stack trains worse (degradation)" in text
    assert "(0.9) is higher than that of the 4-block one (0.4)" in text
    assert "deeper residual stack trains better" in text
    # The other outcome: the deep plain stack ends lower; one stack stopped early.
    fine = _curves([
        ("plain, 4", "plain", 4, 40, 0.9), ("plain, 16", "plain", 16, 20, 0.3),
        ("res, 4", "residual", 4, 40, 0.5), ("res, 16", "residual", 16, 40, 0.5),
    ])  # fmt: skip
    text = fr.degradation_summary(fine, 4, 16)
    assert "(steps 20 to 40)" in text and "deeper plain stack trains better" in text
    assert "degradation)" not in text and "depth makes little difference" in text
    assert fr.degradation_summary(fine.iloc[:0], 4, 16) == "No evaluation yet."


def test_stage_change_per_group_skips_groups_never_drawn():
    frame = pd.DataFrame({
        "variant": ["a", "a", "a", "a", "b", "b", "c", "c"],
        "stage": ["init", "init", "trained", "trained", "init", "trained", "init", "trained"],
        "cosine": [0.4, 0.6, 0.1, 0.3, 0.2, math.nan, math.nan, math.nan],
    })  # fmt: skip
    text = fr.stage_change(frame, "cosine", "variant", "stage", "init", "trained", "the cosine")
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
    ahead = fr.loss_race(_race([5.0, 4.0, 3.0, 2.0], [5.0, 5.0, 5.0, 5.0]), "mine", "other", 2)
    assert ahead == (
        'Over steps 3 to 4: the mean loss of "mine" (2.5) is lower than that of "other" (5), '
        'by a factor of 2. The 2-step mean of "mine" is below that of "other" from step 2 on.'
    )
    behind = fr.loss_race(_race([5.0, 5.0, 6.0, 6.0], [5.0, 4.0, 3.0, 2.0]), "mine", "other", 2)
    assert '(6) is higher than that of "other" (2.5)' in behind
    assert behind.endswith('is not below that of "other" at the last step (4); it is not below '
                           "at any step from 1.")  # fmt: skip
    # The other curve ended early (diverged): compared on the steps both have.
    short = fr.loss_race(_race([3.0, 2.0, 1.0, 1.0], [3.0, 3.0]), "mine", "other", 10)
    assert short.startswith('Over steps 1 to 2: the mean loss of "mine" (2.5) is lower')
    assert "No step" in fr.loss_race(_race([1.0], []), "mine", "other")


def _blocks(rows):
    return pd.DataFrame(rows, columns=["variant", "step", "block", "grad_norm"])


def test_first_vs_last_block_both_outcomes():
    # Plain: the first block gets 100 times less than the last at step 0, the same at
    # step 9. Residual: the first block gets 2 times more at both steps.
    blocks = _blocks(
        [("plain", 0, 1, 0.01), ("plain", 0, 3, 1.0), ("plain", 9, 1, 0.5), ("plain", 9, 3, 0.5)]
        + [("res", s, b, v) for s in (0, 9) for b, v in ((1, 2.0), (2, 1.5), (3, 1.0))]
    )
    assert rv.words.first_vs_last_block(blocks) == (
        "The first block's gradient norm is 0.01 times the last block's at step 0 and "
        "exactly at step 9 in plain; 2 times the last block's at step 0 and 2 times at "
        "step 9 in res."
    )


def test_first_vs_last_block_leaves_out_what_it_cannot_compare():
    nan = float("nan")
    one_step = _blocks([("a", 0, 1, 4.0), ("a", 0, 2, 1.0), ("b", 0, 1, nan), ("b", 0, 2, nan)])
    assert rv.words.first_vs_last_block(one_step) == (
        "The first block's gradient norm is 4 times the last block's at step 0 in a."
    )
    # A step where the last block's norm is not finite is skipped, not called 0.
    partial = _blocks([("a", 0, 1, 1.0), ("a", 0, 2, 2.0), ("a", 5, 1, 1.0), ("a", 5, 2, nan)])
    assert rv.words.first_vs_last_block(partial).endswith(
        "0.5 times the last block's at step 0 in a."
    )
    assert rv.words.first_vs_last_block(_blocks([])) == ""
