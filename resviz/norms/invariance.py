"""What a norm's output does not depend on, and what BatchNorm's does.

* :func:`invariance_table`, :func:`invariance_wide`: each norm's measured output
  change when the input is shifted or scaled (the whole batch or one sample), when
  the other samples are redrawn, or when the weights before it are re-scaled or
  re-centred: the invariances Ba et al. 2016 (Layer Normalization) tabulate in
  their Table 1, measured for LayerNorm, RMSNorm (Zhang and Sennrich 2019: no
  centring) and BatchNorm in training and eval mode (Ioffe and Szegedy 2015).
* :func:`batch_dependence`, :func:`batch_values_shown`: BatchNorm's output for one
  fixed token as its batch changes, in training mode (the batch's statistics) and
  in eval mode (the running statistics).

Inputs are :func:`resviz.norms.views.scaled_batch` (x10 / x0.1
features); the norms' statistics on one input are :mod:`resviz.norms.views`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pandas as pd
import torch
from torch.nn import functional as F

from resviz.models import FeatureBatchNorm
from resviz.norms.views import scaled_batch

INVARIANCE_NORMS = ("LayerNorm", "RMSNorm", "BatchNorm (train)", "BatchNorm (eval)")


def _norm_fn(name: str, d: int, x_ref: torch.Tensor) -> Callable[[torch.Tensor], torch.Tensor]:
    if name == "LayerNorm":
        return lambda t: F.layer_norm(t, (d,), eps=1e-5)
    if name == "RMSNorm":
        return lambda t: F.rms_norm(t, (d,), eps=1e-5)
    bn = FeatureBatchNorm(
        d, momentum=None, dtype=x_ref.dtype
    )  # cumulative average: one pass sets the stats
    if name == "BatchNorm (train)":
        return lambda t: bn.train()(t)
    bn.train()(x_ref)  # running statistics = the clean batch's statistics
    return lambda t: bn.eval()(t)


@torch.no_grad()
def invariance_table(
    batch_size: int = 8,
    seq_len: int = 16,
    d_model: int = 64,
    shift: float = 5.0,
    scale: float = 3.0,
    seed: int = 0,
    big: float = 10.0,
    small: float = 0.1,
) -> pd.DataFrame:
    """Measured ``max |output change|`` of each norm under each transformation.

    The input is ``h = x W^T`` (``x`` from :func:`scaled_batch` with ``big`` and
    ``small``, ``W`` a seeded
    Gaussian ``d x d`` matrix), so weight transformations can be applied too.
    Transformations: add ``shift`` / multiply by ``scale`` to the whole batch, to
    sample 0 only (change measured on sample 0, and separately on the *other*
    samples), and re-scale ``W`` by ``scale`` or re-centre it (``W + shift/d``:
    every output feature of a token moves by the same amount). Returns one row
    per (transformation, norm): ``transformation, measured_on, norm, max_abs_change,
    invariant`` (``invariant``: change below 1e-4).
    """
    if not (scale > 0 and math.isfinite(scale) and math.isfinite(shift)):
        raise ValueError("scale must be a positive finite number and shift finite.")
    if batch_size < 2:
        raise ValueError("batch_size must be at least 2 (one sample changes, the others not).")
    x = scaled_batch(batch_size, seq_len, d_model, big, small, seed).double()
    gen = torch.Generator().manual_seed(seed + 1)
    W = torch.randn(d_model, d_model, generator=gen, dtype=torch.float64) / math.sqrt(d_model)
    h = x @ W.T
    one = torch.zeros(batch_size, 1, 1, dtype=torch.float64)
    one[0] = 1.0
    cases = [
        ("add a constant to every input", "all samples", h + shift),
        ("multiply every input by a constant", "all samples", h * scale),
        ("add a constant to sample 0", "sample 0", h + shift * one),
        ("multiply sample 0 by a constant", "sample 0", h * (1 + (scale - 1) * one)),
        ("add a constant to sample 0", "the other samples", h + shift * one),
        ("replace samples 1.. by new draws", "sample 0", None),
        ("re-scale the weights W", "all samples", x @ (scale * W).T),
        ("re-centre the weights W", "all samples", x @ (W + shift / d_model).T),
    ]
    other = scaled_batch(batch_size, seq_len, d_model, big, small, seed + 7).double() @ W.T
    replaced = torch.cat([h[:1], other[1:]])
    rows = []
    for norm in INVARIANCE_NORMS:
        fn = _norm_fn(norm, d_model, h)
        base = fn(h)
        for what, on, changed in cases:
            out = fn(replaced if changed is None else changed)
            diff = (out - base).abs()
            if on == "sample 0":
                diff = diff[:1]
            elif on == "the other samples":
                diff = diff[1:]
            rows.append(
                {
                    "transformation": what,
                    "measured_on": on,
                    "norm": norm,
                    "max_abs_change": float(diff.max()),
                }
            )
    df = pd.DataFrame(rows)
    df["invariant"] = df["max_abs_change"] < 1e-4
    return df


def invariance_wide(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`invariance_table` with one column per norm: ``transformation,
    measured_on`` and each of :data:`INVARIANCE_NORMS` in that order (its
    ``max_abs_change``), rows in the table's order."""
    wide = (
        table.pivot_table(
            index=["transformation", "measured_on"],
            columns="norm",
            values="max_abs_change",
            sort=False,
        )
        .reset_index()
        .rename_axis(columns=None)
    )
    norms = [n for n in INVARIANCE_NORMS if n in wide.columns]
    return wide[["transformation", "measured_on", *norms]]


# ------------------------------------------------------------------ BatchNorm's batch
@torch.no_grad()
def batch_dependence(
    batch_size: int = 8, seq_len: int = 16, d_model: int = 64, seed: int = 0
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """BatchNorm's output for one fixed token (sample 0, token 0) as the rest of its
    batch changes, in training and in eval mode.

    Scenarios: the original batch; samples 1.. replaced by new draws; samples 1..
    multiplied by 10; a batch of one sequence (normalized over its own tokens);
    a batch of one token (training mode cannot normalize one value per feature:
    reported, not raised). Eval mode uses the running statistics of the original
    batch. Returns ``(values, summary)``: ``values`` has ``scenario, mode,
    feature, value`` for the first features; ``summary`` has ``scenario, mode,
    max_abs_change`` (versus the original batch in the same mode) and ``note``.
    """
    x = scaled_batch(batch_size, seq_len, d_model, seed=seed)
    fresh = scaled_batch(batch_size, seq_len, d_model, seed=seed + 7)
    scenarios = {
        "original batch": x,
        "other samples redrawn": torch.cat([x[:1], fresh[1:]]),
        "other samples x10": torch.cat([x[:1], 10 * x[1:]]),
        "batch of 1 sequence": x[:1],
        "batch of 1 token": x[:1, :1],
    }
    bn = FeatureBatchNorm(d_model, momentum=None)
    bn.train()(x)
    running = {k: v.clone() for k, v in bn.state_dict().items()}
    rows, summary = [], []
    ref: dict[str, torch.Tensor] = {}
    for mode in ("train", "eval"):
        for name, batch in scenarios.items():
            bn.load_state_dict(running)
            bn.train(mode == "train")
            note = ""
            try:
                out = bn(batch)[0, 0]
            except ValueError as exc:
                summary.append(
                    {
                        "scenario": name,
                        "mode": mode,
                        "max_abs_change": float("nan"),
                        "note": str(exc),
                    }
                )
                continue
            ref.setdefault(mode, out)
            if name == "batch of 1 sequence" and mode == "train":
                note = f"statistics over the {seq_len} tokens of one sequence only"
            summary.append(
                {
                    "scenario": name,
                    "mode": mode,
                    "max_abs_change": float((out - ref[mode]).abs().max()),
                    "note": note,
                }
            )
            for f, v in enumerate(out.tolist()):
                rows.append({"scenario": name, "mode": mode, "feature": f, "value": v})
    return pd.DataFrame(rows), pd.DataFrame(summary)


def batch_values_shown(values: pd.DataFrame, mode: str, n_features: int = 16) -> pd.DataFrame:
    """The rows of :func:`batch_dependence`'s ``values`` for one ``mode`` (``train``
    or ``eval``) and the first ``n_features`` features: one line per scenario."""
    return values[(values["mode"] == mode) & (values["feature"] < n_features)]


__all__ = [
    "INVARIANCE_NORMS",
    "batch_dependence",
    "batch_values_shown",
    "invariance_table",
    "invariance_wide",
]
