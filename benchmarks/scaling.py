"""What a slider costs: time of each page's main experiment as its size grows.

    .venv/bin/python benchmarks/scaling.py [--repeats 3]

Each row is one experiment at one size, median wall time of ``repeats`` runs
on the current device with the app's thread policy. Sizes run from the page
defaults to the largest a slider allows (training rows scale their steps down
and report the time per 100 steps).
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import resviz as rv  # noqa: E402
from resviz import skip  # noqa: E402

Case = tuple[str, str, list[tuple[str, Callable[[], object], float]]]


def cases() -> list[Case]:
    stack = rv.StackConfig()
    enc = rv.EncoderConfig(n_layers=6, d_model=128, n_heads=8, d_ff=512)
    out: list[Case] = [
        (
            "skip connections",
            "forward decomposition (batch 256) vs depth, width 64",
            [
                (f"depth {d}", lambda d=d: skip.forward_decomposition(rv.StackConfig(depth=d)), 1)
                for d in (16, 32, 64)
            ],
        ),
        (
            "skip connections",
            "degradation training, 4 stacks (per 100 steps) vs deep depth",
            [
                (
                    f"deep {d}",
                    lambda d=d: skip.train_degradation(skip.DegradationConfig(deep=d, steps=50)),
                    2,
                )
                for d in (16, 32, 64)
            ],
        ),
        (
            "gradient flow",
            "gradient_norms (batch 32) vs depth x width",
            [
                (
                    f"depth {d}, width {w}",
                    lambda d=d, w=w: rv.train.gradient_norms(
                        dataclasses.replace(stack, depth=d, width=w)
                    ),
                    1,
                )
                for d in (10, 100)
                for w in (64, 512)
            ],
        ),
        (
            "encoder / normalization",
            "stream_norms (batch 8) vs layers x sequence, d_model 128",
            [
                (
                    f"{n} layers, seq {t}",
                    lambda n=n, t=t: rv.train.stream_norms(
                        dataclasses.replace(enc, n_layers=n, max_len=128), seq_len=t
                    ),
                    1,
                )
                for n in (2, 6, 12)
                for t in (32, 128)
            ],
        ),
        (
            "normalization",
            "train_compare 2x2 (per 100 steps) vs width",
            [
                (
                    f"width {w}",
                    lambda w=w: rv.train_compare(
                        {
                            f"{r}{n}": rv.StackConfig(
                                depth=4,
                                width=w,
                                block="ffn",
                                activation="gelu",
                                residual=r,
                                norm=n,
                            )
                            for r in ("add", "none")
                            for n in ("layer", "none")
                        },
                        steps=25,
                    ),
                    4,
                )
                for w in (64, 128, 256)
            ],
        ),
    ]
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    threads = rv.configure_threads()
    print(f"{rv.device_info()['name']}, {threads} torch thread(s), median of {args.repeats}\n")
    for page, what, rows in cases():
        print(f"**{page}**: {what}\n\n| size | time |\n|---|---|")
        for label, fn, scale in rows:
            fn()  # warm-up
            times = []
            for _ in range(args.repeats):
                t = time.perf_counter()
                fn()
                times.append(time.perf_counter() - t)
            print(f"| {label} | {statistics.median(times) * scale * 1000:.0f} ms |")
        print()


if __name__ == "__main__":
    main()
