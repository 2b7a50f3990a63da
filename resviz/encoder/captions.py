"""The encoder playground's captions, whole: each section's text as the page prints it,
built from the settings, the config and the measured frames of every seed.

The sentences that read a frame over seeds are :mod:`resviz.encoder.words`'s and
:mod:`resviz.encoder.words_training`'s; this module puts them together with what the
settings make true (the stream's rule, how a token is cut, whether a chart's line is a
median), so a page and its tests call one function per caption."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from resviz.encoder.settings import HEAD_CHOICES, Setup
from resviz.encoder.words import (
    attention_spread_words,
    collapse_words,
    cosine_words,
    encoder_stream_rule,
    share_words,
    stream_norm_words,
    update_ratio_words,
)
from resviz.encoder.words_training import correct_words, loss_race_words, trained_collapse_words
from resviz.words.numbers import FLOAT64_RESOLUTION, format_number, resolution_words
from resviz.words.seeds import band_words, seeds_label

__all__ = [
    "CODE_CAPTION",
    "NO_TOKENS",
    "attention_account",
    "batch_caption",
    "card_caption",
    "clamped_words",
    "collapse_account",
    "cosine_account",
    "divergence_words",
    "heads_warning",
    "loss_account",
    "predictions_caption",
    "progress_words",
    "ratio_account",
    "share_account",
    "stream_account",
    "summary",
    "tokens_caption",
    "trained_collapse_account",
    "trained_map_caption",
    "trained_ratio_account",
    "training_intro",
    "truncated_words",
]


# ---------------------------------------------------------------- the settings
NO_TOKENS = (
    "There are no tokens to run: type some text (words for word-level tokens; "
    "whitespace, null bytes and control characters are dropped)."
)


def heads_warning(d_model: int, heads: int) -> str | None:
    """Why ``heads`` heads cannot split ``d_model`` features, with the choices that
    can; None where they can."""
    if d_model % heads == 0:
        return None
    fits = [h for h in HEAD_CHOICES if d_model % int(h) == 0]
    return (
        f"The number of heads must divide d_model (each head gets d_model / heads "
        f"features): {heads} heads do not divide d_model = {d_model}. Pick "
        f"{', '.join(fits[:-1])} or {fits[-1]} heads, or change d_model."
    )


def summary(s: Setup) -> str:
    """One line saying what the folded settings hold (our words and numbers only)."""
    c = s.cfg
    ffn = f"FFN {c.d_ff} ({c.activation})" if c.use_ffn else "no FFN"
    norm = "no norm" if c.norm == "none" else f"{c.norm} norm, {c.norm_position}"
    return (
        f"{s.T} {s.vocab.level}-level tokens of your text, vocabulary of {len(s.vocab)}; "
        f"{c.n_layers} layer(s), d_model {c.d_model}, {c.n_heads} head(s), {ffn}, {norm}, "
        f"residual {'on' if c.residual else 'off'}, {c.positional} positions, first seed "
        f"{c.seed}."
    )


def clamped_words(
    asked: tuple[int, int], shown: tuple[int, int], n_layers: int, n_heads: int
) -> str | None:
    """What a layer and head asked beyond the model show instead (None where the
    asked ones are shown)."""
    if tuple(shown) == tuple(asked):
        return None
    return (
        f"This model has {n_layers} layer(s) and {n_heads} head(s): showing layer "
        f"{shown[0]}, head {shown[1]}."
    )


# ------------------------------------------------------------------------ Model
def truncated_words(n_total: int, n_tokens: int, train_tokens: int) -> str:
    """How much of a long text the views and training read."""
    return (
        f"The text has {n_total:,} tokens: the views use the first {n_tokens}; "
        f"training reads the first {train_tokens:,}."
    )


def tokens_caption(n_tokens: int, vocab_size: int, n_unknown: int, level: str) -> str:
    """The token table's caption: its size, the unknown tokens and how text is cut."""
    cut = (
        "Word level: lower-cased runs of letters and digits, each punctuation mark a "
        "token of its own."
        if level == "word"
        else "Character level: one token per character, every run of whitespace one space."
    )
    return (
        f"{n_tokens} tokens, vocabulary of {vocab_size} built from your text (ids 0-2 "
        f"are [PAD], [UNK], [MASK]); {n_unknown} shown token(s) fell outside it and "
        f"became [UNK]. {cut}"
    )


def card_caption(device: str, seed: int) -> str:
    """How the model card's figures are counted, and that none depends on the seed."""
    return (
        "Parameters are counted exactly; FLOPs count 2 per multiply-add in every linear "
        "layer plus attention's two T x T products; activation memory is an estimate, from "
        "the layer shapes, of what autograd keeps for a backward pass. Latency is a timing "
        f"on this server's {device}, which others share, taken when these settings were "
        "computed and kept with them. No count here depends on the seed, so this section "
        f"runs one (the sidebar's Seeds does not apply); the code builds seed {seed}'s "
        "weights."
    )


# What the generated code (resviz.codegen) is beside the page's model.
CODE_CAPTION = (
    "torch only. `build_model()` gives the same initial weights as this page "
    "(same seed, same modules in the same order); the module names match "
    "`rv.build`, so state dicts load either way. A test runs this code and "
    "compares the outputs."
)


# ------------------------------------------------------------- the views at init
def attention_account(attention: pd.DataFrame, shown: int, n_tokens: int) -> str:
    """The attention map's account: how to read it, and its weights against uniform."""
    return (
        "Rows are queries, columns keys; each row sums to 1. A map has no band: "
        f"this is seed {shown}'s (the CSV holds every seed's). "
        + attention_spread_words(attention, shown, n_tokens)
        + " Labels are position:token, so repeated words stay apart."
    )


def stream_account(
    residual: bool, norm: str, position: str, stream: pd.DataFrame, seeds: Sequence[int]
) -> str:
    """The residual stream chart's account: what the stream is for this config, and
    how its norm changes in every seed."""
    return (
        "The norm of the stream after each sublayer. "
        + encoder_stream_rule(residual, norm, position)
        + " "
        + stream_norm_words(stream)
        + " "
        + band_words(seeds)
    )


def ratio_account(residual: bool, ratio: pd.DataFrame, seeds: Sequence[int]) -> str:
    """The update-ratio chart's account: what a ratio means with or without
    residuals, and the measured ratios of every seed."""
    nudge = (
        "With residuals the stream goes on as x + f(x): a ratio below 1 means the sublayer "
        "nudges the stream rather than replacing it. "
        if residual
        else "Without residuals each sublayer's output replaces the stream. "
    )
    return (
        "How big each sublayer's output f(x) is next to the stream x entering it "
        "(mean over tokens of ||f(x)|| / ||x||). "
        + nudge
        + update_ratio_words(ratio)
        + " "
        + band_words(seeds)
    )


def share_account(share: pd.DataFrame, shown: int, model: str | None = None) -> str:
    """The share bars' account (one seed's bars, every seed's numbers); ``model``
    names a trained model's bars."""
    name = f"{model}, trained. " if model is not None else ""
    return f"{name}Bars: seed {shown}'s (the CSV holds every seed's). " + share_words(share)


def collapse_account(collapse: pd.DataFrame, seeds: Sequence[int]) -> str:
    """The rank-collapse chart's account: the distance, Dong et al.'s result, what
    the triangles mark (where any value is under float64's resolution or not
    finite), and the measured distances of every seed."""
    floor = FLOAT64_RESOLUTION
    residual = collapse["residual"].astype(float)
    under = residual.abs().lt(floor).any()
    hidden = not residual.map(math.isfinite).all()
    return (
        "Distance of the token matrix X from the nearest matrix whose rows are all "
        "one vector (rank one, 1 x^T), after each layer, at init. Dong et al. (2021) show "
        "that pure attention without shortcuts pulls the tokens towards one vector, doubly "
        "exponentially in depth, and that shortcuts counter it. "
        + (
            f"Triangles at the bottom mark values {resolution_words(floor)}: each "
            "model runs in float64, and a distance that small is rounding, not a measurement. "
            if under
            else ""
        )
        + ("Triangles also mark values that are not finite. " if hidden else "")
        + collapse_words(collapse)
        + " "
        + band_words(seeds)
    )


def cosine_account(cosine: pd.DataFrame, seeds: Sequence[int]) -> str:
    """The token-cosine chart's account."""
    return (
        "The same comparison seen as similarity: a mean cosine of 1 means every "
        "token vector points the same way. " + cosine_words(cosine) + " " + band_words(seeds)
    )


# --------------------------------------------------------------------- Training
def training_intro(n_tokens: int, seeds: Sequence[int], batch: int) -> str:
    """The masked-token task, and how the seeds run."""
    start = (
        f"Both models start from seed {seeds[0]} and see the same {batch}-window batches."
        if len(seeds) == 1
        else f"One run per seed ({seeds_label(seeds)}), one after another: in each, "
        f"both models start from that seed and see the same {batch}-window batches."
    )
    return (
        f"A tiny BERT-style task on your text: windows of {n_tokens} tokens, each token "
        f"hidden behind [MASK] with probability 0.15 (at least one per window), the loss is "
        f"the cross-entropy of guessing the hidden ones. {start}"
    )


def batch_caption(batch: pd.DataFrame, seed: int, n_tokens: int) -> str:
    """The first batch's caption: its windows and how many tokens are hidden."""
    hidden, cells = int(batch["n_masked"].sum()), len(batch) * n_tokens
    return (
        f"The first batch of seed {seed}, as the models see it: {len(batch)} windows of "
        f"your text with {hidden} of their {cells} tokens "
        f"({format_number(100 * hidden / cells)}%) hidden behind [MASK]; the loss asks for "
        "the hidden ones."
    )


def progress_words(
    step: int, steps: int, seeds: Sequence[int], state: str, ran: Sequence[int]
) -> str | None:
    """Where a run over several seeds stands (``state``: ``live``, ``done`` or
    stopped; ``ran``: the seeds with curves); None for one seed."""
    n = len(seeds)
    if n < 2:
        return None
    if state == "live":
        k = min(step // max(steps, 1), n - 1)
        return (
            f"Seed {seeds[k]} ({k + 1} of {n}): step {step - k * steps} of {steps}; the "
            "chart holds the seeds run so far."
        )
    if state == "done":
        return f"{n} seeds x {steps} steps: {n * steps} steps in all."
    ran_label = seeds_label(sorted(int(x) for x in ran))
    return f"Stopped: the curves are those of {ran_label} (of {seeds_label(seeds)})."


def divergence_words(curves: pd.DataFrame) -> list[str]:
    """One line per model and seed whose training diverged."""
    return [
        f"Seed {row.seed}: {row.variant} diverged at step {row.step} ({row.divergence}); "
        "its training stopped there (dashed vertical line)."
        for row in curves[curves["diverged"].astype(bool)].itertuples()
    ]


def loss_account(curves: pd.DataFrame, vocab_size: int, a: str, b: str) -> str:
    """The loss chart's account: the loss of guessing uniformly, which model ends
    lower in every seed, and what the line and band are."""
    return (
        f"Guessing uniformly over the {vocab_size} tokens of the vocabulary gives a loss "
        f"of ln {vocab_size} = {format_number(math.log(vocab_size))}. "
        + loss_race_words(curves, a, b)
        + " "
        + band_words(list(pd.unique(curves["seed"])))
    )


def predictions_caption(predictions: pd.DataFrame) -> str:
    """The masked predictions' caption."""
    return (
        "The positions are masked all at once; p_token is the probability the trained "
        "model gives the hidden token. " + correct_words(predictions)
    )


def trained_map_caption(seeds: Sequence[int]) -> str | None:
    """Which seed's trained map is drawn, where there are several."""
    return None if len(seeds) == 1 else f"A map has no band: this is seed {seeds[0]}'s."


def trained_ratio_account(seeds: Sequence[int]) -> str:
    """The update ratios before and after training."""
    return (
        "Update ratios ||f(x)|| / ||x|| of your model at init beside each trained model's. "
        + band_words(seeds)
    )


def trained_collapse_account(collapse: pd.DataFrame, n_layers: int, seeds: Sequence[int]) -> str:
    """Rank collapse before and after training, in every seed."""
    return (
        "Rank collapse before and after training: has training pulled the tokens apart? "
        + trained_collapse_words(collapse, n_layers)
        + " "
        + band_words(seeds)
    )
