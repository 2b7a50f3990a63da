"""Altair charts from long-form DataFrames: lines and bars, and the style, palette and
non-finite marking every chart shares (grids and distributions: :mod:`resviz.charts.maps`).

Charts are sized and styled to read on a projector: large labels, thick
lines, colour-blind-safe categories. Colours for light and dark backgrounds
come from the host (Streamlit's theme); nothing here imports streamlit.
Non-finite values are never silently dropped from a log axis: callers mark
them (see :func:`mark_nonfinite`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

import altair as alt
import numpy as np
import pandas as pd

from resviz.charts.series import Encodings, legend_extra_height, series_encodings
from resviz.charts.theme import BACKGROUNDS, FONT_SIZE, HEIGHT, PALETTE, TITLE_SIZE, contrast

ChartT = TypeVar("ChartT", bound=alt.TopLevelMixin)  # a chart, layered or not


def style(chart: ChartT, height: int = HEIGHT) -> ChartT:
    """Projector-friendly fonts and sizes on any chart."""
    return (
        chart.properties(height=height)
        .configure_axis(labelFontSize=FONT_SIZE, titleFontSize=FONT_SIZE)
        .configure_legend(labelFontSize=FONT_SIZE, titleFontSize=FONT_SIZE, labelLimit=300)
        .configure_title(fontSize=TITLE_SIZE, anchor="start")
    )


def mark_nonfinite(
    df: pd.DataFrame, col: str, log: bool = False, log10: bool = False, floor: float = 0.0
) -> pd.DataFrame:
    """Add a ``status`` column: ``ok``, ``zero`` (on a log axis; for a column of
    log10s, ``log10=True``, its ``-inf``), ``inf``, ``nan`` or ``below resolution``
    (a finite value under ``floor``: rounding, see
    :data:`resviz.words.numbers.FLOAT64_RESOLUTION`), and a ``plotted`` column that
    charts can use safely."""
    out = df.copy()
    v = pd.to_numeric(out[col], errors="coerce").astype(float)
    status = np.where(np.isnan(v), "nan", np.where(np.isinf(v), "inf", "ok"))
    if floor > 0:
        # An exact 0 is exact (one token is its own mean); a tiny nonzero is rounding.
        tiny = (v.abs() < floor) & (v != 0)
        status = np.where((status == "ok") & tiny, "below resolution", status)
    if log:
        status = np.where((status == "ok") & (v <= 0), "zero", status)
    if log10:
        status = np.where(np.isneginf(v), "zero", status)
    out["status"] = status
    out["plotted"] = v.where(out["status"] == "ok")
    return out


SEED = "seed"


def over_seeds(df: pd.DataFrame) -> bool:
    """Whether ``df`` holds more than one seed's rows (a ``seed`` column)."""
    return SEED in df.columns and df[SEED].nunique() > 1


def seed_band(df: pd.DataFrame, by: list[str], y: str) -> pd.DataFrame:
    """Per group of ``by``: the median of ``y`` over the seeds (in ``y``), their lowest
    (``y_lo``) and highest (``y_hi``), and how many seeds (``seeds``). A seed whose
    value is NaN is left out of its group's median and band."""
    g = df.groupby(by, sort=False, dropna=False)[y]
    out = g.median().rename(y).to_frame()
    out[f"{y}_lo"] = g.min()
    out[f"{y}_hi"] = g.max()
    out["seeds"] = g.count()
    return out.reset_index()


def line(
    df: pd.DataFrame,
    x: str,
    y: str,
    color: str | None = None,
    *,
    log_y: bool = False,
    log10_y: bool = False,
    log_x: bool = False,
    title: str = "",
    x_title: str | None = None,
    y_title: str | None = None,
    points: bool = True,
    height: int = HEIGHT,
    tooltip_cols: list[str] | None = None,
    x_int: bool = False,
    mark_diverged: bool = True,
    floor: float = 0.0,
) -> alt.TopLevelMixin:
    """A line per ``color`` group, in its variant's colour and a dash of its own, named
    whole in a legend under the plot that fits a phone (the chart grows by the legend's
    height: :mod:`resviz.charts.series`); on a log axis, zero/Inf/NaN points are left out
    of the line and listed in the tooltip-bearing ``status`` markers along the bottom.
    Whole-number x columns (layers, steps) get whole-number ticks; ``x_int=True``
    forces that for a float column holding whole numbers.

    A training frame's diverged steps (rows with ``diverged`` True, see
    :func:`resviz.first_divergence`) are drawn as dashed vertical rules in their
    group's colour, with the reason (column ``divergence``) in the tooltip and a
    legend entry; ``mark_diverged=False`` leaves them out.

    ``floor``: values under it are rounding, not measurements (a distance computed in
    float64 cannot go below :data:`resviz.words.numbers.FLOAT64_RESOLUTION`): they
    are left out of the line and its band and flagged at the bottom like a zero.

    ``log10_y=True``: the ``y`` column holds log10s (``-inf`` for exactly 0), drawn on
    a linear axis labelled in powers of ten (``1e-20``), so that values beyond
    float64's range (a gradient of 1e-420) are drawn where they are.

    A frame over several seeds (a ``seed`` column with more than one value) is drawn
    as each group's median line over a band from its lowest to its highest seed
    (:func:`seed_band`); one seed's frame is the same chart without the band."""

    if color:  # the plot keeps its height however many rows the legend takes
        height += legend_extra_height(list(df[color]))
    band, raw = None, df
    if over_seeds(df):
        keys = [c for c in (color, x) if c]
        # A tooltip column that names its point (a label, a block) stays with it; one
        # that varies between seeds cannot be said of their median, and is left out.
        extra = [c for c in tooltip_cols or [] if c not in (*keys, y, SEED)]
        if extra and len(df):
            same = df.groupby(keys, dropna=False)[extra].nunique(dropna=False).max() <= 1
            keys += [c for c in extra if bool(same[c])]
            tooltip_cols = [c for c in tooltip_cols or [] if c in keys]
        summary = seed_band(df, keys, y)
        lo, hi = summary[f"{y}_lo"], summary[f"{y}_hi"]
        ok = np.isfinite(lo) & np.isfinite(hi) & ((lo > 0) if log_y else True)
        ok &= (lo >= floor) if floor > 0 else True
        band = summary[ok]
        tooltip_cols = [*(tooltip_cols or keys), "seeds"]
        df = summary
    data = mark_nonfinite(df, y, log=log_y, log10=log10_y, floor=floor)
    scale_y = alt.Scale(type="log") if log_y else alt.Scale(zero=False)
    axis_y = alt.Axis(tickMinStep=1, labelExpr="'1e' + datum.value") if log10_y else alt.Axis()
    scale_x = alt.Scale(type="log") if log_x else alt.Scale(zero=False)
    # Each series in its variant's colour and a dash of its own, one legend naming every
    # series whole (resviz.charts.series).
    styled: Encodings = series_encodings(color, data[color]) if color else {}
    enc_color = styled.get("color", alt.value(PALETTE[0]))
    enc_dash = {"strokeDash": styled["strokeDash"]} if "strokeDash" in styled else {}
    tips = [alt.Tooltip(c) for c in (tooltip_cols or [c for c in (color, x) if c])]
    tips.append(
        alt.Tooltip(f"{y}:Q", format=".4g", title=f"{y} (median)" if band is not None else y)
    )
    if band is not None:
        tips += [alt.Tooltip(f"{y}_lo:Q", format=".4g"), alt.Tooltip(f"{y}_hi:Q", format=".4g")]
    # Whole-number x (layer, block, step): no fractional ticks like 1.5 blocks.
    integer_x = (x_int or pd.api.types.is_integer_dtype(data[x])) and not log_x
    axis_x = alt.Axis(tickMinStep=1, format="d") if integer_x else alt.Axis()
    base = alt.Chart(data, title=title).encode(
        x=alt.X(f"{x}:Q", title=x_title or x, scale=scale_x, axis=axis_x),
        color=enc_color,
    )
    ln = base.mark_line(strokeWidth=3, point=points).encode(
        y=alt.Y("plotted:Q", title=y_title or y, scale=scale_y, axis=axis_y),
        tooltip=tips,
        **enc_dash,
    )
    layers = [ln]
    if band is not None and len(band):
        area = (
            alt.Chart(band)
            .mark_area(opacity=0.22)
            .encode(
                x=alt.X(f"{x}:Q", scale=scale_x),
                y=alt.Y(f"{y}_lo:Q", scale=scale_y),
                y2=alt.Y2(f"{y}_hi:Q"),
                color=enc_color,
                tooltip=tips,
            )
        )
        layers.insert(0, area)
    rules = _divergence_rules(raw, x, color, enc_color) if mark_diverged else None
    if rules is not None:
        height += DIVERGED_LEGEND_PX
    bad = data[data["status"] != "ok"].copy()
    if len(bad):
        # Points a log axis cannot show (0, Inf, NaN) or under the floor are flagged at
        # the bottom of the plot, with their status in the tooltip, instead of vanishing
        # silently.
        finite = data["plotted"].dropna()
        bad["plotted"] = float(finite.min()) if len(finite) else 1.0
        # Rounding is not shown as a value, in the tooltip either: its status says it.
        bad.loc[bad["status"] == "below resolution", y] = np.nan
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


DIVERGED_LEGEND = "diverged (dashed vertical line)"
DIVERGED_DASH = (6, 4)
# The height the chart adds for that legend's row above the plot.
DIVERGED_LEGEND_PX = 30


def _divergence_rules(
    df: pd.DataFrame, x: str, color: str | None, enc_color: alt.Color | Mapping[str, Any]
) -> alt.Chart | None:
    """Dashed rules at the steps where runs diverged, or None if none did."""
    if "diverged" not in df.columns or not len(df):
        return None
    hit = df["diverged"].fillna(False).astype(bool).to_numpy()
    if not hit.any():
        return None
    keep = [c for c in (color, x, SEED if SEED in df.columns else None) if c]
    marks = df.loc[hit, keep].copy()
    marks["reason"] = (
        df.loc[hit, "divergence"].astype(str).to_numpy() if "divergence" in df else "diverged"
    )
    marks["mark"] = DIVERGED_LEGEND
    marks = marks.drop_duplicates()
    tips = [alt.Tooltip(c) for c in keep] + [alt.Tooltip("reason:N", title="diverged")]
    # The dash is the mark's own: the lines' strokeDash names their series, so the
    # rule's legend entry comes through a channel of its own (one width, a dashed swatch).
    return (
        alt.Chart(marks)
        .mark_rule(strokeWidth=2, strokeDash=list(DIVERGED_DASH))
        .encode(
            x=alt.X(f"{x}:Q"),
            color=enc_color,
            strokeWidth=alt.StrokeWidth(
                "mark:N",
                scale=alt.Scale(domain=[DIVERGED_LEGEND], range=[2]),
                # Above the plot: Vega sets legends of one side side by side, and the
                # series' legend below takes the whole width of a phone.
                legend=alt.Legend(
                    title=None,
                    orient="top",
                    symbolType="stroke",
                    # The swatch is short: a finer dash shows it is one.
                    symbolDash=[3, 2],
                    symbolStrokeWidth=2,
                    symbolStrokeColor="#8C8C8C",
                    labelLimit=300,
                ),
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
) -> alt.TopLevelMixin:
    """Grouped bars: ``x`` ordinal, one bar per ``color`` group. A frame over several
    seeds draws each bar at the seeds' median with a rule from their lowest to their
    highest (:func:`seed_band`)."""
    scale_y = alt.Scale(type="log") if log_y else alt.Scale()
    spread = None
    if over_seeds(df):
        df = seed_band(df, [c for c in (x, color) if c], y)
        spread = [f"{y}_lo", f"{y}_hi", "seeds"]
    enc: dict[str, Any] = {
        "x": alt.X(f"{x}:O", title=x_title or x),
        "y": alt.Y(f"{y}:Q", title=y_title or y, scale=scale_y),
        "tooltip": [c for c in (x, y, color) if c] + (spread or []),
    }
    if color:
        height += legend_extra_height(list(df[color]))
        enc["color"] = series_encodings(color, df[color], dash=False)["color"]
        enc["xOffset"] = alt.XOffset(f"{color}:N", sort=None)
    else:
        enc["color"] = alt.value(PALETTE[0])
    chart = alt.Chart(df, title=title).mark_bar().encode(**enc)
    if spread is None:
        return style(chart, height)
    rule_enc = {k: v for k, v in enc.items() if k != "y"}
    rule_enc["color"] = alt.value("#444444")
    rules = (
        alt.Chart(df)
        .mark_rule(strokeWidth=2)
        .encode(y=alt.Y(f"{y}_lo:Q", scale=scale_y), y2=alt.Y2(f"{y}_hi:Q"), **rule_enc)
    )
    return style(alt.layer(chart, rules), height)


def legend_columns(chart: alt.TopLevelMixin, columns: int = 2) -> alt.TopLevelMixin:
    """Long series names in ``columns`` legend columns rather than one long row, for a
    chart whose legend does not say its own (:func:`line` and :func:`bars` lay theirs
    out to fit a phone, :func:`resviz.charts.series.series_legend`, which wins)."""
    return chart.configure_legend(
        labelFontSize=FONT_SIZE, titleFontSize=FONT_SIZE, labelLimit=400, columns=columns
    )


__all__ = [
    "BACKGROUNDS",
    "DIVERGED_DASH",
    "DIVERGED_LEGEND",
    "FONT_SIZE",
    "HEIGHT",
    "PALETTE",
    "TITLE_SIZE",
    "bars",
    "contrast",
    "legend_columns",
    "line",
    "mark_nonfinite",
    "over_seeds",
    "seed_band",
    "style",
]
