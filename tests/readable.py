"""What makes a chart readable on a phone and a desktop, checked on its Vega-Lite spec.

:func:`problems` reads a spec as the app sends it (``ui.views.spec``, or
``el.proto.spec`` in AppTest) with its datasets decoded, and lists what a reader
would miss: a series drawn that the legend does not name, a legend label the legend
cuts, a legend wider than the narrowest chart (its last entries fall off), a line
told apart by colour alone, a title or axis title longer than the room it gets.
Widths are estimated with ``resviz.charts.text_px`` against ``MIN_WIDTH``, the
narrowest plot the app draws (a 390 px phone, a third of a desktop page).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from resviz.charts import (
    FONT_SIZE,
    HEIGHT,
    MIN_WIDTH,
    SYMBOL_PX,
    TITLE_SIZE,
    legend_extra_height,
    text_px,
)

# Room an axis's labels and ticks take beside or under the plot.
AXIS_LABELS_PX = 50
# What a chart's height holds besides its plot, legend and title (the x axis, padding),
# and what a title takes: Vega cuts a y title at the plot's height.
PLOT_MARGIN_PX = 90
TITLE_PX = 26
SERIES_CHANNELS = ("color", "strokeDash", "shape")


def datasets_of(el: Any) -> dict[str, list[dict[str, Any]]]:
    """An AppTest chart element's datasets, as rows."""
    out = {}
    for d in el.proto.datasets:
        table = pa.ipc.open_stream(d.data.data).read_all() if d.data.data else None
        out[d.name] = table.to_pylist() if table is not None else []
    return out


def spec_of(el: Any) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    """An AppTest chart element's spec and its datasets."""
    return json.loads(el.proto.spec), datasets_of(el)


def _units(
    spec: dict[str, Any], data: Any = None, height: int = HEIGHT
) -> Iterator[tuple[dict[str, Any], Any, int]]:
    """Every single-view spec with the data it draws and its height."""
    data = spec.get("data", data)
    height = spec.get("height", height) if isinstance(spec.get("height"), int) else height
    yield spec, data, height
    for key in ("layer", "hconcat", "vconcat", "concat"):
        for sub in spec.get(key, []):
            yield from _units(sub, data, height)


def _rows(data: Any, datasets: dict[str, Any]) -> list[dict[str, Any]]:
    if not isinstance(data, dict):
        return []
    if "values" in data:
        return list(data["values"])
    return list(datasets.get(data.get("name", ""), []))


def _title(t: Any) -> str:
    if isinstance(t, dict):
        t = t.get("text", "")
    if isinstance(t, list):
        return max((str(x) for x in t), key=len, default="")
    return str(t or "")


def problems(spec: dict[str, Any], datasets: dict[str, Any] | None = None) -> list[str]:
    """What a reader of the chart at the narrowest width would miss (empty: nothing)."""
    datasets = {**(spec.get("datasets") or {}), **(datasets or {})}
    out: list[str] = []
    top_title = _title(spec.get("title"))
    for unit, data, height in _units(spec):
        title = _title(unit.get("title"))
        for t in {title, top_title} - {""}:
            if text_px(t, TITLE_SIZE) > MIN_WIDTH:
                out.append(f"title too long for {MIN_WIDTH} px: {t!r}")
        enc = unit.get("encoding") or {}
        rows = _rows(data, datasets)
        color = enc.get("color") or {}
        legend_px = (
            legend_extra_height([r.get(color["field"]) for r in rows])
            if color.get("type") == "nominal" and "field" in color and rows
            else 0
        )
        plot_px = height - PLOT_MARGIN_PX - legend_px - (TITLE_PX if title or top_title else 0)
        for axis, room in (("x", MIN_WIDTH - AXIS_LABELS_PX), ("y", plot_px)):
            t = _title((enc.get(axis) or {}).get("title"))
            if t and text_px(t, FONT_SIZE) > room:
                out.append(f"{axis} title too long for {room} px: {t!r}")
        mark = unit.get("mark")
        mark = mark.get("type") if isinstance(mark, dict) else mark
        for ch in SERIES_CHANNELS:
            e = enc.get(ch) or {}
            if e.get("type") != "nominal" or "field" not in e:
                continue
            field = e["field"]
            drawn = list(dict.fromkeys(str(r[field]) for r in rows if r.get(field) is not None))
            if e.get("legend", {}) is None and drawn:
                out.append(f"{ch} {field!r}: {len(drawn)} series and no legend")
                continue
            domain = (e.get("scale") or {}).get("domain")
            if isinstance(domain, list):
                missing = [v for v in drawn if v not in map(str, domain)]
                if missing:
                    out.append(f"{ch} {field!r}: drawn but not in the legend: {missing}")
            labels = [str(v) for v in (domain if isinstance(domain, list) else drawn)]
            legend = e.get("legend") or {}
            limit = legend.get("labelLimit", 160)
            cut = [s for s in labels if text_px(s) > limit]
            if cut:
                out.append(f"{ch} {field!r}: legend labels cut at {limit} px: {cut}")
            if labels and legend.get("orient", "right") in ("top", "bottom"):
                cols = legend.get("columns", len(labels)) or len(labels)
                need = min(cols, len(labels)) * (SYMBOL_PX + max(map(text_px, labels)))
                if need > MIN_WIDTH:
                    out.append(f"{ch} {field!r}: legend {need:.0f} px wide: {labels}")
            dashes = (e.get("scale") or {}).get("range")
            if ch == "strokeDash" and isinstance(dashes, list):
                shown = [tuple(d) for d in dashes[: len(labels)]]
                if len(set(shown)) < min(len(shown), 7):
                    out.append(f"lines of {field!r} share a dash: {dict(zip(labels, shown))}")
            if ch == "color" and mark == "line" and len(drawn) > 1:
                dash = enc.get("strokeDash") or {}
                if dash.get("field") != field:
                    out.append(f"lines of {field!r} told apart by colour alone")
    return list(dict.fromkeys(out))  # a layered chart repeats its encodings


__all__ = ["datasets_of", "problems", "spec_of"]
