"""A shared server under load: memory and per-page latency with 1, 10 and 20 sessions.

    .venv/bin/python benchmarks/server_load.py [--sessions 10 20] [--threads 1]

Starts a real ``streamlit run`` server (as ``make run`` does, with
``MALLOC_ARENA_MAX=2``), then uses websocket clients that speak Streamlit's
protocol (tests/browser/wsclient.py), so the figures are the server's: time
from opening a session on a page to its script run finishing, with every
element sent. Browser rendering is not included (benchmarks/browser_pages.py
measures that). Prints resident memory after start, after one visit to every
page, at the peak of each wave and after it; and p50/p95 per page for one
session and for N concurrent sessions each opening every page in turn.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.browser.conftest import Server, rss_mb  # noqa: E402
from tests.browser.wsclient import open_page  # noqa: E402
from ui.registry import PAGES  # noqa: E402


def cpu_s(pid: int) -> float:
    """User + system CPU seconds a process has used (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, max(0, round(q * (len(values) - 1))))]


SEEDS = iter(range(1, 10**9))


async def visit_all(url: str, pages: list[str], distinct: bool = False) -> dict[str, float]:
    """Open every page in turn; ``distinct``: each visit with a new seed, so nothing
    is served from the cache (compute-bound, where the thread policy matters)."""
    out = {}
    for p in pages:
        query = f"seed={next(SEEDS)}" if distinct else ""
        run = await open_page(url, p, query, timeout=600)
        if run.exceptions:
            raise RuntimeError(f"{p}: {run.exceptions}")
        out[p] = run.seconds
    return out


async def wave(
    url: str, pages: list[str], n: int, distinct: bool = False
) -> list[dict[str, float]]:
    async def one(i: int) -> dict[str, float]:
        rotated = pages[i % len(pages) :] + pages[: i % len(pages)]  # spread the load
        return await visit_all(url, rotated, distinct)

    return await asyncio.gather(*[one(i) for i in range(n)])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, nargs="*", default=[10, 20])
    ap.add_argument("--threads", default="1", help="RESVIZ_TORCH_THREADS for the server")
    ap.add_argument("--pages", nargs="*", help="url paths (default: every page)")
    ap.add_argument("--distinct", action="store_true", help="a new seed per visit: no cache hits")
    args = ap.parse_args()
    pages = args.pages or [p.url_path for p in PAGES]
    server = Server(env={"MALLOC_ARENA_MAX": "2", "RESVIZ_TORCH_THREADS": args.threads})
    try:
        print(
            f"threads={args.threads}, distinct={args.distinct}; RSS after start: {rss_mb(server.proc.pid):.0f} MB"
        )
        t = time.monotonic()
        first = asyncio.run(visit_all(server.url, pages))
        print(
            f"first visit to every page (cold caches) {time.monotonic() - t:.1f} s; "
            f"RSS after every page: {rss_mb(server.proc.pid):.0f} MB"
        )
        single: dict[str, list[float]] = {p: [] for p in pages}
        c0 = cpu_s(server.proc.pid)
        for _ in range(3):
            for p, s in asyncio.run(visit_all(server.url, pages, args.distinct)).items():
                single[p].append(s)
        base = {p: statistics.median(v) for p, v in single.items()}
        cpu_single = (cpu_s(server.proc.pid) - c0) / (3 * len(pages))
        print("\n| page | cold first visit | 1 session (median of 3) |", end="")
        waves = {}
        for n in args.sessions:
            before = rss_mb(server.proc.pid)
            t, c0 = time.monotonic(), cpu_s(server.proc.pid)
            results = asyncio.run(wave(server.url, pages, n, args.distinct))
            wall = time.monotonic() - t
            cpu = (cpu_s(server.proc.pid) - c0) / (n * len(pages))
            peak = rss_mb(server.proc.pid)
            time.sleep(6)
            waves[n] = (results, wall, before, peak, rss_mb(server.proc.pid), cpu)
        for n in args.sessions:
            print(f" {n} sessions p50 / p95 | ratio p95 / 1 session |", end="")
        print("\n|---|---|---|" + "---|---|" * len(args.sessions))
        for p in pages:
            row = f"| {p} | {first[p]:.2f} s | {base[p]:.2f} s |"
            for n in args.sessions:
                lat = [r[p] for r in waves[n][0]]
                row += f" {pct(lat, 0.5):.2f} / {pct(lat, 0.95):.2f} s | {pct(lat, 0.95) / base[p]:.1f}x |"
            print(row)
        print()
        print(f"server CPU per page visit, 1 session: {cpu_single * 1000:.0f} ms")
        for n, (_, wall, before, peak, after, cpu) in waves.items():
            print(
                f"{n} sessions x {len(pages)} pages: wall {wall:.1f} s "
                f"({n * len(pages) / wall:.1f} visits/s), server CPU per visit {cpu * 1000:.0f} ms; "
                f"RSS before {before:.0f} MB, peak {peak:.0f} MB, 6 s after {after:.0f} MB"
            )
    finally:
        server.stop()


if __name__ == "__main__":
    main()
