"""Charts readable on a desktop and a phone, in Chromium: every line drawn has a legend
entry, no text is shortened with an ellipsis or drawn past the chart's edges (a title
pushed above the top, a legend's last entries past the bottom or the side), and each
section's screenshots are kept in docs/images/ to look at.

The spec-level checks (every series named, labels and titles that fit the narrowest
chart) run on every section's default view without a browser
(``tests/app/test_sections.py``, ``tests/readable.py``). Here every section's default
view is checked as drawn, at both sizes, with no error box; and two sections with the
most series are looked at after their charts are drawn, their screenshots kept."""

import urllib.parse
from importlib import import_module
from pathlib import Path

import pytest

from tests.browser.conftest import ROOT, screenshot, wait_ready
from tests.browser.whole_charts import SIZES, assert_charts_whole, wait_drawn, whole_at_both_sizes
from ui.registry import PAGES

pytestmark = pytest.mark.browser

IMAGES = ROOT / "docs" / "images"
# Two sections with the most series per chart: 6 autocorrelation curves; Post-LN and
# Pre-LN in two charts (one colour each in both), a reference curve.
SECTIONS = {
    "shattered": ("gradient_flow?section=Shattered", 4),
    "prepost": ("normalization?section=Pre-LN+vs+Post-LN", 2),
}


@pytest.mark.parametrize("size", sorted(SIZES))
def test_charts_are_whole_on_a_desktop_and_a_phone(server, browser, size):
    w, h = SIZES[size]
    ctx = browser.new_context(viewport={"width": w, "height": h})
    pg = ctx.new_page()
    try:
        for name, (link, n_charts) in SECTIONS.items():
            pg.goto(f"{server.url}/{link}")
            wait_ready(pg, charts=n_charts, timeout=180_000)
            assert assert_charts_whole(pg, f"{name} at {size}") == n_charts, (name, size)
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


ERRORS = "[data-testid='stException'], [data-testid='stAlertContentError']"


# Sections that offer their notebook once their run has ended (tests/app/test_sections.py).
AFTER_RUN = {"normalization > Warm-up", "normalization > Stability"}


def views() -> list[tuple[str, str]]:
    """(name, path and query) of every page's every section, each as its own link (the
    home page is ``test_home_browser.py``'s)."""
    out = []
    for info in PAGES:
        if info.url_path == "workshop":
            continue
        for section in import_module(f"ui.specs.{info.url_path}").SPEC.sections:
            query = urllib.parse.urlencode({"section": section})
            out.append((f"{info.url_path} > {section}", f"/{info.url_path}?{query}"))
    return out


def test_every_section_draws_whole_charts_and_no_error_box(server, browser):
    """Every section's default view as a browser draws it: no error box, and its charts
    whole at a desktop's width and at a phone's."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = ctx.new_page()
    charts, problems = 0, []
    try:
        for name, path in views():
            pg.goto(server.url + path)
            wait_ready(pg, timeout=180_000)
            # Its last button there (the notebook's, where offered before a run), and every
            # chart drawn.
            wait_drawn(pg, downloads=1, notebook=name not in AFTER_RUN)
            boxes = pg.locator(ERRORS)
            said = [boxes.nth(i).inner_text()[:300] for i in range(boxes.count())]
            problems += [f"{name}: {s}" for s in said]
            n, wrong = whole_at_both_sizes(pg, name)
            charts, problems = charts + n, problems + wrong
    except BaseException:
        screenshot(pg, "readable_tour_failed")
        raise
    finally:
        ctx.close()
    print(f"\n{len(views())} views with no error box; {charts} charts checked")
    assert not problems, "\n".join(problems)
    assert charts >= len(views())  # most sections draw a chart or two at their defaults
