"""The gradient-flow page: its numbers, its background runs and its odd corners."""

import re

import numpy as np
import pytest

import resviz as rv
import ui.jobs
from resviz import gradients as G
from resviz.recipes import MEASURES
from tests.app.conftest import (
    chart_frames,
    clean,
    find_caption_with,
    find_job,
    find_metric,
    open_section,
)

PAGE = "app_pages/gradient_flow.py"
pytestmark = pytest.mark.usefixtures("fresh_jobs")


def _downloads(at):
    return [b.proto.label for b in at.get("download_button")]


def test_first_view_is_light_and_measures(app):
    at = app(PAGE).run()
    clean(at)
    plain = float(find_metric(at, "||dL/dx_0|| / ||dL/dx_L||, plain").value)
    resid = float(find_metric(at, "||dL/dx_0|| / ||dL/dx_L||, residual").value)
    assert plain < 0.1 and resid > 0.9
    # Only the first section draws: its two charts, their CSVs and its notebook.
    assert len(at.get("vega_lite_chart")) == 2
    assert _downloads(at) == ["Download CSV", "Download CSV", "Reproduce in a notebook"]
    assert len(at.metric) == 2
    open_section(at, "Derivation")
    clean(at)
    assert find_metric(at, "l^L = 0.5^30").value == "9.313e-10"
    assert float(find_metric(at, "measured ||dL/dx_0||").value) == pytest.approx(
        9.313e-10, rel=0.01
    )
    assert len(at.get("vega_lite_chart")) == 2  # the spectrum and the scaled shortcut
    # Nothing runs in the background until a button asks for it.
    assert not ui.jobs.REGISTRY.running()


def test_sweep_button_runs_and_shows_the_result(app, monkeypatch):
    # Fewer depths keep the test short; tests/unit pins the sweep's numbers.
    monkeypatch.setattr(G, "DEFAULT_DEPTHS", (1, 8, 64, 100))
    at = app(PAGE, section="Depth sweep").run()
    clean(at)
    assert len(at.get("vega_lite_chart")) == 0
    at.button(key="gradflow_sweep:start").click().run()
    assert ui.jobs.REGISTRY.wait(120)
    at.run()
    clean(at)
    job = find_job("gradflow_sweep")
    sweep = job.result.sweep
    assert job.state == "done" and len(sweep) == 4 * 8
    tanh = sweep[sweep["activation"] == "tanh"].set_index(["residual", "depth"])
    assert tanh.loc[("none", 64), "gain"] < 1e-10 < tanh.loc[("add", 64), "gain"]
    # float64: the plain tanh stack of 100 blocks passes back 1.5e-26 of its output's
    # gradient, which float32 showed as "exactly 0" (9 of the sweep's points were).
    assert tanh.loc[("none", 100), "gain"] == pytest.approx(1.5e-26, rel=0.1)
    assert (sweep[["gain", "first_weight_grad"]] > 0).all().all()
    assert len(at.get("vega_lite_chart")) == 4  # a panel per activation
    assert _downloads(at) == ["Download CSV", "Reproduce in a notebook"]
    note = find_caption_with(at, "Each point is a fresh stack")
    assert "one backward pass in float64" in note and "No point is 0" in note
    assert not any("float32" in c.value for c in at.caption)
    # The sweep sets depth and activation itself: they are not drawn, and do not key it.
    assert not [s for s in at.slider if s.key == "gradient_flow:depth"]
    assert dict(job.key[1]) == {"width": 64, "init": "default", "norm": "none", "seed": 0}


def test_train_button_runs_and_shows_the_result(app):
    at = app(PAGE, section="Training", steps="20").run()
    at.button(key="gradflow_train:start").click().run()
    assert ui.jobs.REGISTRY.wait(120)
    at.run()
    clean(at)
    job = find_job("gradflow_train")
    assert job.state == "done"
    trace = job.result
    assert not trace.stopped and trace.steps == 20
    assert set(trace.loss["variant"]) == {"plain: f(x)", "residual: x + f(x)"}
    assert len(trace.layers) == 2 * 20 * 10
    assert any("Finished 20 steps" in c.value for c in at.caption)
    assert "Download per-layer CSV" in _downloads(at)
    assert len(at.get("vega_lite_chart")) == 3  # the loss and a heatmap per stack


def test_widget_click_does_not_kill_training_and_stop_works(app):
    at = app(PAGE, section="Training", steps="1000", train_scaled="true").run()
    at.button(key="gradflow_train:start").click().run()
    job = find_job("gradflow_train")
    assert dict(job.key[1])["train_scaled"] and dict(job.key[1])["l"] == 0.5
    # Clicks in other sections rerun the script; the run goes on.
    open_section(at, "Derivation")
    at.slider(key="gradient_flow:block").set_value(5).run()
    open_section(at, "Shattered")
    at.toggle(key="gradient_flow:bn").set_value(False).run()
    clean(at)
    assert job.live and not job.stop_event.is_set()
    open_section(at, "Training")
    at.button(key="gradflow_train:stop").click().run()
    assert ui.jobs.REGISTRY.wait(60)
    at.run()
    assert job.state == "stopped" and job.step < 1000
    assert any("partial" in w.value for w in at.warning)
    at.button(key="gradflow_train:reset").click().run()
    assert ui.jobs.REGISTRY.get(job.key) is None


def test_the_shortcut_scale_is_shared_by_derivation_and_training(app):
    at = app(PAGE, section="Derivation", l="0.8").run()
    clean(at)
    assert find_metric(at, "l^L = 0.8^30")
    open_section(at, "Training")
    # Drawn while the scaled stack is trained, with the derivation's value.
    assert not [s for s in at.slider if s.key == "gradient_flow:l"]
    at.toggle(key="gradient_flow:train_scaled").set_value(True).run()
    assert at.slider(key="gradient_flow:l").value == 0.8
    at.slider(key="gradient_flow:l").set_value(1.0).run()
    assert at.query_params["l"] in ("1", ["1"])
    open_section(at, "Derivation")
    assert find_metric(at, "l^L = 1^30")


def test_section_controls(app):
    at = app(PAGE, section="Derivation", block="50", depth="4").run()
    clean(at)
    # The inspected block is clamped to the depth.
    assert any("block 4's Jacobians" in c.value for c in at.caption)
    at.slider(key="gradient_flow:l").set_value(0.0).run()
    clean(at)
    assert find_metric(at, "measured / l^L").value == "undefined (l^L = 0)"
    cap = find_caption_with(at, "One backward pass (in float64)")
    assert "l = 0 is a plain stack: the identity term is exactly 0" in cap
    # The identity curve is 0 at every x_l but the output: triangles, counted.
    assert f"{int(at.session_state['gradient_flow:L'])} value(s) are exactly 0" in cap
    at.slider(key="gradient_flow:l").set_value(1.0).run()
    at.slider(key="gradient_flow:L").set_value(10).run()
    assert float(find_metric(at, "measured ||dL/dx_0||").value) == pytest.approx(1.0, abs=2e-3)
    open_section(at, "Depth sweep")
    at.radio(key="gradient_flow:measure").set_value("||dL/dW_1||").run()
    clean(at)
    open_section(at, "Shattered")
    at.toggle(key="gradient_flow:bn").set_value(False).run()
    clean(at)
    assert at.dataframe[-1].value.shape[0] == 3


def test_training_over_budget_is_refused(app, monkeypatch):
    monkeypatch.setenv("RESVIZ_MAX_GFLOP", "1")
    at = app(PAGE, section="Training", steps="500").run()
    assert not at.exception
    assert any("over this server's budget" in e.value for e in at.error)
    assert at.button(key="gradflow_train:start").disabled


def test_lesson_measure_answers_from_the_numbers_shown(app):
    settings = {"depth": 50, "act": "relu", "norm": "layer"}
    at = app(PAGE, **{k: str(v) for k, v in settings.items()}).run()
    clean(at)
    plain = float(find_metric(at, "||dL/dx_0|| / ||dL/dx_L||, plain").value)
    resid = float(find_metric(at, "||dL/dx_0|| / ||dL/dx_L||, residual").value)
    out = MEASURES["gradflow_input_gradient"].at(settings, 0)
    assert out.answer == ("plain" if plain > resid else "residual") == "plain"
    assert f"is {rv.format_number(plain)} in the plain stack" in out.sentence


def test_derivation_states_what_holds_for_the_settings_on_screen(app):
    # With near-zero branches and no norm layer the measurement agrees with l^L ...
    at = app(PAGE, section="Derivation").run()
    clean(at)
    measured = float(find_metric(at, "measured ||dL/dx_0||").value)
    assert measured == pytest.approx(0.5**30, rel=0.01)
    cap = find_caption_with(at, "One backward pass (in float64)")
    assert "At x_0 the measurement agrees with l^L (9.31e-10) within" in cap, cap
    assert "nearly all that is left" in cap
    # ... but a norm layer before each branch is not small next to l: the old page said
    # the gain "differs from l^L by" a percentage and that the identity term is all.
    at = app(PAGE, section="Derivation", norm="layer").run()
    clean(at)
    measured = float(find_metric(at, "measured ||dL/dx_0||").value)
    ratio = float(find_metric(at, "measured / l^L").value)
    assert measured > 1e-4 and ratio > 1e5
    cap = find_caption_with(at, "One backward pass (in float64)")
    assert f"At x_0 the measurement is {rv.format_number(ratio, 3)} times l^L" in cap, cap
    assert "A layer norm sits before every branch here" in cap
    assert "nearly all that is left" not in cap
    # Without near-zero branches the argument does not hold either, and says so.
    at = app(PAGE, section="Derivation", small="false").run()
    clean(at)
    cap = find_caption_with(at, "One backward pass (in float64)")
    assert "times l^L" in cap and "are not small next to the identity term" in cap, cap


def test_a_gradient_under_float64s_range_is_printed_not_zero(app):
    # Width 2, LayerNorm, kaiming tanh, 100 blocks: the plain stack passes back about
    # 1e-419 of its output gradient. The float64 page printed 0 and said the curve
    # "falls ... to exactly 0"; measured in log space it prints the number.
    at = app(PAGE, depth="100", width="2", act="tanh", init="kaiming", norm="layer").run()
    clean(at)
    plain = find_metric(at, "||dL/dx_0|| / ||dL/dx_L||, plain").value
    m = re.fullmatch(r"(\d(?:\.\d+)?)e(-\d+)", plain)
    assert m and -450 < int(m[2]) < -350, plain
    cap = find_caption_with(at, "The gradient with respect to the stream itself")
    m = re.search(r"falls by a factor of [\d.]+e(\d+), from [\d.]+ to [\d.]+e(-\d+) without", cap)
    assert m and int(m[1]) > 350 and int(m[2]) < -350, cap
    assert "exactly 0" not in cap and "triangles" not in cap
    # The chart draws it where it is: a log10 of about -419, not a triangle at the bottom.
    frames = [f for f in chart_frames(at) if "log10_act_grad" in f.columns]
    assert frames and frames[0]["log10_act_grad"].min() < -350
    assert (frames[0]["status"] == "ok").all()


def test_sweep_words_zeros_only_where_the_gradient_is_zero(app, monkeypatch):
    # Width 2 with a LayerNorm: some deep plain stacks pass back less than float64 can
    # hold (printed as 0 and "exactly 0" before), and ReLU stacks whose units are all
    # inactive pass back exactly 0. The captions tell the two apart.
    monkeypatch.setattr(G, "DEFAULT_DEPTHS", (1, 50, 100))
    at = app(PAGE, section="Depth sweep", width="2", norm="layer").run()
    at.button(key="gradflow_sweep:start").click().run()
    assert ui.jobs.REGISTRY.wait(120)
    at.run()
    clean(at)
    sweep = find_job("gradflow_sweep").result.sweep
    tiny = sweep[np.isfinite(sweep["log10_gain"]) & (sweep["log10_gain"] < -307)]
    assert len(tiny) and (tiny["gain"] == 0).all()  # no float holds them ...
    caps = [c.value for c in at.caption if c.value.startswith("plain (depth 1 to 100)")]
    assert len(caps) == 4
    seen_tiny = False
    for act, cap in zip(("tanh", "sigmoid", "relu", "gelu"), caps, strict=True):
        for variant in ("plain", "residual"):
            g = sweep[(sweep["activation"] == act) & (sweep["variant"] == variant)]
            words = cap.split(f"{variant} (depth 1 to 100): ")[1].split(";")[0]
            last = g.sort_values("depth")["log10_gain"].iloc[-1]
            # ... and are worded as numbers: "exactly 0" only for a true 0.
            assert ("to exactly 0" in words) == (last == -np.inf), (act, variant, words)
            seen_tiny |= bool(np.isfinite(last) and last < -307)
    assert seen_tiny  # a curve ending under float64's range, worded with its number
    zeros = int((~np.isfinite(sweep["log10_gain"])).sum())
    note = find_caption_with(at, "Each point is a fresh stack")
    assert (f" {zeros} point(s) are exactly 0" in note) if zeros else ("No point is 0" in note)


def test_a_stack_whose_float64_measurement_is_over_budget_is_refused_with_its_numbers(app):
    """The gradient measurements cast the stack to float64: 100 x 512 would need about
    300 MB (weights, activations and their gradients), over the 256 MB budget."""
    for section in ("Per layer", "Derivation"):
        at = app("app_pages/gradient_flow.py", section=section, depth="100", width="512").run()
        assert not at.exception
        (err,) = [e.value for e in at.error]
        assert "float64 gradient measurement" in err and "over this server's budget" in err
        assert not at.get("vega_lite_chart")
    at = app("app_pages/gradient_flow.py", depth="100", width="384").run()
    assert not at.error and at.get("vega_lite_chart")
