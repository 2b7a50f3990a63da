"""Charts drawn whole, as Chromium draws them (Streamlit renders Vega as SVG): every
line of several has a legend entry, no text is shortened with an ellipsis or drawn past the
chart's edges (a title pushed above the top, a legend's last entries past the bottom
or the side), and no chart is wider than its column. Used on two sections with the
most series (tests/browser/test_readable_browser.py) and on every section of the
shipped install at a desktop's and a phone's width (tests/install/test_shipped.py)."""

from __future__ import annotations

from typing import Any

SIZES = {"desktop": (1400, 900), "phone": (390, 844)}

# Per chart: its series lines, its legend's labels, the texts Vega shortened with an
# ellipsis, and the texts drawn (wholly or partly) outside the chart's box, where the
# page cuts them off.
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
        cut: texts.filter(t => t.textContent.includes('\\u2026')).map(t => t.textContent),
        outside: outside,
        width: box.width,
        parent: svg.closest("[data-testid='stVegaLiteChart']").parentElement
            .getBoundingClientRect().width,
    };
})
"""


CHART = "[data-testid='stVegaLiteChart']"
DRAWN = f"""([least, downloads, notebook]) => {{
    const sent = document.querySelectorAll("{CHART}").length;
    const drawn = document.querySelectorAll("{CHART} canvas, {CHART} svg.marks").length;
    const buttons = [...document.querySelectorAll("[data-testid='stDownloadButton']")];
    const last = buttons.some(b => b.innerText.includes("Reproduce in a notebook"));
    return sent >= least && drawn >= sent && buttons.length >= downloads
        && (last || !notebook);
}}"""


def wait_drawn(
    pg: Any, least: int = 0, downloads: int = 0, notebook: bool = False, timeout: float = 60_000
) -> int:
    """Wait until at least ``least`` charts and ``downloads`` download buttons are on the
    page (with ``notebook``, the section's "Reproduce in a notebook" button, the last
    thing a section draws) and every chart sent is drawn; the number of charts. A page's
    elements were seen to arrive seconds after its run looked finished (its charts 2-3 s
    after ``wait_ready`` returned), so they are counted only once its last one is there."""
    pg.wait_for_function(DRAWN, arg=[least, downloads, notebook], timeout=timeout)
    return pg.locator(CHART).count()


def chart_problems(pg: Any, where: str) -> tuple[int, list[str]]:
    """Every chart on the page as drawn now: how many, and what is wrong with each."""
    charts = pg.evaluate(CHART_TEXTS)
    out = []
    for i, c in enumerate(charts):
        at = f"{where} chart {i}"
        # Every line drawn has its legend entry (a band or a flag is no line); a lone
        # line is named by the chart's title and axis.
        if c["lines"] > max(1, len(c["legend"])):
            out.append(f"{at}: {c['lines']} lines, legend {c['legend']}")
        if c["cut"]:
            out.append(f"{at}: shortened {c['cut']}")
        if c["outside"]:
            out.append(f"{at}: drawn past its edges {c['outside']}")
        if c["width"] > c["parent"] + 1:
            out.append(f"{at}: {c['width']:.0f} px wide in a column of {c['parent']:.0f}")
    return len(charts), out


def assert_charts_whole(pg: Any, where: str) -> int:
    """Check every chart on the page as drawn now; the number of charts checked."""
    n, problems = chart_problems(pg, where)
    assert not problems, problems
    return n


def whole_at_both_sizes(pg: Any, where: str) -> tuple[int, list[str]]:
    """:func:`chart_problems` at a desktop's width, then at a phone's (the page laid
    out again without a reload: Vega redraws on the resize), and back."""
    n, out = 0, []
    for size, (w, h) in SIZES.items():
        pg.set_viewport_size({"width": w, "height": h})
        if size == "phone":  # until Vega has redrawn every chart for the new width (3 s)
            for _ in range(15):
                pg.wait_for_timeout(200)
                if all(c["width"] <= c["parent"] + 1 for c in pg.evaluate(CHART_TEXTS)):
                    break
        k, problems = chart_problems(pg, f"{where} at {size}")
        n, out = n + k, out + problems
    pg.set_viewport_size({"width": SIZES["desktop"][0], "height": SIZES["desktop"][1]})
    return n, out
