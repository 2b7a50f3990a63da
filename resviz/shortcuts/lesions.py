"""Lesioning a trained stack: delete one block at a time and measure the damage.

Veit et al. (2016, Residual Networks Behave Like Ensembles of Relatively Shallow
Networks): deleting most single blocks from a trained residual network barely hurts
it (the downsampling blocks excepted), deleting a layer of a plain one breaks it. :func:`lesion` measures that on any :class:`Stack`
and data, each deletion an intervention at the hook points (``x_{i+1} = x_i``:
:func:`resviz.hooks.delete_block` through :func:`resviz.hooks.tap`'s ``patch``); :func:`lesion_summary` condenses the frames :func:`resviz.train_lesion`
returns, and :func:`lesion_caption` words the finding from that summary alone.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import torch
from torch import nn
from torch.nn import functional as F

from resviz.hooks import delete_block, tap
from resviz.models import Stack, StackBlock
from resviz.words.numbers import format_number


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
        assert isinstance(block, StackBlock)  # a Stack's blocks (ModuleList yields Module)
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


# The accuracy a deletion may cost (a fraction) and still count as small.
LESION_SMALL_DROP = 0.05

# What deleting one block does to a trained stack, judged on every deletion
# (:func:`lesion_verdict`), never on the mean alone.
VERDICTS = ("barely changes", "depends on the block", "suffers", "did not learn")


def learned_accuracy(classes: int) -> float:
    """The accuracy at which a stack counts as having learned the task: halfway from
    chance (``1 / classes``, the spirals are balanced) to perfect. 2/3 for 3 classes."""
    return (1.0 + 1.0 / classes) / 2.0


def lesion_summary(les: pd.DataFrame, classes: int = 3) -> pd.DataFrame:
    """One row per lesioned stack of :func:`lesion` frames tagged ``variant, kind, depth``.

    Columns: ``variant, kind, depth, intact`` (accuracy before any deletion),
    ``mean_deleted`` and ``worst_deleted`` (accuracy with one block deleted, mean over
    blocks and lowest), ``mean_drop`` and ``worst_drop`` (``intact`` minus those),
    ``worst_block`` (the deletion that hurt most, counted from 1 as on the chart),
    ``deletions`` (how many blocks were deleted, one at a time), ``small_deletions``
    (how many of those cost at most ``LESION_SMALL_DROP``), ``large_blocks`` (the
    blocks whose deletion costs more, as text: ``"2, 3, 4"``) and ``learned``
    (``intact >= learned_accuracy(classes)``).
    """
    cols = ["variant", "kind", "depth", "intact", "mean_deleted", "worst_deleted",
            "mean_drop", "worst_drop", "worst_block", "deletions", "small_deletions",
            "large_blocks", "learned"]  # fmt: skip
    rows = []
    for name, g in les.groupby("variant", sort=False):
        intact = float(g["base_accuracy"].iloc[0])
        worst = g.loc[g["accuracy"].idxmin()]
        large = g["block"][intact - g["accuracy"] > LESION_SMALL_DROP]
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
                "deletions": len(g),
                "small_deletions": len(g) - len(large),
                "large_blocks": ", ".join(str(int(b)) for b in large),
                "learned": intact >= learned_accuracy(classes),
            }
        )
    return pd.DataFrame(rows, columns=cols)


def lesion_verdict(row: Any) -> str:
    """One of :data:`VERDICTS` for one row of :func:`lesion_summary`, judged on every
    deletion: "did not learn" (the lesion then shows nothing), "barely changes" (every
    deletion costs at most ``LESION_SMALL_DROP``), "suffers" (every deletion costs
    more) or "depends on the block" (some do, some do not)."""
    if not bool(row["learned"]):
        return "did not learn"
    small, n = int(row["small_deletions"]), int(row["deletions"])
    if small == n:
        return "barely changes"
    if small == 0:
        return "suffers"
    return "depends on the block"


def format_accuracy(x: float) -> str:
    """An accuracy to three significant figures, more where rounding would print 1 (or
    0) for a stack that is not perfect (or not always wrong)."""
    x = float(x)
    for digits in range(3, 8):
        text = format_number(x, digits)
        if (text != "1" or x == 1.0) and (text != "0" or x == 0.0):
            return text
    return repr(x)


def _points(drop: float) -> str:
    """A change of accuracy in points, signed: ``"-3.22"`` for a drop of 0.0322."""
    change = -100.0 * float(drop)
    return ("+" if change > 0 else "") + format_number(change)


def _blocks(text: str) -> str:
    """``"2, 3, 4"`` as ``"blocks 2, 3 and 4"`` (``"block 2"`` for one)."""
    items = [b for b in text.split(", ") if b]
    if len(items) == 1:
        return f"block {items[0]}"
    return f"blocks {', '.join(items[:-1])} and {items[-1]}"


def lesion_sentence(row: Any, classes: int = 3) -> str:
    """What deleting one block did to the stack of one :func:`lesion_summary` row:
    its verdict and the distribution behind it (how many deletions are small, the
    mean and the worst, and which blocks matter)."""
    verdict = lesion_verdict(row)
    small, n = int(row["small_deletions"]), int(row["deletions"])
    limit = format_number(100 * LESION_SMALL_DROP)
    who = (
        f"The {row['kind']} stack ({int(row['depth'])} blocks, accuracy "
        f"{format_accuracy(row['intact'])} intact)"
    )
    spread = (
        f"per deletion, accuracy changes by {_points(row['mean_drop'])} points on average "
        f"and by {_points(row['worst_drop'])} at worst, block {int(row['worst_block'])}"
    )
    if verdict == "did not learn":
        return (
            f"{who} did not learn the task (it needs {format_accuracy(learned_accuracy(classes))}),"
            " so its lesion shows nothing: a stack that never fit the spirals has little to "
            "lose. More steps, or fewer blocks, may give one that learns."
        )
    if verdict == "barely changes":
        every = "its one deletion costs" if n == 1 else f"each of its {n} deletions costs"
        return f"{who} barely changes: {every} at most {limit} points ({spread})."
    if verdict == "suffers":
        every = "its one deletion costs" if n == 1 else f"every one of its {n} deletions costs"
        return f"{who} suffers: {every} more than {limit} points ({spread})."
    return (
        f"For {who[0].lower()}{who[1:]}, it depends on the block: {small} of its {n} deletions cost at most {limit} "
        f"points, deleting {_blocks(row['large_blocks'])} costs more ({spread})."
    )


def lesion_caption(summary: pd.DataFrame, classes: int = 3) -> str:
    """What the lesion chart shows, worded from :func:`lesion_summary` alone: for each
    stack its verdict on every deletion (:func:`lesion_verdict`), never the mean alone."""
    need = format_accuracy(learned_accuracy(classes))
    parts = [
        "Veit et al. (2016): each trained stack with one block deleted (x_{l+1} = x_l), "
        f"scored on the training points; chance is 1/{classes}. A stack counts as having "
        f"learned the task at accuracy {need} or more (halfway from chance to perfect), and "
        f"a deletion as small when it costs at most {format_number(100 * LESION_SMALL_DROP)} "
        "accuracy points."
    ]
    for _, r in summary.iterrows():
        parts.append(lesion_sentence(r, classes))
        verdict = lesion_verdict(r)
        if verdict == "did not learn":
            continue
        if r["kind"] == "plain":
            parts.append("A plain stack has a single path, and every deletion cuts it.")
        elif verdict == "barely changes":
            parts.append(
                "Deleting one of its blocks removes only the paths through that block's "
                "branch, half of them; the other half still reach the output."
            )
        elif verdict == "suffers":
            parts.append(
                "At these settings it does not shrug a deletion off the way Veit et al.'s "
                "deep residual networks did."
            )
    return " ".join(parts)


def lesion_blocks(les: pd.DataFrame) -> pd.DataFrame:
    """:func:`lesion` frames as they are: an alias kept for old notebooks. ``block``
    (counted from 1, as on the chart) is the one numbering a lesion frame carries."""
    return les.copy()


__all__ = [
    "LESION_COLUMNS",
    "LESION_SMALL_DROP",
    "VERDICTS",
    "deletable_blocks",
    "evaluate",
    "format_accuracy",
    "learned_accuracy",
    "lesion",
    "lesion_blocks",
    "lesion_caption",
    "lesion_sentence",
    "lesion_summary",
    "lesion_verdict",
]
