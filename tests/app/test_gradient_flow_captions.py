"""The gradient-flow page's captions state what was measured, in settings where the
sentences they replace ("residual stacks stay within a factor of ten or so over a hundred
blocks", "with shortcuts it stays within a small factor", "adding I lifts every singular
value to about 1", "plain depth 50 drops to about 0 at lag 1") were false."""

import re

import pytest

import ui.jobs
from resviz import gradients as G
from resviz.recipes import gradients as R
from tests.app.conftest import NUM, clean, find_caption, find_job, find_metric, open_section

PAGE = "app_pages/gradient_flow.py"
pytestmark = pytest.mark.usefixtures("fresh_jobs")


def test_relu_kaiming_captions_say_the_gradient_grows(app):
    at = app(PAGE, act="relu", init="kaiming").run()
    clean(at)
    gain = float(find_metric(at, "||dL/dx_0|| / ||dL/dx_L||, residual").value)
    assert gain > 100  # far from "within a small factor"
    cap = find_caption(at, "The gradient with respect to the stream itself")
    m = re.search(rf"it grows by a factor of {NUM}, from {NUM} to {NUM} with shortcuts", cap)
    assert m, cap
    assert float(m[1]) == pytest.approx(gain, rel=0.03)
    assert float(m[3]) / float(m[2]) == pytest.approx(gain, rel=0.03)

    # The Jacobian captions quote the table beside them.
    open_section(at, "Derivation")
    clean(at)
    table = next(
        df.value for df in at.dataframe if "||block Jacobian||" in df.value.columns
    ).set_index("variant")
    resid, plain = table.loc["residual: x + f(x)"], table.loc["plain: f(x)"]
    cap = find_caption(at, "Spectral norms (largest singular value) of block 1")
    m = re.search(rf"here \|\|J\|\| = {NUM} and \|\|I \+ J\|\| = {NUM}\. .*\(here {NUM}\)", cap)
    assert m, cap
    assert float(m[1]) == pytest.approx(resid["||J|| (branch)"], rel=5e-3)
    assert float(m[2]) == pytest.approx(resid["||block Jacobian||"], rel=5e-3)
    assert float(m[3]) == pytest.approx(plain["||block Jacobian||"], rel=5e-3)
    # Not "lifted to about 1": with ||J|| > 1 the spread of I + J is wide, and the
    # largest singular value is the table's norm.
    cap = find_caption(at, "All singular values.")
    m = re.search(rf"those of I \+ J from {NUM} to {NUM}\.", cap)
    assert m, cap
    assert float(m[2]) == pytest.approx(resid["||block Jacobian||"], rel=5e-3)
    assert float(m[1]) < 0.5 < 2 < float(m[2])


def test_tanh_layer_norm_plain_stack_does_not_shrink(app):
    # "A plain tanh or sigmoid stack's gradient shrinks block by block towards the input"
    # is false with a LayerNorm before each block.
    at = app(PAGE, act="tanh", norm="layer").run()
    clean(at)
    cap = find_caption(at, "Weight gradients after one MSE backward pass")
    m = re.search(rf"the plain stack's \|\|dL/dW\|\| stays within a factor of {NUM}", cap)
    assert m and float(m[1]) < 10, cap
    ratio = float(find_metric(at, "||dL/dx_0|| / ||dL/dx_L||, plain").value)
    cap = find_caption(at, "The gradient with respect to the stream itself")
    m = re.search(rf"and (?:stays within|falls by|grows by) .*?from {NUM} to {NUM}\)? without", cap)
    assert m, cap
    # From the output back to the input: the last value over the first is the metric.
    assert float(m[2]) / float(m[1]) == pytest.approx(ratio, rel=0.02)


def test_depth_sweep_captions_quote_the_sweep(app, monkeypatch):
    monkeypatch.setattr(G, "DEFAULT_DEPTHS", (1, 8, 100))
    at = app(PAGE, section="Depth sweep").run()
    at.button(key="gradflow_sweep:start").click().run()
    assert ui.jobs.REGISTRY.wait(120)
    at.run()
    clean(at)
    df = find_job("gradflow_sweep").result.sweep.set_index(["activation", "residual", "depth"])
    df = df["gain"]
    # One caption per activation panel, in the grid's order.
    panel_caps = [c.value for c in at.caption if c.value.startswith("plain (depth 1 to 100)")]
    assert len(panel_caps) == 4
    for act, cap in zip(("tanh", "sigmoid", "relu", "gelu"), panel_caps, strict=True):
        resid = cap.split("residual (depth 1 to 100): ")[1]
        m = re.search(rf"from {NUM} to {NUM}", resid)
        assert m, cap
        assert float(m[1]) == pytest.approx(df[(act, "add", 1)], rel=5e-3)
        assert float(m[2]) == pytest.approx(df[(act, "add", 100)], rel=5e-3)
    relu = panel_caps[2].split("residual (depth 1 to 100): ")[1]
    # The old sentence said "within a factor of ten or so over a hundred blocks".
    m = re.match(rf"grows by a factor of {NUM}", relu)
    assert m and float(m[1]) > 1e3, relu
    assert float(m[1]) == pytest.approx(df[("relu", "add", 100)] / df[("relu", "add", 1)], rel=0.03)
    # The other measure rewords the captions from its own column.
    at.radio(key="gradient_flow:measure").set_value("||dL/dW_1||").run()
    clean(at)
    w = find_job("gradflow_sweep").result.sweep.set_index(["activation", "residual", "depth"])
    panel_caps = [c.value for c in at.caption if c.value.startswith("plain (depth 1 to 100)")]
    m = re.search(rf"from {NUM} to (?:exactly )?{NUM}", panel_caps[0].split(";")[0])
    assert m, panel_caps[0]
    assert float(m[2]) == pytest.approx(w.loc[("tanh", "none", 100), "first_weight_grad"], rel=5e-3)


def test_heatmap_caption_quotes_step_zero(app):
    # With LayerNorm a plain tanh stack's first block is not "decades colder" at step 0.
    at = app(PAGE, section="Training", act="tanh", norm="layer", steps="20").run()
    at.button(key="gradflow_train:start").click().run()
    assert ui.jobs.REGISTRY.wait(120)
    at.run()
    clean(at)
    layers = find_job("gradflow_train").result.layers
    cap = find_caption(at, "Rows are blocks (input side at the top)")
    for variant in ("plain: f(x)", "residual: x + f(x)"):
        at0 = layers[(layers["variant"] == variant) & (layers["step"] == 0)].set_index("block")
        expected = at0["grad_norm"].iloc[0] / at0["grad_norm"].iloc[-1]
        m = re.search(
            rf"(?:is |; ){NUM} times the last block's at step 0 and [^;]*? in {re.escape(variant)}",
            cap,
        )
        assert m, cap
        assert float(m[1]) == pytest.approx(expected, rel=5e-3)
    plain0 = layers[(layers["variant"] == "plain: f(x)") & (layers["step"] == 0)]
    assert plain0["grad_norm"].iloc[0] / plain0["grad_norm"].iloc[-1] > 0.1
    assert "at step 19" in cap


def test_shattered_caption_without_batch_norm(app):
    # Zero biases and no batch norm: df/dx is a step function, whose autocorrelation at
    # lag k is 1 - 2k/256, so no net falls below 0.5 by lag 16 (0.875): plain depth 50
    # does not "drop to about 0 at lag 1".
    at = app(PAGE, section="Shattered").run()
    at.toggle(key="gradient_flow:bn").set_value(False).run()
    clean(at)
    cap = find_caption(at, "The autocorrelation function of each gradient.")
    for variant in ("plain", "residual"):
        for d in (2, 10, 50):
            assert f"{variant} depth {d}: not by lag 16" in cap, cap
    on = app(PAGE, section="Shattered").run()
    cap = find_caption(on, "The autocorrelation function of each gradient.")
    lag1 = next(
        df.value for df in on.dataframe if "plain lag-1 autocorrelation" in df.value.columns
    ).set_index("depth")
    # Wherever the lag-1 correlation is already below 0.5 the caption says lag 1.
    for d, row in lag1.iterrows():
        if row["plain lag-1 autocorrelation"] < 0.5:
            assert f"plain depth {d}: lag 1;" in cap or cap.endswith(f"plain depth {d}: lag 1.")
        else:
            assert f"plain depth {d}: lag 1" not in cap


def test_spectrum_caption_counts_the_zero_singular_values(app):
    # A ReLU branch zeroes the rows of its inactive units: J has exact zero singular
    # values, which I + J does not (the old caption said zeros "are marked" whatever
    # the setting; now it counts them, and says nothing where there are none).
    at = app(PAGE, section="Derivation", act="relu").run()
    clean(at)
    r = R.derivation(act="relu")  # what the section ran, at the same settings
    j = r.spectrum[(r.spectrum["variant"] == "residual: x + f(x)")]
    j = j[j["matrix"] == "branch J"]["sigma"]
    k = int((j <= j.max() * len(j) * 2.220446049250313e-16).sum())
    assert 0 < k < len(j)
    cap = find_caption(at, "All singular values.")
    assert f" {k} of J's {len(j)} singular values are 0 to float64's rounding" in cap, cap
    assert "so I + J passes all of them" in cap
    at = app(PAGE, section="Derivation", act="tanh").run()
    assert "singular values are 0" not in find_caption(at, "All singular values.")
