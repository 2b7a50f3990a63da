"""The app in a real Chromium against a real server: deep links, charts, downloads.
Every section's default view by deep link, with no error box and its charts whole, is
``test_readable_browser.py``."""

import csv
import io

import pytest

from tests.browser.conftest import Server, download_named, screenshot, wait_ready

pytestmark = pytest.mark.browser


def _nav_labels(pg):
    return [
        t.strip().splitlines()[-1]
        for t in pg.locator("[data-testid='stSidebarNav'] a").all_inner_texts()
    ]


def test_deep_link_first_request_on_fresh_server(browser):
    """The very first request a new server gets is a deep link with parameters."""
    server = Server()
    try:
        pg = browser.new_page(viewport={"width": 1400, "height": 1000})
        pg.goto(f"{server.url}/gradient_flow?depth=12&act=sigmoid")
        wait_ready(pg, charts=1)
        assert pg.locator("h1").first.inner_text() == "Gradient flow"
        # The entry point ran: our navigation (with Home), not the legacy router's.
        assert _nav_labels(pg)[0] == "Home"
        assert pg.locator("[data-testid='stException']").count() == 0
        assert "depth=12" in pg.url and "act=sigmoid" in pg.url
        screenshot(pg, "fresh_deep_link_gradient_flow")
    finally:
        server.stop()


def test_home_links_navigate(server, page):
    page.goto(server.url)
    wait_ready(page)
    page.get_by_role("link", name="Normalization").first.click()
    page.wait_for_url("**/normalization**")
    wait_ready(page, charts=1)
    assert page.locator("h1").first.inner_text() == "Normalization"


def test_csv_download_holds_the_chart_data(server, page):
    page.goto(f"{server.url}/gradient_flow?depth=7")
    wait_ready(page, charts=1, downloads=1)
    download = download_named(page, "gradient_norms.csv")
    rows = list(csv.DictReader(io.StringIO(open(download.path()).read())))
    assert len(rows) == 3 * 2 * 7  # one row per seed (auto: 3), variant and layer
    assert {r["seed"] for r in rows} == {"0", "1", "2"}
    assert {r["variant"] for r in rows} == {"plain: f(x)", "residual: x + f(x)"}
    assert all(float(r["grad_norm"]) >= 0 for r in rows)


def test_bad_url_shows_warning_not_error(server, page):
    page.goto(f"{server.url}/sinusoidal_encoding?d=abc&text=%3Cscript%3Ealert(1)%3C/script%3E")
    wait_ready(page, downloads=1)
    assert page.locator("[data-testid='stAlertContentWarning']").count() >= 1
    assert page.locator("[data-testid='stException']").count() == 0
    # The markup is shown as text in the table, never executed or rendered.
    assert page.locator("script:has-text('alert(1)')").count() == 0
    screenshot(page, "bad_url_warning")


def test_section_deep_link_on_fresh_server_and_tab_switch(browser):
    """A section named in the first request of a new server opens that tab with the
    link's settings; clicking another tab puts it in the URL and draws only it."""
    server = Server()
    try:
        pg = browser.new_page(viewport={"width": 1400, "height": 1000})
        pg.goto(f"{server.url}/sinusoidal_encoding?section=Waves&positions=50&d_model=64")
        wait_ready(pg, charts=2)
        selected = pg.locator("[data-testid='stTab'][aria-selected='true']")
        assert selected.inner_text().strip() == "Waves"
        assert pg.locator("[data-testid='stException']").count() == 0
        assert "positions=50" in pg.url and "section=Waves" in pg.url
        screenshot(pg, "section_deep_link_waves")
        pg.get_by_role("tab", name="Matrix").click()
        pg.wait_for_url("**section=Matrix**")
        wait_ready(pg, charts=1)
        assert "positions=50" in pg.url  # shared settings stay in the URL
        # Only the open section is drawn: one image, nothing of the waves section.
        assert pg.locator("[data-testid='stVegaLiteChart']").count() == 1
        screenshot(pg, "section_switch_matrix")
    finally:
        server.stop()
