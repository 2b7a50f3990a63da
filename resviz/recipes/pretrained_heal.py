"""Delete, then heal (``rv.recipes.pretrained.heal``): its settings, its run and its
words. The recipe itself is declared in :mod:`resviz.recipes.pretrained`; the
measurement is :func:`resviz.pretrained.stream.heal.heal`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

from resviz.pretrained.checks import PretrainedError
from resviz.pretrained.loading import Pretrained, sonnets_split
from resviz.pretrained.stream import heal as HL
from resviz.recipes.core import Result
from resviz.recipes.pretrained_cache import TINY, loaded
from resviz.words.numbers import format_number

HEAL_STEPS = 60
MAX_STEPS = 500
PARTS = HL.PARTS


def heal_settings(
    *,
    model: str = TINY,
    path: str = "",
    block: int = 1,
    n_blocks: int = 1,
    part: str = "block",
    steps: int = HEAL_STEPS,
) -> dict[str, Any]:
    """The section's settings: the model, the first block deleted (from 1), how many
    blocks from it, which part (``"block"``, ``"attention"``, ``"mlp"``) and the
    training steps (1 to :data:`MAX_STEPS`)."""
    if not 1 <= steps <= MAX_STEPS:
        raise ValueError(f"steps must be 1 to {MAX_STEPS}")
    return dict(model=model, path=path, block=block, n_blocks=n_blocks, part=part, steps=steps)


def deletion_of(settings: dict[str, Any]) -> HL.Deletion:
    return HL.Deletion(int(settings["block"]), int(settings["n_blocks"]), str(settings["part"]))


def check(settings: dict[str, Any]) -> Pretrained:
    """The model, once the deletion fits it and the run fits the budget; raises
    :class:`resviz.pretrained.PretrainedError` (what to change) otherwise, before any
    training."""
    m = loaded(settings["model"], settings["path"])
    deletion_of(settings).check(m)
    refusal = HL.budget_refusal(m)
    if refusal:
        raise PretrainedError(refusal, "budget")
    return m


def heal_run(
    seed: int,
    progress: Callable[[Result | None, int, int], None] | None,
    should_stop: Callable[[], bool] | None,
    **settings: Any,
) -> Result:
    """One seed of the recipe: frame ``healing`` (``step, variant, held_out_loss``)."""
    s = heal_settings(**settings)
    m = check(s)
    d = deletion_of(s)
    report = None
    if progress is not None:

        def report(frame: pd.DataFrame, step: int, total: int) -> None:
            progress(Result({"healing": frame.drop(columns="seed")}, {}), step, total)

    train, held_out = sonnets_split()
    h = HL.heal(
        m, train, held_out, d, steps=s["steps"], every=max(1, s["steps"] // 6), seed=seed,
        progress=report, should_stop=should_stop,
    )  # fmt: skip
    return Result(
        {"healing": h.frame.drop(columns="seed")},
        {
            "architecture": m.architecture,
            "n_layers": m.n_layers,
            "deleted": d.label(),
            "steps": s["steps"],
            "stopped": h.stopped,
        },
    )


def heal_words(frame: pd.DataFrame, deleted: str) -> str:
    """The full account: each seed's held-out loss at its last step, every variant."""
    out = []
    for seed, f in frame.groupby("seed", sort=True):
        last = f[f["step"] == f["step"].max()].set_index("variant")["held_out_loss"]
        out.append(
            f"Seed {int(seed)}, step {int(f['step'].max())}: full "
            f"{format_number(last['full'])}, {deleted} deleted "
            f"{format_number(last['deleted'])}, healing {format_number(last['healing'])}, "
            f"from scratch {format_number(last['from scratch'])}."
        )
    return (
        "Held-out loss (nats per token) on sonnets CXXXIX-CLIV, which no model here "
        "trained on. " + " ".join(out)
    )
