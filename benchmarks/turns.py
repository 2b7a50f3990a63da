"""Sessions that compute at once, with and without turns on the cores (ui/turns.py).

N sessions ask at the same moment for N different first views (the gradient-flow Depth
sweep recipe at N seeds, nothing cached), each in its own thread as Streamlit runs
them, torch at one thread. Printed: when each session's result arrived, without a
line (every computation side by side) and with one of ``--slots`` places.

    .venv/bin/python benchmarks/turns.py --sessions 6 --slots 2
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from resviz.gradients import recipes as R  # noqa: E402
from ui.turns import Turns  # noqa: E402


def crowd(sessions: int, slots: int | None, base: int) -> list[float]:
    """Seconds from the common start to each session's result."""
    line = Turns(slots) if slots else None
    go = threading.Barrier(sessions + 1)
    got = [0.0] * sessions

    def session(i: int) -> None:
        go.wait()
        t0 = time.perf_counter()
        if line is None:
            R.depth_sweep(seeds=1, seed=base + i)
        else:
            with line.turn():
                R.depth_sweep(seeds=1, seed=base + i)
        got[i] = time.perf_counter() - t0

    threads = [threading.Thread(target=session, args=(i,)) for i in range(sessions)]
    for t in threads:
        t.start()
    go.wait()
    for t in threads:
        t.join()
    return sorted(got)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=6)
    ap.add_argument("--slots", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    torch.set_num_threads(1)
    R.depth_sweep(seeds=1, seed=999)  # warm up
    t0 = time.perf_counter()
    R.depth_sweep(seeds=1, seed=998)
    alone = time.perf_counter() - t0
    print(f"one session alone: {alone:.2f} s")
    for r in range(a.repeats):
        for slots in (None, a.slots):
            t = crowd(a.sessions, slots, base=100 * r + (0 if slots is None else 50))
            name = "side by side" if slots is None else f"turns of {slots}"
            print(
                f"repeat {r}, {name:>12}: first {t[0]:.2f} s, median "
                f"{statistics.median(t):.2f} s, last {t[-1]:.2f} s, "
                f"mean {statistics.mean(t):.2f} s"
            )


if __name__ == "__main__":
    main()
