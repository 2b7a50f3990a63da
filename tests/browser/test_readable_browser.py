"""Charts readable on a desktop and a phone, in Chromium: every line drawn has a legend
entry, no text is shortened with an ellipsis or drawn past the chart's edges (a title
pushed above the top, a legend's last entries past the bottom or the side), and each
section's screenshots are kept in docs/images/ to look at.

The spec-level checks (every series named, labels and titles that fit the narrowest
chart) run on every section's default view without a browser
(``tests/app/test_pages.py::test_page_default_view``, ``tests/readable.py``); this
looks at two sections with the most series, as drawn."""

from pathlib import Path

import pytest

from tests.browser.conftest import ROOT, wait_ready

pytestmark = pytest.mark.browser

IMAGES = ROOT / "docs" / "images"
SIZES = {"desktop": (1400, 900), "phone": (390, 844)}
# Two sections with the most series per chart: 6 autocorrelation curves; Post-LN and
# Pre-LN in two charts (one colour each in both), a reference curve.
SECTIONS = {
    "shattered": ("gradient_flow?section=Shattered", 4),
    "prepost": ("normalization?section=Pre-LN+vs+Post-LN", 2),
}

# Per chart (Streamlit draws Vega as SVG): its series lines, its legend's labels, the
# texts Vega shortened with an ellipsis, and the texts drawn (wholly or partly) outside
# the chart's box, where the page cuts them off.
CHART_TEXTS = """
() => [...document.querySelectorAll("[data-testid='stVegaLiteChart'] svg.marks")].map(svg => {
    const box = svg.getBoundingClientRect();
    const texts = [...svg.querySelectorAll('text')].filter(t => t.textContent.trim());
    // A text's box holds its line's ascent and side bearings: 4 px out is still whole.
    const outside = texts.filter(t => {
        const r = t.getBoundingClientRect();
        return r.top < box.top - 4 || r.bottom > box.bottom + 4
            || r.left < box.left - 4 || r.right > box.right + 4;
    }).map(t => t.textContent);
    return {
        lines: svg.querySelectorAll('g.mark-line.role-mark path').length,
        legend: [...svg.querySelectorAll('g.role-legend-label text')].map(t => t.textContent),
        cut: texts.filter(t => t.textContent.includes('\u2026')).map(t => t.textContent),
        outside: outside,
        width: box.width,
        parent: svg.closest("[data-testid='stVegaLiteChart']").parentElement
            .getBoundingClientRect().width,
    };
})
"""


@pytest.mark.parametrize("size", sorted(SIZES))
def test_charts_are_whole_on_a_desktop_and_a_phone(server, browser, size):
    w, h = SIZES[size]
    ctx = browser.new_context(viewport={"width": w, "height": h})
    pg = ctx.new_page()
    try:
        for name, (link, n_charts) in SECTIONS.items():
            pg.goto(f"{server.url}/{link}")
            wait_ready(pg, charts=n_charts, timeout=180_000)
            charts = pg.evaluate(CHART_TEXTS)
            assert len(charts) == n_charts, (name, size, charts)
            for i, c in enumerate(charts):
                where = f"{name} chart {i} at {size}"
                # Every line drawn has its legend entry (a band or a flag is no line).
                assert c["lines"] <= len(c["legend"]), (where, c)
                assert not c["cut"], (where, c["cut"])
                assert not c["outside"], (where, c["outside"])
                assert c["width"] <= c["parent"] + 1, (where, c)
            # The whole section, for a reader to look at (Streamlit scrolls inside its
            # main block: the viewport grows to the page for the picture).
            full = pg.evaluate("document.querySelector(\"[data-testid='stMain']\").scrollHeight")
            pg.set_viewport_size({"width": w, "height": min(full + 40, 6000)})
            pg.wait_for_timeout(500)
            IMAGES.mkdir(parents=True, exist_ok=True)
            path: Path = IMAGES / f"readable_{name}_{size}.png"
            pg.screenshot(path=str(path), full_page=True)
            pg.set_viewport_size({"width": w, "height": h})
    finally:
        ctx.close()
