"""Charts readable on a desktop and a phone, in Chromium: every line drawn has a legend
entry, no text is shortened with an ellipsis or drawn past the chart's edges (a title
pushed above the top, a legend's last entries past the bottom or the side), and each
section's screenshots are kept in docs/images/ to look at.

The spec-level checks (every series named, labels and titles that fit the narrowest
chart) run on every section's default view without a browser
(``tests/app/test_pages.py::test_page_default_view``, ``tests/readable.py``); every
section's default view is checked as drawn, at both sizes, where the shipped install
serves them (``tests/install/test_shipped.py``); this looks at two sections with the
most series after their charts are drawn, and keeps their screenshots."""

from pathlib import Path

import pytest

from tests.browser.conftest import ROOT, wait_ready
from tests.browser.whole_charts import SIZES, assert_charts_whole

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
