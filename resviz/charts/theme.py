"""The charts' look, shared by every chart module: font sizes, the default height and
the palette (checked for contrast on both of Streamlit's themes). Nothing here imports
another chart module, so :mod:`resviz.charts.series` and :mod:`resviz.charts.lines`
both build on it without importing each other in a circle."""

from __future__ import annotations

FONT_SIZE = 14
TITLE_SIZE = 16
HEIGHT = 300
# Eight hues, each of a mid luminance so that it keeps a contrast of at least 3:1
# against both Streamlit's light background (white) and its dark one (#0e1117):
# Okabe-Ito's yellow and black (and its light orange and sky blue) vanish on one of
# the two. Blue and green are Okabe-Ito's; tests/unit/charts/test_lines.py checks it.
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
