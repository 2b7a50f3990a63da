"""Gradient norms while training: every block's gradient at every step.

:func:`train_layer_grads` trains stacks side by side (the one loop,
:class:`resviz.train.loop.Trainer` with ``blocks=True``) on a fixed random teacher and
returns a :class:`GradTrace`, the gradient-flow page's layer x step heatmap: a
plain stack's early blocks get orders of magnitude less gradient than its last, a
residual stack's do not (the identity term of ``dL/dx_l = dL/dx_{l+1} (I + J_l)``,
see :mod:`resviz.gradients.layers`). :func:`training_variants` names the stacks compared,
with He et al. 2016's scaled shortcut ``s x + f(x)`` as an optional third.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch
from torch.nn import functional as F

from resviz.config import StackConfig
from resviz.data import teacher_batch
from resviz.gradients.layers import plain_and_residual
from resviz.train.loop import RunAttrs, Trainer

# ----------------------------------------------------------------------- training


@dataclass
class GradTrace:
    """What :func:`train_layer_grads` records.

    ``loss``: one row per (``variant``, ``step``) with ``loss``, ``grad_norm`` (all
    parameters), ``diverged`` and ``divergence`` (the reason, on the diverged step).
    ``layers``: one row per (``variant``, ``step``, ``block``) with ``grad_norm`` of
    that block's parameters before the update (``block`` counts from 1, the input
    side). ``attrs``: ``stopped``, ``diverged``
    (variant -> step) and ``divergence`` (variant -> :class:`resviz.Divergence`).
    """

    loss: pd.DataFrame
    layers: pd.DataFrame
    steps: int
    attrs: RunAttrs = field(default_factory=RunAttrs)

    def heatmap(self, variant: str) -> np.ndarray:
        """``[n_blocks, steps]`` matrix (row ``i`` is block ``i + 1``) of ``log10`` gradient norms (NaN where not run;
        ``-inf`` where a norm is exactly 0)."""
        return layer_heatmap(self.layers, variant, self.steps)

    def heatmaps(self) -> Heatmaps:
        """Every variant's :meth:`heatmap` on one colour scale: :func:`layer_heatmaps`."""
        return layer_heatmaps(self.layers, self.steps, self.loss["variant"].unique())


def layer_heatmap(layers: pd.DataFrame, variant: str, steps: int) -> np.ndarray:
    """One variant of a per-step block frame (``variant, step, block, grad_norm``, as
    :attr:`GradTrace.layers`) as a ``[n_blocks, steps]`` matrix of ``log10`` gradient
    norms (row ``i`` is block ``i + 1``; NaN where not run, ``-inf`` where exactly 0)."""
    d = layers[layers["variant"] == variant]
    n_blocks = int(d["block"].max()) if len(d) else 0
    m = np.full((n_blocks, steps), np.nan)  # row i: block i + 1
    with np.errstate(divide="ignore", invalid="ignore"):
        m[d["block"].to_numpy() - 1, d["step"].to_numpy()] = np.log10(
            d["grad_norm"].to_numpy(dtype=float)
        )
    return m


def layer_heatmaps(
    layers: pd.DataFrame, steps: int, variants: Sequence[str] | None = None
) -> Heatmaps:
    """Every variant's :func:`layer_heatmap` on one colour scale, ready to draw: exact
    zeros (``-inf``) are set to the scale's lowest value and counted."""
    names = list(variants) if variants is not None else list(layers["variant"].unique())
    mats = {v: layer_heatmap(layers, v, steps) for v in names}
    finite = np.concatenate([m[np.isfinite(m)] for m in mats.values()] or [np.empty(0)])
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (-1.0, 0.0)
    hi = hi if hi > lo else lo + 1.0
    zeros = sum(int(np.isneginf(m).sum()) for m in mats.values())
    shown = {v: np.where(np.isneginf(m), lo, m) for v, m in mats.items()}
    return Heatmaps(shown, lo, hi, zeros)


@dataclass(frozen=True)
class Heatmaps:
    """:meth:`GradTrace.heatmaps`: ``matrices`` (variant -> ``[n_blocks, steps]`` log10
    gradient norms, NaN where not run), their shared scale ``vmin`` to ``vmax``, and
    how many cells were exactly 0 (``zeros``, drawn at ``vmin``)."""

    matrices: dict[str, np.ndarray]
    vmin: float
    vmax: float
    zeros: int


def train_layer_grads(
    variants: Mapping[str, StackConfig],
    steps: int = 200,
    seed: int = 0,
    lr: float = 1e-3,
    batch_size: int = 64,
    device: torch.device | str | None = None,
    callback: Callable[[GradTrace, int, int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    sync_every: int = 10,
) -> GradTrace:
    """Train stacks with Adam from the same seed on the same batches, recording every
    block's gradient norm at every step (the layer x step heatmap).

    All variants must share input and output widths. Each is built with its seed
    replaced by ``seed``; batch ``t`` is identical for every variant: Gaussian
    inputs and the outputs of a fixed random teacher (:func:`teacher_batch`). A
    variant that diverges (:func:`resviz.first_divergence`: loss or gradient
    NaN/Inf, or loss above ``DIVERGENCE_FACTOR`` times its step-0 loss) stops at
    that step, which is marked ``diverged``. Every ``sync_every`` steps
    ``callback(trace_so_far, step, steps)`` runs and ``should_stop()`` is checked.
    The loop is :class:`resviz.train.loop.Trainer`'s with ``blocks=True``.
    """
    if not variants:
        raise ValueError("train_layer_grads needs at least one variant.")
    in_dims = {c.in_dim for c in variants.values()}
    out_dims = {c.out_dim or c.out_width for c in variants.values()}
    if len(in_dims) > 1 or len(out_dims) > 1:
        raise ValueError("every variant needs the same input and output width.")
    in_dim, out_dim = in_dims.pop(), out_dims.pop()

    def trace(run: Trainer[StackConfig]) -> GradTrace:
        loss = run.frame(("variant", "step", "loss", "grad_norm", "diverged", "divergence"))
        return GradTrace(loss, run.block_frame(), steps, run.attrs)

    def progress(run: Trainer[StackConfig], done: int) -> None:
        if callback is not None:
            callback(trace(run), done, steps)

    run = Trainer(
        variants,
        steps,
        seed=seed,
        lr=lr,
        device=device,
        sync_every=sync_every,
        blocks=True,
        progress=progress,
        should_stop=should_stop,
    )
    teacher_gen = torch.Generator().manual_seed(seed + 1)
    teacher = torch.randn(in_dim, in_dim + out_dim, generator=teacher_gen) / math.sqrt(in_dim)
    gen = torch.Generator().manual_seed(seed)
    for _ in run:
        x, y = teacher_batch(in_dim, out_dim, batch_size, gen, teacher)
        x, y = x.to(run.device), y.to(run.device)
        for name, model in run.active():
            run.update(name, F.mse_loss(model(x), y))
    return trace(run)


def scaled_label(scale: float) -> str:
    """The label of the stack ``scale·x + f(x)``."""
    return f"scaled: {scale:g}·x + f(x)"


def training_variants(base: StackConfig, scale: float | None = None) -> dict[str, StackConfig]:
    """The stacks trained side by side: plain and residual, and ``scale·x + f(x)``
    when ``scale`` is given."""
    out = plain_and_residual(base)
    if scale is not None:
        out[scaled_label(scale)] = dataclasses.replace(base, identity_scale=scale)
    return out


__all__ = [
    "GradTrace",
    "Heatmaps",
    "layer_heatmap",
    "layer_heatmaps",
    "scaled_label",
    "train_layer_grads",
    "training_variants",
]
