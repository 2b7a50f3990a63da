"""Long experiments in background threads, polled by a fragment.

Any widget click reruns the page script and would interrupt a training loop
running inside it. Here the work runs in a thread owned by one server-wide
registry and the page only reads its progress, from an ``st.fragment`` that
reruns itself while the job is live. So other widgets keep working, and a click
neither kills nor corrupts the run.

Runs are keyed by everything the user set (configs, seed, steps, device, and
user text itself rather than what it computes to, so that a session never sees
a run set up from someone else's text), so identical runs are shared: the first
session to start one computes it and any other session asking for the same key
subscribes to it.
Finished results stay in a bounded LRU. A run stops when every session that
asked for it pressed Stop or closed its tab, or when it exceeds its time budget.
At most ``RESVIZ_MAX_JOBS`` runs train at once on the server; the rest queue.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, Literal

import streamlit as st

from . import st_internals

State = Literal["queued", "running", "done", "stopped", "failed"]
Report = Callable[[Any, int, int], None]
ShouldStop = Callable[[], bool]
Work = Callable[[Report, ShouldStop], Any]
_LOG = logging.getLogger(__name__)


def _env_int(name: str, default: int) -> int:
    try:
        return max(1, int(os.environ.get(name, default)))
    except ValueError:
        return default


MAX_RUNNING = _env_int("RESVIZ_MAX_JOBS", 2)
MAX_KEPT = _env_int("RESVIZ_MAX_RESULTS", 32)
TIME_BUDGET_S = _env_int("RESVIZ_TIME_BUDGET_S", 300)
POLL_S = 0.5


@dataclass
class Job:
    key: Hashable
    label: str
    total: int
    time_budget: float
    state: State = "queued"
    step: int = 0
    frame: Any = None
    result: Any = None
    error: str | None = None
    note: str | None = None
    created: float = field(default_factory=time.monotonic)
    started: float | None = None
    finished: float | None = None
    stop_event: threading.Event = field(default_factory=threading.Event)
    subscribers: set[str] = field(default_factory=set)
    halted: bool = False

    @property
    def live(self) -> bool:
        return self.state in ("queued", "running")

    @property
    def elapsed(self) -> float:
        if self.started is None:
            return 0.0
        return (self.finished or time.monotonic()) - self.started


def _session_alive(session_id: str) -> bool:
    return st_internals.session_alive(session_id)


class Registry:
    """Server-wide table of background runs (one per process)."""

    def __init__(self, max_running: int = MAX_RUNNING, max_kept: int = MAX_KEPT) -> None:
        self._lock = threading.Lock()
        self._jobs: OrderedDict[Hashable, Job] = OrderedDict()
        self._slots = threading.Semaphore(max_running)
        self.max_running = max_running
        self.max_kept = max_kept

    # ------------------------------------------------------------- queries
    def get(self, key: Hashable) -> Job | None:
        with self._lock:
            job = self._jobs.get(key)
            if job is not None:
                self._jobs.move_to_end(key)
            return job

    def running(self) -> list[Job]:
        with self._lock:
            return [j for j in self._jobs.values() if j.live]

    def queued_ahead(self, job: Job) -> int:
        with self._lock:
            return sum(
                1 for j in self._jobs.values() if j.state == "queued" and j.created < job.created
            )

    # ------------------------------------------------------------- control
    def start(
        self,
        key: Hashable,
        work: Work,
        total: int,
        session: str = "",
        label: str = "run",
        time_budget: float = TIME_BUDGET_S,
    ) -> Job:
        """Start ``work(report, should_stop)`` for ``key``, or join the run already there."""
        with self._lock:
            job = self._jobs.get(key)
            if job is not None and job.state in ("queued", "running", "done"):
                job.subscribers.add(session)
                return job
            job = Job(key=key, label=label, total=total, time_budget=time_budget)
            job.subscribers.add(session)
            self._jobs[key] = job
            self._trim()
        threading.Thread(
            target=self._run, args=(job, work), name=f"resviz-{label}", daemon=True
        ).start()
        return job

    def stop(self, key: Hashable, session: str = "") -> None:
        """This session no longer wants the run; it stops when nobody does."""
        with self._lock:
            job = self._jobs.get(key)
            if job is None:
                return
            job.subscribers.discard(session)
            if not job.subscribers:
                job.stop_event.set()

    def subscribe(self, key: Hashable, session: str = "") -> None:
        with self._lock:
            job = self._jobs.get(key)
            if job is not None and job.live:
                job.subscribers.add(session)

    def forget(self, key: Hashable, session: str = "") -> None:
        """Stop (if this session was the last subscriber) and drop the stored result."""
        self.stop(key, session)
        with self._lock:
            job = self._jobs.get(key)
            if job is not None and not job.subscribers:
                del self._jobs[key]

    def wait(self, timeout: float = 60.0) -> bool:
        """Block until no run is live (tests and notebooks). True if everything finished."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if not self.running():
                return True
            time.sleep(0.05)
        return False

    def clear(self) -> None:
        with self._lock:
            for job in self._jobs.values():
                job.stop_event.set()
            self._jobs.clear()

    # ------------------------------------------------------------- internals
    def _trim(self) -> None:
        finished = [k for k, j in self._jobs.items() if not j.live]
        while len(self._jobs) > self.max_kept and finished:
            del self._jobs[finished.pop(0)]

    def _should_stop(self, job: Job) -> bool:
        job.halted = self._halt_reason(job)
        return job.halted

    def _halt_reason(self, job: Job) -> bool:
        if job.stop_event.is_set():
            job.note = job.note or "stopped by request"
            return True
        if job.elapsed > job.time_budget:
            job.note = f"stopped at the time budget of {job.time_budget:.0f} s"
            return True
        with self._lock:
            sessions = [s for s in job.subscribers if s]
        if sessions and not any(_session_alive(s) for s in sessions):
            job.note = "stopped: every session that asked for it has closed"
            return True
        return False

    def _run(self, job: Job, work: Work) -> None:
        while not self._slots.acquire(timeout=0.2):
            if job.stop_event.is_set():
                job.state, job.note = "stopped", "stopped before it started"
                job.finished = time.monotonic()
                return
        job.state, job.started = "running", time.monotonic()

        def report(frame: Any, step: int, total: int) -> None:
            job.frame, job.step, job.total = frame, step, total

        try:
            result = work(report, lambda: self._should_stop(job))
            job.result = result
            job.frame = result if job.frame is None else job.frame
            stopped = bool(getattr(result, "attrs", {}).get("stopped")) or job.halted
            job.state = "stopped" if stopped else "done"
            if job.state == "done":
                job.step = job.total
        except Exception as exc:  # noqa: BLE001 - logged, summarised on the page, never re-raised
            job.error = f"{type(exc).__name__}: {exc}"
            _LOG.exception("background run failed")  # the trace goes to the log, not the page
            job.state = "failed"
        finally:
            job.finished = time.monotonic()
            self._slots.release()
            with self._lock:
                self._trim()


REGISTRY = Registry()


def session_id() -> str:
    return st_internals.session_id()


def panel(
    name: str,
    key: Hashable,
    work: Work,
    total: int,
    render: Callable[[Job], None],
    *,
    start_label: str = "Train",
    autostart: bool = False,
    blocked: str | None = None,
    unit: str = "step",
) -> Job | None:
    """Start / Stop / Reset controls and a live view of the run for ``key``.

    ``render(job)`` draws the charts from ``job.frame`` (partial, while live)
    or ``job.result`` (final). It runs inside a fragment that reruns every
    ``POLL_S`` seconds while the job is live. ``blocked`` (a message) disables
    Start, e.g. when the configuration is over budget. Returns the job once
    it has finished (done or stopped), else None.
    """
    sid = session_id()
    units = unit + ("es" if unit.endswith("s") else "s")  # steps, blocks, passes
    seen_key = f"_job_seen:{name}"
    dismissed = st.session_state.setdefault("_job_dismissed", set())

    # Callbacks run before the script, so the buttons below are drawn with the
    # state the click produced.
    def on_start() -> None:
        dismissed.discard(key)
        REGISTRY.start(key, work, total, sid, label=name)

    def on_stop() -> None:
        REGISTRY.stop(key, sid)

    def on_reset() -> None:
        REGISTRY.forget(key, sid)
        dismissed.add(key)

    job = REGISTRY.get(key)
    if job is None and autostart and not blocked and key not in dismissed:
        job = REGISTRY.start(key, work, total, sid, label=name)
    elif job is not None and job.live:
        REGISTRY.subscribe(key, sid)
    b1, b2, b3, info = st.columns([1, 1, 1, 4], vertical_alignment="center")
    b1.button(
        start_label,
        key=f"{name}:start",
        type="primary",
        disabled=bool(blocked) or bool(job and job.live),
        icon=":material/play_arrow:",
        on_click=on_start,
    )
    b2.button(
        "Stop",
        key=f"{name}:stop",
        disabled=not (job and job.live),
        icon=":material/stop:",
        on_click=on_stop,
    )
    b3.button(
        "Reset",
        key=f"{name}:reset",
        disabled=job is None,
        icon=":material/restart_alt:",
        on_click=on_reset,
    )
    if blocked:
        from .views import over_budget

        over_budget(blocked)
    if job is None:
        info.caption(f"Press **{start_label}** to run it here (progress shows as it goes).")
        return None

    was_live = job.live

    @st.fragment(run_every=POLL_S if was_live else None)
    def live() -> None:
        current = REGISTRY.get(key)
        if current is None:
            return
        if current.live:
            ahead = REGISTRY.queued_ahead(current) if current.state == "queued" else 0
            text = (
                f"Queued: {ahead} run(s) ahead of it on this server."
                if current.state == "queued"
                else f"{current.label}: {unit} {current.step} of {current.total} "
                f"({current.elapsed:.1f} s)"
            )
            st.progress(min(current.step / max(current.total, 1), 1.0), text=text)
        elif st.session_state.get(seen_key) != (key, current.state, current.finished):
            # The job ended since the last full run: rerun the page so polling
            # stops and the final views (outside this fragment) are drawn.
            st.session_state[seen_key] = (key, current.state, current.finished)
            if current is not job or was_live:
                st.rerun()
        if current.state == "failed":
            kind = (current.error or "Error").split(":", 1)[0]
            st.error(
                f"The run failed ({kind}); the details are in the server log.",
                icon=":material/error:",
            )
            return
        if current.state == "stopped":
            st.warning(
                f"{current.label} {current.note or 'stopped'} after {current.step} of "
                f"{current.total} {units}; the curves below are partial.",
                icon=":material/pause_circle:",
            )
        elif current.state == "done":
            st.caption(f"Finished {current.total} {units} in {current.elapsed:.1f} s.")
        if current.frame is not None or current.result is not None:
            render(current)

    live()
    return job if not job.live else None
