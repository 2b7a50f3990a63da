"""Shattered gradients (Balduzzi et al. 2017, The Shattered Gradients Problem).

In deep plain nets with batch normalization the gradient with respect to the input
looks like white noise, while residual nets keep it correlated between neighbouring
inputs. :func:`shattered_gradients` measures ``df/dx`` of a scalar network on a 1-D
grid of inputs, :func:`autocorrelation` its correlation at each lag, and
:func:`shattered_summary` both for every (residual, depth); :func:`lag_table` and
:func:`acf_curves` are the frames the gradient-flow page draws.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd
import torch
from torch import nn

from resviz.config import StackConfig
from resviz.gradients.layers import _device, with_variant
from resviz.models import build

# ------------------------------------------------------------- shattered gradients


def shattered_gradients(
    residual: str = "none",
    depth: int = 24,
    width: int = 128,
    activation: str = "relu",
    norm: str = "batch",
    n_points: int = 256,
    lo: float = -2.0,
    hi: float = 2.0,
    seed: int = 0,
    device: torch.device | str | None = None,
) -> pd.DataFrame:
    """``df/dx`` of a scalar network on a 1-D grid of inputs (Balduzzi et al. 2017).

    The network maps ``x`` (width 1) through a first block to ``width``, then
    ``depth`` blocks of width ``width`` (plain or with identity shortcuts, norm
    before the branch), then a linear head to one output. ``n_points`` inputs
    evenly spaced on ``[lo, hi]`` form one batch; batch norm's statistics are taken
    from that batch once and then frozen, so the network is a fixed function of
    ``x`` and ``df/dx`` is each point's own derivative. Columns: ``x``, ``grad``,
    ``output``.
    """
    if not 8 <= n_points <= 4096:
        raise ValueError(f"n_points={n_points} is out of range: choose 8 to 4096.")
    if not lo < hi:
        raise ValueError("the interval needs lo < hi.")
    cfg = StackConfig(
        widths=(1,) + (width,) * (depth + 1),
        activation=activation,  # type: ignore[arg-type]
        residual=residual,  # type: ignore[arg-type]
        norm=norm,  # type: ignore[arg-type]
        init="kaiming" if activation == "relu" else "default",
        out_dim=1,
        seed=seed,
    )
    dev = _device(device)
    model = build(cfg, dev)
    x = torch.linspace(lo, hi, n_points, device=dev)[:, None]
    for m in model.modules():
        if isinstance(m, nn.BatchNorm1d):
            m.momentum = None  # cumulative average: one pass sets the batch statistics
    model.train()
    with torch.no_grad():
        model(x)
    model.eval()
    xg = x.clone().requires_grad_(True)
    out = model(xg)
    (grad,) = torch.autograd.grad(out.sum(), xg)
    return pd.DataFrame(
        {
            "x": x[:, 0].cpu().numpy(),
            "grad": grad[:, 0].detach().cpu().numpy(),
            "output": out[:, 0].detach().cpu().numpy(),
        }
    )


def autocorrelation(values: Iterable[float], max_lag: int = 1) -> pd.DataFrame:
    """Pearson correlation between ``g[i]`` and ``g[i + k]`` for ``k = 0..max_lag``.

    A constant sequence has no defined correlation (NaN). Columns: ``lag``, ``corr``.
    """
    g = np.asarray(list(values), dtype=float)
    rows = []
    for k in range(max_lag + 1):
        a, b = (g, g) if k == 0 else (g[:-k], g[k:])
        if len(a) < 2 or not np.isfinite(a).all() or not np.isfinite(b).all():
            corr = math.nan
        else:
            sa, sb = a.std(), b.std()
            corr = (
                float(((a - a.mean()) * (b - b.mean())).mean() / (sa * sb))
                if sa * sb > 0
                else math.nan
            )
        rows.append({"lag": k, "corr": corr})
    return pd.DataFrame(rows)


def shattered_summary(
    depths: Sequence[int] = (2, 10, 50),
    residuals: Sequence[str] = ("none", "add"),
    width: int = 128,
    activation: str = "relu",
    norm: str = "batch",
    n_points: int = 256,
    seed: int = 0,
    max_lag: int = 16,
    device: torch.device | str | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`shattered_gradients` for every (residual, depth), and the autocorrelation
    of each gradient sequence.

    Returns ``(gradients, acf)``: ``gradients`` has ``residual, depth, x, grad,
    grad_scaled`` (``grad`` divided by its standard deviation, so depths share an
    axis); ``acf`` has ``residual, depth, lag, corr``.
    """
    grads, acfs = [], []
    for res in residuals:
        for d in depths:
            g = shattered_gradients(
                res, d, width, activation, norm, n_points, seed=seed, device=device
            )
            sd = float(g["grad"].std())
            g["grad_scaled"] = g["grad"] / sd if sd > 0 and math.isfinite(sd) else math.nan
            grads.append(g.assign(residual=res, depth=d))
            acfs.append(autocorrelation(g["grad"], max_lag).assign(residual=res, depth=d))
    gcols = ["residual", "depth", "x", "grad", "grad_scaled"]
    acols = ["residual", "depth", "lag", "corr"]
    return (
        pd.concat(grads, ignore_index=True)[gcols],
        pd.concat(acfs, ignore_index=True)[acols],
    )


def lag_table(acf: pd.DataFrame, lag: int = 1) -> pd.DataFrame:
    """The autocorrelation at ``lag`` per depth, a column per net:
    ``depth``, ``plain lag-1 autocorrelation``, ``residual lag-1 autocorrelation``."""
    return (
        with_variant(acf[acf["lag"] == lag])
        .pivot(index="depth", columns="variant", values="corr")
        .reset_index()
        .rename(columns={v: f"{v} lag-{lag} autocorrelation" for v in ("plain", "residual")})
        .rename_axis(columns=None)
    )


def acf_curves(acf: pd.DataFrame) -> pd.DataFrame:
    """:func:`shattered_summary`'s autocorrelations with ``variant`` and a ``curve``
    per net (``"plain, depth 50"``)."""
    out = with_variant(acf)
    out["curve"] = out["variant"] + ", depth " + out["depth"].astype(str)
    return out


__all__ = [
    "acf_curves",
    "autocorrelation",
    "lag_table",
    "shattered_gradients",
    "shattered_summary",
]
