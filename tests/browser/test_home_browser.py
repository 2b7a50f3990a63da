"""The home page in a real Chromium: the live chart draws, the path through the pages
is there and leads to its first page."""

import pytest

from tests.browser.conftest import screenshot, wait_ready
from ui.home import PATH

pytestmark = pytest.mark.browser


def test_home_shows_the_live_chart_and_the_path(server, page):
    page.goto(server.url)
    wait_ready(page, charts=1)
    assert page.locator("[data-testid='stException']").count() == 0
    chart = page.locator("[data-testid='stVegaLiteChart']")
    assert chart.count() == 1
    box = chart.first.bounding_box()
    assert box and box["width"] > 300 and box["height"] > 200
    assert page.get_by_text("Start here").count() == 1
    assert page.get_by_text("Measured on this server").count() == 1
    for i, info in enumerate(PATH, start=1):
        assert page.get_by_role("link", name=f"{i}. {info.title}").count() == 1
    screenshot(page, "home")
    page.get_by_role("link", name=f"1. {PATH[0].title}").click()
    page.wait_for_url(f"**/{PATH[0].url_path}**")
    wait_ready(page)
    assert page.locator("h1").first.inner_text() == PATH[0].title
