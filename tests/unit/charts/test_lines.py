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
