"""Where the answer sits, block by block, read off an activation-patching frame
(:func:`resviz.pretrained.stream.patching.patching`): pandas only, so the page's words
and the lesson's measure read it without a model."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from resviz.words.numbers import format_number


@dataclass(frozen=True)
class Travel:
    """Where the answer sits, block by block (:func:`travel`)."""

    read: int  # the position the logit difference is read at
    n_layers: int  # the model's blocks: x_L is its output
    changed: tuple[int, ...]  # positions whose tokens differ, other than ``read``
    # per block done: (block, recovered at ``read``, the most any changed position
    # recovers, that position); NaN where a value is not finite
    blocks: tuple[tuple[int, float, float, int], ...]

    @property
    def reaches(self) -> int | None:
        """The first block from which patching the read position recovers more than
        patching any changed one (None: not within the blocks done, or the prompts
        differ only at the read position)."""
        for b, at_read, at_changed, _ in self.blocks:
            if b >= 1 and self.changed and at_read > at_changed:
                return b
        return None

    def at(self, block: int) -> tuple[float, float, int]:
        """(recovered at the read position, the most at a changed one, its position)."""
        for b, at_read, at_changed, where in self.blocks:
            if b == block:
                return at_read, at_changed, where
        raise ValueError(f"block {block} was not patched")


def travel(frame: pd.DataFrame, differs: Sequence[int], read: int, n_layers: int) -> Travel:
    """From :func:`patching`'s frame: at each block, the share recovered by patching
    the read position against the most recovered by patching a position where the
    prompts differ. At ``x_0`` all of it sits at the changed word (the other positions
    hold the same tokens); at ``x_L`` all of it sits at the read position (nothing
    after the last block reads another position). In between, the heatmap shows when
    the answer moves."""
    changed = tuple(int(t) for t in differs if int(t) != read)
    blocks = []
    for b, rows in frame.groupby("block", sort=True):
        by = rows.set_index("position")["recovered"].astype(float)
        at_read = float(by.get(read, np.nan))
        at = by.reindex(list(changed)).dropna()
        where = int(at.idxmax()) if len(at) and np.isfinite(at).all() else -1
        best = float(at.max()) if where >= 0 else np.nan
        if not np.isfinite(at_read):
            at_read = np.nan
        blocks.append((int(b), at_read, best, where))
    return Travel(read, n_layers, changed, tuple(blocks))


def travel_sentence(t: Travel) -> str:
    """Where the answer travels, in one sentence (:func:`resviz.pretrained.stream.patching.travel`):
    the first block from which the read position carries more of it than the changed
    word, with both shares."""
    if not t.changed:
        return (
            f"The prompts differ only at position {t.read}, where the answer is read: it "
            "has nowhere to travel."
        )
    last = t.blocks[-1][0]
    b = t.reaches
    if b is None:
        vals = [v for blk in t.blocks if blk[0] >= 1 for v in blk[1:3]]
        if any(not math.isfinite(v) for v in vals):
            return "A share recovered is not a finite number: where the answer sits cannot be told."
        if last == 0:
            return "Only x_0 is patched so far: the answer sits at the changed word."
        return (
            f"Up to block {last}, patching the changed word still recovers at least as much "
            "as patching the last position: the answer has not moved yet."
        )
    at_read, at_changed, where = t.at(b)
    word = "the changed word" if len(t.changed) == 1 else "a changed word"
    before = f"{word} (position {where})"
    if b == t.n_layers:
        return (
            f"The answer stays at {before} up to x_{b - 1}: only the output, x_{b}, "
            "carries it at the last position."
        )
    after = [blk for blk in t.blocks if blk[0] > b]
    stays = all(r > c for _, r, c, _ in after)
    when = f"from block {b} on" if stays else f"at block {b} (not at every later one)"
    return (
        f"The answer starts at {before}; {when}, patching the last position "
        f"(position {t.read}) recovers more of it than any changed word: {format_number(at_read, 3)} of "
        f"the gap, against {format_number(at_changed, 3)}."
    )
