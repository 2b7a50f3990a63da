"""The degradation experiment and the lesion study's training, on built-in spirals.

:func:`train_degradation` is He et al. (2016, Deep Residual Learning for Image
Recognition, Fig. 1) in miniature: shallow and deep stacks, plain and with
shortcuts, trained from the same seed on the same batches of :func:`resviz.spirals`;
then :func:`resviz.shortcuts.lesions.lesion` deletes one block at a time from each trained model
(Veit et al. 2016). :func:`train_lesion` is the lesion study on stacks that learned
their task (:class:`LesionConfig`: a plain and a residual stack of one depth, on
easier spirals); both configs share their fields and checks through
:class:`SpiralStacksConfig`. Every run goes through :class:`resviz.train.loop.Trainer`. The frames
at the end are what the skip-connections page draws.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import torch
from torch.nn import functional as F

from resviz.config import (
    Activation,
    Init,
    Join,
    Residual,
    StackConfig,
    _check_float,
    _check_int,
)
from resviz.data import spirals
from resviz.models import Stack, build
from resviz.shortcuts.decomposition import layer_decomposition
from resviz.shortcuts.lesions import evaluate, lesion
from resviz.train.divergence import Divergence, first_divergence
from resviz.train.loop import RunAttrs, Trainer

# ------------------------------------------------------ degradation experiment


@dataclass(frozen=True)
class SpiralStacksConfig:
    """What :class:`DegradationConfig` and :class:`LesionConfig` share: a task of
    :func:`spirals` and the stacks trained on it, plain and with the shortcut given by
    ``residual`` (and ``alpha``, ``alpha_learnable``, ``join``; concat is always
    projected back so every variant has the same width).

    Every stack's first block maps the 2-d input to ``width`` and has no shortcut (the
    widths differ); a linear head gives the class logits. Every variant starts from the
    same seed and sees the same batches. The subclasses say which depths are trained
    (:attr:`depths`); this class is not built by itself.
    """

    width: int = 32
    activation: Activation = "relu"
    init: Init = "default"
    residual: Residual = "add"
    alpha: float = 1.0
    alpha_learnable: bool = False
    join: Join = "after_act"
    steps: int = 400
    lr: float = 3e-3
    batch_size: int = 128
    n_points: int = 1536
    classes: int = 3
    turns: float = 2.0
    noise: float = 0.05
    eval_every: int = 20

    def __post_init__(self) -> None:
        _check_int(self, "width", 2, 512)
        _check_int(self, "steps", 1, 20_000)
        _check_float(self, "lr", 1e-6, 1.0)
        _check_int(self, "batch_size", 1, 4096)
        _check_int(self, "n_points", 10, 100_000)
        _check_int(self, "classes", 2, 10)
        _check_float(self, "turns", 0.0, 10.0)
        _check_float(self, "noise", 0.0, 1.0)
        _check_int(self, "eval_every", 1, 10_000)
        if self.residual == "none":
            raise ValueError(
                "residual='none' leaves nothing to compare: pick add, scaled or concat."
            )
        # The stacks validate the fields they take (activation, init, residual, alpha,
        # alpha_learnable, join) and their combinations (join with concat).
        self.variants(0)

    @property
    def depths(self) -> tuple[int, ...]:
        """The numbers of blocks trained, each plain and with shortcuts."""
        raise TypeError(
            "SpiralStacksConfig holds the shared fields: build a DegradationConfig or a "
            "LesionConfig."
        )

    def variants(self, seed: int) -> dict[str, StackConfig]:
        """The stacks, by name: ``plain, {depth} blocks`` for each of :attr:`depths`,
        then ``residual, {depth} blocks`` for each."""
        out = {}
        for kind in ("plain", "residual"):
            for depth in self.depths:
                out[f"{kind}, {depth} blocks"] = StackConfig(
                    widths=(2,) + (self.width,) * depth,
                    activation=self.activation,
                    init=self.init,
                    residual="none" if kind == "plain" else self.residual,
                    alpha=self.alpha,
                    alpha_learnable=self.alpha_learnable,
                    join=self.join if kind == "residual" else "after_act",
                    concat_project=True,
                    out_dim=self.classes,
                    seed=seed,
                )
        return out


@dataclass(frozen=True)
class DegradationConfig(SpiralStacksConfig):
    """He et al. (2016, Fig. 1) in miniature: four stacks trained on :func:`spirals`.

    ``shallow`` and ``deep`` blocks, each plain and with shortcuts (``variants``:
    ``plain, {shallow} blocks`` ... ``residual, {deep} blocks``); the other fields are
    :class:`SpiralStacksConfig`'s. The defaults are the ones the tests pin for
    several seeds.
    """

    shallow: int = 4
    deep: int = 16

    def __post_init__(self) -> None:
        _check_int(self, "shallow", 1, 64)
        _check_int(self, "deep", 1, 128)
        if self.deep <= self.shallow:
            raise ValueError(
                f"deep={self.deep} must be larger than shallow={self.shallow}: "
                "the experiment compares a shallow stack with a deeper one."
            )
        super().__post_init__()

    @property
    def depths(self) -> tuple[int, ...]:
        return (self.shallow, self.deep)


@dataclass(frozen=True)
class LesionConfig(SpiralStacksConfig):
    """Veit et al. (2016) in miniature: a plain and a residual stack of ``depth``
    blocks, trained on :func:`spirals` as in :class:`DegradationConfig` (the same
    :class:`SpiralStacksConfig` fields, same first block 2 -> ``width`` without a
    shortcut), then lesioned.

    A lesion only says something about a stack that learned its task, so the
    default task is easier than the degradation experiment's: one turn per arm
    (``turns=1.0``) instead of two. Measured on the defaults (seeds 0-4): both
    stacks reach 0.89-0.96 accuracy; deleting one block costs the residual stack
    2.4-4.1 accuracy points on average and the plain stack 42-57.
    """

    turns: float = 1.0
    depth: int = 16

    def __post_init__(self) -> None:
        _check_int(self, "depth", 2, 128)
        super().__post_init__()

    @property
    def depths(self) -> tuple[int, ...]:
        return (self.depth,)


@dataclass
class DegradationResult:
    """What :func:`train_degradation` returns.

    ``curves``: ``variant, kind, depth, step, loss, error, diverged, divergence``
    (loss and error on the whole training set every ``eval_every`` steps, and at the
    step where a variant diverged); ``final``: one row
    per variant; ``lesion``: :func:`lesion` of every trained model; ``signal``:
    :func:`layer_decomposition` of every variant on the task's points, ``stage``
    ``init`` and ``trained``. ``attrs["stopped"]`` is True when training ended early;
    ``attrs["diverged"]`` maps variant -> step and ``attrs["divergence"]`` variant ->
    :class:`resviz.Divergence` (also in ``curves.attrs``).
    """

    curves: pd.DataFrame
    final: pd.DataFrame
    lesion: pd.DataFrame
    signal: pd.DataFrame
    seconds: float
    attrs: RunAttrs = field(default_factory=RunAttrs)


def train_degradation(
    dcfg: SpiralStacksConfig,
    seed: int = 0,
    device: torch.device | str | None = None,
    callback: Callable[[pd.DataFrame, int, int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> DegradationResult:
    """Train the stacks of ``dcfg`` (four; two for a :class:`LesionConfig`) with Adam
    on the same batches, then lesion them.

    Progress: ``callback(curves_so_far, step, steps)`` at every evaluation, and
    ``should_stop()`` is checked there.

    Divergence (:func:`resviz.first_divergence`) is judged on two series per
    variant: the training step's batch loss and gradient norm (start: the loss at
    step 1), checked every step, and the whole-set loss at each evaluation (start:
    step 0). A variant that diverges stops at that step: it is not updated there,
    and its last row (the whole-set loss and error at that step) has
    ``diverged=True`` and the reason in ``divergence``.
    """
    t0 = time.perf_counter()
    device = torch.device(device or "cpu")
    cfgs = dcfg.variants(seed)
    x_all, y_all = spirals(dcfg.n_points, dcfg.classes, dcfg.turns, dcfg.noise, seed=seed)
    x_all, y_all = x_all.to(device), y_all.to(device)
    init_signal = {n: layer_decomposition(build(c, device).eval(), x_all) for n, c in cfgs.items()}
    rows: list[dict[str, Any]] = []
    eval_start: dict[str, float] = {}

    def record_one(n: str, step: int, found: Divergence | None = None) -> None:
        m = run.models[n]
        m.eval()
        loss, err = evaluate(m, x_all, y_all)
        m.train()
        eval_start.setdefault(n, loss)
        if found is None:
            found = first_divergence([loss], start=eval_start[n], first_step=step)
            if found is not None:
                run.halt(n, found)
        rows.append(_row(n, cfgs[n], step, loss, err, found))

    def record(step: int) -> None:
        for n, _model in run.active():
            record_one(n, step)

    def frame() -> pd.DataFrame:
        out = pd.DataFrame(rows, columns=list(DEGRADATION_COLUMNS))
        out.attrs["diverged"] = run.diverged
        out.attrs["divergence"] = dict(run.divergence)
        return out

    def progress(_run: Trainer[StackConfig], done: int) -> None:
        record(done)
        if callback is not None:
            callback(frame(), done, dcfg.steps)

    # Steps count from 1 (step 0 is the evaluation at init); each step's loss is judged
    # before the update (eager), so a diverged model is evaluated as it diverged.
    run = Trainer(
        cfgs,
        dcfg.steps,
        seed=seed,
        lr=dcfg.lr,
        device=device,
        first_step=1,
        sync_every=dcfg.eval_every,
        eager=True,
        progress=progress,
        should_stop=should_stop,
    )
    record(0)
    gen = torch.Generator().manual_seed(seed + 1)
    for t in run:
        idx = torch.randint(0, len(x_all), (dcfg.batch_size,), generator=gen).to(device)
        xb, yb = x_all[idx], y_all[idx]
        for n, m in run.active():
            found = run.update(n, F.cross_entropy(m(xb), yb))
            if found is not None:  # not updated: the row shows the model that diverged
                record_one(n, t + 1, found)

    curves = frame()
    final = curves.groupby("variant", sort=False).tail(1).reset_index(drop=True)
    final = final.assign(accuracy=1.0 - final["error"])
    lesions, signals = [], []
    for n, m in run.models.items():
        assert isinstance(m, Stack)  # built from cfgs, StackConfigs
        m.eval()
        lesions.append(lesion(m, x_all, y_all).assign(variant=n, **_meta(cfgs[n])))
        signals.append(init_signal[n].assign(variant=n, stage="init", **_meta(cfgs[n])))
        healthy = n not in run.divergence
        trained = layer_decomposition(m, x_all) if healthy else init_signal[n].iloc[:0]
        signals.append(trained.assign(variant=n, stage="trained", **_meta(cfgs[n])))
    return DegradationResult(
        curves=curves,
        final=final,
        lesion=pd.concat(lesions, ignore_index=True),
        signal=pd.concat(signals, ignore_index=True),
        seconds=time.perf_counter() - t0,
        attrs=run.attrs,
    )


def train_lesion(
    lcfg: LesionConfig,
    seed: int = 0,
    device: torch.device | str | None = None,
    callback: Callable[[pd.DataFrame, int, int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> DegradationResult:
    """Train the plain and the residual stack of ``lcfg`` and delete each block in turn.

    The training loop is :func:`train_degradation`'s; ``result.lesion`` holds every
    deletion and :func:`lesion_summary` condenses it.
    """
    return train_degradation(lcfg, seed, device, callback, should_stop)


def task_frame(dcfg: SpiralStacksConfig, seed: int = 0) -> pd.DataFrame:
    """The :func:`spirals` that :func:`train_degradation` trains ``dcfg`` on with
    ``seed``: ``x1, x2`` (the point) and ``class``."""
    x, y = spirals(dcfg.n_points, dcfg.classes, dcfg.turns, dcfg.noise, seed=seed)
    return pd.DataFrame({"x1": x[:, 0].numpy(), "x2": x[:, 1].numpy(), "class": y.numpy()})


def curves_long(curves: pd.DataFrame, measure: str) -> pd.DataFrame:
    """One measure (``loss`` or ``error``) of :class:`DegradationResult` ``.curves`` for
    one chart: ``variant, step, diverged, divergence, measure, value``."""
    if measure not in ("loss", "error"):
        raise ValueError(f"measure={measure!r} is not one of 'loss', 'error'.")
    return curves.melt(
        id_vars=["variant", "step", "diverged", "divergence"],
        value_vars=[measure],
        var_name="measure",
    )


FINAL_COLUMNS = ("variant", "kind", "depth", "step", "loss", "accuracy", "diverged", "divergence")


def final_table(result: DegradationResult) -> pd.DataFrame:
    """Where each stack ended: ``variant, kind, depth, step, loss, accuracy, diverged,
    divergence``."""
    return result.final[list(FINAL_COLUMNS)].reset_index(drop=True)


def cosine_stages(result: DegradationResult) -> pd.DataFrame:
    """The residual stacks' :func:`layer_decomposition` at init and trained, with
    ``series`` (``"{variant}, {stage}"``) for one chart."""
    sig = result.signal[result.signal["kind"] == "residual"].reset_index(drop=True)
    return sig.assign(series=sig["variant"] + ", " + sig["stage"])


def _meta(cfg: StackConfig) -> dict[str, Any]:
    return {"kind": "plain" if cfg.residual == "none" else "residual", "depth": cfg.n_blocks}


DEGRADATION_COLUMNS = (
    "variant", "kind", "depth", "step", "loss", "error", "diverged", "divergence"
)  # fmt: skip


def _row(
    name: str, cfg: StackConfig, step: int, loss: float, err: float, found: Divergence | None
) -> dict[str, Any]:
    return {"variant": name, **_meta(cfg), "step": step, "loss": loss, "error": err,
            "diverged": found is not None,
            "divergence": found.label if found is not None else ""}  # fmt: skip


__all__ = [
    "DEGRADATION_COLUMNS",
    "FINAL_COLUMNS",
    "DegradationConfig",
    "DegradationResult",
    "LesionConfig",
    "SpiralStacksConfig",
    "cosine_stages",
    "curves_long",
    "final_table",
    "task_frame",
    "train_degradation",
    "train_lesion",
]
