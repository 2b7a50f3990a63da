"""Normalization layers, measured: what LayerNorm, BatchNorm and RMSNorm do to activations.

Every function returns tidy DataFrames (or plain tensors) from seeded generators:

* :func:`scaled_batch`, :func:`apply_norms`, :func:`norm_views`, :func:`norm_stats`,
  :func:`norm_histograms`, :func:`half_means`: one input with features of very
  different scales (the seed notebook's x10 / x0.1), seen raw and after each norm;
* :func:`textbook_layernorm`, :func:`layernorm_gap`: the hand-written LayerNorm
  (unbiased std, eps added to the std) against ``torch.nn.LayerNorm`` (Ba et al.
  2016's population statistics, eps inside the square root), with the difference
  its formula predicts;
* :func:`invariance_table`: shift/scale the input, one sample, or the weights;
* :func:`batch_dependence`: BatchNorm's output for one token as its batch changes
  (Ioffe and Szegedy 2015: training mode normalizes with the batch's statistics).

Where the norm sits around the residual sum is :mod:`resviz.prepost`; its cost,
:mod:`resviz.norm_cost`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pandas as pd
import torch
from torch import nn
from torch.nn import functional as F

from .models import FeatureBatchNorm

VIEWS = ("raw", "LayerNorm", "BatchNorm", "RMSNorm")
# Which axis each view normalizes over, for labels.
AXES = {
    "raw": "no normalization",
    "LayerNorm": "per token, over its features (subtract mean, divide by std)",
    "BatchNorm": "per feature, over the batch and tokens (training mode)",
    "RMSNorm": "per token, over its features (divide by root mean square, no centring)",
}


# ----------------------------------------------------------- 1. four views of one input
def scaled_batch(
    batch_size: int = 8,
    seq_len: int = 16,
    d_model: int = 64,
    big: float = 10.0,
    small: float = 0.1,
    seed: int = 0,
) -> torch.Tensor:
    """Gaussian ``(B, T, d)`` input whose first half of features is multiplied by
    ``big`` and second half by ``small`` (the seed notebook's x10 / x0.1)."""
    if d_model < 2:
        raise ValueError("d_model must be at least 2 (two halves of features).")
    if batch_size < 1 or seq_len < 1:
        raise ValueError("batch_size and seq_len must be at least 1.")
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(batch_size, seq_len, d_model, generator=gen)
    half = d_model // 2
    x[..., :half] *= big
    x[..., half:] *= small
    return x


def make_norms(d_model: int) -> dict[str, nn.Module]:
    """Fresh LayerNorm, BatchNorm (per feature over batch and tokens) and RMSNorm, at init
    (gain 1, bias 0), in training mode."""
    return {
        "LayerNorm": nn.LayerNorm(d_model),
        "BatchNorm": FeatureBatchNorm(d_model),
        "RMSNorm": nn.RMSNorm(d_model, eps=1e-5),
    }


@torch.no_grad()
def apply_norms(x: torch.Tensor) -> dict[str, torch.Tensor]:
    """``{"raw": x, "LayerNorm": ..., "BatchNorm": ..., "RMSNorm": ...}`` for ``(B, T, d)`` x."""
    out = {"raw": x}
    for name, norm in make_norms(x.shape[-1]).items():
        out[name] = norm.train()(x)
    return out


def norm_views(views: dict[str, torch.Tensor], sample: int = 0) -> pd.DataFrame:
    """Long form of one sample's ``(T, d)`` matrix per view: ``view, token, feature, value``."""
    parts = []
    for name, t in views.items():
        m = t[sample].numpy()
        tok, feat = np.meshgrid(range(m.shape[0]), range(m.shape[1]), indexing="ij")
        parts.append(
            pd.DataFrame(
                {"view": name, "token": tok.ravel(), "feature": feat.ravel(), "value": m.ravel()}
            )
        )
    return pd.concat(parts, ignore_index=True)


def norm_stats(views: dict[str, torch.Tensor]) -> pd.DataFrame:
    """Mean and std per token (over features) and per feature (over batch and tokens).

    One row per view: ``view, normalizes, token_mean_absmax, token_std_min,
    token_std_max, feature_mean_absmax, feature_std_min, feature_std_max``
    (population std). LayerNorm makes every token's mean 0 and std 1; BatchNorm
    makes every feature's; RMSNorm makes every token's root mean square 1.
    """
    rows = []
    for name, t in views.items():
        flat = t.reshape(-1, t.shape[-1]).double()  # (B*T, d)
        tm, ts = flat.mean(1), flat.std(1, unbiased=False)
        fm, fs = flat.mean(0), flat.std(0, unbiased=False)
        rows.append(
            {
                "view": name,
                "normalizes": AXES.get(name, ""),
                "token_mean_absmax": float(tm.abs().max()),
                "token_std_min": float(ts.min()),
                "token_std_max": float(ts.max()),
                "token_rms_mean": float(flat.pow(2).mean(1).sqrt().mean()),
                "feature_mean_absmax": float(fm.abs().max()),
                "feature_std_min": float(fs.min()),
                "feature_std_max": float(fs.max()),
            }
        )
    return pd.DataFrame(rows)


def norm_histograms(views: dict[str, torch.Tensor], bins: int = 40) -> pd.DataFrame:
    """Histogram of all values per view: ``view, bin_start, bin_end, count``."""
    parts = []
    for name, t in views.items():
        v = t.reshape(-1).double().numpy()
        counts, edges = np.histogram(v, bins=bins)
        parts.append(
            pd.DataFrame(
                {"view": name, "bin_start": edges[:-1], "bin_end": edges[1:], "count": counts}
            )
        )
    return pd.concat(parts, ignore_index=True)


VIEW_TITLES = {
    "raw": "raw (as drawn)",
    "LayerNorm": "LayerNorm (each token over features)",
    "BatchNorm": "BatchNorm (each feature over batch)",
    "RMSNorm": "RMSNorm (each token, no centring)",
}


def half_means(views: pd.DataFrame, view: str) -> tuple[float, float]:
    """In :func:`norm_views`'s frame, one view: the mean ``|value|`` of the first half
    of the features (the ones :func:`scaled_batch` multiplies by ``big``) and of the
    second half (``small``)."""
    sub = views[views["view"] == view]
    d = int(sub["feature"].max()) + 1
    first = sub[sub["feature"] < d // 2]["value"].abs().mean()
    second = sub[sub["feature"] >= d // 2]["value"].abs().mean()
    return float(first), float(second)


# ------------------------------------------------------- 2. textbook versus torch LayerNorm
def textbook_layernorm(x: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """The common hand-written LayerNorm: ``(x - mean) / (std + eps)`` with the
    *unbiased* std (divides by ``n - 1``) and eps added to the std, not the variance."""
    mean = x.mean(-1, keepdim=True)
    std = x.std(-1, keepdim=True)  # unbiased
    return (x - mean) / (std + eps)


def predicted_gap(
    x: torch.Tensor, eps_textbook: float = 1e-6, eps_torch: float = 1e-5
) -> torch.Tensor:
    """What the two formulas predict ``textbook - torch`` to be, element by element:
    ``(x - mu) * (1 / (sigma * sqrt(n / (n - 1)) + eps_t) - 1 / sqrt(sigma^2 + eps))``
    with ``sigma`` the population std over the ``n`` features."""
    n = x.shape[-1]
    xd = x.double()
    mu = xd.mean(-1, keepdim=True)
    var = xd.var(-1, keepdim=True, unbiased=False)
    sigma = var.sqrt()
    return (xd - mu) * (
        1.0 / (sigma * math.sqrt(n / (n - 1)) + eps_textbook) - 1.0 / (var + eps_torch).sqrt()
    )


@torch.no_grad()
def layernorm_gap(
    x: torch.Tensor, eps_textbook: float = 1e-6, eps_torch: float = 1e-5
) -> pd.DataFrame:
    """Per token: the measured ``max |textbook - torch|``, the formula's prediction,
    and the first-order approximation ``max|y| * (1 - sqrt((n-1)/n))``.

    Columns: ``token`` (flat index), ``sigma`` (population std), ``measured``,
    ``predicted``, ``approx``.
    """
    flat = x.reshape(-1, x.shape[-1])
    n = flat.shape[-1]
    if n < 2:
        raise ValueError("LayerNorm over one feature is undefined for the unbiased std.")
    torch_ln = F.layer_norm(flat, (n,), eps=eps_torch)
    book = textbook_layernorm(flat, eps_textbook)
    measured = (book - torch_ln).abs().amax(-1)
    predicted = predicted_gap(flat, eps_textbook, eps_torch).abs().amax(-1)
    approx = torch_ln.abs().amax(-1) * (1 - math.sqrt((n - 1) / n))
    return pd.DataFrame(
        {
            "token": range(flat.shape[0]),
            "sigma": flat.double().std(-1, unbiased=False).numpy(),
            "measured": measured.double().numpy(),
            "predicted": predicted.numpy(),
            "approx": approx.double().numpy(),
        }
    )


def gap_long(gap: pd.DataFrame) -> pd.DataFrame:
    """:func:`layernorm_gap`'s measured and predicted columns in long form, to chart
    as two lines: ``token, what`` (``measured``/``predicted``), ``gap``."""
    return gap.melt(
        id_vars=["token"], value_vars=["measured", "predicted"], var_name="what", value_name="gap"
    )


# --------------------------------------------------------------------- 3. invariances
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


# -------------------------------------------------------------- 4. BatchNorm's batch
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
                note = "statistics over the 16 tokens of one sequence only"
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
    "AXES",
    "INVARIANCE_NORMS",
    "VIEWS",
    "VIEW_TITLES",
    "apply_norms",
    "batch_dependence",
    "batch_values_shown",
    "gap_long",
    "half_means",
    "invariance_table",
    "invariance_wide",
    "layernorm_gap",
    "make_norms",
    "norm_histograms",
    "norm_stats",
    "norm_views",
    "predicted_gap",
    "scaled_batch",
    "textbook_layernorm",
]
