"""The skip-connections page in Chromium: the light first view with a CSV download,
then its sections by tab, the Degradation and Lesion runs filling in live, over two
seeds (the URL's Seeds): median lines over min-max bands, progress per seed."""

import csv
import io

import pytest

from tests.browser.conftest import screenshot, wait_ready

pytestmark = pytest.mark.browser


def _charts(page) -> int:
    return page.locator("[data-testid='stVegaLiteChart']").count()


def test_skip_page_trains_live_and_downloads(server, page):
    page.goto(f"{server.url}/skip_connections?preset=seed+network+25%2C25%2C43%2C43%2C54%2C54"
              "&mismatch=project&shallow=2&deep=6&steps=200&l_depth=4&l_steps=100&seeds=2")  # fmt: skip
    wait_ready(page, downloads=2)  # the shortcut table's CSV and the notebook
    assert page.locator("[data-testid='stException']").count() == 0
    assert page.get_by_text("projection").count() >= 1
    assert "class Block(nn.Module)" in page.locator("[data-testid='stCode']").first.inner_text()
    assert _charts(page) == 0  # the first view: formula, table and code, no chart
    with page.expect_download() as dl:
        page.get_by_role("button", name="Download CSV").first.click()
    assert dl.value.suggested_filename == "shortcuts.csv"
    rows = list(csv.DictReader(io.StringIO(open(dl.value.path()).read())))
    assert [r["shortcut"] for r in rows] == [
        "identity", "projection", "identity", "projection", "identity",
    ]  # fmt: skip
    screenshot(page, "skip_connections_stack")

    page.get_by_role("tab", name="Signal").click()
    page.wait_for_url("**section=Signal**")
    wait_ready(page, charts=2)
    screenshot(page, "skip_connections_signal")

    page.get_by_role("tab", name="Degradation").click()
    page.wait_for_url("**section=Degradation**")
    wait_ready(page, charts=1)  # the spirals, before any training
    before = _charts(page)
    page.get_by_role("button", name="Train").click()
    # The curves fill in while it runs (seed by seed: 2 x 200 steps), then the
    # cos(shortcut, update) chart appears.
    try:
        page.get_by_text("Finished 400 steps").wait_for(timeout=120_000)
    finally:
        screenshot(page, "skip_connections_training")
    wait_ready(page, charts=before + 3)
    assert page.locator("[data-testid='stException']").count() == 0
    screenshot(page, "skip_connections_trained")

    # The lesion study trains its own two stacks, then draws the lesion chart.
    page.get_by_role("tab", name="Lesion").click()
    page.wait_for_url("**section=Lesion**")
    wait_ready(page, charts=1)
    before = _charts(page)
    page.get_by_role("button", name="Lesion", exact=True).click()
    page.get_by_text("Finished 200 steps").wait_for(timeout=120_000)
    wait_ready(page, charts=before + 1)
    assert page.get_by_text("Veit et al. (2016): each trained stack").count() == 1
    assert page.get_by_text("Lines: the median of 2 seeds (0-1)").count() >= 1
    assert page.locator("[data-testid='stException']").count() == 0
    screenshot(page, "skip_connections_lesion")
