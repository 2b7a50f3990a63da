"""The gradient-flow page: its numbers, its background runs and its odd corners."""

import pytest

import ui.jobs
from resviz import gradflow as G

PAGE = "pages/gradient_flow.py"


@pytest.fixture(autouse=True)
def fresh_jobs():
    ui.jobs.REGISTRY.clear()
    yield
    ui.jobs.REGISTRY.clear()


def _clean(at):
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def _metric(at, prefix):
    return next(m for m in at.metric if m.label.startswith(prefix))


def _downloads(at):
    return [b.proto.label for b in at.get("download_button")]


def _job(name):
    jobs = [j for j in ui.jobs.REGISTRY._jobs.values() if j.label == name]
    assert len(jobs) == 1
    return jobs[0]


def test_default_view_measures_and_sweeps(app, monkeypatch):
    # Fewer depths keep the test short; tests/unit pins the sweep's numbers.
    monkeypatch.setattr(G, "DEFAULT_DEPTHS", (1, 8, 64))
    at = app(PAGE).run()
    _clean(at)
    plain = float(_metric(at, "||dL/dx_0|| / ||dL/dx_L||, plain").value)
    resid = float(_metric(at, "||dL/dx_0|| / ||dL/dx_L||, residual").value)
    assert plain < 0.1 and resid > 0.9
    assert _metric(at, "l^L = 0.5^30").value == "9.313e-10"
    assert float(_metric(at, "measured ||dL/dx_0||").value) == pytest.approx(9.313e-10, rel=0.01)
    # Nothing runs in the background until a button asks for it.
    assert not ui.jobs.REGISTRY.running()
    assert len(at.get("vega_lite_chart")) == 8
    at.button(key="gradflow_sweep:start").click().run()
    assert ui.jobs.REGISTRY.wait(120)
    at.run()
    _clean(at)
    sweep = _job("gradflow_sweep")
    assert sweep.state == "done" and len(sweep.result) == 3 * 8
    tanh = sweep.result[sweep.result["activation"] == "tanh"].set_index(["residual", "depth"])
    assert tanh.loc[("none", 64), "gain"] < 1e-10 < tanh.loc[("add", 64), "gain"]
    # 2 + 2 charts at init, 4 sweep panels, 3 + 1 shattered-gradient charts; 9 CSVs.
    assert len(at.get("vega_lite_chart")) == 12
    assert len(_downloads(at)) == 9
    assert any("underflowed float32" in c.value for c in at.caption)


def test_train_button_runs_and_shows_the_result(app):
    at = app(PAGE, steps="20").run()
    at.button(key="gradflow_train:start").click().run()
    assert ui.jobs.REGISTRY.wait(120)
    at.run()
    _clean(at)
    job = _job("gradflow_train")
    assert job.state == "done"
    trace = job.result
    assert set(trace.loss["variant"]) == {"plain: f(x)", "residual: x + f(x)"}
    assert len(trace.layers) == 2 * 20 * 10
    assert any("Finished 20 steps" in c.value for c in at.caption)
    assert "Download per-layer CSV" in _downloads(at)


def test_widget_click_does_not_kill_training_and_stop_works(app):
    at = app(PAGE, steps="1000", train_scaled="true").run()
    at.button(key="gradflow_train:start").click().run()
    job = _job("gradflow_train")
    assert len(job.key[1]) == 3  # plain, residual and the scaled shortcut
    # Clicks elsewhere on the page rerun the script; the run goes on.
    at.slider(key="gradient_flow:block").set_value(5).run()
    at.toggle(key="gradient_flow:bn").set_value(False).run()
    _clean(at)
    assert job.live and not job.stop_event.is_set()
    at.button(key="gradflow_train:stop").click().run()
    assert ui.jobs.REGISTRY.wait(60)
    at.run()
    assert job.state == "stopped" and job.step < 1000
    assert any("partial" in w.value for w in at.warning)
    at.button(key="gradflow_train:reset").click().run()
    assert ui.jobs.REGISTRY.get(job.key) is None


def test_section_controls(app):
    at = app(PAGE, block="50", depth="4").run()
    _clean(at)
    # The inspected block is clamped to the depth.
    assert any("block 4's Jacobians" in c.value for c in at.caption)
    at.radio(key="gradient_flow:measure").set_value("||dL/dW_1||").run()
    _clean(at)
    at.slider(key="gradient_flow:l").set_value(0.0).run()
    _clean(at)
    assert _metric(at, "relative difference").value == "undefined"
    at.slider(key="gradient_flow:l").set_value(1.0).run()
    at.slider(key="gradient_flow:L").set_value(10).run()
    assert float(_metric(at, "measured ||dL/dx_0||").value) == pytest.approx(1.0, abs=2e-3)
    at.toggle(key="gradient_flow:bn").set_value(False).run()
    _clean(at)
    assert at.dataframe[-1].value.shape[0] == 3


def test_training_over_budget_is_refused(app, monkeypatch):
    monkeypatch.setenv("RESVIZ_MAX_GFLOP", "1")
    at = app(PAGE, steps="500").run()
    assert not at.exception
    assert any("over this server's budget" in e.value for e in at.error)
    assert at.button(key="gradflow_train:start").disabled
