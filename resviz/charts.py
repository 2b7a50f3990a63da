"""Altair charts from long-form DataFrames, one function per chart shape.

Charts are sized and styled to read on a projector: large labels, thick
lines, colour-blind-safe categories. Colours for light and dark backgrounds
come from the host (Streamlit's theme); nothing here imports streamlit.
Non-finite values are never silently dropped from a log axis: callers mark
them (see :func:`mark_nonfinite`).
"""

from __future__ import annotations

import math

import altair as alt
import numpy as np
import pandas as pd

FONT_SIZE = 14
TITLE_SIZE = 16
HEIGHT = 300
# Eight hues, each of a mid luminance so that it keeps a contrast of at least 3:1
# against both Streamlit's light background (white) and its dark one (#0e1117):
# Okabe-Ito's yellow and black (and its light orange and sky blue) vanish on one of
# the two. Blue and green are Okabe-Ito's; tests/unit/test_charts_palette.py checks it.
PALETTE = ["#0072B2", "#C26A00", "#009E73", "#D6456B", "#8F6BD6", "#1B9AAA", "#A6761D", "#8C8C8C"]
BACKGROUNDS = {"light": "#ffffff", "dark": "#0e1117"}


def contrast(a: str, b: str) -> float:
    """WCAG contrast ratio of two ``#rrggbb`` colours (1 to 21)."""

    def lum(h: str) -> float:
        r, g, bl = (int(h.lstrip("#")[i : i + 2], 16) / 255 for i in (0, 2, 4))
        f = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, bl)]
        return 0.2126 * f[0] + 0.7152 * f[1] + 0.0722 * f[2]

    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def style(chart: alt.Chart, height: int = HEIGHT) -> alt.Chart:
    """Projector-friendly fonts and sizes on any chart."""
    return (
        chart.properties(height=height)
        .configure_axis(labelFontSize=FONT_SIZE, titleFontSize=FONT_SIZE)
        .configure_legend(labelFontSize=FONT_SIZE, titleFontSize=FONT_SIZE, labelLimit=300)
        .configure_title(fontSize=TITLE_SIZE, anchor="start")
    )


def mark_nonfinite(df: pd.DataFrame, col: str, log: bool = False) -> pd.DataFrame:
    """Add a ``status`` column: ``ok``, ``zero`` (on a log axis), ``inf`` or ``nan``,
    and a ``plotted`` column that charts can use safely."""
    out = df.copy()
    v = pd.to_numeric(out[col], errors="coerce").astype(float)
    status = np.where(np.isnan(v), "nan", np.where(np.isinf(v), "inf", "ok"))
    if log:
        status = np.where((status == "ok") & (v <= 0), "zero", status)
    out["status"] = status
    out["plotted"] = v.where(out["status"] == "ok")
    return out


def line(
    df: pd.DataFrame,
    x: str,
    y: str,
    color: str | None = None,
    *,
    log_y: bool = False,
    log_x: bool = False,
    title: str = "",
    x_title: str | None = None,
    y_title: str | None = None,
    points: bool = True,
    height: int = HEIGHT,
    tooltip_cols: list[str] | None = None,
    x_int: bool = False,
    mark_diverged: bool = True,
) -> alt.Chart:
    """A line per ``color`` group; on a log axis, zero/Inf/NaN points are left out
    of the line and listed in the tooltip-bearing ``status`` markers along the bottom.
    Whole-number x columns (layers, steps) get whole-number ticks; ``x_int=True``
    forces that for a float column holding whole numbers.

    A training frame's diverged steps (rows with ``diverged`` True, see
    :func:`resviz.first_divergence`) are drawn as dashed vertical rules in their
    group's colour, with the reason (column ``divergence``) in the tooltip and a
    legend entry; ``mark_diverged=False`` leaves them out."""
    data = mark_nonfinite(df, y, log=log_y)
    scale_y = alt.Scale(type="log") if log_y else alt.Scale(zero=False)
    scale_x = alt.Scale(type="log") if log_x else alt.Scale(zero=False)
    enc_color = (
        alt.Color(f"{color}:N", scale=alt.Scale(range=PALETTE), legend=alt.Legend(orient="bottom"))
        if color
        else alt.value(PALETTE[0])
    )
    tips = [alt.Tooltip(c) for c in (tooltip_cols or [c for c in (color, x) if c])]
    tips.append(alt.Tooltip(f"{y}:Q", format=".4g"))
    # Whole-number x (layer, block, step): no fractional ticks like 1.5 blocks.
    integer_x = (x_int or pd.api.types.is_integer_dtype(data[x])) and not log_x
    axis_x = alt.Axis(tickMinStep=1, format="d") if integer_x else alt.Axis()
    base = alt.Chart(data, title=title).encode(
        x=alt.X(f"{x}:Q", title=x_title or x, scale=scale_x, axis=axis_x),
        color=enc_color,
    )
    ln = base.mark_line(strokeWidth=3, point=points).encode(
        y=alt.Y("plotted:Q", title=y_title or y, scale=scale_y), tooltip=tips
    )
    layers = [ln]
    rules = _divergence_rules(df, x, color, enc_color) if mark_diverged else None
    bad = data[data["status"] != "ok"].copy()
    if len(bad):
        # Points a log axis cannot show (0, Inf, NaN) are flagged at the bottom of the
        # plot, with their status in the tooltip, instead of vanishing silently.
        finite = data["plotted"].dropna()
        bad["plotted"] = float(finite.min()) if len(finite) else 1.0
        flags = (
            alt.Chart(bad)
            .mark_point(shape="triangle-down", size=140, filled=True)
            .encode(
                x=alt.X(f"{x}:Q"),
                y=alt.Y("plotted:Q", scale=scale_y),
                color=enc_color,
                tooltip=[*tips, alt.Tooltip("status:N")],
            )
        )
        layers.append(flags)
    if rules is not None:
        layers.append(rules)
    return style(alt.layer(*layers) if len(layers) > 1 else ln, height)


DIVERGED_LEGEND = "diverged (dashed line)"


def _divergence_rules(
    df: pd.DataFrame, x: str, color: str | None, enc_color: alt.Color | alt.ColorValue
) -> alt.Chart | None:
    """Dashed rules at the steps where runs diverged, or None if none did."""
    if "diverged" not in df.columns or not len(df):
        return None
    hit = df["diverged"].fillna(False).astype(bool).to_numpy()
    if not hit.any():
        return None
    keep = [c for c in (color, x) if c]
    marks = df.loc[hit, keep].copy()
    marks["reason"] = (
        df.loc[hit, "divergence"].astype(str).to_numpy() if "divergence" in df else "diverged"
    )
    marks["mark"] = DIVERGED_LEGEND
    marks = marks.drop_duplicates()
    tips = [alt.Tooltip(c) for c in keep] + [alt.Tooltip("reason:N", title="diverged")]
    return (
        alt.Chart(marks)
        .mark_rule(strokeWidth=2)
        .encode(
            x=alt.X(f"{x}:Q"),
            color=enc_color,
            strokeDash=alt.StrokeDash(
                "mark:N",
                scale=alt.Scale(domain=[DIVERGED_LEGEND], range=[[6, 4]]),
                legend=alt.Legend(title=None, orient="bottom"),
            ),
            tooltip=tips,
        )
    )


def bars(
    df: pd.DataFrame,
    x: str,
    y: str,
    color: str | None = None,
    *,
    title: str = "",
    x_title: str | None = None,
    y_title: str | None = None,
    log_y: bool = False,
    height: int = HEIGHT,
) -> alt.Chart:
    """Grouped bars: ``x`` ordinal, one bar per ``color`` group."""
    scale_y = alt.Scale(type="log") if log_y else alt.Scale()
    enc = {
        "x": alt.X(f"{x}:O", title=x_title or x),
        "y": alt.Y(f"{y}:Q", title=y_title or y, scale=scale_y),
        "tooltip": [c for c in (x, y, color) if c],
    }
    if color:
        enc["color"] = alt.Color(
            f"{color}:N", scale=alt.Scale(range=PALETTE), legend=alt.Legend(orient="bottom")
        )
        enc["xOffset"] = alt.XOffset(f"{color}:N")
    else:
        enc["color"] = alt.value(PALETTE[0])
    return style(alt.Chart(df, title=title).mark_bar().encode(**enc), height)


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
    sort_x: list | None = None,
    sort_y: list | None = None,
) -> alt.Chart:
    """A rectangle heatmap for small grids (up to a few thousand cells); larger
    grids should go through :mod:`resviz.raster` as an image."""
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
    ``resviz.encoder_inspect.attention_frame`` gives them): queries down, keys across, in
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
    rows, as ``resviz.encoder_inspect.final_share`` gives them), in stream order."""
    order = list(share["component"])
    chart = (
        alt.Chart(share)
        .mark_bar()
        .encode(
            x=alt.X("component:N", sort=order, title=None, axis=alt.Axis(labelAngle=-45)),
            y=alt.Y("share:Q", title=y_title),
            color=alt.Color(
                "sublayer:N", scale=alt.Scale(range=PALETTE), legend=alt.Legend(orient="bottom")
            ),
            tooltip=["component", alt.Tooltip("share:Q", format=".3f")],
        )
    )
    return style(chart)


def legend_columns(chart: alt.TopLevelMixin, columns: int = 2) -> alt.TopLevelMixin:
    """Long series names in ``columns`` legend columns rather than one long row."""
    return chart.configure_legend(
        labelFontSize=FONT_SIZE, titleFontSize=FONT_SIZE, labelLimit=400, columns=columns
    )


def image_heatmap(
    matrix: np.ndarray,
    *,
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
    """
    from .raster import colorbar_stops, png_data_url, to_png

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
    enc_color = (
        alt.Color(f"{color}:N", scale=alt.Scale(range=PALETTE), legend=alt.Legend(orient="right"))
        if color
        else alt.value(PALETTE[0])
    )
    tips = [alt.Tooltip(c) for c in (color,) if c]
    tips += [alt.Tooltip(f"{x}:Q", format=".3g"), alt.Tooltip(f"{y}:Q", format=".3g")]
    chart = (
        alt.Chart(df, title=title)
        .mark_circle(size=size, opacity=0.7)
        .encode(
            x=alt.X(f"{x}:Q", title=x_title or x, scale=scale),
            y=alt.Y(f"{y}:Q", title=y_title or y, scale=scale),
            color=enc_color,
            tooltip=tips,
        )
    )
    return style(chart, height)
