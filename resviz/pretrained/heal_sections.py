"""Delete, then heal (``rv.recipes.pretrained.heal``): its settings (:class:`Healing`),
its run and its words; and the depth ladder's (``rv.recipes.pretrained.ladder``): one
block deleted from each of the Sonnets GPT-2's siblings of 1, 2, 4 and 8 blocks. The recipes
themselves are declared in :mod:`resviz.pretrained.recipes`; the measurements are
:func:`resviz.pretrained.stream.heal.heal` and
:func:`resviz.pretrained.stream.ladder.ladder`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from resviz.core import Result
from resviz.pretrained.cache import Checkpoint
from resviz.pretrained.checks import PretrainedError
from resviz.pretrained.loading import Pretrained, ladder_paths, load, sonnets_split
from resviz.pretrained.measurements import stream_norms
from resviz.pretrained.observe import trace
from resviz.pretrained.stream import heal as HL
from resviz.pretrained.stream import ladder as LD
from resviz.settings import Settings, choice, whole
from resviz.words.numbers import format_number

HEAL_STEPS = 60
MAX_STEPS = 500
PARTS = HL.PARTS


@dataclass(frozen=True)
class Healing(Settings):
    """The section's deletion and training: the first block deleted (from 1; the page
    checks it against the model's blocks), how many blocks from it, which part
    (``"block"``, ``"attention"``, ``"mlp"``) and the training steps (the recipe takes
    1 to :data:`MAX_STEPS`)."""

    block: int = whole(1, 1, 64, box=True, label="First block deleted", help="Counted from 1.")
    n_blocks: int = whole(
        1, 1, 64, box=True, label="Blocks deleted", help="A contiguous range from the first."
    )
    part: str = choice(
        "block", PARTS, label="Delete", help="The whole block, or only its attention or its MLP."
    )
    steps: int = whole(HEAL_STEPS, 10, MAX_STEPS, box=True, label="Training steps")

    def deletion(self) -> HL.Deletion:
        return HL.Deletion(int(self.block), int(self.n_blocks), str(self.part))


def check(checkpoint: Checkpoint, healing: Healing) -> Pretrained:
    """The model, once the deletion fits it and the run fits the budget; raises
    :class:`resviz.pretrained.PretrainedError` (what to change) otherwise, before any
    training."""
    m = checkpoint.loaded()
    healing.deletion().check(m)
    refusal = HL.budget_refusal(m)
    if refusal:
        raise PretrainedError(refusal, "budget")
    return m


def heal_run(
    checkpoint: Checkpoint,
    healing: Healing,
    seed: int,
    progress: Callable[[Result | None, int, int], None] | None,
    should_stop: Callable[[], bool] | None,
) -> Result:
    """One seed of the recipe: frame ``healing`` (``step, variant, held_out_loss``)."""
    steps = healing.steps
    if not 1 <= steps <= MAX_STEPS:
        raise ValueError(f"steps must be 1 to {MAX_STEPS}")
    m = check(checkpoint, healing)
    d = healing.deletion()
    report = None
    if progress is not None:

        def report(frame: pd.DataFrame, step: int, total: int) -> None:
            progress(Result({"healing": frame.drop(columns="seed")}, {}), step, total)

    train, held_out = sonnets_split()
    h = HL.heal(
        m, train, held_out, d, steps=steps, every=max(1, steps // 6), seed=seed,
        progress=report, should_stop=should_stop,
    )  # fmt: skip
    return Result(
        {"healing": h.frame.drop(columns="seed")},
        {
            "architecture": m.architecture,
            "n_layers": m.n_layers,
            "deleted": d.label(),
            "steps": steps,
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


def ladder_models() -> dict[int, Pretrained]:
    """The depth ladder's models by block count, loaded for one run (a few MB together,
    and released with it: held beside the page's models, they would push those out)."""
    paths = ladder_paths()
    if not paths:
        raise PretrainedError("The depth ladder's weights are not here.", "path")
    return {n: load(folder) for n, folder in paths.items()}


def ladder_run(
    progress: Callable[[Result | None, int, int], None] | None,
    should_stop: Callable[[], bool] | None,
) -> Result:
    """The depth ladder's run (:func:`resviz.pretrained.stream.ladder.ladder` on
    :func:`ladder_models` and sonnets CXXXIX-CLIV): frames ``deletion`` and
    ``depths`` (with each model's :func:`stream_growth`), value ``stopped``."""
    report = None
    if progress is not None:

        def report(done: int, total: int) -> None:
            progress(None, done, total)

    _, held_out = sonnets_split()
    models = ladder_models()
    lad = LD.ladder(models, held_out, progress=report, should_stop=should_stop)
    growth = [stream_growth(models[n], held_out) for n in lad.depths["depth"]]
    depths = lad.depths.assign(stream_growth=pd.Series(growth, dtype=float))
    return Result({"deletion": lad.deletion, "depths": depths}, {"stopped": lad.stopped})


def stream_growth(p: Pretrained, held_out: str) -> float:
    """How much the stream grows: median token norm after the last block over that of
    the embeddings (:func:`resviz.pretrained.stream_norms`), on the held-out text's
    first window (the model's context)."""
    norms = stream_norms(trace(p, held_out))
    raw = norms[norms["variant"] == "stream"].set_index("block")["median_norm"]
    return float(raw.iloc[-1] / raw.iloc[0])


def ladder_words(depths: pd.DataFrame) -> str:
    """The full account: each model's held-out loss, what deleting one block costs it
    (median, mean and worst) and how much its stream grows (``depths``:
    :data:`resviz.pretrained.stream.ladder.DEPTH_COLUMNS`)."""
    out = []
    for row in depths.sort_values("depth").itertuples(index=False):
        out.append(
            f"{row.model} ({format_number(row.n_params / 1e6, 3)}M parameters): held-out loss "
            f"{format_number(row.held_out_loss)}; deleting one block raises it by a median "
            f"of {format_number(row.median_increase)} over its blocks (mean "
            f"{format_number(row.mean_increase)}) and by at most "
            f"{format_number(row.worst_increase)} (block {row.worst_block}); its stream's "
            f"median token norm grows {format_number(row.stream_growth)} times from the "
            "embeddings to the last block."
        )
    return (
        "Held-out loss in nats per token on sonnets CXXXIX-CLIV, which no model here trained "
        "on; a deleted block returns its input. " + " ".join(out)
    )
