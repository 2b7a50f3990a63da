"""Lesioning a trained stack: delete one block at a time and measure the damage.

Veit et al. (2016, Residual Networks Behave Like Ensembles of Relatively Shallow
Networks): deleting one block from a residual network barely hurts it, deleting one
from a plain network breaks it. :func:`lesion` measures that on any :class:`Stack`
and data, each deletion an intervention at the hook points (``x_{i+1} = x_i``:
:func:`resviz.hooks.delete_block` through :func:`resviz.hooks.tap`'s ``patch``); :func:`lesion_summary` condenses the frames :func:`resviz.train_lesion`
returns, and :func:`lesion_caption` words the finding from that summary alone.
"""

from __future__ import annotations

import pandas as pd
import torch
from torch import nn
from torch.nn import functional as F

from .hooks import delete_block, tap
from .models import Stack


@torch.no_grad()
def evaluate(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> tuple[float, float]:
    """``(cross-entropy, error rate)`` of ``model`` on ``(x, y)``."""
    logits = model(x)
    return float(F.cross_entropy(logits, y)), float((logits.argmax(-1) != y).float().mean())


def deletable_blocks(model: Stack, width_in: int) -> list[int]:
    """The blocks (counted from 1) of ``model`` that :func:`lesion` can delete on input
    of ``width_in`` features: those whose input and output widths match."""
    out, w = [], width_in
    for i, block in enumerate(model.blocks):
        if block.out_width == w:
            out.append(i + 1)
        w = block.out_width
    return out


@torch.no_grad()
def lesion(model: Stack, x: torch.Tensor, y: torch.Tensor) -> pd.DataFrame:
    """Delete one block at a time (``x_{i+1} = x_i``) and measure the damage (Veit et al.).

    A deletion is an intervention at the hook points (:func:`resviz.hooks.delete_block`):
    each deleted block's output (``resid_post``) is replaced by its input (``resid_pre``). Only blocks whose input and output widths match can be
    deleted (:func:`deletable_blocks`). Columns: ``block`` (the deleted block, counted
    from 1 as the pages show it), ``loss``, ``accuracy``, and ``base_accuracy`` (the
    intact model's).
    """
    model.eval()
    _, base_err = evaluate(model, x, y)
    rows = []
    for block in deletable_blocks(model, x.shape[-1]):
        with tap(model, (), patch=delete_block(block)):
            logits = model(x)
        rows.append(
            {
                "block": block,
                "loss": float(F.cross_entropy(logits, y)),
                "accuracy": float((logits.argmax(-1) == y).float().mean()),
                "base_accuracy": 1.0 - base_err,
            }
        )
    return pd.DataFrame(rows, columns=list(LESION_COLUMNS))


LESION_COLUMNS = ("block", "loss", "accuracy", "base_accuracy")


# The mean drop in accuracy (a fraction) up to which a lesioned stack "barely changes".
LESION_SMALL_DROP = 0.05


def learned_accuracy(classes: int) -> float:
    """The accuracy at which a stack counts as having learned the task: halfway from
    chance (``1 / classes``, the spirals are balanced) to perfect. 2/3 for 3 classes."""
    return (1.0 + 1.0 / classes) / 2.0


def lesion_summary(les: pd.DataFrame, classes: int = 3) -> pd.DataFrame:
    """One row per lesioned stack of :func:`lesion` frames tagged ``variant, kind, depth``.

    Columns: ``variant, kind, depth, intact`` (accuracy before any deletion),
    ``mean_deleted`` and ``worst_deleted`` (accuracy with one block deleted, mean over
    blocks and lowest), ``mean_drop`` and ``worst_drop`` (``intact`` minus those),
    ``worst_block`` (the deletion that hurt most, counted from 1 as on the chart) and
    ``learned`` (``intact >= learned_accuracy(classes)``).
    """
    cols = ["variant", "kind", "depth", "intact", "mean_deleted", "worst_deleted",
            "mean_drop", "worst_drop", "worst_block", "learned"]  # fmt: skip
    rows = []
    for name, g in les.groupby("variant", sort=False):
        intact = float(g["base_accuracy"].iloc[0])
        worst = g.loc[g["accuracy"].idxmin()]
        rows.append(
            {
                "variant": name,
                "kind": g["kind"].iloc[0],
                "depth": int(g["depth"].iloc[0]),
                "intact": intact,
                "mean_deleted": float(g["accuracy"].mean()),
                "worst_deleted": float(worst["accuracy"]),
                "mean_drop": intact - float(g["accuracy"].mean()),
                "worst_drop": intact - float(worst["accuracy"]),
                "worst_block": int(worst["block"]),
                "learned": intact >= learned_accuracy(classes),
            }
        )
    return pd.DataFrame(rows, columns=cols)


def lesion_caption(summary: pd.DataFrame, classes: int = 3) -> str:
    """What the lesion chart shows, worded from :func:`lesion_summary` alone."""
    need = learned_accuracy(classes)
    parts = [
        "Veit et al. (2016): each trained stack with one block deleted (x_{l+1} = x_l), on "
        f"the training points; chance is 1/{classes}. A stack counts as having learned the "
        f"task at accuracy {need:.2f} or more (halfway from chance to perfect), and as barely "
        f"changing when a deletion costs it at most {100 * LESION_SMALL_DROP:g} accuracy "
        "points on average."
    ]
    for r in summary.itertuples():
        who = f"The {r.kind} stack ({r.depth} blocks, accuracy {r.intact:.2f} intact)"
        cost = (
            f"deleting one block costs {100 * r.mean_drop:.1f} accuracy points on average "
            f"and {100 * r.worst_drop:.1f} at worst (block {r.worst_block})"
        )
        if not r.learned:
            parts.append(
                f"{who} did not learn the task, so its lesion shows nothing: a stack that "
                "never fit the spirals has little to lose. More steps, or fewer blocks, may "
                "give one that learns."
            )
        elif r.mean_drop <= LESION_SMALL_DROP:
            why = (
                " It behaves like an ensemble of many paths: deleting a block removes only the "
                "half of them that pass through it."
                if r.kind == "residual"
                else ""
            )
            parts.append(f"{who} barely changes: {cost}.{why}")
        else:
            why = (
                " A plain stack has a single path, and every deletion cuts it."
                if r.kind == "plain"
                else " At these settings it does not shrug a deletion off the way Veit et "
                "al.'s deep residual networks did."
            )
            parts.append(f"{who} suffers: {cost}.{why}")
    return " ".join(parts)


def lesion_blocks(les: pd.DataFrame) -> pd.DataFrame:
    """:func:`lesion` frames as they are: an alias kept for old notebooks. ``block``
    (counted from 1, as on the chart) is the one numbering a lesion frame carries."""
    return les.copy()


__all__ = [
    "LESION_COLUMNS",
    "LESION_SMALL_DROP",
    "deletable_blocks",
    "evaluate",
    "learned_accuracy",
    "lesion",
    "lesion_blocks",
    "lesion_caption",
    "lesion_summary",
]
