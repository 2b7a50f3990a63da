"""What a norm costs: LayerNorm versus RMSNorm, timed on the device, and its budget.

:func:`norm_timing` measures forward and backward wall time of ``nn.LayerNorm``
and ``nn.RMSNorm`` (Zhang and Sennrich 2019: RMSNorm drops the centring, so it
should be cheaper) on one ``(B, T, d)`` input; :func:`norm_timing_cost` is the
estimate a page checks against its budget before it runs the timing. (Named
``norm_cost``, not ``norm_timing``, so that ``rv.norms.norm_timing`` stays the function.)
"""

from __future__ import annotations

import statistics
import time

import pandas as pd
import torch
from torch import nn

from resviz.budget import Estimate

# Peak memory of :func:`norm_timing` in float32 copies of its input: the input and
# the upstream gradient, a fresh leaf, its gradient and the output, and what
# RMSNorm's backward (built from element-wise ops on the CPU) holds at once, plus
# what glibc's allocator keeps of freed blocks between calls: the peak resident
# increase of a warmed-up process measured 15 to 22 copies (16 x 128 x 256 up to
# 16 x 256 x 1024, repeated runs); 28 bounds it with room to spare.
NORM_TIMING_COPIES = 28


def norm_timing_cost(batch_size: int, seq_len: int, d_model: int, repeats: int = 7) -> Estimate:
    """What :func:`norm_timing` costs, for ``Budget.check``: its peak memory (as
    activations: ``NORM_TIMING_COPIES`` float32 copies of the input), both norms'
    weights, and their forward and backward element-wise work (about 10 FLOPs per
    element and pass, each call run ``repeats + 1`` times)."""
    elements = batch_size * seq_len * d_model
    return Estimate(
        params=3 * d_model,
        flops_forward=2 * 2 * 10.0 * elements * (repeats + 1),
        activation_bytes=NORM_TIMING_COPIES * 4 * elements,
    )


def norm_timing(
    batch_size: int = 16,
    seq_len: int = 128,
    d_model: int = 512,
    repeats: int = 7,
    device: torch.device | str | None = None,
    seed: int = 0,
) -> pd.DataFrame:
    """Forward and backward wall time of ``nn.LayerNorm`` versus ``nn.RMSNorm`` on
    ``device`` for a ``(B, T, d)`` input, measured now (one warm-up call, then
    ``repeats`` timed calls; CUDA is synchronized around each). ``seed`` draws the
    input and the upstream gradient.

    Columns: ``norm, pass, median_ms, min_ms, max_ms, repeats, elements``.
    """
    if not 1 <= repeats <= 100:
        raise ValueError("repeats must be 1 to 100.")
    device = torch.device(device or "cpu")
    gen = torch.Generator().manual_seed(seed)
    x0 = torch.randn(batch_size, seq_len, d_model, generator=gen).to(device)
    grad = torch.randn(batch_size, seq_len, d_model, generator=gen).to(device)

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    rows = []
    for name, mod in (
        ("LayerNorm", nn.LayerNorm(d_model)),
        ("RMSNorm", nn.RMSNorm(d_model, eps=1e-5)),
    ):
        mod = mod.to(device)
        fwd, bwd = [], []
        for i in range(repeats + 1):
            x = x0.clone().requires_grad_(True)
            sync()
            t0 = time.perf_counter()
            y = mod(x)
            sync()
            t1 = time.perf_counter()
            y.backward(grad)
            sync()
            t2 = time.perf_counter()
            if i:  # the first call warms up kernels and allocators
                fwd.append((t1 - t0) * 1e3)
                bwd.append((t2 - t1) * 1e3)
            del x, y  # free this call's tensors before the next call allocates its own
        for pass_, ts in (("forward", fwd), ("backward", bwd)):
            rows.append(
                {
                    "norm": name,
                    "pass": pass_,
                    "median_ms": statistics.median(ts),
                    "min_ms": min(ts),
                    "max_ms": max(ts),
                    "repeats": repeats,
                    "elements": x0.numel(),
                }
            )
    return pd.DataFrame(rows)


__all__ = [
    "NORM_TIMING_COPIES",
    "norm_timing",
    "norm_timing_cost",
]
