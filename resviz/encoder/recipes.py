"""Recipes of the encoder playground (one per section; see ``resviz/core.py``).

Every section runs the same encoder on the same tokens: the text and tokenizer
settings (:class:`resviz.encoder.Text`: ``text, level, max_len, vocab``) and the model
settings (:class:`resviz.encoder.Model`: ``layers, d_model, heads, d_ff, act,
dropout, norm, place, pos, residual, ffn``), and ``seed`` (the weights).
:func:`resviz.encoder.settings.setup` turns them into the tokens and the
:class:`resviz.EncoderConfig`; each recipe starts from it. A group is given whole or
by its fields' names (the page's URL names)::

    r = rv.recipes.encoder.stream(
        rv.encoder.Text(text="the cat sat on the mat"), rv.encoder.Model(layers=4), seed=1
    )
    r = rv.recipes.encoder.stream(text="the cat sat on the mat", layers=4, seed=1)  # the same
    r.stream, r.share  # the Residual stream section's frames

The views are those of :mod:`resviz.encoder.views` (one forward pass through the
hook points, at init); training is :func:`resviz.encoder.masked.train_masked`.

Seeds: the views at init run 3 seeds by default (``seeds=N``: seeds ``seed`` to
``seed + N - 1``, frames stacked under a ``seed`` column, see
:mod:`resviz.core`), training runs 1, and the model card none (nothing on it
depends on the seed). :mod:`resviz.encoder.words` words every seed's frame.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import torch

from resviz.budget import Estimate, combine, estimate
from resviz.codegen import generate_code
from resviz.core import SEEDS_TRAINING, Answer, Result, measure, recipe
from resviz.data import token_table
from resviz.encoder import masked as MT
from resviz.encoder import views as EI
from resviz.encoder.card import forward_latency, model_card
from resviz.encoder.settings import (
    BATCH,
    Head,
    Model,
    Setup,
    Text,
    Training,
    head_of,
    ready,
    setup,
    training_batch,
    views_of,
)
from resviz.models import build
from resviz.words.numbers import FLOAT64_RESOLUTION, format_number, resolution_words


# ------------------------------------------------------------------------ Model
# The model card does not depend on the seed (the token table and the counts are the
# text's and the shapes'; the latency is a timing): no seeds setting. The seed is
# still a setting: the code builds that seed's weights.
@recipe(seeds=None)
def model(
    corpus: Text = Text(),
    encoder: Model = Model(),
    *,
    seed: int = 0,
    device: str | torch.device = "cpu",
) -> Result:
    """Model: the tokens, the model card and the PyTorch code of this encoder.

    Frames: ``tokens`` (:func:`resviz.data.token_table`) and ``card``
    (:func:`resviz.encoder.card.model_card`: parameters, forward FLOPs and activation
    memory for one sequence, then the forward latency, a timing measured on
    ``device``). Values: ``code`` (:func:`resviz.codegen.generate_code`),
    ``latency_ms``, ``device`` (where it was timed), ``n_tokens``, ``n_total``,
    ``n_unknown``, ``truncated``, ``train_tokens``, ``vocab_size``, ``params``,
    ``flops``, ``activation_bytes``. Nothing here but ``code`` (which builds seed
    ``seed``'s weights) and the timing depends on the seed: the section runs no
    seeds."""
    s = ready(setup(corpus, encoder, seed=seed))
    net = build(s.cfg, device)
    latency = forward_latency(net, s.toks.ids)
    est = estimate(s.cfg, batch=1, seq_len=s.T)
    return Result(
        {"tokens": token_table(s.toks), "card": model_card(s.cfg, s.T, latency=latency)},
        {
            "code": generate_code(s.cfg),
            "latency_ms": latency["latency_ms"],
            "device": next(net.parameters()).device.type,
            "n_tokens": s.T,
            "n_total": s.toks.n_total,
            "n_unknown": s.toks.n_unknown,
            "truncated": s.toks.truncated,
            "train_tokens": len(s.train_ids),
            "vocab_size": len(s.vocab),
            "params": est.params,
            "flops": est.flops_forward,
            "activation_bytes": est.activation_bytes,
        },
    )


# -------------------------------------------------------------------- Attention
@recipe
def attention(
    corpus: Text = Text(),
    encoder: Model = Model(),
    shown: Head = Head(),
    *,
    seed: int = 0,
    device: str | torch.device = "cpu",
) -> Result:
    """Attention: one head's weights at init (``shown``: its ``layer`` and ``head``
    count from 1 and are clamped to the model).

    Frame ``attention``: ``block, head, query, key, weight``, one row per query and
    key (labels ``position:token``). Values: ``labels`` (the axis order), ``block``
    and ``head`` (shown), ``n_layers``, ``n_heads``, ``n_tokens``."""
    s = ready(setup(corpus, encoder, seed=seed))
    block, h = head_of(s, shown)
    maps = views_of(s, device)["attention"]
    return Result(
        {"attention": EI.attention_frame(maps, s.toks.labels, block, h)},
        {
            "labels": s.toks.labels,
            "block": block,
            "head": h,
            "n_layers": s.cfg.n_layers,
            "n_heads": s.cfg.n_heads,
            "n_tokens": s.T,
        },
    )


# -------------------------------------------------------------- Residual stream
@recipe
def stream(
    corpus: Text = Text(),
    encoder: Model = Model(),
    *,
    seed: int = 0,
    device: str | torch.device = "cpu",
) -> Result:
    """Residual stream: norms, update ratios and each component's projection on the
    final stream, at init, from one forward pass.

    Frames: ``stream`` (:func:`resviz.encoder.views.residual_stream`: ``block,
    sublayer, index, stream_norm, input_norm, update_norm, update_ratio``), ``ratio``
    (its ``block, sublayer, input_norm, update_norm, update_ratio``) and ``share``
    (:func:`resviz.encoder.views.final_share`). Values: ``additive`` (x_L is the sum
    of every component), ``last_only`` (x_L is the last sublayer's output itself)."""
    s = ready(setup(corpus, encoder, seed=seed))
    views = views_of(s, device)
    frame = views["stream"]
    return Result(
        {
            "stream": frame,
            "ratio": frame[["block", "sublayer", "input_norm", "update_norm", "update_ratio"]],
            "share": views["share"],
        },
        {
            "additive": EI.additive_stream(s.cfg),
            "last_only": EI.final_is_last_output(s.cfg),
        },
    )


@measure("playground_update_ratio", of=stream, choices=("all below 1", "not all"))
def every_update_below_one(r: Result) -> Answer:
    """Does every sublayer write an output smaller than the stream it reads
    (``||f(x)|| / ||x||`` below 1)? The largest ratio on the section's chart."""
    top = r.ratio.loc[r.ratio["update_ratio"].idxmax()]
    ratio = float(top["update_ratio"])
    return Answer(
        "all below 1" if ratio < 1 else "not all",
        f"The largest ratio ||f(x)|| / ||x|| is {format_number(ratio)}, at L{top['block']} "
        f"{top['sublayer']}; the smallest is {format_number(float(r.ratio['update_ratio'].min()))}.",
    )


# ---------------------------------------------------------------- Rank collapse
# "Collapsed": the tokens are one vector to within 1% (||X - 1 x^T|| / ||X|| < 0.01).
COLLAPSED_BELOW = 0.01


@recipe
def collapse(
    corpus: Text = Text(),
    encoder: Model = Model(),
    *,
    seed: int = 0,
    device: str | torch.device = "cpu",
) -> Result:
    """Rank collapse (Dong et al. 2021) at init: your model, its residual flipped, and
    attention only (no FFN, no norm) with and without shortcuts, on the same tokens.

    Frames: ``collapse`` (:func:`resviz.encoder.views.rank_collapse_compare`:
    ``variant, shortcuts, block, residual, cosine``; ``residual`` is
    ``||X - 1 x^T|| / ||X||``, block 0 the input) and ``cosine`` (its ``variant, block,
    cosine``). Values: ``mine`` (your model's variant name), ``n_tokens``."""
    s = ready(setup(corpus, encoder, seed=seed))
    df = EI.rank_collapse_compare(s.cfg, s.toks.ids, device)
    return Result(
        {"collapse": df, "cosine": df[["variant", "block", "cosine"]]},
        {"mine": str(df["variant"].iloc[0]), "n_tokens": s.T, "n_layers": s.cfg.n_layers},
    )


@measure("playground_rank_collapse", of=collapse, choices=("collapsed", "not collapsed"))
def tokens_collapsed(r: Result) -> Answer:
    """After the last layer, is your model's token matrix one vector to within 1%
    (``||X - 1 x^T|| / ||X|| < 0.01``)?"""
    mine = r.collapse[r.collapse["variant"] == r.mine]
    dist, cos = float(mine["residual"].iloc[-1]), float(mine["cosine"].iloc[-1])
    single = "" if r.n_tokens > 1 else " (a single token is its own mean)"
    said = (
        resolution_words(FLOAT64_RESOLUTION) if dist < FLOAT64_RESOLUTION else format_number(dist)
    )
    return Answer(
        "collapsed" if dist < COLLAPSED_BELOW else "not collapsed",
        f"After layer {r.n_layers} the distance from rank one is {said}{single}, "
        f"from {format_number(float(mine['residual'].iloc[0]))} at the input; the mean cosine "
        f"between tokens is {format_number(cos)}.",
    )


# ------------------------------------------------------- Training's live progress
def progress_over_seeds(
    report: Callable[[object, int, int], None], seed: int
) -> Callable[[object, int, int], None]:
    """:func:`training`'s ``progress`` for a live chart of every seed run so far:
    ``report`` gets the finished seeds' curves beside the running seed's (the recipe
    reports one seed's partial curves, under its ``seed`` column when it runs several;
    ``seed`` names the one seed of a single run)."""
    finished: dict[int, pd.DataFrame] = {}

    def report_all(frame: object, step: int, total: int) -> None:
        if isinstance(frame, pd.DataFrame) and len(frame):
            df = frame
            if "seed" not in df.columns:  # one seed: the recipe adds it at the end
                df = df.assign(seed=seed)[["seed", *df.columns]]
            finished[int(df["seed"].iloc[0])] = df
            frame = pd.concat(finished.values(), ignore_index=True)
        report(frame, step, total)

    return report_all


def training_cost(s: Setup, train: Training, seeds: int) -> Estimate:
    """What :func:`training` costs at these settings over ``seeds`` seeds, before it
    starts: every model it trains, ``BATCH`` windows of ``s.T`` tokens a step."""
    variants = MT.training_variants(s.cfg, train.against)
    steps = int(train.steps) * seeds
    return combine(estimate(c, batch=BATCH, seq_len=s.T, steps=steps) for c in variants.values())


# --------------------------------------------------------------------- Training
# A seed trains two models: one seed by default, more on request (run one after
# another, with progress over all of them).
@recipe(seeds=SEEDS_TRAINING)
def training(
    corpus: Text = Text(),
    encoder: Model = Model(),
    train: Training = Training(),
    *,
    seed: int = 0,
    device: str | torch.device = "cpu",
    progress: Callable[[pd.DataFrame, int, int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> Result:
    """Training: your model and one to compare (``train.against``: its residual flipped
    or a preset) trained side by side on the masked-token task over your text
    (:func:`resviz.encoder.masked.train_masked`, batches of ``BATCH`` windows, the
    same batches for both), then looked at again.

    Frames: ``batch`` (the first batch as text), ``curves`` (``variant, step, loss,
    grad_norm, diverged, divergence``), ``predictions`` (each trained model's guesses
    at the same masked positions of the shown tokens), ``ratio`` (update ratios of your model at init
    beside every trained model's), ``collapse`` (rank collapse at init beside
    trained) and ``share_1``, ``share_2`` (each trained model's share of its final
    stream, in the order of ``models``). Values: ``models``, ``other`` (the compared
    model's name), ``labels``, ``attention`` (your trained model's maps,
    ``[layer, head, query, key]``: one head's frame is
    ``rv.encoder.attention_frame(r.attention, r.labels, block, head)``),
    ``n_positions``, ``stopped``, ``vocab_size``, ``n_layers``. ``progress(curves_so_far, step, steps)`` and ``should_stop()``
    run every 10 steps."""
    s = ready(setup(corpus, encoder, seed=seed))
    if len(s.train_ids) < 2:
        raise ValueError("Training needs at least 2 tokens of text.")
    variants = MT.training_variants(s.cfg, train.against)
    run = MT.train_masked(
        variants,
        s.train_ids,
        steps=int(train.steps),
        seed=int(seed),
        lr=train.rate,
        batch_size=BATCH,
        seq_len=s.T,
        device=device,
        callback=progress,
        should_stop=should_stop,
    )
    positions = MT.mask_positions(s.T, seed=int(seed))
    trained = MT.inspect_trained(run, s.toks.ids, device)
    init = views_of(s, device)
    at_init = EI.rank_collapse_compare(s.cfg, s.toks.ids, device)
    frames = {
        "batch": training_batch(s, int(seed)),
        "curves": run.curves,
        "predictions": MT.masked_predictions(run, s.toks.ids, s.vocab, positions, device),
        "ratio": EI.ratio_before_after(init["stream"], trained),
        "collapse": EI.collapse_before_after(at_init, trained),
    }
    for k, v in enumerate(trained.values(), 1):
        frames[f"share_{k}"] = v["share"]
    return Result(
        frames,
        {
            "models": list(trained),
            "other": next(n for n in variants if n != "your model"),
            "labels": s.toks.labels,
            "attention": trained["your model"]["attention"],
            "n_positions": len(positions),
            "stopped": run.stopped,
            "vocab_size": s.cfg.vocab_size,
            "n_layers": s.cfg.n_layers,
        },
    )
