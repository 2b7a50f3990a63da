"""The normalization page: measured numbers on the page, widgets, both training panels."""

import ui.jobs
from resviz.charts import DIVERGED_LEGEND
from tests.app.conftest import clean, find_metric, find_table, open_section

PAGE = "app_pages/normalization.py"


def test_default_view_is_the_four_views_alone(app):
    at = app(PAGE).run()
    clean(at)
    # Four heatmaps and the histograms: no other section computes or draws.
    assert len(at.get("vega_lite_chart")) == 5
    assert not at.metric
    stats = find_table(at, "view", "LayerNorm").set_index("view")
    assert stats.loc["LayerNorm", "token_mean_absmax"] < 1e-5
    assert abs(stats.loc["BatchNorm", "feature_std_max"] - 1) < 1e-3
    assert not any(b.key == "warmup:start" for b in at.button)


def test_each_section_shows_measured_numbers(app):
    at = app(PAGE, section="Textbook LayerNorm").run()
    clean(at)
    measured = float(find_metric(at, "measured max").value)
    predicted = float(find_metric(at, "predicted").value)
    assert measured > 0.01 and abs(measured - predicted) < 1e-4
    at = open_section(at, "Invariances")
    clean(at)
    inv = find_table(at, "transformation", "re-centre the weights W")
    recentre = inv[inv["transformation"] == "re-centre the weights W"].iloc[0]
    assert recentre["LayerNorm"] < 1e-5 and recentre["RMSNorm"] > 1e-2
    at = open_section(at, "Pre-LN vs Post-LN")
    clean(at)
    grads = find_table(at, "variant", "Pre-LN")
    pre = grads[grads["variant"] == "Pre-LN"].set_index("n_layers")["ratio_to_L1"]
    post = grads[grads["variant"] == "Post-LN"].set_index("n_layers")["ratio_to_L1"]
    assert pre[8] < 0.75 and 0.7 < post[8] < 1.5  # measured: Pre-LN 0.44-0.47, Post-LN 0.91-1.02
    # Nothing trains until asked.
    at = open_section(at, "Warm-up")
    assert at.button(key="warmup:start").disabled is False
    at = open_section(at, "Stability")
    assert at.button(key="stability:stop").disabled is True


def test_every_section_opens_and_a_switch_keeps_the_input_settings(app):
    from ui.specs.normalization import INPUT_SECTIONS, SPEC

    at = app(PAGE, d="16", batch="4").run()
    for label in SPEC.sections:
        open_section(at, label)
        clean(at)
        if label in INPUT_SECTIONS:
            assert at.selectbox(key="normalization:d").value == "16"
            assert at.query_params["d"] == "16"
        else:
            assert not any(s.key == "normalization:d" for s in at.selectbox)


def test_url_sets_widgets_and_bad_values_warn(app):
    url = dict(layers="4", init="default", s_norm="rms", s_pos="post", d="16")
    at = app(PAGE, section="Pre-LN vs Post-LN", **url).run()
    clean(at)
    assert at.slider(key="normalization:layers").value == 4
    assert not at.warning
    at = open_section(at, "Stability")
    assert at.selectbox(key="normalization:s_norm").value == "rms"
    assert at.query_params["d"] == "16"  # a hidden section's setting stays in the URL
    # A bad value is reported when its section opens, and falls back to the default.
    bad = app(PAGE, section="Invariances", layers="99", s_pos="middle", shift="nan").run()
    clean(bad)
    assert "shift" in " ".join(w.value for w in bad.warning)
    for section, words in (("Pre-LN vs Post-LN", "outside 1 to 24"), ("Stability", "middle")):
        open_section(bad, section)
        clean(bad)
        assert words in " ".join(w.value for w in bad.warning), section
    assert bad.radio(key="normalization:s_pos").value == "pre"


def test_toggles_and_radio(app):
    at = app(PAGE, section="Stability").run()
    at.toggle(key="normalization:s_norms").set_value(True).run()
    at.toggle(key="normalization:s_place").set_value(True).run()
    at.radio(key="normalization:s_pos").set_value("post").run()
    clean(at)
    assert at.query_params["s_pos"] in ("post", ["post"])
    at = open_section(at, "Cost")
    at.button(key="normalization:remeasure").click().run()
    clean(at)


def test_stability_training_runs_and_finishes(app):
    at = app(PAGE, section="Stability", s_steps="20", s_lr="0.1").run()
    at.button(key="stability:start").click().run()
    assert ui.jobs.REGISTRY.wait(120)
    at.run()
    clean(at)
    summary = find_table(at, "variant", "neither", having="steps_run")
    assert set(summary["variant"]) == {
        "residual + LayerNorm (pre)",
        "residual only",
        "LayerNorm only (pre)",
        "neither",
    }
    assert (summary["steps_run"] <= 20).all()
    models = find_table(at, "variant", "neither", having="parameters").set_index("variant")
    assert list(models.index) == list(summary["variant"])
    assert (
        models.loc["residual + LayerNorm (pre)", "parameters"] > models.loc["neither", "parameters"]
    )
    done = summary[summary["diverged_at"].isna()]
    assert (done["steps_run"] == 20).all()
    assert any("Finished 20 steps" in c.value for c in at.caption)
    _assert_caption_matches_summary(at, summary, "0.1")
    # Each diverged run is marked on both training charts: a dashed rule in the legend.
    bad = summary[summary["diverged_at"].notna()]
    marked = [c.proto.spec for c in at.get("vega_lite_chart") if DIVERGED_LEGEND in c.proto.spec]
    assert len(marked) == (2 if len(bad) else 0)
    assert all('"rule"' in spec for spec in marked)


def _assert_caption_matches_summary(at, summary, lr):
    """The stability caption names exactly the runs the summary table says diverged,
    with their steps and reasons, and the others as not diverged."""
    caption = next(c.value for c in at.caption if "At learning rate" in c.value)
    assert f"At learning rate {lr}: " in caption
    bad = summary[summary["diverged_at"].notna()]
    for r in bad.itertuples():
        assert f"{r.variant} at step {int(r.diverged_at)} ({r.divergence})" in caption
    ok = list(summary.loc[summary["diverged_at"].isna(), "variant"])
    if not len(bad):
        assert "No run diverged" in caption
    elif ok:
        assert caption.endswith("Did not diverge: " + ", ".join(ok) + ".")


def test_stability_caption_when_nothing_diverges(app, monkeypatch):
    # The old caption said "At learning rate 0.1 the unnormalized stacks blow up" at
    # every learning rate; at 0.001 nothing does.
    import ui.views
    from resviz import format_number as num

    seen = {}
    original = ui.views.csv_button

    def record(df, name, label="Download CSV"):
        seen[name] = df
        original(df, name, label)

    monkeypatch.setattr(ui.views, "csv_button", record)
    at = app(PAGE, section="Stability", s_steps="20", s_lr="0.001").run()
    at.button(key="stability:start").click().run()
    assert ui.jobs.REGISTRY.wait(120)
    at.run()
    clean(at)
    summary = find_table(at, "variant", "neither", having="steps_run")
    assert summary["diverged_at"].isna().all()
    _assert_caption_matches_summary(at, summary, "0.001")
    assert "blow up" not in " ".join(c.value for c in at.caption)
    # Each run's first loss and its mean over the last ten steps, read from the data.
    caption = next(c.value for c in at.caption if "At learning rate" in c.value)
    runs = seen["stability_training"]
    for name, run in runs.groupby("variant"):
        loss = run.sort_values("step")["loss"]
        first, last = num(float(loss.iloc[0])), num(float(loss.tail(10).mean()))
        assert f"{name} {first} to {last}" in caption


def test_warmup_training_runs_and_finishes(app):
    at = app(PAGE, section="Warm-up", w_layers="2", w_steps="20", w_warm="10", w_lr="0.005").run()
    at.button(key="warmup:start").click().run()
    assert ui.jobs.REGISTRY.wait(120)
    at.run()
    clean(at)
    summary = find_table(at, "variant", "Post-LN, no warm-up")
    assert set(summary["variant"]) == {
        "Post-LN, no warm-up",
        "Pre-LN, no warm-up",
        "Post-LN, warm-up 10",
        "Pre-LN, warm-up 10",
    }
    assert (summary["steps_run"] == 20).all()
    # Every run starts from the same model and batch: the same first loss, about log(64).
    assert summary["first_loss"].round(4).nunique() <= 2
    assert ((summary["first_loss"] - 4.16).abs() < 0.5).all()
