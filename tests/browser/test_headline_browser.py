"""A headline, then the detail (issue 37), in Chromium: a section's finding, its one
computed line with its big figures, is on screen above the fold on a desktop and on
a phone, and the full account sits folded under the charts. The default views of two
pages are kept in docs/images/ to look at (page_<name>_<size>.png)."""

import pytest

from tests.browser.conftest import ROOT, wait_ready
from tests.browser.whole_charts import SIZES

pytestmark = pytest.mark.browser

IMAGES = ROOT / "docs" / "images"
# Each page's default view: its first section, with the charts it draws.
PAGES = {"gradient_flow": 2, "normalization": 5}
HEADLINE = "[class*='st-key-headline-']"


@pytest.mark.parametrize("size", sorted(SIZES))
def test_the_finding_is_above_the_fold(server, browser, size):
    w, h = SIZES[size]
    ctx = browser.new_context(viewport={"width": w, "height": h})
    pg = ctx.new_page()
    try:
        for name, charts in PAGES.items():
            pg.goto(f"{server.url}/{name}")
            wait_ready(pg, charts=charts, timeout=180_000)
            found = pg.locator(HEADLINE)
            assert found.count() == 1, name
            box = found.first.bounding_box()
            assert box is not None and box["height"] > 0, name
            # Wholly on the first screen: the figures and the line under them.
            assert 0 <= box["y"] and box["y"] + box["height"] <= h, (name, size, box)
            text = found.first.inner_text()
            assert "In 3 of 3 seeds" in text, text  # the seeds' agreement, stated
            assert found.first.locator("[data-testid='stMetricValue']").count() == 2, name
            # The full account is folded: its expanders are drawn closed.
            accounts = pg.locator("[data-testid='stExpander'] details")
            assert accounts.count() >= 1, name
            assert all(d.get_attribute("open") is None for d in accounts.all()), name
            IMAGES.mkdir(parents=True, exist_ok=True)
            pg.screenshot(path=str(IMAGES / f"page_{name}_{size}.png"))
    finally:
        ctx.close()
