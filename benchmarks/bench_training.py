"""Training engine versus the straightforward loop, on the seed notebook's experiment.

The workload: the stability 2x2 (residual x LayerNorm), 4 FFN blocks of width
128 (hidden 512, GELU), batches of 16 sequences of 32 vectors, MSE to random
targets, 100 Adam steps per variant, one seed. ``rv.train_compare`` and a plain
reference loop written here (per-step ``.item()`` on every parameter's gradient
norm and on the loss, as the notebook does) do identical work: the same
models, the same batches, the same optimizer settings. Runs alternate, several
repeats; the script reports the median time of each, their ratio, the achieved
GFLOP/s and the machine's float32 matmul peak (1024 and 2048 square, every core)
measured in the same run, and
checks that both give the same losses.

    python benchmarks/bench_training.py [--repeats 5] [--device cpu|cuda]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import resviz as rv  # noqa: E402
from resviz.train.compare import make_batch  # noqa: E402

BASE = rv.StackConfig(depth=4, width=128, block="ffn", ffn_mult=4, activation="gelu")
VARIANTS = {
    f"residual={r}, layernorm={n}": dataclasses.replace(
        BASE, residual="add" if r else "none", norm="layer" if n else "none"
    )
    for r in (True, False)
    for n in (True, False)
}
STEPS, BATCH, SEQ, LR, SEED = 100, 16, 32, 1e-3, 0


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def matmul_peak(
    device: torch.device, sizes: tuple[int, ...] = (1024, 2048), reps: int = 10
) -> float:
    """Best float32 GFLOP/s of square matmuls on this device (current threads)."""
    best = 0.0
    for n in sizes:
        a = torch.randn(n, n, device=device)
        b = torch.randn(n, n, device=device)
        for _ in range(2):
            a @ b
        sync(device)
        for _ in range(reps):
            t = time.perf_counter()
            a @ b
            sync(device)
            best = max(best, 2 * n**3 / (time.perf_counter() - t) / 1e9)
    return best


def reference(device: torch.device) -> dict[str, list[float]]:
    """The notebook's loop: per-step host syncs on the loss and every parameter's grad."""
    out: dict[str, list[float]] = {}
    for name, cfg in VARIANTS.items():
        model = rv.build(dataclasses.replace(cfg, seed=SEED), device).train()
        opt = torch.optim.Adam(model.parameters(), lr=LR)
        gen = torch.Generator().manual_seed(SEED)
        losses = []
        for _ in range(STEPS):
            x, y = make_batch(cfg, BATCH, SEQ, gen)
            x, y = x.to(device), y.to(device)
            opt.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            total = 0.0
            for p in model.parameters():
                if p.grad is not None:
                    total += p.grad.norm().item() ** 2
            _grad_norm = total**0.5
            opt.step()
            losses.append(loss.item())
        out[name] = losses
    return out


def engine(device: torch.device) -> dict[str, list[float]]:
    df = rv.train_compare(
        VARIANTS, steps=STEPS, seed=SEED, lr=LR, batch_size=BATCH, seq_len=SEQ, device=device
    )
    return {n: g["loss"].tolist() for n, g in df.groupby("variant", sort=False)}


def timed(fn, device: torch.device) -> tuple[float, dict[str, list[float]]]:
    sync(device)
    t = time.perf_counter()
    result = fn(device)
    sync(device)
    return time.perf_counter() - t, result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args()
    device = torch.device(args.device)
    threads = rv.configure_threads()
    flops = sum(
        rv.estimate(cfg, batch=BATCH, seq_len=SEQ, steps=STEPS).flops_total
        for cfg in VARIANTS.values()
    )
    timed(engine, device)  # warm-up (allocator, kernels)
    ref_t, eng_t = [], []
    for _ in range(args.repeats):
        t, ref_losses = timed(reference, device)
        ref_t.append(t)
        t, eng_losses = timed(engine, device)
        eng_t.append(t)
    # The machine's peak: every core (the engine steps variants on all of them).
    peak_1 = matmul_peak(device)
    torch.set_num_threads(os.cpu_count() or 1)
    peak = matmul_peak(device)
    torch.set_num_threads(threads)
    worst = max(
        abs(a - b) / max(abs(a), 1e-12)
        for n in VARIANTS
        for a, b in zip(ref_losses[n], eng_losses[n], strict=True)
    )
    ref_m, eng_m = statistics.median(ref_t), statistics.median(eng_t)
    figures = {
        "device": rv.device_info(device)["name"],
        "torch": torch.__version__,
        "python": platform.python_version(),
        "threads": threads,
        "repeats": args.repeats,
        "reference_s": round(ref_m, 3),
        "engine_s": round(eng_m, 3),
        "speedup": round(ref_m / eng_m, 2),
        "work_gflop": round(flops / 1e9, 1),
        "engine_gflops": round(flops / eng_m / 1e9, 1),
        "reference_gflops": round(flops / ref_m / 1e9, 1),
        "cpu_cores": os.cpu_count(),
        "matmul_peak_gflops_1_thread": round(peak_1, 1),
        "matmul_peak_gflops": round(peak, 1),
        "engine_share_of_peak": round(flops / eng_m / 1e9 / peak, 3),
        "max_relative_loss_difference": worst,
    }
    for k, v in figures.items():
        print(f"{k:>30}: {v}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=2)
    if worst > 1e-4:
        raise SystemExit(f"losses differ by {worst:.2e}: the two loops did different work")


if __name__ == "__main__":
    main()
