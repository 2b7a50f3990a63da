"""The encoder's model card: what one configuration costs, counted and measured.

:func:`model_card` lists parameters, forward FLOPs and activation memory from
:func:`resviz.estimate` (parameters counted exactly on the ``meta`` device, FLOPs and
memory from the layer shapes); :func:`forward_latency` times ``model(ids)`` on the
device it sits on (median of several runs after a warm-up), the card's last row.
The encoder playground's Model section shows both.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import torch
from torch import nn

from resviz.budget import estimate
from resviz.config import EncoderConfig


def forward_latency(
    model: nn.Module, ids: Sequence[int], budget_s: float = 0.1, max_runs: int = 30
) -> dict[str, float]:
    """Median wall time of ``model(ids)`` in milliseconds (after one warm-up run).

    Runs until ``budget_s`` seconds or ``max_runs`` runs have passed, at least 3.
    """
    device = next(model.parameters()).device
    x = torch.tensor([list(ids)], device=device)
    model.eval()
    times: list[float] = []

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    with torch.no_grad():
        model(x)
        sync()
        start = time.perf_counter()
        while len(times) < 3 or (len(times) < max_runs and time.perf_counter() - start < budget_s):
            t0 = time.perf_counter()
            model(x)
            sync()
            times.append(time.perf_counter() - t0)
    return {"latency_ms": float(np.median(times) * 1e3), "runs": float(len(times))}


def model_card(
    cfg: EncoderConfig,
    seq_len: int,
    batch: int = 1,
    latency: Mapping[str, float] | None = None,
) -> pd.DataFrame:
    """Parameters, forward FLOPs and activation memory for one input (``rv.estimate``).

    Columns ``quantity, value, unit``. The latency is measured separately
    (:func:`forward_latency`) because it depends on the device and its load; pass
    its result as ``latency`` to add it as the last row (``forward latency``, in ms).
    """
    est = estimate(cfg, batch=batch, seq_len=seq_len)
    rows = [
        {"quantity": "parameters", "value": float(est.params), "unit": "count"},
        {"quantity": "forward FLOPs", "value": est.flops_forward, "unit": "FLOP"},
        {
            "quantity": "activation memory (training)",
            "value": float(est.activation_bytes),
            "unit": "bytes",
        },
        {"quantity": "weights", "value": float(est.param_bytes), "unit": "bytes"},
    ]
    if latency is not None:
        rows.append(
            {
                "quantity": "forward latency",
                "value": float(latency["latency_ms"]),
                "unit": f"ms (median of {latency['runs']:.0f})",
            }
        )
    return pd.DataFrame(rows)


__all__ = [
    "forward_latency",
    "model_card",
]
