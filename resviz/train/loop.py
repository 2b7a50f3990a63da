"""Training, once: the loop every experiment that trains models side by side runs.

:class:`Trainer` holds what the experiments share:

* the variants, each built from its config with the seed replaced by one
  ``seed``, so every variant starts from the same draw (:func:`build_variants`);
* Adam for each (``foreach``: one kernel over all parameters per step) with a
  linear warm-up of the learning rate (``lr * min(1, (t + 1) / warmup)``);
* a recorder: per variant and step the loss, the total gradient norm (L2 over
  every parameter, before the update), the learning rate and, with
  ``blocks=True``, each block's gradient norm (``model.blocks``), kept on the
  device and read back only at sync points;
* divergence by :func:`resviz.first_divergence`, the one definition: a variant
  that diverges stops at that step;
* ``progress`` and ``should_stop`` every ``sync_every`` steps;
* independent variants stepped in parallel threads (:meth:`Trainer.update_all`).

An experiment writes only what is its own, its batches and its loss, in its own
loop; the trainer does the rest::

    run = Trainer(variants, steps, seed=0, lr=1e-3)
    for t in run:                           # stops early on should_stop or divergence
        x, y = next_batch(t)                # identical for every variant
        for name, model in run.active():
            run.update(name, F.mse_loss(model(x), y))
    frame = run.frame()                     # variant, step, loss, grad_norm, lr, ...

Divergence is judged one of two ways. By default (``eager=False``) the series
stay on the device and are judged at each sync point, so there is one host sync
per ``sync_every`` steps; a variant found diverged at step ``t`` keeps its rows
up to ``t`` and is stepped no more. With ``eager=True`` each step's loss and
gradient norm are judged before the update, so a diverged model is never
updated (the degradation experiment evaluates and lesions the trained models).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Generic, TypedDict, TypeVar

import numpy as np
import pandas as pd
import torch
from torch import nn

from resviz.config import EncoderConfig, StackConfig, check_int, check_positive
from resviz.models import Encoder, Stack, build
from resviz.train.divergence import Divergence, divergence_column, first_divergence

Config = StackConfig | EncoderConfig
# A Trainer's kind of config: StackConfig, EncoderConfig, or both (Config).
C = TypeVar("C", bound=Config)
STEP_COLUMNS = ("variant", "step", "loss", "grad_norm", "lr", "diverged", "divergence")
BLOCK_COLUMNS = ("variant", "step", "block", "grad_norm")
MAX_STEPS = 100_000


def build_variants(
    variants: Mapping[str, Config], seed: int, device: torch.device | str | None = None
) -> dict[str, Stack | Encoder]:
    """Every variant built with its config's seed replaced by ``seed``, in train mode."""
    return {
        n: build(dataclasses.replace(c, seed=seed), device).train() for n, c in variants.items()
    }


def variant_workers(
    workers: int | None, variants: Mapping[str, Config], device: torch.device
) -> int:
    """How many threads step the variants. Default: one per CPU core when torch runs
    one thread per op on the CPU and no variant uses dropout (which draws from the
    global RNG, so threads would interleave its draws); otherwise 1."""
    if workers is not None:
        check_int("workers", workers, 1, 64)
        return min(workers, len(variants))
    dropout = any(getattr(c, "dropout", 0.0) > 0 for c in variants.values())
    if device.type != "cpu" or torch.get_num_threads() > 1 or dropout:
        return 1
    return max(1, min(len(variants), os.cpu_count() or 1))


def _wide(device: torch.device) -> torch.dtype | None:
    """The dtype gradient norms are summed in: float64, so that the squares of small
    float32 gradients do not underflow (a norm of 3e-25 squared is 0 in float32),
    except on Apple MPS, which has no float64."""
    return None if device.type == "mps" else torch.float64


def _norm(tensors: list[torch.Tensor]) -> torch.Tensor:
    dtype = _wide(tensors[0].device)
    return torch.linalg.vector_norm(torch.stack(torch._foreach_norm(tensors, 2, dtype=dtype)))


class RunAttrs(TypedDict, total=False):
    """:attr:`Trainer.attrs` (every key), or a trace's copy of it (empty before a run)."""

    stopped: bool
    diverged: dict[str, int]
    divergence: dict[str, Divergence]


class Trainer(Generic[C]):
    """Variants trained side by side; see the module docstring.

    ``first_step`` is the label of the first step in frames and divergences (0,
    or 1 where an experiment counts steps from 1). ``progress(trainer, done)``
    runs at every sync point (``done`` steps taken), after the divergence check;
    then ``should_stop()`` is asked, except after the last step. ``workers``:
    threads for :meth:`update_all` (see :func:`variant_workers`).
    """

    def __init__(
        self,
        variants: Mapping[str, C],
        steps: int,
        *,
        seed: int = 0,
        lr: float = 1e-3,
        warmup: int = 0,
        device: torch.device | str | None = None,
        first_step: int = 0,
        sync_every: int = 10,
        eager: bool = False,
        blocks: bool = False,
        progress: Callable[[Trainer[C], int], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
        workers: int | None = 1,
    ) -> None:
        if not variants:
            raise ValueError("training needs at least one variant.")
        self.steps = check_int("steps", steps, 1, MAX_STEPS)
        check_int("warmup", warmup, 0, MAX_STEPS)
        self.sync_every = check_int("sync_every", sync_every, 1, MAX_STEPS)
        lr = check_positive("lr", lr)
        self.device = torch.device(device or "cpu")
        self.first_step = first_step
        self.eager = eager
        self.progress, self.should_stop = progress, should_stop
        self.names = list(variants)
        self.configs = {n: dataclasses.replace(c, seed=seed) for n, c in variants.items()}
        self.models = build_variants(self.configs, seed, self.device)
        # Listed once: walking the module tree for them every step costs more than
        # a small model's update.
        self._params = {n: list(m.parameters()) for n, m in self.models.items()}
        self.opts = {n: torch.optim.Adam(self._params[n], lr=lr, foreach=True) for n in self.names}
        self.lrs = [lr * min(1.0, (t + 1) / warmup) if warmup else lr for t in range(steps)]
        self.workers = variant_workers(workers, variants, self.device)

        def series(*shape: int) -> dict[str, torch.Tensor]:
            return {n: torch.full((steps, *shape), np.nan, device=self.device) for n in self.names}

        self.loss, self.grad_norm = series(), series()
        # Per block: the parameters grouped by block, the rest (e.g. the head) last.
        self._groups: dict[str, list[list[nn.Parameter]]] = {}
        if blocks:
            for n, m in self.models.items():
                groups = [list(b.parameters()) for b in m.blocks]
                seen = {id(p) for g in groups for p in g}
                self._groups[n] = [*groups, [p for p in m.parameters() if id(p) not in seen]]
        # Block gradient norms in float64 (see _wide): a deep plain stack's first
        # blocks get gradients whose norms are under float32's smallest number.
        self.block_norm = {
            n: torch.full((steps, len(g) - 1), np.nan, device=self.device, dtype=_wide(self.device))
            for n, g in self._groups.items()
        }
        self.last = dict.fromkeys(self.names, -1)  # index of the last recorded step
        self.divergence: dict[str, Divergence] = {}
        self.stopped = False
        self.t = -1
        self._live = dict.fromkeys(self.names, True)
        self._checked = dict.fromkeys(self.names, 0)
        self._start: dict[str, float] = {}
        self._pool: ThreadPoolExecutor | None = None

    # ------------------------------------------------------------------ the loop

    def __iter__(self) -> Iterator[int]:
        """Step indices ``0..steps-1``; ends early when ``should_stop()`` says so or
        every variant has diverged."""
        try:
            for t in range(self.steps):
                if not any(self._live.values()):
                    break
                self.t = t
                if t == 0 or self.lrs[t] != self.lrs[t - 1]:  # the warm-up's schedule
                    for opt in self.opts.values():
                        for group in opt.param_groups:
                            group["lr"] = self.lrs[t]
                yield t
                done = t + 1
                if done % self.sync_every == 0 or done == self.steps:
                    self.check()
                    if self.progress is not None:
                        self.progress(self, done)
                    if done < self.steps and self.should_stop is not None and self.should_stop():
                        self.stopped = True
                        break
        finally:
            if self._pool is not None:
                self._pool.shutdown()
                self._pool = None

    def active(self) -> list[tuple[str, nn.Module]]:
        """The variants still training, with their models."""
        return [(n, self.models[n]) for n in self.names if self._live[n]]

    def update(self, name: str, loss: torch.Tensor) -> Divergence | None:
        """Backpropagate ``loss`` (variant ``name``, current step), record it and step
        the optimizer. Eager mode returns the divergence found at this step (the
        model is then not updated); otherwise None."""
        t, opt = self.t, self.opts[name]
        opt.zero_grad(set_to_none=True)
        loss.backward()
        total = self._record_grads(name, t, loss)
        self.loss[name][t] = loss.detach()
        self.last[name] = t
        if self.eager:
            value = float(loss.detach())
            start = self._start.setdefault(name, value)
            found = first_divergence(
                [value], [float(total)], start=start, first_step=t + self.first_step
            )
            if found is not None:
                self.halt(name, found)
                return found
        opt.step()
        return None

    def update_all(self, loss_of: Callable[[str, nn.Module], torch.Tensor]) -> None:
        """:meth:`update` every active variant with ``loss_of(name, model)``, in
        parallel threads when ``workers > 1`` (variants share no state, so the
        numbers equal a run in turn)."""
        todo = [n for n, _ in self.active()]

        def one(n: str) -> None:
            self.update(n, loss_of(n, self.models[n]))

        if self.workers <= 1 or len(todo) <= 1:
            for n in todo:
                one(n)
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.workers, "resviz-variant")
        for f in [self._pool.submit(one, n) for n in todo]:
            f.result()

    def _record_grads(self, name: str, t: int, loss: torch.Tensor) -> torch.Tensor:
        groups = self._groups.get(name)
        if groups is None:
            grads = [p.grad for p in self._params[name] if p.grad is not None]
            total = _norm(grads) if grads else loss.detach() * 0
        else:
            # One norm per parameter, then per block the norm of its parameters' norms;
            # the total from the blocks and the rest: ||g||^2 = sum_b ||g_b||^2 + rest.
            per_group = [[p.grad for p in g if p.grad is not None] for g in groups]
            flat = [g for part in per_group for g in part]
            norms = (
                torch.stack(torch._foreach_norm(flat, 2, dtype=_wide(flat[0].device)))
                if flat
                else loss.detach()[None].double() * 0
            )
            parts = norms[: len(flat)].split([len(part) for part in per_group])
            per_block = torch.stack(torch._foreach_norm(list(parts[:-1])))
            self.block_norm[name][t] = per_block.detach()
            total = ((per_block**2).sum() + (parts[-1] ** 2).sum()).sqrt()
        self.grad_norm[name][t] = total.detach()
        return total

    # -------------------------------------------------------------- divergence

    def check(self) -> None:
        """Judge every live variant's new steps (lazy mode; eager mode judged them
        already) and stop those that diverged at their step."""
        for n in self.names:
            if not self._live[n] or self.eager:
                continue
            a, k = self._checked[n], self.last[n] + 1
            if k <= a:
                continue
            start = self._start.setdefault(n, float(self.loss[n][0]))
            found = first_divergence(
                self.loss[n][a:k],
                self.grad_norm[n][a:k],
                start=start,
                first_step=a + self.first_step,
            )
            self._checked[n] = k
            if found is not None:
                self.halt(n, found)

    def halt(self, name: str, found: Divergence) -> None:
        """Stop variant ``name``: it diverged at ``found.step`` (judged here or by the
        experiment, e.g. on an evaluation); rows after that step are dropped."""
        self.divergence[name] = found
        self._live[name] = False
        self.last[name] = min(self.last[name], found.step - self.first_step)

    @property
    def diverged(self) -> dict[str, int]:
        """Variant -> the step at which it diverged."""
        return {n: d.step for n, d in self.divergence.items()}

    @property
    def attrs(self) -> RunAttrs:
        """``stopped``, ``diverged`` (variant -> step), ``divergence`` (variant ->
        :class:`resviz.Divergence`): what every training frame carries."""
        return {
            "stopped": self.stopped,
            "diverged": self.diverged,
            "divergence": dict(self.divergence),
        }

    # ----------------------------------------------------------------- frames

    def _rows(self, n: str) -> range:
        return range(self.first_step, self.first_step + self.last[n] + 1)

    def frame(self, columns: tuple[str, ...] = STEP_COLUMNS) -> pd.DataFrame:
        """One row per (variant, recorded step): ``variant, step, loss, grad_norm, lr,
        diverged, divergence`` (or the ``columns`` asked for), the diverged step
        flagged with its reason; ``attrs`` as :attr:`attrs`."""
        parts = []
        for n in self.names:
            k = self.last[n] + 1
            if k <= 0:
                continue
            steps = self._rows(n)
            found = self.divergence.get(n)
            df = pd.DataFrame(
                {
                    "variant": n,
                    "step": steps,
                    "loss": self.loss[n][:k].cpu().numpy(),
                    "grad_norm": self.grad_norm[n][:k].cpu().numpy(),
                    "lr": self.lrs[:k],
                }
            )
            df["diverged"] = df["step"] == (found.step if found is not None else -1)
            df["divergence"] = divergence_column(steps, found)
            parts.append(df[list(columns)])
        out = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=[*columns])
        out.attrs.update(self.attrs)
        return out

    def block_frame(self) -> pd.DataFrame:
        """With ``blocks=True``: one row per (variant, step, block) with that block's
        gradient norm before the update; ``block`` counts blocks from 1."""
        parts = []
        for n in self.names:
            k = self.last[n] + 1
            if k <= 0 or n not in self.block_norm:
                continue
            g = self.block_norm[n][:k].cpu().numpy()  # (k, n_blocks)
            steps, layers = np.meshgrid(self._rows(n), range(g.shape[1]), indexing="ij")
            parts.append(
                pd.DataFrame(
                    {
                        "variant": n,
                        "step": steps.ravel(),
                        "block": layers.ravel() + 1,
                        "grad_norm": g.ravel(),
                    }
                )
            )
        if not parts:
            return pd.DataFrame(columns=[*BLOCK_COLUMNS])
        return pd.concat(parts, ignore_index=True)


__all__ = ["BLOCK_COLUMNS", "STEP_COLUMNS", "Trainer", "build_variants", "variant_workers"]
