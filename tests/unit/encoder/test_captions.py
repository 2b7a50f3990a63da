"""The encoder playground's captions, whole: what each adds to the sentences of
:mod:`resviz.encoder.words` (tested in test_words.py), on both outcomes of every
branch, and at NaN, inf, ties, zeros, negatives and a single seed."""

import math

import pandas as pd
import pytest

import resviz as rv
from resviz.encoder import captions as C
from resviz.encoder import words as W
from resviz.encoder import words_training as WT
from resviz.words.numbers import format_number, resolution_words
from resviz.words.seeds import band_words


# ---------------------------------------------------------------- the settings
def test_heads_warning_names_the_heads_that_divide_d_model():
    assert C.heads_warning(64, 4) is None and C.heads_warning(32, 16) is None
    said = C.heads_warning(32, 3)
    assert said == (
        "The number of heads must divide d_model (each head gets d_model / heads features): "
        "3 heads do not divide d_model = 32. Pick 1, 2, 4, 8 or 16 heads, or change d_model."
    )
    # 8 features: only 1, 2, 4 and 8 heads fit.
    assert "Pick 1, 2, 4 or 8 heads" in C.heads_warning(8, 3)


def _setup(**model: object) -> rv.encoder.Setup:
    return rv.encoder.setup(rv.encoder.Text(text="the cat sat"), rv.encoder.Model(**model))


def test_summary_states_the_setup_it_is_given():
    """Three words, so three tokens and a vocabulary of 3 + the 3 special tokens."""
    on = _setup(layers=2, d_model="32", heads="4", d_ff="64")
    assert C.summary(on) == (
        "3 word-level tokens of your text, vocabulary of 6; 2 layer(s), d_model 32, 4 head(s), "
        "FFN 64 (gelu), layer norm, pre, residual on, sinusoidal positions, first seed 0."
    )
    off = _setup(layers=1, ffn=False, norm="none", residual=False, pos="none")
    said = C.summary(off)
    assert "no FFN, no norm, residual off, none positions" in said
    assert "1 layer(s)" in said and "FFN 64" not in said


def test_clamped_words_only_where_the_model_is_smaller_than_asked():
    assert C.clamped_words((1, 1), (1, 1), 2, 4) is None
    assert C.clamped_words((5, 7), (2, 4), 2, 4) == (
        "This model has 2 layer(s) and 4 head(s): showing layer 2, head 4."
    )


# ------------------------------------------------------------------------ Model
def test_truncated_words_and_the_token_captions():
    assert C.truncated_words(16_667, 64, 4_096) == (
        "The text has 16,667 tokens: the views use the first 64; training reads the first 4,096."
    )
    word = C.tokens_caption(5, 8, 0, "word")
    assert word.startswith("5 tokens, vocabulary of 8 built from your text (ids 0-2 are")
    assert "0 shown token(s) fell outside it" in word and "Word level: lower-cased" in word
    char = C.tokens_caption(5, 8, 2, "char")
    assert "2 shown token(s)" in char and char.endswith("every run of whitespace one space.")
    assert "lower-cased" not in char
    card = C.card_caption("cpu", 7)
    assert "on this server's cpu" in card and "the code builds seed 7's weights." in card


# ------------------------------------------------------------- the views at init
def _attention() -> pd.DataFrame:
    return pd.DataFrame(
        {"seed": [0, 0, 1, 1], "query": ["a"] * 4, "key": ["a", "b"] * 2,
         "weight": [0.5, 0.5, 0.9, 0.1]}
    )  # fmt: skip


def test_attention_account_reads_the_map_shown():
    att = _attention()
    for shown in (0, 1):
        said = C.attention_account(att, shown, 2)
        assert said == (
            "Rows are queries, columns keys; each row sums to 1. A map has no band: this is "
            f"seed {shown}'s (the CSV holds every seed's). "
            + W.attention_spread_words(att, shown, 2)
            + " Labels are position:token, so repeated words stay apart."
        )


def _stream(norms: dict[int, list[float]]) -> pd.DataFrame:
    rows = []
    for s, n in norms.items():
        for i, (block, sub) in enumerate([(1, "attn"), (1, "ffn")]):
            rows.append({"seed": s, "block": block, "sublayer": sub, "index": i + 1,
                         "stream_norm": n[i + 1], "input_norm": n[i]})  # fmt: skip
    return pd.DataFrame(rows)


@pytest.mark.parametrize("seeds", [(0,), (0, 1)])
def test_stream_account_states_the_rule_of_this_config(seeds):
    stream = _stream({s: [1, 2, 4] for s in seeds})
    pre = C.stream_account(True, "layer", "pre", stream, seeds)
    assert pre == (
        "The norm of the stream after each sublayer. "
        + W.encoder_stream_rule(True, "layer", "pre")
        + " "
        + W.stream_norm_words(stream)
        + " "
        + band_words(seeds)
    )
    assert "adds its output to the stream" in pre
    post = C.stream_account(True, "rms", "post", stream, seeds)
    assert "passes through RMSNorm" in post and "adds its output" not in post


def _ratio(values: dict[int, list[float]]) -> pd.DataFrame:
    rows = [{"seed": s, "block": 1 + i // 2, "sublayer": ("attn", "ffn")[i % 2],
             "update_ratio": v} for s, vs in values.items() for i, v in enumerate(vs)]  # fmt: skip
    return pd.DataFrame(rows)


def test_ratio_account_says_what_a_ratio_means_with_and_without_residuals():
    ratio = _ratio({0: [0.1, 0.3], 1: [0.2, 0.4]})
    on = C.ratio_account(True, ratio, (0, 1))
    assert "nudges the stream rather than replacing it" in on
    assert on.endswith(W.update_ratio_words(ratio) + " " + band_words((0, 1)))
    off = C.ratio_account(False, ratio, (0, 1))
    assert "Without residuals each sublayer's output replaces the stream." in off
    assert "nudges" not in off


def test_share_account_names_the_seed_and_the_trained_model():
    share = pd.DataFrame(
        {"seed": [3, 3], "component": ["embedding", "L1 attn"], "sublayer": ["embed", "attn"],
         "share": [0.75, 0.25], "part": [True, True]}
    )  # fmt: skip
    words = W.share_words(share)
    assert C.share_account(share, 3) == "Bars: seed 3's (the CSV holds every seed's). " + words
    assert C.share_account(share, 3, "your model").startswith("your model, trained. Bars: seed 3")


def _collapse(finals: dict[int, list[float]]) -> pd.DataFrame:
    names = [("your model", True), ("your model, no shortcuts", False),
             ("attention only, shortcuts", True), ("attention only, no shortcuts", False)]  # fmt: skip
    rows = []
    for s, fs in finals.items():
        for (v, sc), f in zip(names, fs, strict=True):
            for block, r in ((0, 0.8), (1, f)):
                rows.append({"seed": s, "variant": v, "shortcuts": sc, "block": block,
                             "residual": r, "cosine": 1 - r})  # fmt: skip
    return pd.DataFrame(rows)


def test_collapse_account_marks_rounding_and_values_that_are_not_finite():
    plain = _collapse({0: [0.8, 1e-3, 0.75, 1e-4], 1: [0.7, 2e-3, 0.7, 1e-5]})
    said = C.collapse_account(plain, (0, 1))
    assert "Triangles" not in said
    assert said.endswith(W.collapse_words(plain) + " " + band_words((0, 1)))
    tiny = _collapse({0: [0.8, 1e-3, 0.75, 1e-16]})  # under float64's resolution
    said = C.collapse_account(tiny, (0,))
    assert f"Triangles at the bottom mark values {resolution_words(1e-13)}" in said
    assert "not finite" not in said.split(W.collapse_words(tiny))[0]
    for bad in (math.nan, math.inf):
        odd = _collapse({0: [0.8, 1e-3, 0.75, bad]})
        said = C.collapse_account(odd, (0,))
        assert "Triangles also mark values that are not finite." in said
        assert "Triangles at the bottom" not in said
    both = _collapse({0: [0.8, -math.inf, 0.75, 0.0]})  # a zero is under the floor too
    said = C.collapse_account(both, (0,))
    assert "Triangles at the bottom" in said and "Triangles also mark" in said


def test_cosine_account_adds_the_band():
    c = _collapse({0: [0.8, 1e-3, 0.75, 1e-4]})[["seed", "variant", "block", "cosine"]]
    assert C.cosine_account(c, (0,)).endswith(W.cosine_words(c) + " " + band_words((0,)))


# --------------------------------------------------------------------- Training
def test_training_intro_for_one_seed_and_several():
    one = C.training_intro(12, [3], 8)
    assert "windows of 12 tokens" in one
    assert one.endswith("Both models start from seed 3 and see the same 8-window batches.")
    many = C.training_intro(12, [0, 1, 2], 8)
    assert "One run per seed (seeds 0-2), one after another: in each, both models" in many


def test_batch_caption_counts_the_hidden_tokens():
    batch = pd.DataFrame({"window": [0, 1], "n_masked": [1, 2]})
    assert C.batch_caption(batch, 0, 4) == (
        "The first batch of seed 0, as the models see it: 2 windows of your text with 3 of "
        "their 8 tokens (37.5%) hidden behind [MASK]; the loss asks for the hidden ones."
    )
    none = C.batch_caption(batch.assign(n_masked=0), 5, 4)
    assert "0 of their 8 tokens (0%)" in none and "seed 5" in none


def test_progress_words_over_seeds():
    assert C.progress_words(30, 20, [0], "live", [0]) is None  # one seed: the bar says it
    assert C.progress_words(30, 20, [0, 1, 2], "live", [0, 1]) == (
        "Seed 1 (2 of 3): step 10 of 20; the chart holds the seeds run so far."
    )
    # The last step of the run is the last seed's, never a seed beyond it.
    assert C.progress_words(60, 20, [0, 1, 2], "live", [0, 1, 2]).startswith("Seed 2 (3 of 3)")
    assert C.progress_words(0, 0, [4, 5], "live", []).startswith("Seed 4 (1 of 2): step 0 of 0")
    assert (
        C.progress_words(40, 20, [0, 1], "done", [0, 1]) == "2 seeds x 20 steps: 40 steps in all."
    )
    assert C.progress_words(25, 20, [0, 1, 2], "stopped", [1, 0]) == (
        "Stopped: the curves are those of seeds 0-1 (of seeds 0-2)."
    )


def _curves(per_seed: dict[int, tuple[list[float], list[float]]]) -> pd.DataFrame:
    rows = []
    for s, (a, b) in per_seed.items():
        for v, losses in (("mine", a), ("other", b)):
            for step, loss in enumerate(losses, 1):
                rows.append({"seed": s, "variant": v, "step": step, "loss": loss,
                             "diverged": not math.isfinite(loss),
                             "divergence": "loss is NaN" if loss != loss else ""})  # fmt: skip
    return pd.DataFrame(rows)


def test_divergence_words_one_line_per_diverged_run():
    assert C.divergence_words(_curves({0: ([3.0, 2.0], [3.0, 3.0])})) == []
    lines = C.divergence_words(_curves({0: ([3.0, math.nan], [3.0, 3.0]), 1: ([3, 2], [3, 2])}))
    assert lines == [
        "Seed 0: mine diverged at step 2 (loss is NaN); its training stopped there (dashed "
        "vertical line)."
    ]


@pytest.mark.parametrize("vocab", [1, 20])
def test_loss_account_quotes_the_uniform_loss(vocab):
    """ln V is the cross-entropy of the uniform guess; ln 1 = 0 at one token."""
    curves = _curves({0: ([3.0, 2.0, 1.0], [3.0, 3.0, 3.0]), 2: ([3.0, 3.0], [3.0, 1.0])})
    said = C.loss_account(curves, vocab, "mine", "other")
    assert said == (
        f"Guessing uniformly over the {vocab} tokens of the vocabulary gives a loss of ln "
        f"{vocab} = {format_number(math.log(vocab))}. "
        + WT.loss_race_words(curves, "mine", "other")
        + " "
        + band_words([0, 2])
    )
    assert ("= 0." in said) == (vocab == 1)


def test_trained_captions():
    preds = pd.DataFrame({"seed": [0, 0], "variant": ["a", "b"], "correct": [1, 0]})
    assert C.predictions_caption(preds) == (
        "The positions are masked all at once; p_token is the probability the trained model "
        "gives the hidden token. " + WT.correct_words(preds)
    )
    assert C.trained_map_caption([0]) is None
    assert C.trained_map_caption([2, 3]) == "A map has no band: this is seed 2's."
    assert C.trained_ratio_account([0, 1]) == (
        "Update ratios ||f(x)|| / ||x|| of your model at init beside each trained model's. "
        + band_words([0, 1])
    )
    rc = pd.DataFrame(
        {"seed": [0, 0], "variant": ["your model"] * 2, "weights": ["init", "trained"],
         "block": [1, 1], "residual": [0.1, 0.5]}
    )  # fmt: skip
    said = C.trained_collapse_account(rc, 1, [0])
    assert said.startswith("Rank collapse before and after training: has training pulled")
    assert said.endswith(WT.trained_collapse_words(rc, 1) + " " + band_words([0]))
