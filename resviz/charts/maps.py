"""Charts of grids and distributions: heatmaps (rectangles or one image), attention maps,
histograms, scatter plots and share bars, each from a long-form DataFrame (or a matrix).

The line and bar charts, the shared style, palette and non-finite marking are in
:mod:`resviz.charts`, which these build on; ``rv.charts.<name>`` reaches every chart here too.
Large grids become one PNG (:mod:`resviz.charts.raster`) rather than thousands of Vega marks.
"""

from __future__ import annotations

import math
from typing import Any

import altair as alt
import numpy as np
import pandas as pd

from resviz.charts.lines import FONT_SIZE, HEIGHT, PALETTE, TITLE_SIZE, style
from resviz.charts.series import LABEL_LIMIT, Encodings, legend_extra_height, series_encodings


def heatmap(
    df: pd.DataFrame,
    x: str,
    y: str,
    value: str,
    *,
    title: str = "",
    x_title: str | None = None,
    y_title: str | None = None,
    diverging: bool = True,
    height: int = HEIGHT,
    sort_x: list[Any] | None = None,
    sort_y: list[Any] | None = None,
) -> alt.Chart:
    """A rectangle heatmap for small grids (up to a few thousand cells); larger
    grids should go through :mod:`resviz.charts.raster` as an image."""
    if diverging:
        vals = pd.to_numeric(df[value], errors="coerce")
        m = float(np.nanmax(np.abs(vals))) if len(vals) and np.isfinite(vals).any() else 1.0
        m = m if m > 0 and math.isfinite(m) else 1.0
        scale = alt.Scale(scheme="redblue", domain=[m, -m])
    else:
        scale = alt.Scale(scheme="viridis")
    chart = (
        alt.Chart(df, title=title)
        .mark_rect()
        .encode(
            x=alt.X(f"{x}:O", title=x_title or x, sort=sort_x),
            y=alt.Y(f"{y}:O", title=y_title or y, sort=sort_y),
            color=alt.Color(f"{value}:Q", scale=scale, title=value),
            tooltip=[x, y, alt.Tooltip(f"{value}:Q", format=".4g")],
        )
    )
    return style(chart, height)


def attention_map(df: pd.DataFrame, labels: list[str], *, title: str = "") -> alt.Chart:
    """One head's attention weights (``query, key, weight`` rows, as
    ``resviz.encoder.views.attention_frame`` gives them): queries down, keys across, in
    token order, every token labelled (never thinned out; smaller type past 20)."""
    labels = list(labels)
    size = 14 if len(labels) <= 20 else 12
    chart = heatmap(
        df,
        "key",
        "query",
        "weight",
        diverging=False,
        sort_x=labels,
        sort_y=labels,
        title=title,
        # The plot, every token label on the y axis, and the rotated x labels.
        height=100 + 24 * len(labels),
    )
    return chart.configure_axisX(labelOverlap=False, labelFontSize=size).configure_axisY(
        labelOverlap=False, labelFontSize=size
    )


def share_bars(share: pd.DataFrame, *, y_title: str = "share of ||x_L||^2") -> alt.Chart:
    """Each component's share of the final stream (``component, sublayer, share``
    rows, as ``resviz.playground.final_share`` gives them), in stream order."""
    order = list(share["component"])
    chart = (
        alt.Chart(share)
        .mark_bar()
        .encode(
            x=alt.X("component:N", sort=order, title=None, axis=alt.Axis(labelAngle=-45)),
            y=alt.Y("share:Q", title=y_title),
            color=series_encodings("sublayer", share["sublayer"], dash=False)["color"],
            tooltip=["component", alt.Tooltip("share:Q", format=".3f")],
        )
    )
    return style(chart, HEIGHT + legend_extra_height(list(share["sublayer"])))


def image_heatmap(
    matrix: np.ndarray | pd.DataFrame,
    *,
    index: str | None = None,
    title: str = "",
    x_title: str = "column",
    y_title: str = "row",
    vmin: float | None = None,
    vmax: float | None = None,
    height: int = HEIGHT,
    legend_title: str = "value",
) -> alt.LayerChart:
    """A large heatmap drawn as one PNG image inside real axes, with a colour legend.

    A 100 x 512 grid as Vega rectangles is 51k marks (~1 MB of JSON, seconds to
    draw); as a PNG it is one mark of a few tens of kB. Row 0 is at the top.
    A DataFrame is drawn without its ``index`` column (the rows' labels, such as
    a recipe's ``k`` column): its other columns are the image's columns.
    """
    from resviz.charts.raster import colorbar_stops, png_data_url, to_png

    if isinstance(matrix, pd.DataFrame):
        matrix = matrix.drop(columns=[index] if index is not None else []).to_numpy()
    m = np.asarray(matrix, dtype=float)
    rows, cols = m.shape
    finite = m[np.isfinite(m)]
    if vmin is None or vmax is None:
        lim = float(np.abs(finite).max()) if finite.size else 1.0
        lim = lim if lim > 0 else 1.0
        vmin, vmax = (-lim, lim) if vmin is None and vmax is None else (vmin or -lim, vmax or lim)
    url = png_data_url(to_png(m, vmin=vmin, vmax=vmax))
    img = pd.DataFrame({"url": [url], "x": [0], "x2": [cols], "y": [0], "y2": [rows]})
    picture = (
        alt.Chart(img, title=title)
        .mark_image(aspect=False, smooth=False)
        .encode(
            x=alt.X("x:Q", title=x_title, scale=alt.Scale(domain=[0, cols], nice=False)),
            x2="x2:Q",
            y=alt.Y("y:Q", title=y_title, scale=alt.Scale(domain=[rows, 0], nice=False)),
            y2="y2:Q",
            url="url:N",
        )
        .properties(height=height, width="container")
    )
    # An invisible layer carries the colour scale, so Vega draws a gradient legend
    # that matches the image (same stops as the PNG's colour map).
    stops = colorbar_stops(vmin, vmax, 11)
    legend = (
        alt.Chart(pd.DataFrame({"v": [vmin, vmax]}))
        .mark_point(opacity=0)
        .encode(
            color=alt.Color(
                "v:Q",
                title=legend_title,
                scale=alt.Scale(domain=[v for v, _ in stops], range=[c for _, c in stops]),
                legend=alt.Legend(gradientLength=max(60, height // 2), format=".3~g"),
            )
        )
    )
    return (
        alt.layer(picture, legend)
        .properties(height=height)
        .configure_axis(labelFontSize=FONT_SIZE, titleFontSize=FONT_SIZE)
        .configure_legend(labelFontSize=FONT_SIZE - 2, titleFontSize=FONT_SIZE - 2)
        .configure_title(fontSize=TITLE_SIZE, anchor="start")
    )


def grid_heatmap(
    df: pd.DataFrame,
    x: str,
    y: str,
    value: str,
    *,
    title: str = "",
    x_title: str | None = None,
    y_title: str | None = None,
    height: int = HEIGHT,
    max_cells: int = 2000,
) -> alt.Chart | alt.LayerChart:
    """A long-form grid as :func:`heatmap` (rectangles with tooltips) up to
    ``max_cells`` cells, as :func:`image_heatmap` (one picture, ``y`` down the rows
    and ``x`` across the columns) above that."""
    if len(df) > max_cells:
        m = df.pivot(index=y, columns=x, values=value).to_numpy()
        return image_heatmap(
            m, title=title, x_title=x_title or x, y_title=y_title or y, height=height
        )
    return heatmap(df, x, y, value, title=title, x_title=x_title, y_title=y_title, height=height)


def histograms(
    df: pd.DataFrame,
    facet: str,
    *,
    sort: list[str] | None = None,
    columns: int = 2,
    x_title: str = "value",
    y_title: str = "count",
    width: int = 380,
    height: int = 150,
) -> alt.FacetChart:
    """Binned counts (columns ``bin_start, bin_end, count``) as bars, one panel per
    value of ``facet`` (in the order ``sort``), each panel with its own axes."""
    return (
        alt.Chart(df)
        .mark_bar()
        .encode(
            x=alt.X("bin_start:Q", title=x_title),
            x2="bin_end:Q",
            y=alt.Y("count:Q", title=y_title),
            color=alt.value(PALETTE[0]),
            tooltip=[facet, "bin_start", "bin_end", "count"],
        )
        .properties(width=width, height=height)
        .facet(facet=alt.Facet(f"{facet}:N", sort=sort, title=None), columns=columns)
        .resolve_scale(x="independent", y="independent")
        .configure_axis(labelFontSize=12, titleFontSize=13)
        .configure_header(labelFontSize=14)
    )


def scatter(
    df: pd.DataFrame,
    x: str,
    y: str,
    color: str | None = None,
    *,
    title: str = "",
    x_title: str | None = None,
    y_title: str | None = None,
    height: int = HEIGHT,
    size: int = 16,
) -> alt.Chart:
    """Points, one colour per ``color`` group (nominal, legend on the right, so the
    plot keeps its height); both axes on one scale, so a circle stays round when the
    plot is as wide as it is high."""
    lo = float(min(df[x].min(), df[y].min())) if len(df) else 0.0
    hi = float(max(df[x].max(), df[y].max())) if len(df) else 1.0
    scale = alt.Scale(domain=[lo, hi], nice=True)
    # Told apart by shape as well as colour; the legend on the right keeps the plot's
    # height.
    legend = alt.Legend(orient="right", labelLimit=LABEL_LIMIT)
    styled: Encodings = (
        series_encodings(color, df[color], dash=False, legend=legend) if color else {}
    )
    enc_color = styled.get("color", alt.value(PALETTE[0]))
    if color:
        styled["shape"] = alt.Shape(f"{color}:N", sort=None, legend=legend)
    tips = [alt.Tooltip(c) for c in (color,) if c]
    tips += [alt.Tooltip(f"{x}:Q", format=".3g"), alt.Tooltip(f"{y}:Q", format=".3g")]
    chart = (
        alt.Chart(df, title=title)
        .mark_point(size=size, opacity=0.7, filled=True)
        .encode(
            x=alt.X(f"{x}:Q", title=x_title or x, scale=scale),
            y=alt.Y(f"{y}:Q", title=y_title or y, scale=scale),
            color=enc_color,
            tooltip=tips,
            **({"shape": styled["shape"]} if "shape" in styled else {}),
        )
    )
    return style(chart, height)


__all__ = [
    "attention_map",
    "grid_heatmap",
    "heatmap",
    "histograms",
    "image_heatmap",
    "scatter",
    "share_bars",
]
