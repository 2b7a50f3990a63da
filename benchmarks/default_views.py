"""Every section's default view, timed as the app computes it (issue 37).

Each section of each page (``ui/specs/*.py``) is its recipe (``resviz.recipes``) called
with the page's default settings (a choice's text as the number the page reads from
it) and the sidebar's default seeds ("auto": the recipe's own count), on the CPU, one
torch thread, as the app runs each session's computation. The sections the app runs
as background jobs with progress and Stop (``ui/jobs.py``: the recipes that take
``progress``) get a progress callback and ``should_stop``, as the app's job does, so
their seeds run one after another as they do there. The Pretrained page runs on the
shipped Sonnets GPT-2: the model and its random twin are loaded by the first call
(the "first" column), and each timed repeat computes its traces again (the page's
trace of the text is computed once per text and kept; here every repeat pays it).

Prints a Markdown table for benchmarks/RESULTS.md: the first call (imports and loads
included), then the minimum and median of ``--repeats`` more calls (wall time), the
median process CPU time of those calls (every thread's: a training section that steps
its two models in two threads can take less wall time than CPU time on 2 idle cores),
and the load average before and after, since the goal is for 2 idle cores.

``--against DIR`` times a second tree too (a checkout of an earlier commit: ``git
worktree add ../before <commit>``), each section at that tree's own defaults and code:
the two run in two worker processes, the repeats alternating between them, and the
table adds the earlier median and the ratio of medians, taken in one run.

    .venv/bin/python benchmarks/default_views.py [--repeats 3] [--only normalization]
    .venv/bin/python benchmarks/default_views.py --against ../before --only Warm-up
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# The goal: every section's default view within this many seconds on 2 idle cores.
GOAL_S = 5.0


# ------------------------------------------------------------------ the worker side
# A worker imports resviz and ui from its tree (``--worker ROOT``) and times the
# sections it is sent, one JSON line each way.


def default_settings(page: str, fn: Callable[..., Any]) -> dict[str, Any]:
    """The recipe's settings as the page passes them at its defaults: each declared
    default read as the type of the recipe's own default ("0.015" -> 0.015), seeds
    from the sidebar's "auto". A recipe default that differs from the page's is an
    error: then the recipe alone would not be the page's default view."""
    from resviz.core import settings_of
    from ui.specs import SEEDS_AUTO, SHARED, seeds_count
    from ui.specs.pages import spec_of

    spec = spec_of(page)
    out: dict[str, Any] = {}
    for name, own in settings_of(fn).items():
        if name == "seeds":
            out[name] = seeds_count(SEEDS_AUTO, int(own))
            continue
        p = spec.param(name) or SHARED.param(name)
        if p is None:
            raise ValueError(f"{page}: {name} is not a setting of the page")
        value = p.default
        if isinstance(own, int | float) and not isinstance(own, bool) and isinstance(value, str):
            value = type(own)(value)
        if value != own:
            raise ValueError(f"{page}: {name} defaults to {p.default!r}, its recipe to {own!r}")
        out[name] = value
    return out


def background(fn: Callable[..., Any]) -> bool:
    """Whether the app runs ``fn`` as a background job (it reports progress)."""
    return "progress" in inspect.signature(fn).parameters


def section_call(page: str, section: str) -> tuple[Callable[[], Any], dict[str, Any]]:
    """The section's computation at its defaults, and what to print about it."""
    from resviz.recipes import RECIPES
    from ui.specs.pages import spec_of

    name = spec_of(page).recipes[section]
    fn = RECIPES[name]
    settings = default_settings(page, fn)
    about = dict(recipe=name, seeds=settings.get("seeds"), background=background(fn))
    if not background(fn):
        return (lambda: fn(**settings)), about

    def report(frame: Any, step: int, total: int) -> None:  # noqa: ARG001 - jobs.Report
        pass

    return (lambda: fn(**settings, progress=report, should_stop=lambda: False)), about


def forget_traces() -> None:
    """Drop the Pretrained page's kept traces (the models stay loaded)."""
    from resviz.pretrained import cache as PC

    with PC._LOCK:
        PC._TRACES.clear()


def worker(root: str, threads: int) -> None:
    sys.path.insert(0, root)
    import torch

    torch.set_num_threads(threads)
    calls: dict[tuple[str, str], tuple[Callable[[], Any], dict[str, Any]]] = {}
    for line in sys.stdin:
        ask = json.loads(line)
        key = (ask["page"], ask["section"])
        try:
            if key not in calls:
                calls[key] = section_call(*key)
            run, about = calls[key]
            if ask["page"] == "pretrained" and not ask["first"]:
                forget_traces()
            w, c = time.perf_counter(), time.process_time()
            run()
            out = dict(about, wall=time.perf_counter() - w, cpu=time.process_time() - c)
        except Exception as exc:  # noqa: BLE001 - reported in the table
            out = dict(error=f"{type(exc).__name__}: {exc}")
        print(json.dumps(out), flush=True)


# -------------------------------------------------------------------- the main side


class Worker:
    """A worker process on one tree's code."""

    def __init__(self, root: Path, threads: int) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--worker", str(root), "--threads", str(threads)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def time(self, page: str, section: str, first: bool) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(dict(page=page, section=section, first=first)) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()


def sections(only: str) -> list[tuple[str, str]]:
    """Every (page, section) with a recipe, in the pages' order, whose page, section
    or recipe name contains ``only``."""
    sys.path.insert(0, str(ROOT))
    from ui.specs.pages import PAGE_NAMES, spec_of

    return [
        (page, section)
        for page in PAGE_NAMES
        for section in spec_of(page).sections
        if section in spec_of(page).recipes
        and only.lower() in f"{page} {section} {spec_of(page).recipes[section]}".lower()
    ]


def cpu_name() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"


def fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f} s"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3, help="timed calls after the first")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (the app's: 1)")
    ap.add_argument("--only", default="", help="sections whose page, name or recipe has this")
    ap.add_argument("--against", help="a checkout of earlier code, timed alternately")
    ap.add_argument("--json", help="also write the figures to this file")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker, args.threads)
        return

    todo = sections(args.only)
    trees = {"after": ROOT} | ({"before": Path(args.against).resolve()} if args.against else {})
    workers = {name: Worker(root, args.threads) for name, root in trees.items()}
    load_before = os.getloadavg()
    rows = []
    for page, section in todo:
        got: dict[str, dict[str, Any]] = {}
        for name, w in workers.items():
            first = w.time(page, section, True)
            got[name] = dict(first, walls=[], cpus=[], first_s=first.get("wall"))
        for k in range(args.repeats):
            # Alternate which tree goes first, so neither always runs after the other.
            for name in list(workers)[:: 1 if k % 2 == 0 else -1]:
                one = workers[name].time(page, section, False)
                if "error" in one:
                    got[name]["error"] = one["error"]
                    continue
                got[name]["walls"].append(one["wall"])
                got[name]["cpus"].append(one["cpu"])
        for g in got.values():
            ok = bool(g["walls"]) and "error" not in g
            g["min_s"] = min(g["walls"]) if ok else None
            g["median_s"] = statistics.median(g["walls"]) if ok else None
            g["cpu_s"] = statistics.median(g["cpus"]) if ok else None
        rows.append(dict(page=page, section=section, **{n: g for n, g in got.items()}))
        now = got["after"]
        print(
            f"{page:20s} {section:26s} median {fmt(now['median_s'])}"
            + (f"  before {fmt(got['before']['median_s'])}" if "before" in got else ""),
            file=sys.stderr,
            flush=True,
        )
    for w in workers.values():
        w.close()

    import torch

    load = ", ".join(
        f"{a:.1f} -> {b:.1f}" for a, b in zip(load_before, os.getloadavg(), strict=True)
    )
    print(
        f"\n{len(rows)} sections; {os.cpu_count()} x {cpu_name()}, torch {torch.__version__}, "
        f"{args.threads} torch thread(s), first call then {args.repeats} repeats; load "
        f"average (1, 5, 15 min) {load}; * over {GOAL_S:g} s (median)\n"
    )
    head = "| page | section | recipe | seeds | job | first | min | median | CPU |"
    if args.against:
        head += " before (median) | after / before |"
    print(head)
    print("|---" * head.count(" | ") + "|---|")
    for r in rows:
        a = r["after"]
        if "error" in a:
            print(f"| {r['page']} | {r['section']} | {a['error']} |")
            continue
        over = " *" if a["median_s"] > GOAL_S else ""
        line = (
            f"| {r['page']} | {r['section']} | `{a['recipe']}` | {a['seeds'] or '-'} | "
            f"{'yes' if a['background'] else ''} | {fmt(a['first_s'])} | {fmt(a['min_s'])} | "
            f"{fmt(a['median_s'])}{over} | {fmt(a['cpu_s'])} |"
        )
        if args.against:
            b = r["before"].get("median_s")
            ratio = f"{a['median_s'] / b:.2f}" if b else "-"
            line += f" {fmt(b)} | {ratio} |"
        print(line)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
