"""Workshop mode in Chromium on a fresh server: the presenter's page on light and dark
themes (projector mode on), and a participant's step link as the first request."""

from __future__ import annotations

import urllib.parse

import pytest

from tests.browser.conftest import Server, screenshot, wait_ready
from ui.lessons import load_lessons

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def fresh():
    s = Server()
    yield s
    s.stop()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_presenter_view_on_both_themes(browser, fresh, scheme):
    ctx = browser.new_context(viewport={"width": 1600, "height": 1100}, color_scheme=scheme)
    pg = ctx.new_page()
    pg.goto(f"{fresh.url}/workshop?step=4&projector=true")
    wait_ready(pg)
    assert pg.locator("[data-testid='stException']").count() == 0
    # Projector mode: the sidebar is out of the way and the text is larger. The CSS the
    # first run sends was seen to take hold up to a second after the run had ended (the
    # sidebar still drawn at the first look, hidden at the next): wait for it, with no
    # click in between.
    pg.locator("[data-testid='stSidebar']").wait_for(state="hidden", timeout=15_000)
    size = pg.evaluate(
        "parseFloat(getComputedStyle(document.querySelector("
        "'[data-testid=stMarkdownContainer] p')).fontSize)"
    )
    assert size >= 20, size
    # The step's link in large type and its QR code, drawn locally.
    code = pg.locator("[data-testid='stCode']").first.inner_text()
    assert "/gradient_flow?" in code and "lesson=residuals" in code and "step=4" in code
    assert pg.locator("[data-testid='stImage'] img").count() == 1
    screenshot(pg, f"workshop_presenter_{scheme}")
    # Open the step: its page, its section, its text.
    pg.get_by_role("button", name="Open this step", exact=True).click()
    pg.wait_for_url("**/gradient_flow**")
    wait_ready(pg)
    headings = " ".join(pg.locator("[data-testid='stHeading']").all_inner_texts())
    assert "Change the init, add a norm" in headings
    screenshot(pg, f"workshop_step_{scheme}")
    ctx.close()


def test_participant_link_is_the_first_request_of_a_fresh_server(browser):
    server = Server()
    try:
        # The shared link of the lesson's step 4: its own settings (Xavier init, LayerNorm).
        step = load_lessons()[0]["residuals"].steps[3]
        assert step.page == "gradient_flow" and step.section == "Per layer"
        query = urllib.parse.urlencode(step.query("residuals", 4))
        pg = browser.new_page(viewport={"width": 1400, "height": 1100})
        pg.goto(f"{server.url}/gradient_flow?{query}")
        wait_ready(pg)
        assert pg.locator("[data-testid='stException']").count() == 0
        pg.get_by_text("Lock in a prediction to see the measurement.").wait_for(timeout=60_000)
        assert pg.locator("[data-testid='stVegaLiteChart']").count() == 0  # held back
        pg.get_by_text("residual", exact=True).click()
        pg.get_by_role("button", name="Lock in my prediction").click()
        wait_ready(pg, charts=2)
        assert pg.get_by_text("You predicted").is_visible()
        assert "depth=30" in pg.url and "init=xavier" in pg.url and "step=4" in pg.url
        assert "the measurement says otherwise" not in pg.inner_text("body")
        screenshot(pg, "workshop_participant_measured")
    finally:
        server.stop()
