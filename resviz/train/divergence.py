"""When a training run has diverged: one definition for every training loop.

A run diverged at the first step ``t`` where

- the loss or the total gradient norm is NaN or Inf, or
- the loss exceeds ``DIVERGENCE_FACTOR`` times the run's starting loss (its
  loss at the first recorded step), ``loss[t] > DIVERGENCE_FACTOR * loss[0]``.

The second rule is what a user means by "it blew up", and it does not depend on
when float32 happens to overflow on a given CPU (that depends on the kernels).
It is tested only when the starting loss is finite and positive (the losses
here, MSE and cross-entropy, are never negative).

Why ``1e6``, measured on the normalization page's stability experiment (4 FFN
blocks of width 128, regression, Adam, 300 steps, seeds 0 and 1, every norm type
and placement, the page's learning rates 1e-4 to 0.1): runs that stay bounded
still spike far above their start. At learning rate 0.1 the Pre-norm stacks
(whose output is not normalized) reach up to 6e4 times their starting loss, most
in the first steps, and most fall back to a few times it; the unnormalized
stacks at 0.01 peak at up to 1.1e4 times their start and end below it. The runaways, the
unnormalized stacks at 0.1, reach 1e15 to 1e19 times their start, pass 1e6 by
step 2 and end 1e5 to 1e11 times above it. 1e6 sits above every bounded
excursion and nine decades below every runaway, so the verdict holds for every
seed and machine; a smaller factor (1e3, 1e4) would stop runs that recover.

Every training loop in resviz (:func:`resviz.train_compare`,
:func:`resviz.train_layer_grads`, :func:`resviz.train_degradation`,
:func:`resviz.train_masked`) runs on :class:`resviz.train.loop.Trainer`, which calls
:func:`first_divergence`, stops a diverged variant at that step, marks that step's row ``diverged=True`` with the reason
in its ``divergence`` column, and lists it in ``attrs["diverged"]`` (variant ->
step) and ``attrs["divergence"]`` (variant -> :class:`Divergence`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal, NamedTuple

import numpy as np
import pandas as pd
import torch

DIVERGENCE_FACTOR: float = 1e6
"""A loss above this many times the run's starting loss counts as diverged."""

Reason = Literal["nan", "inf", "blow-up"]


class Divergence(NamedTuple):
    """Where and why a run diverged (a named tuple, so frames' ``attrs`` holding
    it stay JSON-serialisable).

    ``step``: the first diverged step (in the caller's step numbering);
    ``reason``: ``"nan"``, ``"inf"`` or ``"blow-up"`` (loss above ``factor`` times
    ``start``); ``quantity``: ``"loss"`` or ``"gradient"`` (the total gradient
    norm; only NaN/Inf is judged there); ``value``: that quantity at ``step``;
    ``start``: the starting loss; ``factor``: the factor in force.
    """

    step: int
    reason: Reason
    quantity: Literal["loss", "gradient"]
    value: float
    start: float
    factor: float = DIVERGENCE_FACTOR

    @property
    def label(self) -> str:
        """Short reason for a table cell or a tooltip: ``"loss NaN"``,
        ``"gradient Inf"``, ``"loss > 1,000,000 x start"``."""
        if self.reason == "blow-up":
            return f"loss > {self.factor:,.0f} x start"
        what = "loss" if self.quantity == "loss" else "gradient"
        return f"{what} {'NaN' if self.reason == 'nan' else 'Inf'}"

    def describe(self) -> str:
        """One sentence for a page: what happened at which step."""
        if self.reason == "blow-up":
            return (
                f"at step {self.step} its loss reached {self.value:.3g}, more than "
                f"{self.factor:,.0f} times its starting loss {self.start:.3g}"
            )
        what = "loss" if self.quantity == "loss" else "gradient norm"
        return f"at step {self.step} its {what} became {'NaN' if self.reason == 'nan' else 'Inf'}"


def _as_tensor(values: torch.Tensor | np.ndarray | Sequence[float]) -> torch.Tensor:
    # On the CPU in float64, so the verdict on a run's tensors equals the verdict on
    # the same numbers read back from its CSV.
    if isinstance(values, torch.Tensor):
        t = values.detach().to("cpu", torch.float64)
    else:  # a copy: pandas' arrays may be read-only
        t = torch.tensor(np.asarray(values, dtype=np.float64))
    return t.reshape(-1)


def first_divergence(
    losses: torch.Tensor | np.ndarray | Sequence[float],
    grad_norms: torch.Tensor | np.ndarray | Sequence[float] | None = None,
    *,
    start: float | None = None,
    factor: float = DIVERGENCE_FACTOR,
    first_step: int = 0,
) -> Divergence | None:
    """The first step at which a run diverged, or None (see the module docstring).

    ``losses[i]`` (and ``grad_norms[i]``, if given) belong to step
    ``first_step + i``. ``start`` is the starting loss; by default ``losses[0]``.
    Tensors may live on any device (they are compared on the CPU in float64, as
    a CSV of the same numbers would be). Where several conditions hold at the
    same step, NaN/Inf of the loss is reported before NaN/Inf of the gradient,
    then the blow-up.
    """
    if not (isinstance(factor, int | float) and factor > 1 and math.isfinite(factor)):
        raise ValueError(f"factor must be a finite number above 1, got {factor!r}.")
    loss = _as_tensor(losses)
    n = int(loss.numel())
    if n == 0:
        return None
    grad = None
    if grad_norms is not None:
        grad = _as_tensor(grad_norms)
        if grad.numel() != n:
            raise ValueError(f"{n} losses but {grad.numel()} gradient norms.")
    s = float(loss[0]) if start is None else float(start)
    bad = ~torch.isfinite(loss)
    if grad is not None:
        bad |= ~torch.isfinite(grad)
    if math.isfinite(s) and s > 0:
        bad |= loss > factor * s
    hits = bad.nonzero()
    if hits.numel() == 0:
        return None
    i = int(hits[0, 0])
    v = float(loss[i])
    if not math.isfinite(v):
        return Divergence(first_step + i, "nan" if math.isnan(v) else "inf", "loss", v, s, factor)
    if grad is not None:
        g = float(grad[i])
        if not math.isfinite(g):
            reason: Reason = "nan" if math.isnan(g) else "inf"
            return Divergence(first_step + i, reason, "gradient", g, s, factor)
    return Divergence(first_step + i, "blow-up", "loss", v, s, factor)


def divergence_column(steps: Sequence[int], found: Divergence | None) -> list[str]:
    """The ``divergence`` column of a training frame: the reason at the diverged
    step, empty elsewhere."""
    return [found.label if found is not None and s == found.step else "" for s in steps]


def definition(factor: float = DIVERGENCE_FACTOR) -> str:
    """The definition in words, for a caption."""
    return f"a NaN or Inf loss or gradient, or a loss above {factor:,.0f} times its start"


def divergence_note(frame: pd.DataFrame, variant: str = "variant", step: str = "step") -> str:
    """A sentence on a training frame (columns ``variant``, ``step``, ``diverged``
    and, if present, ``divergence``): which runs diverged, at which step and why,
    and which did not in the steps the frame holds. Computed from the frame only,
    so it is true of whatever the frame shows, a live partial run included."""
    if not len(frame) or "diverged" not in frame:
        return ""
    hit = frame["diverged"].fillna(False).astype(bool)
    bad = frame[hit].drop_duplicates(subset=[variant])
    names = list(dict.fromkeys(frame[variant]))
    if not len(bad):
        return f"No run diverged ({definition()})."
    why = bad["divergence"] if "divergence" in bad else pd.Series("", index=bad.index)
    parts = [
        f"{v} at step {int(t)}" + (f" ({r})" if r else "")
        for v, t, r in zip(bad[variant], bad[step], why, strict=True)
    ]
    ok = [n for n in names if n not in set(bad[variant])]
    out = f"Diverged ({definition()}; dashed vertical line at the step): " + ", ".join(parts) + "."
    if ok:
        out += " Did not diverge: " + ", ".join(ok) + "."
    return out


__all__ = [
    "DIVERGENCE_FACTOR",
    "Divergence",
    "definition",
    "divergence_column",
    "divergence_note",
    "first_divergence",
]
