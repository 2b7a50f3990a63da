"""One look per series across every chart: a variant's colour and dash, and legends
whose labels fit the narrowest chart.

A series is styled by what its name says it is, not by where it falls in one chart's
list: every series named as a network *with* shortcuts (``residual``, ``shortcut: add``,
``attention only, shortcuts``) is drawn in the same blue, every one *without* them
(``plain``, ``neither``, ``..., no shortcuts``) in the same orange, ``Post-LN`` and
``Pre-LN`` in their own two colours, and reference curves (``1/sqrt(L)``, an
identity term, a prediction) in grey, on every chart of every page
(:data:`VARIANT_COLOURS`, :func:`variant_of`); any other series (``attn``, ``your
model``) takes the palette's next colour (beside a kind's series, one no kind holds).
Within a chart every line also has a dash of its own, solid first, dotted for a
reference, so no two series look alike to a reader who cannot tell the colours apart
(:func:`series_styles`); the colour is the variant's on every chart, the dash is the
chart's.

Sizes are checked against the narrowest chart the app draws (:data:`MIN_WIDTH`: a
390 px phone, or a third of a desktop page): :func:`text_px` estimates a text's width,
and :func:`series_legend` lays a legend out in as many columns as fit.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any, TypedDict

import altair as alt

from resviz.charts.theme import FONT_SIZE, PALETTE

# The narrowest plot a chart gets, in pixels: a 390 px phone's column, or one of three
# side-by-side charts on a 1400 px desktop with the sidebar open.
MIN_WIDTH = 300
# A legend entry's symbol, its gap to the label, and the gap between columns.
SYMBOL_PX = 34
# Longest legend label, in pixels: one column of the narrowest chart.
LABEL_LIMIT = MIN_WIDTH - SYMBOL_PX

# Kinds of series and their one colour everywhere: Okabe-Ito's blue for a network with
# shortcuts, and the palette's orange for one without (tests/unit/charts checks each
# on both themes' backgrounds).
VARIANT_COLOURS: dict[str, str] = {
    "with shortcuts": PALETTE[0],
    "without shortcuts": PALETTE[1],
    "Post-LN": PALETTE[2],
    "Pre-LN": PALETTE[3],
    "reference": PALETTE[7],
}
# Dash patterns (Vega's strokeDash: dash, gap, ...), solid first; a reference curve
# starts at the dotted one.
DASHES: tuple[tuple[int, ...], ...] = (
    (1, 0),
    (8, 4),
    (2, 3),
    (12, 3, 2, 3),
    (16, 6),
    (4, 2, 4, 6),
    (2, 6),
    (10, 2),
)
_REFERENCE_DASH = 2

_REFERENCE = re.compile(r"^(1/sqrt|identity term|predicted|λ\^)", re.IGNORECASE)
_POST = re.compile(r"\bPost-LN\b")
_PRE = re.compile(r"\bPre-LN\b")
_WITHOUT = re.compile(
    r"^plain\b|\bno (shortcuts?|residuals?)\b|\bwithout (shortcuts?|residuals?)\b|^neither$"
    r"|^(LayerNorm|RMSNorm|BatchNorm) only\b|^shortcut: none$",
    re.IGNORECASE,
)
_WITH = re.compile(
    r"^residual\b|^shortcut\b|\bwith (shortcuts?|residuals?)\b|, shortcuts?$|x \+ f\(x\)",
    re.IGNORECASE,
)


def variant_of(name: str) -> str | None:
    """The kind of series ``name`` is (a key of :data:`VARIANT_COLOURS`), or None for a
    series that is none of them (``attn``, ``cosine``, ``your model``)."""
    for kind, pattern in (
        ("reference", _REFERENCE),
        ("Post-LN", _POST),
        ("Pre-LN", _PRE),
        ("without shortcuts", _WITHOUT),
        ("with shortcuts", _WITH),
    ):
        if pattern.search(str(name)):
            return kind
    return None


def series_styles(names: Iterable[object]) -> dict[str, tuple[str, tuple[int, ...]]]:
    """Each series' ``(colour, dash)``, in the order ``names`` first give them. The colour
    says what the series is: a kind's own, or for any other series the palette's next
    (beside a kind's series, only colours no kind holds). The dash tells the series of
    the chart apart without colour: each its own, solid first, and dotted for a
    reference curve (beyond :data:`DASHES`' length they repeat)."""
    order = list(dict.fromkeys(str(n) for n in names))
    kinds = {n: variant_of(n) for n in order}
    # Beside a kind's series, the others keep off every kind's colour (a "your model"
    # in Post-LN's green would read as Post-LN); a chart of no kind has the palette.
    reserved = set(VARIANT_COLOURS.values()) if any(kinds.values()) else set()
    free = [c for c in PALETTE if c not in reserved]
    # Dotted marks a reference where the chart has one; else it is one dash more.
    has_ref = "reference" in kinds.values()
    lines = [d for i, d in enumerate(DASHES) if i != _REFERENCE_DASH or not has_ref]
    out: dict[str, tuple[str, tuple[int, ...]]] = {}
    n_line = n_free = n_ref = 0
    for n in order:
        k = kinds[n]
        if k == "reference":
            dash = DASHES[_REFERENCE_DASH] if n_ref == 0 else lines[-n_ref % len(lines)]
            n_ref += 1
        else:
            dash = lines[n_line % len(lines)]
            n_line += 1
        if k is None:
            colour = free[n_free % len(free)]
            n_free += 1
        else:
            colour = VARIANT_COLOURS[k]
        out[n] = (colour, dash)
    return out


# Average advance of a character, in ems, in a sans-serif UI font (Source Sans, Arial):
# narrow letters and punctuation, wide capitals and symbols, the rest.
_NARROW = set("iljtfrI1.,:;'|!()[]{} /\\")
_WIDE = set("mwMWQOGDHNU@%&—")


def text_px(text: str, size: float = FONT_SIZE) -> float:
    """An estimate, on the generous side, of ``text``'s width in pixels at ``size``."""
    em = sum(0.32 if c in _NARROW else 0.85 if c in _WIDE else 0.56 for c in str(text))
    return em * size


def legend_columns_for(labels: Sequence[str], width: int = MIN_WIDTH) -> int:
    """How many legend columns of ``labels`` fit across ``width`` pixels (at least 1)."""
    if not labels:
        return 1
    entry = SYMBOL_PX + max(text_px(s) for s in labels)
    return max(1, min(len(labels), int(width // entry)))


# One row of legend entries, and the legend's title and its gap to the axis, in pixels
# (measured in Chromium).
LEGEND_ROW_PX = 24
LEGEND_TITLE_PX = 46


def legend_extra_height(labels: Sequence[object]) -> int:
    """The height a chart adds for its legend: a Streamlit chart's height holds the
    legend under it, so a legend of several rows would take its room from the plot
    (down to nothing on a phone) unless the chart grows by this much."""
    names = [str(s) for s in dict.fromkeys(labels)]
    if not names:
        return 0
    rows = -(-len(names) // legend_columns_for(names))
    return LEGEND_TITLE_PX + LEGEND_ROW_PX * rows


def series_legend(labels: Sequence[str], *, lines: bool = True) -> alt.Legend:
    """A legend under the plot naming every series whole: as many columns as fit the
    narrowest chart, labels up to :data:`LABEL_LIMIT`, swatches opaque (a seed band's
    pale fill would otherwise show), and for ``lines`` a stroke swatch that shows the
    dash."""
    kw: dict[str, object] = dict(
        orient="bottom",
        direction="horizontal",
        columns=legend_columns_for([str(s) for s in labels]),
        labelLimit=LABEL_LIMIT,
        symbolOpacity=1,
    )
    if lines:
        kw.update(symbolType="stroke", symbolStrokeWidth=3, symbolSize=500)
    return alt.Legend(**kw)  # type: ignore[arg-type]


class Encodings(TypedDict, total=False):
    """:func:`series_encodings`' channels (``strokeDash`` for lines); a caller may add
    a ``shape`` on the same field."""

    color: alt.Color
    strokeDash: alt.StrokeDash
    shape: alt.Shape


def series_encodings(
    field: str,
    names: Iterable[object],
    *,
    dash: bool = True,
    title: str | None = None,
    legend: alt.Legend | None = None,
) -> Encodings:
    """Altair encodings drawing ``field``'s series in their :func:`series_styles`: a
    ``color`` and, for lines (``dash``), a ``strokeDash`` on the same field, which Vega
    merges into one legend showing both (:func:`series_legend`, or ``legend``)."""
    # The domain holds the values as the data does (a class 0 is not "0" to Vega).
    domain: list[Any] = [v.item() if hasattr(v, "item") else v for v in dict.fromkeys(names)]
    styles = series_styles(domain)
    legend = legend or series_legend([str(v) for v in domain], lines=dash)
    # No title: Undefined, Altair's own default (the field's name).
    shown = alt.Undefined if title is None else title
    out: Encodings = {
        "color": alt.Color(
            f"{field}:N",
            scale=alt.Scale(domain=domain, range=[c for c, _ in styles.values()]),
            legend=legend,
            sort=None,
            title=shown,
        )
    }
    if dash:
        out["strokeDash"] = alt.StrokeDash(
            f"{field}:N",
            scale=alt.Scale(domain=domain, range=[list(d) for _, d in styles.values()]),
            legend=legend,
            sort=None,
            title=shown,
        )
    return out


__all__ = [
    "DASHES",
    "LABEL_LIMIT",
    "LEGEND_ROW_PX",
    "LEGEND_TITLE_PX",
    "MIN_WIDTH",
    "SYMBOL_PX",
    "VARIANT_COLOURS",
    "Encodings",
    "legend_columns_for",
    "legend_extra_height",
    "series_encodings",
    "series_legend",
    "series_styles",
    "text_px",
    "variant_of",
]
