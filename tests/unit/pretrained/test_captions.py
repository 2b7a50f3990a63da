"""The Pretrained models page's captions (resviz.pretrained.captions), each on both of
its outcomes and on NaN, inf, ties, zeros, negatives and a single block or token: the
page shows what these return (tests/app/test_pretrained_page.py checks that)."""

import math
from types import SimpleNamespace

import pandas as pd
import pytest

from resviz.core import Result
from resviz.pretrained.captions import intros as I
from resviz.pretrained.captions import measures as M
from resviz.pretrained.stream.heal import BATCH, LR, WINDOW, Deletion

NAN, INF = math.nan, math.inf


def _norms(stream, normed, growth=1.5, final=True):
    n = len(stream) - 1
    rows = [("stream", b, v) for b, v in enumerate(stream)]
    rows += [("final norm applied", b, v) for b, v in enumerate(normed)]
    frame = pd.DataFrame(rows, columns=["variant", "block", "median_norm"])
    return Result({"norms": frame}, {"growth": growth, "n_layers": n, "has_final_norm": final})


def test_norms_words_quote_the_ends_the_fit_and_the_normed_range():
    words = M.norms_words(_norms([1.0, 2.0, 4.0], [3.0, 5.0, 4.0], growth=2.0))
    assert words == (
        "Block 0 is the embeddings. The median token norm goes from 1 (embeddings) to 4 "
        "after block 2, a fitted factor of 2 per block over blocks 1-2. With the final norm "
        "applied (what the head reads) it stays between 3 and 5."
    )
    # No final norm (BERT): that said in place of the normed range.
    words = M.norms_words(_norms([1.0, 2.0, 4.0], [], final=False))
    assert words.endswith("This family has no final norm: every block ends in its own LayerNorm.")
    assert "stays between" not in words


def test_norms_words_leave_out_a_fit_that_is_not_a_number():
    # One block: no fit over blocks 1-1 (the recipe's growth is NaN), nothing claimed.
    words = M.norms_words(_norms([0.0, 0.0], [0.0, 0.0], growth=NAN))
    assert "fitted factor" not in words
    assert "goes from 0 (embeddings) to 0 after block 1. " in words
    # An overflowing stream: the fit is written as it is, not rounded away.
    words = M.norms_words(_norms([1.0, INF], [1.0, 1.0], growth=INF))
    assert "to Inf after block 1, a fitted factor of Inf per block" in words


def _influence(values, n_tokens=7):
    frame = pd.DataFrame({"block": range(1, len(values) + 1), "influence": values})
    return Result({"influence": frame}, {"n_tokens": n_tokens})


def test_influence_words_name_the_most_and_least_turning_blocks():
    assert M.influence_words(_influence([0.2, 0.05, 0.4])) == (
        "Block 3 changes the direction of the stream most (1 - cos = 0.4), block 2 least "
        "(0.05). Mean over the 7 tokens."
    )
    # Negative (1 - cos a rounding below 0): the lowest is still the least.
    assert "block 1 least (-1e-7)" in M.influence_words(_influence([-1e-7, 0.3]))
    # Ties: the first of the tied blocks; a NaN block is named neither.
    assert M.influence_words(_influence([0.0, 0.0])).startswith(
        "Block 1 changes the direction of the stream most (1 - cos = 0), block 1 least (0)."
    )
    words = M.influence_words(_influence([NAN, 0.1, 0.3]))
    assert "Block 3" in words and "block 2 least" in words and "NaN" not in words
    assert "most (1 - cos = Inf)" in M.influence_words(_influence([0.1, INF]))
    assert M.influence_words(_influence([0.5], n_tokens=1)).endswith(
        "block 1 least (0.5). Mean over the 1 tokens."
    )


def _similarity(angular, cos, n_layers=2):
    frame = pd.DataFrame(
        {"block_a": [0, 0, 1], "block_b": [1, n_layers, n_layers], "angular": [0.1, angular, 0.2],
         "cos": [0.9, cos, 0.8]}
    )  # fmt: skip
    return Result({"similarity": frame}, {"n_layers": n_layers})


@pytest.mark.parametrize(
    ("angular", "cos", "said"),
    [(0.25, 0.0, "0.25 apart (mean cosine 0)"), (0.75, -0.7, "0.75 apart (mean cosine -0.7)"),
     (0.0, 1.0, "0 apart (mean cosine 1)"), (NAN, NAN, "NaN apart (mean cosine NaN)")],
)  # fmt: skip
def test_similarity_words_quote_the_first_and_last_state(angular, cos, said):
    words = M.similarity_words(_similarity(angular, cos))
    assert words.startswith("Mean over tokens of the angular distance arccos(cos(x_a, x_b)) / pi")
    assert words.endswith(f"The embeddings and the last block's output are {said}.")


def _lens(probs, settled=1, final=True, token="you"):
    frame = pd.DataFrame({"block": range(len(probs)), "answer_prob": probs, "answer_token": token})
    return Result({"lens": frame}, {"settled": settled, "has_final_norm": final})


def test_lens_words_follow_the_answer_and_the_decoding():
    words = M.lens_words(_lens([1e-4, 0.02, 0.5], settled=2))
    assert words == (
        "The model's next token after the text is 'you'. Its probability goes from 1e-4 "
        "(embeddings decoded) to 0.5 (the output); it is the top token from block 2 on. "
        "Each state passes through the final norm, then the model's own unembedding."
    )
    no_norm = M.lens_words(_lens([0.3, 0.3], final=False))
    assert no_norm.endswith("Each state passes through the model's own unembedding.")
    assert "goes from 0.3 (embeddings decoded) to 0.3" in no_norm  # a tie, said as it is
    assert "from 0 (embeddings decoded) to NaN" in M.lens_words(_lens([0.0, NAN]))
    # The token is written by the escape the page passes, cut at 30 characters.
    shown = M.lens_words(_lens([0.1, 0.2], token="x" * 40), lambda t, n: f"<{t[:n]}>")
    assert f"<{'x' * 30}>" in shown


def _sinks(shares, uniform=0.25, n_tokens=5, token="The"):
    frame = pd.DataFrame(
        {"block": [1, 1, 2, 2][: len(shares)], "head": [1, 2, 1, 2][: len(shares)],
         "first_token_share": shares, "uniform_share": uniform}
    )  # fmt: skip
    return Result({"sinks": frame}, {"n_tokens": n_tokens, "first_token": token})


def test_sinks_words_count_the_heads_over_half():
    words = M.sinks_words(_sinks([0.9, 0.7, 0.1, 0.3]))
    assert words == (
        "Share of each head's attention on the first token 'The' (mean over the other 4 "
        "query positions). Block means run from 0.2 to 0.8; spread evenly it would be "
        "0.25. 2 of 4 heads put more than half their attention there."
    )
    # Exactly one half is not more than half; zeros and ties are counted as they are.
    assert "0 of 4 heads" in M.sinks_words(_sinks([0.5, 0.5, 0.0, 0.0]))
    assert "run from 0 to 0.5" in M.sinks_words(_sinks([0.5, 0.5, 0.0, 0.0]))
    # A NaN share is not over half; one head is one head.
    assert "0 of 2 heads" in M.sinks_words(_sinks([NAN, 0.2]))
    assert "1 of 1 heads" in M.sinks_words(_sinks([1.0], uniform=1.0, n_tokens=1))
    assert "mean over the other 0 query positions" in M.sinks_words(_sinks([1.0], n_tokens=1))


def _massive(ratios, token="\n"):
    frame = pd.DataFrame(
        {"block": range(1, len(ratios) + 1), "ratio": ratios, "position": 3, "dim": 7}
    )
    return Result({"massive": frame}, {"peak_token": token})


def test_massive_words_name_the_largest_ratio():
    assert M.massive_words(_massive([2.0, 80.0, 5.0])) == (
        "The largest activation relative to the median: 80x at block 2, on token '\\n' "
        "(position 3), dimension 7."
    )
    assert "1x at block 1" in M.massive_words(_massive([1.0, 1.0]))  # a tie: the first
    assert "Infx at block 2" in M.massive_words(_massive([3.0, INF, NAN]))
    assert "0x at block 1" in M.massive_words(_massive([0.0]))


# ------------------------------------------------------------------ intros
def test_budget_words_give_the_largest_model_in_closed_form():
    """300 MB at 2 x 4 bytes per parameter holds 300 * 2**20 / 8 = 39.3M parameters."""
    words = I.budget_words(300 * 2**20, 2.0)
    assert "within 300 MB, for every visitor together" in words
    assert "about 2x its float32 weights" in words and "about 39M parameters" in words
    assert "about 1,074M parameters" in I.budget_words(4096 * 2**20, 1.0)
    assert "within 0 MB" in I.budget_words(0, 2.0) and "about 0M parameters" in I.budget_words(0)


@pytest.mark.parametrize("section", ["lens", "patching", "heal"])
def test_needs_words_offer_a_folder_only_where_the_server_takes_one(section):
    with_folder = I.needs_words(section, "BertModel", True)
    without = I.needs_words(section, "BertModel", False)
    assert with_folder.startswith(without.removesuffix("."))
    assert without.endswith("Pick the Sonnets GPT-2.") and " or " in with_folder
    said = "BertModel has none" if section == "patching" else "BertModel is an encoder"
    assert said in without


@pytest.mark.parametrize(
    ("position", "n_tokens", "shown"),
    [(0, 5, True), (4, 5, True), (5, 5, False), (-1, 5, True), (-5, 5, True), (-6, 5, False),
     (0, 1, True), (1, 1, False), (0, 0, False)],
)  # fmt: skip
def test_position_warning_only_outside_the_text(position, n_tokens, shown):
    warning = I.position_warning(position, n_tokens)
    assert (warning is None) == shown
    if warning:
        assert warning.startswith(f"Position {position} is outside this text's {n_tokens} tokens")
        assert f"(0 to {n_tokens - 1}, or -1 for the last)" in warning


def test_nonlinear_words_say_what_holds_instead():
    encoder = I.nonlinear_words(Result({}, {"architecture": "BertModel", "decoder": False}))
    assert encoder.startswith("BertModel normalises after every sum (Post-LN")
    assert encoder.endswith("the share of the sum it enters, shown below.")
    headless = I.nonlinear_words(Result({}, {"architecture": "GPT2Model", "decoder": True}))
    assert headless.startswith("GPT2Model has no output head: there is no logit to split.")
    assert headless.endswith("the share of the final stream, shown below.")


def test_heal_intro_names_the_deletion_and_the_training():
    block = I.heal_intro(Deletion(2), 60)
    assert block.startswith("A copy of the model without block 2 is fine-tuned for 60 steps")
    assert f"(learning rate {LR:g}, {BATCH} windows of {WINDOW} tokens per step" in block
    assert "without the same blocks, randomly initialised" in block
    mlp = I.heal_intro(Deletion(2, part="mlp"), 1)
    assert "without the mlp of block 2 is fine-tuned for 1 steps" in mlp
    assert "without the same mlp deleted" in mlp


def test_trace_words_say_when_the_text_was_cut():
    model = SimpleNamespace(describe=lambda: "GPT2LMHeadModel, 4 blocks")
    whole = SimpleNamespace(model=model, n_tokens=12, truncated=False)
    assert I.trace_words(whole) == "GPT2LMHeadModel, 4 blocks; 12 tokens."
    cut = I.trace_words(SimpleNamespace(model=model, n_tokens=512, truncated=True))
    assert (
        cut
        == f"GPT2LMHeadModel, 4 blocks; 512 tokens (the text was cut to the first {I.MAX_TOKENS})."
    )


def test_model_help_and_prompts_words():
    help_ = I.model_help([I.TINY, I.FOLDER])
    assert help_ == f"{I.TINY}: {I.ABOUT[I.TINY]}; {I.FOLDER}: {I.ABOUT[I.FOLDER]}"
    assert set(I.ABOUT) == {I.TINY, I.DEMO, I.FOLDER, *I.SIBLINGS.values()}
    assert I.prompts_words("a b", "a c", "mine") == (
        "Clean: 'a b'  \nCorrupted: 'a c'  \nThe boxes above take effect with Prompts = mine."
    )
    assert I.patching_intro(5).endswith("5 blocks' worth (x_0 to x_L).")
    assert I.deletion_intro(4).startswith("Each of the 4 blocks in turn returns its input")
