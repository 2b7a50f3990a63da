"""Recipes of the gradient-flow page: dL/dx through plain and residual stacks.

The residual block's Jacobian is ``I + J`` instead of ``J`` (He et al. 2016, "Identity
Mappings in Deep Residual Networks", eq. 5), so the gradient at the input keeps an
identity term that no product of small Jacobians can remove.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable

import numpy as np
import pandas as pd
import torch

from resviz import gradients as G
from resviz.core import SEEDS_TRAINING, Answer, Result, measure, recipe, split_seeds
from resviz.gradients import shattered as SH
from resviz.gradients import training as T
from resviz.gradients.settings import Derivation, Scale, Shattered, Stack, Training
from resviz.gradients.words.findings import (
    AGREE_RTOL,
    _agrees,
    scaled_shortcut_words,
    zero_sv_words,
)
from resviz.words.numbers import agreement_words, format_log10, format_number

Progress = Callable[[Result, int, int], None]
ShouldStop = Callable[[], bool]


@recipe
def per_layer(
    stack: Stack = Stack(),
    *,
    seed: int = 0,
    device: str | torch.device = "cpu",
) -> Result:
    """Per layer: weight and stream gradients of a plain and a residual stack at init,
    one MSE backward pass on a Gaussian batch of 32, measured in float64.

    Frames: ``weights`` (variant, block, param, grad_norm, log10_grad_norm), ``streams``
    (variant, block,
    act_grad, gain, stream_norm and the log10s) and ``gains`` (variant, input_gain =
    ``||dL/dx_0|| / ||dL/dx_L||``, log10_input_gain). The log10 columns are what was
    measured: they hold gradients under float64's range too."""
    base = stack.config(seed)
    per = {
        name: G.layer_gradients(cfg, seed=seed, device=device)
        for name, cfg in G.plain_and_residual(base).items()
    }
    return Result(_per_layer_frames(per))


def _per_layer_over_seeds(
    seeds: list[int],
    *,
    stack: Stack = Stack(),
    device: str | torch.device = "cpu",
) -> Result | None:
    """:func:`per_layer` over ``seeds`` in one vectorised pass per stack
    (:func:`resviz.gradients.layer_gradients_over_seeds`), or None where it cannot."""
    base = stack.config(seeds[0])
    per = {
        name: G.layer_gradients_over_seeds(cfg, seeds, device=device)
        for name, cfg in G.plain_and_residual(base).items()
    }
    if any(frame is None for frame in per.values()):
        return None
    return split_seeds(_per_layer_frames(per), seeds)


per_layer.batched = _per_layer_over_seeds


def _per_layer_frames(per: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Per layer's frames from each stack's :func:`resviz.layer_gradients` frame."""
    return {
        "weights": G.weight_gradient_frame(per),
        "streams": G.stream_gradient_frame(per),
        "gains": G.input_gain_frame(per),
    }


@measure("gradflow_input_gradient", of=per_layer, choices=("plain", "residual"))
def larger_input_gradient(r: Result) -> Answer:
    """Which stack passes the larger gradient back to its input, relative to its
    output? The one whose ``||dL/dx_0|| / ||dL/dx_L||`` is larger (residual on ties)."""
    g = r.gains.set_index("variant")["log10_input_gain"]
    plain, resid = float(g[G.PLAIN]), float(g[G.RESIDUAL])
    return Answer(
        "plain" if plain > resid else "residual",
        f"||dL/dx_0|| / ||dL/dx_L|| is {format_log10(plain)} in the plain stack and "
        f"{format_log10(resid)} in the residual one.",
    )


# ----------------------------------------------------------------------- derivation
@recipe
def derivation(
    stack: Stack = Stack(),
    derive: Derivation = Derivation(),
    scale: Scale = Scale(),
    *,
    seed: int = 0,
    device: str | torch.device = "cpu",
) -> Result:
    """Derivation: block ``block``'s Jacobians (``J`` and ``I + J``) in the plain and the
    residual stack, and He et al. 2016's scaled shortcut ``λ·x + f(x)`` over ``L``
    blocks (near-zero branches if ``small``) beside its identity term ``λ^(L-l)``,
    all in float64 (the gains in log10 too). ``block`` is clamped to ``depth``.

    Frames: ``norms`` (variant, ``||J|| (branch)``, ``||block Jacobian||``),
    ``spectrum`` (variant, matrix, index, sigma, curve), ``ratio``
    (:func:`resviz.identity_ratio`) and ``ratio_curves`` (the measured gain and the
    identity term as two curves, with log10_ratio). Values: ``block`` (as measured),
    ``measured`` and ``identity_term`` at the input and their log10s, ``agrees``
    (within :data:`AGREE_RTOL`), and the words ``agreement``, ``why``
    (:func:`scaled_shortcut_words`) and ``zero_sv`` (:func:`zero_sv_words`)."""
    base = stack.config(seed)
    block = max(1, min(int(derive.block), stack.depth))
    variants = G.plain_and_residual(base)
    spectra = {
        name: G.block_jacobian(cfg, block, seed=seed, device=device)
        for name, cfg in variants.items()
    }
    scaled = dataclasses.replace(
        base,
        depth=derive.L,
        identity_scale=scale.l,
        init="small" if derive.small else stack.init,  # type: ignore[arg-type]
    )
    ratio = G.identity_ratio(scaled, seed=seed, device=device)
    spectrum = G.jacobian_spectrum(spectra)
    log_m = float(ratio["log10_measured"].iloc[0])
    log_t = float(ratio["log10_identity_term"].iloc[0])
    return Result(
        {
            "norms": G.jacobian_norms(spectra),
            "spectrum": spectrum,
            "ratio": ratio,
            "ratio_curves": G.identity_ratio_long(ratio),
        },
        {
            "block": block,
            "measured": float(ratio["measured"].iloc[0]),
            "identity_term": float(ratio["identity_term"].iloc[0]),
            "log10_measured": log_m,
            "log10_identity_term": log_t,
            "agrees": _agrees(log_m, log_t),
            "agreement": agreement_words(log_m, log_t, "λ^L", AGREE_RTOL),
            "why": scaled_shortcut_words(ratio, scale.l, stack.norm, derive.small),
            "zero_sv": zero_sv_words(spectrum),
        },
    )


@measure("gradflow_scaled_shortcut", of=derivation, choices=("shrinks", "grows"))
def scaled_shortcut(r: Result) -> Answer:
    """Through ``L`` blocks of ``λ·x + f(x)``, does the gradient reaching the input
    shrink or grow relative to the output's? Grows when the measured
    ``||dL/dx_0|| / ||dL/dx_L||`` is 1 or more; shrinks otherwise (NaN included: no
    gradient at the output)."""
    log_m = r.log10_measured
    return Answer(
        "grows" if log_m >= 0 else "shrinks",
        f"The measured ||dL/dx_0|| / ||dL/dx_L|| is {format_log10(log_m)}; it "
        f"{r.agreement}. {r.why}",
    )


# ---------------------------------------------------------------------- depth sweep
def _sweep_result(df: pd.DataFrame, stopped: bool = False) -> Result:
    return Result({"sweep": G.with_variant(df)}, {"stopped": stopped})


# How often the sweep reports progress at most (and after its last stack): the page
# polls every 0.5 s, and each report stacks the frames so far (made after every one of
# 3 seeds' 312 stacks, the reports took about 6% of the sweep).
REPORT_S = 0.25


# About 1.2 s a seed on a 2-core CPU (104 stacks, one build per depth), so over the 1 s
# line for 3 seeds by default; it runs in the background with progress, where 3 seeds
# take about 4 s and every trend under its panels is worded from all of them (a split
# shows, see tests/app/test_gradient_flow_page.py).
@recipe
def depth_sweep(
    stack: Stack = Stack(),
    *,
    seed: int = 0,
    device: str | torch.device = "cpu",
    progress: Progress | None = None,
    should_stop: ShouldStop | None = None,
) -> Result:
    """Depth sweep: fresh plain and residual stacks of every depth in
    :data:`resviz.gradients.layers.DEFAULT_DEPTHS` for each activation, one float64 backward
    pass each (:func:`resviz.depth_sweep`): the sweep sets depth and activation
    itself, the stack's width, init and norm are used. ``progress(partial_result, done, total)``
    at most every :data:`REPORT_S` seconds and after the last stack; ``should_stop()``
    ends it early (``stopped`` is then True).

    Frame ``sweep``: activation, residual, depth, first_weight_grad, input_grad,
    output_grad, gain, variant (``plain`` or ``residual``)."""
    base = dataclasses.replace(Stack(), width=stack.width, init=stack.init, norm=stack.norm)
    base_cfg = base.config(seed)
    report = None
    if progress is not None:
        last = [-math.inf]

        def report(df: pd.DataFrame, done: int, total: int) -> None:
            now = time.monotonic()
            if done == total or now - last[0] >= REPORT_S:
                last[0] = now
                progress(_sweep_result(df), done, total)

    df = G.depth_sweep(
        base_cfg,
        G.DEFAULT_DEPTHS,
        seed=seed,
        device=device,
        callback=report,
        should_stop=should_stop,
    )
    return _sweep_result(df, bool(df.attrs.get("stopped")))


# ------------------------------------------------------------------------- training
BATCH = 64


def _training_result(trace: T.GradTrace, device: str | torch.device) -> Result:
    found = trace.attrs.get("divergence", {}) or {}
    return Result(
        {"loss": trace.loss, "layers": trace.layers},
        {
            "steps": trace.steps,
            # Block norms are summed in float64 except on Apple MPS (resviz.train.loop).
            "norms_in_float64": torch.device(device).type != "mps",
            "stopped": bool(trace.attrs.get("stopped")),
            "divergence": {name: d.describe() for name, d in found.items()},
        },
    )


@recipe(seeds=SEEDS_TRAINING)
def training(
    stack: Stack = Stack(),
    run: Training = Training(),
    scale: Scale = Scale(),
    *,
    seed: int = 0,
    device: str | torch.device = "cpu",
    progress: Progress | None = None,
    should_stop: ShouldStop | None = None,
) -> Result:
    """Training: the plain and the residual stack (and ``λ·x + f(x)`` if
    ``train_scaled``) trained side by side with Adam on the same teacher batches of
    64 (:func:`resviz.train_layer_grads`), every block's gradient norm recorded at
    every step (summed in float64).

    Frames: ``loss`` (variant, step, loss, grad_norm, diverged, divergence) and
    ``layers`` (variant, step, block, grad_norm). Values: ``steps``, ``stopped``,
    ``divergence`` (variant -> where and why it diverged) and ``norms_in_float64``."""
    base = stack.config(seed)
    variants = T.training_variants(base, float(scale.l) if run.train_scaled else None)
    report = None
    if progress is not None:

        def report(trace: T.GradTrace, done: int, total: int) -> None:
            progress(_training_result(trace, device), done, total)

    trace = T.train_layer_grads(
        variants,
        steps=run.steps,
        seed=seed,
        lr=float(run.lr),
        batch_size=BATCH,
        device=device,
        callback=report,
        should_stop=should_stop,
    )
    return _training_result(trace, device)


# ------------------------------------------------------------------------ shattered
# The nets the Shattered section measures (no setting changes them).
SHATTERED_DEPTHS, SHATTERED_WIDTH = (2, 10, 50), 64
SMOOTH = 0.5  # a lag-1 autocorrelation at least this is called smooth


def first_lag_below(acf: pd.DataFrame, level: float = SMOOTH) -> pd.DataFrame:
    """Per net (variant, depth), the first lag ``> 0`` whose autocorrelation is below
    ``level``: ``first_lag_below`` (NaN if none up to ``max_lag``), ``max_lag`` and
    ``defined`` (False where a correlation is NaN: a constant or non-finite gradient)."""
    rows = []
    for (variant, d), g in acf.groupby(["variant", "depth"]):
        low = g[(g["lag"] > 0) & (g["corr"] < level)]["lag"]
        rows.append(
            {
                "variant": variant,
                "depth": int(d),
                "first_lag_below": float(low.min()) if len(low) else math.nan,
                "max_lag": int(g["lag"].max()),
                "defined": not bool(g["corr"].isna().any()),
            }
        )
    return pd.DataFrame(rows)


def below_half(below: pd.DataFrame) -> str:
    """Per net, the first lag whose autocorrelation is below 0.5 (or that it never is)."""
    out = []
    for row in below.itertuples():
        if not row.defined:
            when = "undefined (gradient constant or not finite)"
        elif np.isfinite(row.first_lag_below):
            when = f"lag {int(row.first_lag_below)}"
        else:
            when = f"not by lag {row.max_lag}"
        out.append(f"{row.variant} depth {row.depth}: {when}")
    return "; ".join(out)


@recipe
def shattered(
    nets: Shattered = Shattered(), *, seed: int = 0, device: str | torch.device = "cpu"
) -> Result:
    """Shattered: ``df/dx`` along 256 inputs in ``[-2, 2]`` of plain and residual ReLU
    nets of depth 2, 10 and 50 (width 64), with batch normalization if ``bn``
    (Balduzzi et al. 2017), and its autocorrelation.

    Frames: ``gradients`` (residual, depth, input, grad, grad_scaled, variant),
    ``lag1`` (depth, plain and residual lag-1 autocorrelation), ``acf`` (residual,
    depth, lag, corr, variant, curve) and ``below`` (:func:`first_lag_below`); value
    ``below_half`` words it (:func:`below_half`)."""
    grads, acf = SH.shattered_summary(
        SHATTERED_DEPTHS,
        width=SHATTERED_WIDTH,
        norm="batch" if nets.bn else "none",
        seed=seed,
        device=device,
    )
    curves = SH.acf_curves(acf)
    below = first_lag_below(curves)
    return Result(
        {
            "gradients": G.with_variant(grads).rename(columns={"x": "input"}),
            "lag1": SH.lag_table(acf),
            "acf": curves,
            "below": below,
        },
        {"below_half": below_half(below)},
    )


@measure("gradflow_plain_shattered", of=shattered, choices=("smooth", "shattered"))
def plain_shattered(r: Result) -> Answer:
    """Is the deepest plain net's ``df/dx`` still smooth between neighbouring inputs?
    Shattered when its lag-1 autocorrelation is below 0.5; smooth otherwise
    (undefined, a constant gradient, included)."""
    deepest = max(SHATTERED_DEPTHS)
    corr = float(r.lag1.set_index("depth").loc[deepest, "plain lag-1 autocorrelation"])
    shown = format_number(corr) if math.isfinite(corr) else "undefined (the gradient is constant)"
    return Answer(
        "shattered" if corr < SMOOTH else "smooth",
        f"The plain {deepest}-block net's lag-1 autocorrelation of df/dx is {shown}.",
    )
