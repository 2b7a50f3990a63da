"""The background-run registry: sharing, stopping, budgets, failures, queueing."""

import time

from ui.jobs import Registry


def counter(n: int, delay: float = 0.01):
    def work(report, should_stop):
        out = []
        for i in range(n):
            if should_stop():
                break
            time.sleep(delay)
            out.append(i)
            report(list(out), i + 1, n)
        return out

    return work


def test_run_completes_and_reports_progress():
    reg = Registry(max_running=2)
    job = reg.start("a", counter(10), 10, "s1")
    assert reg.wait(10)
    assert job.state == "done" and job.result == list(range(10)) and job.step == 10


def test_identical_key_is_shared_not_recomputed():
    reg = Registry()
    calls = []

    def work(report, should_stop):
        calls.append(1)
        time.sleep(0.2)
        return 42

    a = reg.start("k", work, 1, "s1")
    b = reg.start("k", work, 1, "s2")
    assert a is b and a.subscribers == {"s1", "s2"}
    reg.wait(10)
    c = reg.start("k", work, 1, "s3")  # finished results are served, not rerun
    assert c is a and len(calls) == 1 and c.result == 42


def test_stop_waits_for_every_subscriber():
    reg = Registry()
    job = reg.start("k", counter(1000), 1000, "s1")
    reg.start("k", counter(1000), 1000, "s2")
    reg.stop("k", "s1")
    time.sleep(0.1)
    assert job.live  # s2 still wants it
    reg.stop("k", "s2")
    assert reg.wait(10)
    assert job.state == "stopped" and 0 < job.step < 1000 and "request" in job.note


def test_time_budget_stops_a_long_run():
    reg = Registry()
    job = reg.start("k", counter(1000), 1000, "s1", time_budget=0.2)
    assert reg.wait(10)
    assert job.state == "stopped" and "time budget" in job.note


def test_failure_is_captured_with_its_message():
    reg = Registry()

    def boom(report, should_stop):
        raise ValueError("width must be positive")

    job = reg.start("k", boom, 1, "s1")
    reg.wait(10)
    assert job.state == "failed" and "width must be positive" in job.error
    again = reg.start("k", counter(2), 2, "s1")  # a failed run can be retried
    reg.wait(10)
    assert again is not job and again.state == "done"


def test_runs_beyond_the_limit_queue():
    reg = Registry(max_running=1)
    first = reg.start("a", counter(20, 0.02), 20, "s1")
    second = reg.start("b", counter(2), 2, "s1")
    time.sleep(0.1)
    assert first.state == "running" and second.state == "queued"
    assert reg.queued_ahead(second) == 0
    assert reg.wait(10)
    assert second.started >= first.finished


def test_results_are_bounded_and_forget_drops():
    reg = Registry(max_kept=3)
    for i in range(6):
        reg.start(i, counter(1, 0), 1, "s")
        reg.wait(10)
    assert [k for k in range(6) if reg.get(k)] == [3, 4, 5]
    reg.forget(5, "s")
    assert reg.get(5) is None


def test_a_run_stops_when_every_session_that_asked_has_closed(monkeypatch):
    from ui import jobs

    alive = {"s1": True}
    monkeypatch.setattr(jobs, "_session_alive", lambda sid: alive.get(sid, False))
    reg = Registry()
    job = reg.start("k", counter(1000, 0.01), 1000, "s1")
    time.sleep(0.1)
    assert job.live
    alive["s1"] = False  # the tab was closed: the runtime no longer knows the session
    assert reg.wait(10)
    assert job.state == "stopped" and "closed" in job.note and job.step < 1000


# ------------------------------------------------------------- the kit's background
def _live_section_script():
    """A section whose live view writes a notebook cell (as a chart does): the kit's
    ``Section.background`` with ``record_live``, its own ``key`` and a ``progress``
    wrapper."""
    import pandas as pd
    import streamlit as st

    from resviz.core import Result
    from ui.section import Section

    def count(n: int = 3, *, progress=None, should_stop=None) -> Result:
        for i in range(n):
            if progress is not None:
                progress(Result({"rows": pd.DataFrame({"i": range(i + 1)})}), i + 1, n)
        return Result({"rows": pd.DataFrame({"i": range(n)})}, {"n": n})

    def wrapped(report):
        return lambda frame, step, total: report(("wrapped", frame), step, total)

    sec = Section("Kit", "Count")

    def render(job) -> None:
        sec.code(f"# drawn: {job.state}")

    r = sec.background(
        "kit_count",
        count,
        {"n": 3},
        3,
        render,
        record_live=True,
        key=("kit", "count", 3),
        progress=wrapped,
    )
    st.session_state["kit_result"] = None if r is None else len(r.rows)
    st.session_state["kit_cells"] = [c["source"] for c in sec.notebook.cells[2:]]


def test_background_records_a_live_run_before_the_cells_its_view_writes(fresh_jobs):
    from streamlit.testing.v1 import AppTest

    import ui.jobs

    at = AppTest.from_function(_live_section_script, default_timeout=60).run()
    # Not run yet: no result, and the notebook holds the call to run.
    assert at.session_state["kit_result"] is None
    assert len(at.session_state["kit_cells"]) == 1
    assert "count(" in at.session_state["kit_cells"][0]
    at.button(key="kit_count:start").click().run()
    assert ui.jobs.REGISTRY.wait(30)
    at.run()
    # Keyed as the section said, and its reports went through the wrapper.
    job = ui.jobs.REGISTRY.get(("kit", "count", 3))
    assert job is not None and job.state == "done" and job.frame[0] == "wrapped"
    # Finished: the call that made r, then the cells the live view wrote, once each.
    cells = at.session_state["kit_cells"]
    assert at.session_state["kit_result"] == 3
    assert len(cells) == 2 and "count(" in cells[0] and "n=3" in cells[0]
    assert cells[1] == "# drawn: done"
