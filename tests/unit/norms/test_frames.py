"""The frames the normalization page charts and tables, built by resviz.norms (so the
page and its notebooks share them), and the two generic charts behind them."""

import altair as alt
import pandas as pd
import pytest

import resviz as rv
from resviz import norms as N

pytestmark = pytest.mark.usefixtures("one_thread")


def test_half_means_are_the_halves_of_sample_0():
    x = N.scaled_batch(4, 8, 16, 10.0, 0.1, 0)
    frame = N.norm_views(N.apply_norms(x), 0)
    first, second = N.half_means(frame, "raw")
    assert first == pytest.approx(float(x[0, :, :8].abs().mean()), rel=1e-6)
    assert second == pytest.approx(float(x[0, :, 8:].abs().mean()), rel=1e-6)
    assert set(N.VIEW_TITLES) == set(N.VIEWS)


def test_gap_and_invariance_frames_keep_every_value():
    x = N.scaled_batch(2, 4, 16, seed=1)
    gap = N.layernorm_gap(x)
    long = N.gap_long(gap)
    assert len(long) == 2 * len(gap) and set(long["what"]) == {"measured", "predicted"}
    assert long[long["what"] == "measured"]["gap"].tolist() == gap["measured"].tolist()
    inv = N.invariance_table(2, 4, 16)
    wide = N.invariance_wide(inv)
    assert list(wide.columns) == ["transformation", "measured_on", *N.INVARIANCE_NORMS]
    assert len(wide) == len(inv) // len(N.INVARIANCE_NORMS)
    row = inv[(inv["norm"] == "RMSNorm") & (inv["transformation"] == "re-centre the weights W")]
    got = wide[wide["transformation"] == "re-centre the weights W"]["RMSNorm"]
    assert got.tolist() == row["max_abs_change"].tolist()


def test_batch_values_shown_is_one_mode_and_the_first_features():
    values, _ = N.batch_dependence()
    shown = N.batch_values_shown(values, "eval", 16)
    assert set(shown["mode"]) == {"eval"} and shown["feature"].max() == 15
    assert set(shown["scenario"]) == set(values[values["mode"] == "eval"]["scenario"])


def test_xiong_depths_and_the_ratio_lines():
    assert N.xiong_depths(1) == (1,)
    assert N.xiong_depths(8) == (1, 2, 4, 8)
    assert N.xiong_depths(12) == (1, 2, 4, 8, 12)
    with pytest.raises(ValueError):
        N.xiong_depths(0)
    grads = N.prepost_grads(4, 32, 0)
    assert set(grads["n_layers"]) == {1, 2, 4} and set(grads["seed"]) == {0, 1, 2}
    lines = N.grad_ratio_lines(N.grad_summary(grads))
    assert set(lines["variant"]) == {"Post-LN", "Pre-LN", "1/sqrt(L)"}
    ref = lines[lines["variant"] == "1/sqrt(L)"].set_index("n_layers")["ratio_to_L1"]
    assert ref[4] == pytest.approx(0.5)


def test_variant_table_counts_the_parameters_of_the_built_models():
    for variants in (N.stability_variants("rms", "post"), N.warmup_variants(2, 32)):
        table = N.variant_table(variants).set_index("variant")
        assert list(table.index) == list(variants)
        for name, cfg in variants.items():
            built = sum(p.numel() for p in rv.build(cfg).parameters())
            assert table.loc[name, "parameters"] == built
            assert table.loc[name, "residual"] in ("add", "none")
    stab = N.variant_table(N.stability_variants("layer", "pre")).set_index("variant")
    assert stab.loc["neither", "placement"] == "" and stab.loc["neither", "norm"] == "no norm"


def test_grid_heatmap_draws_small_grids_as_cells_and_large_ones_as_a_picture():
    small = pd.DataFrame({"x": [0, 1, 0, 1], "y": [0, 0, 1, 1], "v": [1.0, -1.0, 0.5, 0.0]})
    assert isinstance(rv.charts.grid_heatmap(small, "x", "y", "v"), alt.Chart)
    big = rv.charts.grid_heatmap(small, "x", "y", "v", max_cells=3)
    assert isinstance(big, alt.LayerChart)
    hist = N.norm_histograms(N.apply_norms(N.scaled_batch(2, 4, 16)))
    chart = rv.charts.histograms(hist, "view", sort=list(N.VIEWS))
    spec = chart.to_dict()
    assert spec["facet"]["field"] == "view" and spec["columns"] == 2
