"""A workshop room: one Streamlit process against one replica per core behind nginx.

    .venv/bin/python benchmarks/workshop_load.py [--sessions 20] [--replicas 2]

In one run, with the same load against each: ``--sessions`` websocket clients
(tests/browser/wsclient.py, Streamlit's own protocol) each open every page in
turn, every visit with settings no one else used (a new seed), so nothing comes
from a cache. First against one ``streamlit run`` process, then against
``deploy/workshop/serve.py`` (``--replicas`` processes behind nginx). Prints the
script time per visit (p50, p95, max) for each layout and their ratio, the wall
time of the wave, and each process's resident memory after warm-up, at the end of the wave and
after the crowd has left.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.server_load import pct, wave  # noqa: E402
from tests.browser.conftest import Server, free_port, rss_mb  # noqa: E402
from ui.registry import PAGES  # noqa: E402


def children_rss(pid: int) -> dict[int, float]:
    """Resident memory of each Streamlit replica started by ``pid`` (serve.py)."""
    out = {}
    for child in Path("/proc").glob("[0-9]*"):
        try:
            stat = (child / "stat").read_text()
            cmd = (child / "cmdline").read_bytes()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid and b"streamlit" in cmd:
            out[int(child.name)] = rss_mb(int(child.name))
    return out


def run_wave(url: str, pages: list[str], n: int) -> tuple[list[float], float]:
    t = time.monotonic()
    results = asyncio.run(wave(url, pages, n, distinct=True))
    return [s for r in results for s in r.values()], time.monotonic() - t


def report(name: str, lat: list[float], wall: float, n: int, pages: int) -> None:
    print(
        f"| {name} | {pct(lat, 0.5):.2f} s | {pct(lat, 0.95):.2f} s | {max(lat):.2f} s "
        f"| {wall:.1f} s ({n * pages / wall:.2f} visits/s) |"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--replicas", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args()
    pages = [p.url_path for p in PAGES]
    env = {"MALLOC_ARENA_MAX": "2"}

    single = Server(env=env)
    try:
        asyncio.run(wave(single.url, pages, 1))  # warm: imports, first compile
        start_rss = rss_mb(single.proc.pid)
        one = run_wave(single.url, pages, args.sessions)
        peak = rss_mb(single.proc.pid)
        time.sleep(6)
        single_mem = (start_rss, peak, rss_mb(single.proc.pid))
    finally:
        single.stop()

    port = free_port()
    run_dir = ROOT / "artifacts" / "workshop-bench"
    cmd = [sys.executable, str(ROOT / "deploy/workshop/serve.py"), "--port", str(port),
           "--address", "127.0.0.1", "--replicas", str(args.replicas), "--run-dir", str(run_dir),
           "--http"]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, **env}, stdout=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2):
                    break
            except OSError:
                time.sleep(0.5)
        asyncio.run(wave(url, pages, 2 * args.replicas))  # warm every replica
        start = children_rss(proc.pid)
        many = run_wave(url, pages, args.sessions)
        peaks = children_rss(proc.pid)
        time.sleep(6)
        after = children_rss(proc.pid)
    finally:
        proc.terminate()
        proc.wait(timeout=30)

    n, k = args.sessions, len(pages)
    print(f"{n} sessions x {k} pages, distinct settings per visit; script time per visit")
    print("| layout | p50 | p95 | max | wave wall time |")
    print("|---|---|---|---|---|")
    report("1 process", *one, n, k)
    report(f"{args.replicas} replicas behind nginx", *many, n, k)
    print(
        f"\np95 ratio, replicas / one process: {pct(many[0], 0.95) / pct(one[0], 0.95):.2f}; "
        f"wall ratio {many[1] / one[1]:.2f}"
    )
    print(
        "RSS, one process: after warm-up {:.0f} MB, at the wave's end {:.0f} MB, 6 s after {:.0f} MB".format(
            *single_mem
        )
    )
    for pid in sorted(start):
        print(
            f"RSS, replica {pid}: after warm-up {start[pid]:.0f} MB, "
            f"at the wave's end {peaks.get(pid, float('nan')):.0f} MB, 6 s after {after.get(pid, float('nan')):.0f} MB"
        )


if __name__ == "__main__":
    main()
