"""The pages' chart memo (ui.charts): keyed by content, so it can never serve a
chart drawn from other data or options, and what it serves equals a fresh build."""

import numpy as np
import pandas as pd
import pytest

import resviz.charts as raw
from ui import charts, views


@pytest.fixture(autouse=True)
def fresh_memo():
    charts.MEMO.clear()
    yield
    charts.MEMO.clear()


def frame(values=(1.0, 0.5, 0.25, 0.0)) -> pd.DataFrame:
    n = len(values)
    return pd.DataFrame(
        {"variant": ["plain"] * (n // 2) + ["residual"] * (n - n // 2), "layer": range(1, n + 1)}
    ).assign(g=list(values))


def test_equal_content_is_served_from_the_memo_and_equals_a_fresh_build():
    first = charts.line(frame(), "layer", "g", "variant", log_y=True)
    again = charts.line(frame(), "layer", "g", "variant", log_y=True)  # a new, equal frame
    assert again is first and (charts.MEMO.hits, charts.MEMO.misses) == (1, 1)
    fresh = raw.line(frame(), "layer", "g", "variant", log_y=True)
    assert views.spec(again) == views.spec(fresh)
    assert views.spec(again) == views.spec(first)  # the second conversion is the cached one


@pytest.mark.parametrize(
    "change",
    [
        lambda: charts.line(frame((1.0, 0.5, 0.25, 1e-9)), "layer", "g", "variant", log_y=True),
        lambda: charts.line(frame((1.0, 0.5, 0.25, np.nan)), "layer", "g", "variant", log_y=True),
        lambda: charts.line(frame(), "layer", "g", "variant", log_y=False),
        lambda: charts.line(frame(), "layer", "g", "variant", log_y=True, y_title="other"),
        lambda: charts.line(frame().rename(columns={"g": "h"}), "layer", "h", "variant"),
        lambda: charts.line(frame().astype({"layer": "float64"}), "layer", "g", "variant"),
        lambda: charts.line(frame().iloc[::-1], "layer", "g", "variant", log_y=True),
        lambda: charts.bars(frame(), "layer", "g", "variant"),
    ],
)
def test_any_change_in_data_or_options_builds_a_new_chart(change):
    base = charts.line(frame(), "layer", "g", "variant", log_y=True)
    other = change()
    assert other is not base
    assert views.spec(other) != views.spec(base)


def test_image_heatmaps_are_keyed_by_the_matrix_bytes():
    m = np.arange(12, dtype=float).reshape(3, 4)
    a = charts.image_heatmap(m, title="m")
    assert charts.image_heatmap(m.copy(), title="m") is a
    m2 = m.copy()
    m2[2, 3] = -1.0
    assert charts.image_heatmap(m2, title="m") is not a


def test_served_dicts_are_copies_streamlit_may_edit():
    c = charts.line(frame(), "layer", "g", "variant")
    first = views.spec(c)
    first.pop("datasets")
    first["mark"] = "edited"
    assert "datasets" in views.spec(c) and views.spec(c).get("mark") != "edited"


def test_the_memo_is_bounded_least_recently_used_first(monkeypatch):
    monkeypatch.setattr(charts.MEMO, "max_entries", 3)
    built = [charts.line(frame((float(i), 1.0)), "layer", "g") for i in range(3)]
    charts.line(frame((0.0, 1.0)), "layer", "g")  # touch the first: now most recent
    charts.line(frame((9.0, 1.0)), "layer", "g")  # evicts the least recent (i = 1)
    assert len(charts.MEMO) == 3
    assert charts.line(frame((0.0, 1.0)), "layer", "g") is built[0]
    assert charts.line(frame((1.0, 1.0)), "layer", "g") is not built[1]


def test_arguments_without_a_fingerprint_are_built_every_time():
    class Opaque:
        pass

    assert charts.fingerprint(frame(), Opaque()) is None
    assert charts.fingerprint(frame(), title="x") == charts.fingerprint(frame(), title="x")
    assert charts.fingerprint(True) != charts.fingerprint(1)
