"""Recipes of the normalization page, one per section (see ``resviz/core.py``).

What LayerNorm, BatchNorm and RMSNorm do to one batch whose features have very
different scales (x10 / x0.1 halves): LayerNorm normalizes each
token across its features, BatchNorm each feature across the batch and its tokens
(Ba et al. 2016, Table 1; Ioffe and Szegedy 2015), RMSNorm each token without
centring (Zhang and Sennrich 2019). Then where the norm sits around the residual sum:
Post-LN ``x = LN(x + f(x))`` against Pre-LN ``x = x + f(LN(x))`` (Xiong et al. 2020,
"On Layer Normalization in the Transformer Architecture"), at init and in training.

Each recipe takes its section's settings as groups (:mod:`resviz.norms.settings`):
``four_views(Inputs(d="16"), seed=1)``, or by their names, ``four_views(d="16")``.
A choice arrives as the page's URL holds it (``d="64"``, ``big="10"``) or typed
(``d=64``): each recipe converts it itself.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd
import torch

from resviz.core import SEEDS_TRAINING, Answer, Result, measure, recipe
from resviz.norms import cost as norm_cost
from resviz.norms import invariance as norm_invariance
from resviz.norms import prepost as prepost
from resviz.norms import training as norm_training
from resviz.norms import views as normalization
from resviz.norms.settings import Inputs, PrePost, Stability, Timing, Transform, Warmup
from resviz.train.compare import train_compare
from resviz.words.numbers import format_number

Progress = Callable[[Result, int, int], None]


# ------------------------------------------------------------------- the input batch
def input_batch(inputs: Inputs, seed: int) -> torch.Tensor:
    """The batch of the first three sections (:class:`Inputs`), drawn from ``seed``."""
    return normalization.scaled_batch(*inputs.sizes(), *inputs.scales(), seed)


@recipe
def four_views(inputs: Inputs = Inputs(), *, seed: int = 0) -> Result:
    """Four views: the batch raw and after LayerNorm, BatchNorm (training mode) and
    RMSNorm.

    Frames: ``views`` (view, token, feature, value: sample 0), ``histograms`` (view,
    bin_start, bin_end, count: every value of the batch), ``stats`` (per view: token
    and feature means and population stds, mean token RMS, largest |value|) and
    ``halves`` (view, first_half, second_half, ratio: mean |value| of each feature
    half in sample 0)."""
    v = normalization.apply_norms(input_batch(inputs, seed))
    views = normalization.norm_views(v, 0)
    stats = normalization.norm_stats(v)
    stats["abs_max"] = [float(v[name].double().abs().max()) for name in stats["view"]]
    halves = pd.DataFrame(
        [
            {"view": name, "first_half": a, "second_half": b, "ratio": a / b}
            for name in normalization.VIEWS
            for a, b in [normalization.half_means(views, name)]
        ]
    )
    return Result(
        {
            "views": views,
            "histograms": normalization.norm_histograms(v),
            "stats": stats,
            "halves": halves,
        }
    )


@measure("layernorm_keeps_halves", of=four_views, choices=("yes", "no"))
def layernorm_keeps_halves(r: Result) -> Answer:
    """After LayerNorm, is the first half of the features still more than twice as
    large as the second (mean |value| in sample 0, as the Four views caption says)?"""
    h = r.halves.set_index("view")["ratio"]
    ratio = float(h["LayerNorm"])
    return Answer(
        "yes" if ratio > 2 else "no",
        f"Mean |value| of the first half of the features over the second half's, in "
        f"sample 0: {format_number(float(h['raw']))} raw, {format_number(ratio)} after "
        "LayerNorm.",
    )


@recipe
def textbook(inputs: Inputs = Inputs(), *, seed: int = 0) -> Result:
    """Textbook LayerNorm: the hand-written ``(x - mean) / (std + 1e-6)`` with the
    unbiased std against ``torch.nn.functional.layer_norm`` (population variance, eps
    1e-5 inside the square root), token by token, beside what the formulas predict.

    Frame ``gap`` (token, sigma, approx, what, gap): per token and ``what`` in
    ``measured`` / ``predicted``, the largest |textbook - torch| over its features;
    ``sigma`` its population std, ``approx`` the first-order ``max|y| (1 -
    sqrt((n-1)/n))``. Values: ``measured_max``, ``predicted_max``, ``approx_max``,
    ``fit`` (largest |measured - predicted|), ``sigma_min``, ``eps_bound`` (the
    relative change eps can make at ``sigma_min``), ``factor`` = sqrt((n-1)/n), ``n``."""
    wide = normalization.layernorm_gap(input_batch(inputs, seed))
    n = int(inputs.d)
    sigma = float(wide["sigma"].min())
    return Result(
        {"gap": normalization.gap_long(wide)},
        {
            "measured_max": float(wide["measured"].max()),
            "predicted_max": float(wide["predicted"].max()),
            "approx_max": float(wide["approx"].max()),
            "fit": float((wide["measured"] - wide["predicted"]).abs().max()),
            "sigma_min": sigma,
            "eps_bound": max(1e-6 / sigma, 1e-5 / (2 * sigma**2)),
            "factor": math.sqrt((n - 1) / n),
            "n": n,
        },
    )


@measure("textbook_gap_large", of=textbook, choices=("yes", "no"))
def textbook_gap_large(r: Result) -> Answer:
    """Does the hand-written LayerNorm differ from torch's by more than 0.05 somewhere
    in the batch? Its cause, the factor sqrt((d-1)/d), matters at small d."""
    largest, n = float(r.measured_max), int(r.n)
    tokens = int(r.gap["token"].nunique())
    return Answer(
        "yes" if largest > 0.05 else "no",
        f"Largest |textbook - torch| over {tokens} tokens of d = {n} features: "
        f"{format_number(largest)} (the formulas predict "
        f"{format_number(float(r.predicted_max))}; sqrt((d-1)/d) = "
        f"{format_number(float(r.factor))}).",
    )


@recipe
def invariances(
    inputs: Inputs = Inputs(), transform: Transform = Transform(), *, seed: int = 0
) -> Result:
    """Invariances: each norm's largest output change, in float64, when ``h = x W^T``
    (x the input batch, W a seeded d x d matrix) is shifted or scaled, in part or
    whole, when the other samples are redrawn, or when W is re-scaled or re-centred.

    Frames: ``table`` (transformation, measured_on, norm, max_abs_change, invariant:
    change below 1e-4) and ``wide`` (one column per norm)."""
    big, small = inputs.scales()
    table = norm_invariance.invariance_table(
        *inputs.sizes(),
        shift=float(transform.shift),
        scale=float(transform.scale),
        seed=seed,
        big=big,
        small=small,
    )
    return Result({"table": table, "wide": norm_invariance.invariance_wide(table)})


def _default(fn: Callable[..., Any], name: str) -> Any:
    """The default of ``fn``'s argument ``name`` (a fixed experiment's sizes)."""
    return inspect.signature(fn).parameters[name].default


@recipe
def batch_dependence(*, seed: int = 0) -> Result:
    """Batch dependence: BatchNorm's output for one token (sample 0, token 0) as its
    batch-mates change, in training mode (the batch's statistics) and eval mode (the
    running statistics of the original batch).

    Frames: ``train`` and ``eval`` (scenario, mode, feature, value: the first 16
    features) and ``summary`` (scenario, mode, max_abs_change, note). Values: the
    batch's ``batch_size``, ``seq_len``, ``d_model``, ``big``, ``small``."""
    keys = ("batch_size", "seq_len", "d_model")
    sizes = {k: _default(norm_invariance.batch_dependence, k) for k in keys}
    scales = {k: _default(normalization.scaled_batch, k) for k in ("big", "small")}
    values, summary = norm_invariance.batch_dependence(**sizes, seed=seed)
    return Result(
        {
            "train": norm_invariance.batch_values_shown(values, "train").reset_index(drop=True),
            "eval": norm_invariance.batch_values_shown(values, "eval").reset_index(drop=True),
            "summary": summary,
        },
        {**sizes, **scales},
    )


@recipe
def prepost_ln(encoders: PrePost = PrePost(), *, seed: int = 0) -> Result:
    """Pre-LN vs Post-LN: two encoders at init (Xiong et al. 2020), built from ``seed``.

    Frames: ``stream`` (variant, block, sq_norm_per_dim, norm: ``||x_l||^2 / d`` after
    each layer, standardized input), ``raw_stream`` (the same for PyTorch's default
    init and the raw embedding plus positions), ``grads`` (the last layer's
    ``||dL/dW2||`` per variant and depth L, ``ratio_to_L1``: relative to the
    shallowest depth, and ``inv_sqrt_L``: sqrt(L_min / L)) and ``ratios`` (the
    chart's lines: both variants' ratio and 1/sqrt(L)). One seed's models and
    batch (batch 4 for the gradients): ``seeds=N`` gives the spread over seeds."""
    layers, d_model, init = int(encoders.layers), int(encoders.d_model), str(encoders.init)
    grads = prepost.last_layer_grad(
        prepost.xiong_depths(layers), (seed,), d_model, init, batch_size=4
    ).drop(columns="seed")
    l0 = int(grads["n_layers"].min())
    first = grads[grads["n_layers"] == l0].set_index("variant")["grad_norm"]
    grads["ratio_to_L1"] = grads["grad_norm"] / grads["variant"].map(first)
    grads["inv_sqrt_L"] = (l0 / grads["n_layers"]) ** 0.5
    return Result(
        {
            "stream": prepost.prepost_stream(layers, d_model, seed, init),
            "raw_stream": prepost.prepost_stream(
                layers, d_model, seed, "default", standardize=False
            ),
            "grads": grads,
            "ratios": prepost.grad_ratio_lines(grads),
        }
    )


@measure("preln_stream_doubles", of=prepost_ln, choices=("yes", "no"))
def preln_stream_doubles(r: Result) -> Answer:
    """Is the Pre-LN stream's ``||x_l||^2 / d`` after the last layer more than twice
    its value at the input, at init?"""
    pre = r.stream[r.stream["variant"] == "Pre-LN"].sort_values("block")
    first, last = float(pre["sq_norm_per_dim"].iloc[0]), float(pre["sq_norm_per_dim"].iloc[-1])
    layers = int(pre["block"].iloc[-1])
    return Answer(
        "yes" if last > 2 * first else "no",
        f"Pre-LN's ||x_l||²/d goes from {format_number(first)} at the input to "
        f"{format_number(last)} after layer {layers} ({format_number(last / first, 4)} times).",
    )


# ---------------------------------------------------------------------- training
def _trained(models: pd.DataFrame, runs: pd.DataFrame, values: Mapping[str, Any]) -> Result:
    """A training section's result: the models, the runs so far and their summary."""
    return Result(
        {"models": models, "history": runs, "summary": norm_training.run_summary(runs)},
        {**values, "stopped": bool(runs.attrs.get("stopped", False))},
    )


@recipe(seeds=SEEDS_TRAINING)
def warmup(
    training: Warmup = Warmup(),
    *,
    seed: int = 0,
    device: torch.device | str = "cpu",
    progress: Progress | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> Result:
    """Warm-up: a Post-LN and a Pre-LN encoder trained on the copy task with Adam,
    once at ``w_lr`` from step 0 and once warmed up linearly over ``w_warm`` steps
    (:class:`resviz.norms.settings.Warmup`); same seed, same batches (batch 16 x 16).

    Frames: ``models`` (the two encoders), ``history`` (variant, step, loss,
    grad_norm, lr, diverged, divergence, warmup) and ``summary`` (per run: first,
    final and lowest loss, largest gradient, steps run, divergence). ``progress(result,
    done, total)`` gets the runs so far. One seed by default (``seeds=1``): each seed
    trains all four runs again."""
    w_warm = int(training.w_warm)
    variants = norm_training.warmup_models(training.w_layers)
    models = norm_training.variant_table(variants)
    cfg = variants["Post-LN"]
    values = {
        "vocab_size": cfg.vocab_size,
        "d_model": cfg.d_model,
        "n_heads": cfg.n_heads,
        "w_warm": w_warm,
    }

    def report(frame: pd.DataFrame, done: int, total: int) -> None:
        if progress is not None:
            progress(_trained(models, frame, values), done, total)

    runs = norm_training.train_warmup(
        variants,
        w_warm,
        steps=int(training.w_steps),
        lr=float(training.w_lr),
        seed=seed,
        device=device,
        callback=report,
        should_stop=should_stop,
    )
    return _trained(models, runs, values)


@recipe(seeds=SEEDS_TRAINING)
def stability(
    training: Stability = Stability(),
    *,
    seed: int = 0,
    device: torch.device | str = "cpu",
    progress: Progress | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> Result:
    """Stability: residual x norm, trained. Stacks of 4 FFN blocks ``W2 gelu(W1
    x)`` (width 128, hidden 512) regress fresh Gaussian targets from Gaussian inputs
    (batch 16 x 32) with Adam at ``s_lr`` (:class:`resviz.norms.settings.Stability`);
    every variant from the same seed on the same batches. Frames as :func:`warmup`'s.

    The defaults are the page's: a rate at which the stacks part (at every seed 0 to
    9, those without a norm blow up within 2 steps, those with LayerNorm after each
    block settle at the loss floor of 1). The tutorial notebook this experiment comes
    from ran :data:`resviz.norms.settings.TUTORIAL_STABILITY` (``s_pos="pre",
    s_lr="0.001", s_steps=100``), where on its noise targets the four runs end close
    together."""
    t = training
    variants = norm_training.stability_models(
        str(t.s_norm), str(t.s_pos), bool(t.s_norms), bool(t.s_place)
    )
    models = norm_training.variant_table(variants)

    def report(frame: pd.DataFrame, done: int, total: int) -> None:
        if progress is not None:
            progress(_trained(models, frame, {}), done, total)

    runs = train_compare(
        variants,
        steps=int(t.s_steps),
        seed=seed,
        lr=float(t.s_lr),
        batch_size=16,
        seq_len=32,
        task="regression",
        device=device,
        callback=report,
        should_stop=should_stop,
    )
    return _trained(models, runs, {})


# --------------------------------------------------------------------------- cost
def cost_size(t_size: str) -> tuple[int, int, int]:
    """``"16x128x256"`` as ``(batch, tokens, d)``."""
    parts = str(t_size).split("x")
    if len(parts) != 3 or not all(p.isascii() and p.isdigit() for p in parts):
        raise ValueError("t_size must read batch x tokens x d, e.g. 16x128x256.")
    b, t, d = (int(p) for p in parts)
    return b, t, d


@recipe(seeds=None)
def cost(timing: Timing = Timing(), *, seed: int = 0, device: torch.device | str = "cpu") -> Result:
    """Cost: forward and backward wall time of ``nn.LayerNorm`` against ``nn.RMSNorm``
    on ``device``, measured now (one warm-up call, then 7 timed calls).

    Frame ``timing`` (norm, pass, median_ms, min_ms, max_ms, repeats, elements).
    A timing differs from run to run: only its columns can be reproduced. No
    ``seeds`` setting: the seed draws the input's values, which do not change the
    work either norm does, and what varies between two timings is the machine (the
    CSV's min and max over the 7 calls show that spread), not the seed."""
    b, t, d = cost_size(timing.t_size)
    frame = norm_cost.norm_timing(b, t, d, repeats=7, device=device, seed=seed)
    return Result({"timing": frame}, {"device": str(torch.device(device))})


__all__ = [
    "batch_dependence",
    "cost",
    "cost_size",
    "four_views",
    "input_batch",
    "invariances",
    "prepost_ln",
    "stability",
    "textbook",
    "warmup",
]
