"""The depth ladder: do deeper models tolerate deletion better?

Lad, Gurnee & Tegmark 2024 (arXiv:2406.19384) delete one block of pretrained models
and find that, but for the first and the last, most blocks can go with little loss
("the stages of inference"), the more so the deeper the model. Their models differ in
more than depth; the ladder does not: the Sonnets GPT-2 and its siblings of 1, 2 and
8 blocks (:func:`resviz.pretrained.ladder_paths`), trained by one script with one seed,
tokenizer, data, step count and learning rate.

For each model: its held-out loss (sonnets CXXXIX-CLIV, which none trained on,
computed as :func:`resviz.pretrained.text_loss` computes it), the same with each block
deleted in turn (the Layer deletion section's hook,
:func:`resviz.pretrained.skipping`: the block returns its input). One pass over the
held-out text per model and per block: 19 for the four models. (The section adds how
much each model's stream grows, from :func:`resviz.pretrained.stream_norms`.)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from resviz.pretrained.loading import Pretrained, PretrainedError
from resviz.pretrained.observe import skipping
from resviz.pretrained.stream.heal import held_out_ids, held_out_loss

Progress = Callable[[int, int], None]
ShouldStop = Callable[[], bool]

DELETION_COLUMNS = ["depth", "model", "block", "position", "held_out_loss", "loss_increase"]
DEPTH_COLUMNS = [
    "depth",
    "model",
    "n_params",
    "held_out_loss",
    "worst_increase",
    "worst_block",
    "median_increase",
    "mean_increase",
]


def label(depth: int) -> str:
    """A ladder model's name in frames and legends: ``"1 block"``, ``"8 blocks"``."""
    return f"{depth} block" if depth == 1 else f"{depth} blocks"


def position(block: int, depth: int) -> float:
    """Where block ``block`` (from 1) of ``depth`` sits, as a share of the depth: its
    middle, ``(block - 1/2) / depth`` (the one block of a 1-block model sits at 0.5)."""
    return (block - 0.5) / depth


@dataclass(frozen=True)
class Ladder:
    """Frame ``deletion`` (a row per model and deleted block: ``depth, model, block,
    position, held_out_loss, loss_increase``), frame ``depths`` (a row per model:
    ``depth, model, n_params, held_out_loss`` of the full model, ``worst_increase``
    and its ``worst_block``, ``median_increase`` and ``mean_increase`` over its
    blocks), and whether it stopped early (the models done so far)."""

    deletion: pd.DataFrame
    depths: pd.DataFrame
    stopped: bool


def deletion_losses(
    p: Pretrained, ids: torch.Tensor, step: Callable[[], None] | None = None
) -> tuple[float, list[float]]:
    """The held-out loss on ``ids`` of ``p`` whole, and with each block deleted in
    turn (block 1 first); ``step()`` after each pass."""
    with p.lock:
        full = held_out_loss(p, ids)
    if step is not None:
        step()
    out = []
    for b in range(1, p.n_layers + 1):
        with skipping(p, b):
            out.append(held_out_loss(p, ids))
        if step is not None:
            step()
    return full, out


def ladder(
    models: Mapping[int, Pretrained],
    held_out: str,
    *,
    progress: Progress | None = None,
    should_stop: ShouldStop | None = None,
) -> Ladder:
    """Measure every model of ``models`` (depth -> loaded decoder), shallowest first.
    ``progress(passes done, passes)`` after each pass; ``should_stop()`` ends the run
    after the model it is on."""
    for p in models.values():
        if not p.decoder:
            raise PretrainedError(
                "The depth ladder measures next-token loss: decoders only.", "architecture"
            )
    depths = sorted(models)
    total = sum(models[d].n_layers + 1 for d in depths)
    rows, per_depth, done, stopped = [], [], [0], False

    def step() -> None:
        done[0] += 1
        if progress is not None:
            progress(done[0], total)

    for d in depths:
        if should_stop is not None and should_stop():
            stopped = True
            break
        p = models[d]
        full, losses = deletion_losses(p, held_out_ids(p, held_out), step)
        increase = np.array(losses) - full
        for b, (loss, inc) in enumerate(zip(losses, increase, strict=True), 1):
            rows.append([p.n_layers, label(p.n_layers), b, position(b, p.n_layers), loss, inc])
        worst = int(np.nanargmax(increase)) if np.isfinite(increase).any() else 0
        per_depth.append(
            [
                p.n_layers,
                label(p.n_layers),
                p.n_params,
                full,
                float(increase[worst]),
                worst + 1,
                float(np.median(increase)),
                float(increase.mean()),
            ]
        )
    return Ladder(
        pd.DataFrame(rows, columns=DELETION_COLUMNS),
        pd.DataFrame(per_depth, columns=DEPTH_COLUMNS),
        stopped,
    )
