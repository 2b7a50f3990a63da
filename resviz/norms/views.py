"""Normalization layers, measured: what LayerNorm, BatchNorm and RMSNorm do to activations.

Every function returns tidy DataFrames (or plain tensors) from seeded generators:

* :func:`scaled_batch`, :func:`apply_norms`, :func:`norm_views`, :func:`norm_stats`,
  :func:`norm_histograms`, :func:`half_means`: one input with features of very
  different scales (x10 / x0.1), seen raw and after each norm;
* :func:`textbook_layernorm`, :func:`layernorm_gap`: the hand-written LayerNorm
  (unbiased std, eps added to the std) against ``torch.nn.LayerNorm`` (Ba et al.
  2016's population statistics, eps inside the square root), with the difference
  its formula predicts.

What a norm's output is invariant to (shift, scale, the rest of the batch) and
BatchNorm's dependence on its batch are :mod:`resviz.norms.invariance`; where the
norm sits around the residual sum, :mod:`resviz.norms.prepost`; training with a norm,
:mod:`resviz.norms.training`; its cost, :mod:`resviz.norms.cost`.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch
from torch import nn
from torch.nn import functional as F

from resviz.models import FeatureBatchNorm

VIEWS = ("raw", "LayerNorm", "BatchNorm", "RMSNorm")
# Which axis each view normalizes over, for labels.
AXES = {
    "raw": "no normalization",
    "LayerNorm": "per token, over its features (subtract mean, divide by std)",
    "BatchNorm": "per feature, over the batch and tokens (training mode)",
    "RMSNorm": "per token, over its features (divide by root mean square, no centring)",
}


# ------------------------------------------------------------- four views of one input
def scaled_batch(
    batch_size: int = 8,
    seq_len: int = 16,
    d_model: int = 64,
    big: float = 10.0,
    small: float = 0.1,
    seed: int = 0,
) -> torch.Tensor:
    """Gaussian ``(B, T, d)`` input whose first half of features is multiplied by
    ``big`` and second half by ``small`` (x10 / x0.1)."""
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


# --------------------------------------------------------- textbook versus torch LayerNorm
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
    as two lines: ``token, sigma, approx, what`` (``measured``/``predicted``), ``gap``."""
    return gap.melt(
        id_vars=["token", "sigma", "approx"],
        value_vars=["measured", "predicted"],
        var_name="what",
        value_name="gap",
    )


__all__ = [
    "AXES",
    "VIEWS",
    "VIEW_TITLES",
    "apply_norms",
    "gap_long",
    "half_means",
    "layernorm_gap",
    "make_norms",
    "norm_histograms",
    "norm_stats",
    "norm_views",
    "predicted_gap",
    "scaled_batch",
    "textbook_layernorm",
]
