"""Several seeds' per-layer gradients in one vectorised pass.

A finding at one seed can be that seed's accident, so the pages measure several
seeds (:mod:`resviz.words.seeds`). For a small stack at init one seed's measurement
is mostly Python overhead (building modules, hooks, one small backward pass), so
the seeds' stacks run as one computation instead: their weights drawn by
:func:`resviz.models.reseed` into one module, stacked, and differentiated together
with ``torch.func.vmap`` (:func:`resviz.hooks.capture_grad_norms_over_states`).
The frames are :func:`resviz.gradients.layers.layer_gradients`'s, to float64
rounding (``tests/unit/gradients/test_over_seeds.py``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch
from torch.nn import functional as F

from resviz.config import StackConfig
from resviz.data import make_batch
from resviz.gradients.layers import _first_weight_name, _float64_device, _layer_frame
from resviz.hooks import capture_grad_norms_over_states, stream_points
from resviz.models import build, reseed

# The most bytes of float64 weights the seeds' stacks may hold together: above it
# (a 100 x 448 stack's are 160 MB a seed) the seeds run one by one, each within the
# memory budget the page checks, instead of all at once.
_BATCHED_WEIGHT_BYTES = 32 * 2**20

# Under this, a gradient measured in plain float64 keeps too few digits: the
# vectorised pass over seeds leaves such stacks to the log-space one.
_LOG10_BATCHED_FLOOR = -280.0


def layer_gradients_over_seeds(
    cfg: StackConfig,
    seeds: Sequence[int],
    batch_size: int = 32,
    device: torch.device | str | None = None,
) -> pd.DataFrame | None:
    """:func:`layer_gradients` of ``cfg`` at each of ``seeds`` (weights and batch from
    the seed), in one pass vectorised over the seeds
    (:func:`resviz.hooks.capture_grad_norms_over_states`): one frame, the seeds' rows
    under a ``seed`` column (first), each seed's the same as its own
    :func:`layer_gradients` frame to float64 rounding. None where that pass
    cannot stand in for the per-seed one: BatchNorm (batch statistics), an MPS device,
    a gradient under 1e-280 (the per-seed pass measures those in log space), or seeds
    whose float64 weights together pass 32 MB (one seed at a time stays within the
    memory budget the page checks)."""
    dev = _float64_device(device)
    if cfg.norm == "batch" or dev.type == "mps":
        return None
    model = build(cfg)  # float32 on the CPU: reseed draws as build does
    live = model.state_dict()  # the module's own tensors, which reseed redraws in place
    if sum(v.numel() for v in live.values()) * 8 * len(seeds) > _BATCHED_WEIGHT_BYTES:
        return None
    states, xs, ys = [], [], []
    for s in seeds:
        reseed(model, int(s))
        states.append({k: v.to(dev, torch.float64) for k, v in live.items()})
        x, y = make_batch(cfg, batch_size, 1, torch.Generator().manual_seed(int(s)))
        xs.append(x)
        ys.append(y)
    model = model.to(dev, torch.float64)
    n = cfg.n_blocks
    points = stream_points(n)
    firsts = [_first_weight_name(model, i) for i in range(n)]
    got = capture_grad_norms_over_states(
        model,
        states,
        torch.stack(xs).to(dev, torch.float64),
        torch.stack(ys).to(dev, torch.float64),
        F.mse_loss,
        points,
        firsts,
    )
    with np.errstate(divide="ignore"):  # an exact 0 is -inf, and refused below
        log_act = np.log10(torch.stack([got.grad_norms[k] for k in points], 1).cpu().numpy())
        log_w = np.log10(torch.stack([got.param_grad_norms[k] for k in firsts], 1).cpu().numpy())
    norms = torch.stack([got.act_norms[k] for k in points], 1).cpu().numpy()
    if not (np.isfinite(log_act).all() and np.isfinite(log_w).all()):
        return None
    if min(log_act.min(), log_w.min()) < _LOG10_BATCHED_FLOOR:
        return None
    frame = _layer_frame(log_act, log_w, norms)
    frame.insert(0, "seed", np.repeat(np.asarray(seeds, dtype=np.int64), log_act.shape[1]))
    return frame


__all__ = ["layer_gradients_over_seeds"]
