"""Benchmark summaries: bench_seeds.py's ratios of 5 seeds over 1, per section."""

from __future__ import annotations

import pytest


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter, exitstatus, config):  # noqa: ARG001
    session = getattr(config, "_benchmarksession", None)
    if session is None:
        return
    medians: dict[str, dict[int, float]] = {}
    for _group, benches in session.groups or ():
        for bench in benches:
            seeds = (bench.get("params") or {}).get("seeds")
            if seeds is not None:
                medians.setdefault(bench["group"], {})[seeds] = bench["median"]
    rows = [(g, m) for g, m in sorted(medians.items()) if 1 in m and 5 in m]
    if not rows:
        return
    terminalreporter.section("5 seeds over 1 seed (ratio of medians)")
    for group, m in rows:
        terminalreporter.write_line(
            f"{group:32s} 1 seed {m[1] * 1e3:8.1f} ms   5 seeds {m[5] * 1e3:8.1f} ms   "
            f"ratio {m[5] / m[1]:.2f}"
        )
