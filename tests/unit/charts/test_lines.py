"""The category palette reads on Streamlit's light and dark themes alike."""

import itertools

import pytest

from resviz import charts


def test_contrast_closed_forms():
    assert charts.contrast("#ffffff", "#000000") == pytest.approx(21.0)
    assert charts.contrast("#777777", "#777777") == pytest.approx(1.0)


@pytest.mark.parametrize("theme", sorted(charts.BACKGROUNDS))
def test_every_category_colour_reads_on_the_theme(theme):
    bg = charts.BACKGROUNDS[theme]
    low = {
        c: round(charts.contrast(c, bg), 2) for c in charts.PALETTE if charts.contrast(c, bg) < 3
    }
    assert not low, f"colours below 3:1 on the {theme} background: {low}"


def test_palette_colours_are_distinct():
    assert len(set(charts.PALETTE)) == len(charts.PALETTE) == 8
    for a, b in itertools.combinations(charts.PALETTE, 2):
        diff = sum(abs(int(a[i : i + 2], 16) - int(b[i : i + 2], 16)) for i in (1, 3, 5))
        assert diff > 60, (a, b)


def _layers(chart):
    spec = chart.to_dict()
    return spec, spec.get("layer", [spec])


def _data(spec, layer):
    """A layer's rows (its own data, or the layered chart's shared data)."""
    return spec["datasets"][(layer.get("data") or spec["data"])["name"]]


def test_a_frame_over_seeds_draws_the_median_over_a_min_max_band():
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        [
            {"seed": s, "variant": v, "block": b, "y": float(rng.normal())}
            for s in range(5)
            for v in ("plain", "residual")
            for b in range(4)
        ]
    )
    spec, layers = _layers(charts.line(df, x="block", y="y", color="variant"))
    marks = [ly["mark"]["type"] if isinstance(ly["mark"], dict) else ly["mark"] for ly in layers]
    assert marks[:2] == ["area", "line"]
    band, median = _data(spec, layers[0]), _data(spec, layers[1])
    want = df.groupby(["variant", "block"])["y"]
    for row in median:
        assert row["plotted"] == pytest.approx(want.median()[(row["variant"], row["block"])])
        assert row["seeds"] == 5
    for row in band:
        assert row["y_lo"] == pytest.approx(want.min()[(row["variant"], row["block"])])
        assert row["y_hi"] == pytest.approx(want.max()[(row["variant"], row["block"])])
    # One seed's frame is the plain chart: no band, the values themselves.
    one = df[df["seed"] == 2]
    spec1, layers1 = _layers(charts.line(one, x="block", y="y", color="variant"))
    assert all("area" not in str(ly.get("mark")) for ly in layers1)
    assert sorted(r["plotted"] for r in _data(spec1, layers1[0])) == sorted(one["y"])


def test_bars_over_seeds_are_medians_with_a_min_max_rule():
    import pandas as pd

    df = pd.DataFrame({"seed": [0, 1, 2], "variant": ["a"] * 3, "share": [0.2, 0.5, 0.3]})
    spec, layers = _layers(charts.bars(df, x="variant", y="share"))
    rows = _data(spec, layers[0])
    assert rows == [{"variant": "a", "share": 0.3, "share_lo": 0.2, "share_hi": 0.5, "seeds": 3}]
    assert layers[1]["mark"]["type"] == "rule"


def test_over_seeds_a_label_column_stays_in_the_tooltip_and_divergence_is_still_marked():
    import pandas as pd

    df = pd.DataFrame(
        [
            {
                "seed": s,
                "variant": "a",
                "step": t,
                "loss": float(s + t),
                "where": f"step {t}",
                "diverged": s == 1 and t == 2,
                "divergence": "loss is NaN" if s == 1 and t == 2 else "",
            }
            for s in range(3)
            for t in range(3)
        ]
    )
    spec, layers = _layers(
        charts.line(df, x="step", y="loss", color="variant", tooltip_cols=["where", "loss"])
    )
    median = _data(spec, layers[1])
    assert [r["where"] for r in median] == ["step 0", "step 1", "step 2"]
    rules = [ly for ly in layers if "rule" in str(ly.get("mark"))]
    assert len(rules) == 1
    marked = _data(spec, rules[0])
    assert [(r["seed"], r["step"]) for r in marked] == [(1, 2)]
    # The legend's swatches are opaque (not the band's pale fill).
    assert layers[0]["encoding"]["color"]["legend"]["symbolOpacity"] == 1
