"""The forward signal: each block's output split into the shortcut and the update.

A block sums two terms, ``y = s + u`` (the shortcut after ``identity_scale`` and the
update after ``alpha``), read from its hook points. :func:`layer_decomposition` is
resviz's one definition of what follows from them per block: output norm, the
norms of both terms, the identity share ``sum||s||^2 / (sum||s||^2 + sum||u||^2)``
and the cosine between them (the seed's question: how much of ``x_{l+1}`` is still
``x_l``?). :func:`forward_decomposition` measures it at init on a Gaussian batch;
:func:`compare_signal` does so for a stack and its plain twin, the skip-connections
page's Signal section.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

import pandas as pd
import torch

from resviz.config import (
    StackConfig,
)
from resviz.hooks import capture
from resviz.models import Stack, build

# --------------------------------------------------------- per-layer forward


_TERMS = ("branch_out", "shortcut_term", "update_term", "resid_post")


def _decompose_block(i: int, acts: dict[str, torch.Tensor], concat: bool) -> dict[str, float | int]:
    """One row of :func:`layer_decomposition` from block ``i``'s hooked tensors."""
    y = acts[f"blocks.{i}.resid_post"].double()
    f = acts[f"blocks.{i}.branch_out"].double()
    u = acts[f"blocks.{i}.update_term"].double()
    s = acts.get(f"blocks.{i}.shortcut_term")
    u_sq = u.pow(2).sum(-1)  # one value per vector: per sample, or per token for (B, T, C)
    row: dict[str, float | int] = {
        "block": i + 1,
        "norm": float(y.norm(dim=-1).mean()),
        "std": float(y.std()),
        "branch_norm": float(f.norm(dim=-1).mean()),
        "shortcut_norm": 0.0,
        "update_norm": float(u_sq.sqrt().mean()),
        "identity_share": 0.0,
        "cosine": math.nan,
    }
    if s is None:  # no shortcut: the output is all update
        return row
    s = s.double()
    s_sq = s.pow(2).sum(-1)
    row["shortcut_norm"] = float(s_sq.sqrt().mean())
    total = float(s_sq.sum() + u_sq.sum())
    row["identity_share"] = float(s_sq.sum()) / total if total > 0 else math.nan
    if not concat:
        both = (s_sq > 0) & (u_sq > 0)  # cos is undefined for a zero vector
        if bool(both.any()):
            cos = (s * u).sum(-1)[both] / (s_sq[both] * u_sq[both]).sqrt()
            row["cosine"] = float(cos.mean())
    return row


@torch.no_grad()
def layer_decomposition(model: Stack, x: torch.Tensor) -> pd.DataFrame:
    """Per block, on the batch ``x``: where the output comes from.

    This is resviz's one definition of these quantities (:func:`forward_decomposition`
    returns this frame). Each block joins two
    terms, read from its hook points with :func:`resviz.capture`:
    ``s = blocks.{i}.shortcut_term`` (the shortcut after ``identity_scale``: ``x``,
    ``l x`` or ``P x``) and ``u = blocks.{i}.update_term`` (the update after
    ``alpha``: ``f(x)`` or ``alpha f(x)``; joined before the activation, the
    pre-activation ``W x + b`` or ``alpha (W x + b)``), so that
    ``y = s + u`` before any activation or norm that follows the sum; ``concat``
    puts them side by side, ``[s, u]``, before its optional projection. A block
    without a shortcut has ``u`` only.

    Columns: ``block`` (counted from 1: block ``l`` writes ``x_l``); ``norm`` (mean L2 norm of the block's output ``x_{l+1}``
    per vector) and ``std`` (of that output); ``branch_norm`` (mean ``||f(x)||``,
    the branch before ``alpha``: ``blocks.{i}.branch_out``); ``shortcut_norm``
    (mean ``||s||``, 0 without a shortcut) and ``update_norm`` (mean ``||u||``);
    ``identity_share`` ``= sum||s||^2 / (sum||s||^2 + sum||u||^2)`` over the batch
    (1 for a block that only passes its input on, e.g. ReZero at init; 0 without a
    shortcut; NaN when both terms are 0); ``cosine``, the mean of
    ``cos(s, u)`` over the vectors where both are non-zero (NaN where none are,
    without a shortcut, and for ``concat``, whose terms are never added). Norms
    are taken over the last axis: per sample for ``(B, C)`` input, per token for
    ``(B, T, C)``.
    """
    n = len(model.blocks)
    acts = capture(model, x, [f"blocks.{i}.{t}" for i in range(n) for t in _TERMS])
    rows = [
        _decompose_block(i, acts, block.residual == "concat")
        for i, block in enumerate(model.blocks)
    ]
    return pd.DataFrame(rows)


def forward_decomposition(
    cfg: StackConfig,
    seed: int = 0,
    batch_size: int = 256,
    device: torch.device | str | None = None,
) -> pd.DataFrame:
    """:func:`layer_decomposition` of the model ``cfg`` builds (weights from
    ``cfg.seed``), at init, on a batch of ``batch_size`` standard Gaussian inputs
    drawn from ``seed``."""
    device = torch.device(device or "cpu")
    model = build(cfg, device).eval()
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(batch_size, cfg.in_dim, generator=gen).to(device)
    return layer_decomposition(model, x)


def signal_variants(cfg: StackConfig) -> dict[str, StackConfig]:
    """The stacks :func:`compare_signal` measures, by name: ``plain`` (``cfg`` without
    its shortcut) and ``shortcut: {cfg.residual}`` (``cfg``); the latter alone when
    ``cfg`` has no shortcut."""
    out = {}
    if cfg.residual != "none":
        out["plain"] = dataclasses.replace(cfg, residual="none")
    out[f"shortcut: {cfg.residual}"] = cfg
    return out


def signal_frame(decompositions: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """:func:`layer_decomposition` frames by variant name as one frame, with a
    ``variant`` column."""
    parts = [df.assign(variant=name) for name, df in decompositions.items()]
    return pd.concat(parts, ignore_index=True)


def compare_signal(
    cfg: StackConfig,
    seed: int = 0,
    batch_size: int = 256,
    device: torch.device | str | None = None,
) -> pd.DataFrame:
    """:func:`forward_decomposition` of each of :func:`signal_variants` (weights from
    ``cfg.seed``, the Gaussian batch from ``seed``), as :func:`signal_frame`."""
    return signal_frame(
        {
            name: forward_decomposition(c, seed=seed, batch_size=batch_size, device=device)
            for name, c in signal_variants(cfg).items()
        }
    )


SHORTCUT_TERMS = ("block", "shortcut_norm", "update_norm", "identity_share", "cosine")


def shortcut_terms(signal: pd.DataFrame) -> pd.DataFrame:
    """The rows of :func:`compare_signal` for the stack with the shortcut (not
    ``plain``): ``block, shortcut_norm, update_norm, identity_share, cosine``."""
    return signal.loc[signal["variant"] != "plain", list(SHORTCUT_TERMS)].reset_index(drop=True)


def share_long(terms: pd.DataFrame) -> pd.DataFrame:
    """:func:`shortcut_terms` in long form for one chart: ``block, measure``
    (``identity_share`` or ``cosine``) ``, value``."""
    return terms.melt(
        id_vars=["block"],
        value_vars=["identity_share", "cosine"],
        var_name="measure",
        value_name="value",
    )


__all__ = [
    "SHORTCUT_TERMS",
    "compare_signal",
    "forward_decomposition",
    "layer_decomposition",
    "share_long",
    "shortcut_terms",
    "signal_frame",
    "signal_variants",
]
