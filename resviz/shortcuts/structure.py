"""A stack's structure: which blocks got a shortcut, the block as a formula, its paths.

* :func:`shortcut_table` lists which blocks of a stack got a shortcut (identity,
  projection, concat or none), read off the built model (on the meta device), e.g.
  for the preset stack with layer sizes 25, 25, 43, 43, 54, 54.
* :func:`block_formula` writes the block as LaTeX.
* :func:`path_lengths`: a stack of ``n`` residual blocks unrolls into ``2**n``
  paths whose lengths follow Binomial(n, 1/2) (Veit et al. 2016, Residual Networks
  Behave Like Ensembles of Relatively Shallow Networks); :func:`path_bars` and
  :func:`path_table` are the frames the skip-connections page draws and downloads.
"""

from __future__ import annotations

import math

import pandas as pd
import torch

from resviz.config import (
    StackConfig,
)
from resviz.models import Stack, StackBlock

# ------------------------------------------------------------------ the block


def _meta_stack(cfg: StackConfig) -> Stack:
    with torch.device("meta"):
        return Stack(cfg)


def shortcut_kind(block: StackBlock) -> str:
    """``"identity"``, ``"projection"``, ``"concat"``, ``"concat + projection"`` or ``"none"``."""
    if block.residual == "concat":
        return "concat + projection" if block.concat_proj is not None else "concat"
    if block.shortcut is None:
        return "none"
    return "projection" if block.projected else "identity"


def shortcut_table(cfg: StackConfig) -> pd.DataFrame:
    """One row per block: which shortcut it got, read off the model ``cfg`` builds.

    Columns: ``block`` (from 1), ``w_in``, ``w_out`` (nominal width of the branch output),
    ``out_width`` (what the next block receives), ``shortcut`` (see
    :func:`shortcut_kind`), ``shortcut_params`` and ``branch_params``.
    """
    model = _meta_stack(cfg)
    widths = cfg.layer_widths
    rows = []
    w = widths[0]
    for i, block in enumerate(model.blocks):
        assert isinstance(block, StackBlock)  # a Stack's blocks (ModuleList yields Module)
        sc = sum(p.numel() for p in block.shortcut.parameters()) if block.shortcut else 0
        if block.concat_proj is not None:
            sc += sum(p.numel() for p in block.concat_proj.parameters())
        linears = ("fc",) if cfg.block == "linear" else ("fc1", "fc2")
        br = sum(p.numel() for n in linears for p in getattr(block, n).parameters())
        rows.append(
            {
                "block": i + 1,
                "w_in": w,
                "w_out": widths[i + 1],
                "out_width": block.out_width,
                "shortcut": shortcut_kind(block),
                "shortcut_params": sc,
                "branch_params": br,
            }
        )
        w = block.out_width
    return pd.DataFrame(rows)


_ACT_TEX = {
    "relu": r"\mathrm{ReLU}",
    "gelu": r"\mathrm{GELU}",
    "tanh": r"\tanh",
    "sigmoid": r"\sigma",
    "identity": "",
}


def block_formula(cfg: StackConfig) -> str:
    """The block as a LaTeX formula (``x`` in, ``y`` out), for a block whose
    shapes match (and, where widths differ, the projection ``P``)."""
    act = _ACT_TEX[cfg.activation]
    h = r"\mathrm{norm}(x)" if cfg.norm != "none" and cfg.norm_position == "pre" else "x"
    if cfg.block == "linear":
        pre = f"W {h} + b"
        f = f"{act}({pre})"
    else:
        pre = f"W_2\\,{act}(W_1 {h} + b_1) + b_2"
        f = pre
    s = "x" if cfg.identity_scale == 1 else f"{cfg.identity_scale:g}\\,x"
    if cfg.residual == "none":
        y = f
    elif cfg.join == "before_act" and cfg.residual == "scaled":
        a = r"\alpha" if cfg.alpha_learnable else f"{cfg.alpha:g}"
        y = f"{act}(x + {a}\\,({pre}))"
    elif cfg.join == "before_act":
        y = f"{act}({s} + {pre})"
    elif cfg.residual == "add":
        y = f"{s} + {f}"
    elif cfg.residual == "scaled":
        a = r"\alpha" if cfg.alpha_learnable else f"{cfg.alpha:g}"
        y = f"x + {a}\\,{f}"
    else:
        y = f"[\\,x,\\; {f}\\,]"
        if cfg.concat_project:
            y = f"P{y}"
    if cfg.norm != "none" and cfg.norm_position == "post":
        y = f"\\mathrm{{norm}}\\left({y}\\right)"
    return f"y = {y}"


# ------------------------------------------------------------------ the paths


def path_lengths(cfg: StackConfig) -> pd.DataFrame:
    """How many paths of each length the unrolled stack has (Veit et al. 2016).

    Each block with a shortcut offers two routes (skip it, or go through its
    branch); a block without one must be passed through. With ``k`` shortcut
    blocks out of ``n`` there are ``2**k`` paths, and the number that pass
    through ``L`` branches is ``C(k, L - (n - k))``: Binomial(k, 1/2) shifted by
    the ``n - k`` blocks that cannot be skipped. Columns: ``length``, ``count``
    (exact int), ``fraction`` (of all paths) and ``binomial_pmf``.
    """
    table = shortcut_table(cfg)
    n = len(table)
    k = int((table["shortcut"] != "none").sum())
    forced = n - k
    rows = []
    for length in range(n + 1):
        j = length - forced
        count = math.comb(k, j) if 0 <= j <= k else 0
        rows.append(
            {
                "length": length,
                "count": count,
                "fraction": count / 2**k,
                "binomial_pmf": math.comb(k, j) * 0.5**k if 0 <= j <= k else 0.0,
            }
        )
    return pd.DataFrame(rows)


def path_bars(paths: pd.DataFrame) -> pd.DataFrame:
    """:func:`path_lengths` for the bar chart: the lengths some path has (the one row
    there is when there is one), with the fraction of paths as ``paths``."""
    shown = paths[paths["count"] > 0] if len(paths) > 1 else paths
    return shown.assign(paths=shown["fraction"]).reset_index(drop=True)


def path_table(paths: pd.DataFrame) -> pd.DataFrame:
    """:func:`path_lengths` as a table to download: ``count`` as text, exact (C(64, 32)
    is above 2^53, where a float, a spreadsheet's or the browser's, rounds)."""
    return paths.assign(count=paths["count"].astype(str))


__all__ = [
    "block_formula",
    "path_bars",
    "path_lengths",
    "path_table",
    "shortcut_kind",
    "shortcut_table",
]
