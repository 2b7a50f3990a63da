"""Streamlit binds every setting's widget to the URL (``bind="query-params"``); what
AppTest cannot see, because Streamlit writes a bound widget's value from the
browser: a change reaches the address bar, a reload of that address shows the same
values, a value the widget could not hold is refused with a message and leaves the
address bar, an old link's list (``dims=0,2``) opens the same selection, and a setting one page shares its name with another's (``depth``) does not
follow the user to the other page.
"""

from urllib.parse import parse_qs, urlsplit

import pytest

from tests.browser.conftest import screenshot, wait_ready

pytestmark = pytest.mark.browser


def _query(page) -> dict[str, list[str]]:
    return parse_qs(urlsplit(page.url).query)


def _wait_query(page, name: str, want: list[str] | None, timeout: float = 20_000) -> None:
    """Wait until the address bar's ``name`` is ``want`` (None: absent)."""
    page.wait_for_function(
        """([name, want]) => {
            const got = new URLSearchParams(window.location.search).getAll(name);
            return want === null ? got.length === 0 : JSON.stringify(got) === JSON.stringify(want);
        }""",
        arg=[name, want],
        timeout=timeout,
    )


def test_a_changed_widget_reaches_the_address_bar_and_a_reload_keeps_it(server, page):
    page.goto(f"{server.url}/sinusoidal_encoding?text=hello+there&d=8")
    wait_ready(page, downloads=1)
    assert page.locator("[data-testid='stAlertContentWarning']").count() == 0
    _wait_query(page, "d", ["8"])
    slider = page.locator("[data-testid='stSlider'] input[type='range']").first
    assert slider.get_attribute("aria-valuetext") == "8"
    box = page.get_by_label("Sentence (one word")
    assert box.input_value() == "hello there"

    # A slider moved by the keyboard, and the text box: both written to the URL.
    slider.focus()
    slider.press("ArrowRight")
    _wait_query(page, "d", ["10"])
    box.fill("round trip")
    box.press("Enter")
    _wait_query(page, "text", ["round trip"])
    wait_ready(page, downloads=1)

    # Set back to the default: the parameter leaves the URL.
    slider.focus()
    slider.press("ArrowLeft")
    slider.press("ArrowLeft")
    slider.press("ArrowLeft")
    _wait_query(page, "d", None)

    page.reload()
    wait_ready(page, downloads=1)
    assert page.get_by_label("Sentence (one word").input_value() == "round trip"
    assert _query(page).get("d") is None and _query(page)["text"] == ["round trip"]
    screenshot(page, "url_binding_reloaded")


def test_a_value_the_widget_cannot_hold_is_refused_and_leaves_the_url(server, page):
    # 31 is inside 2..32 but off the slider's step of 2: Streamlit alone would take it.
    page.goto(f"{server.url}/sinusoidal_encoding?d=31&n=200")
    wait_ready(page, downloads=1)
    warning = page.locator("[data-testid='stAlertContentWarning']")
    assert warning.count() == 1
    assert "using the default" in warning.inner_text()
    _wait_query(page, "d", None)
    assert _query(page)["n"] == ["200"]
    screenshot(page, "url_binding_refused")


def test_an_old_links_list_opens_the_multiselect(server, page):
    """Streamlit writes a list as repeated parameters (``dims=0&dims=2``); a link in
    the older form, one comma-separated value, opens the same selection."""
    for query in ("dims=0,2", "dims=0&dims=2"):
        page.goto(f"{server.url}/sinusoidal_encoding?section=Waves&{query}")
        wait_ready(page, charts=1)
        assert page.locator("[data-testid='stAlertContentWarning']").count() == 0
        tags = page.locator("[data-testid='stMultiSelectTagsContainer'] [data-tag] span[title]")
        assert sorted(tags.all_inner_texts()) == ["0", "2"], query


def test_a_setting_does_not_follow_the_user_to_another_page(server, page):
    """Gradient flow and Skip connections both have a ``depth``: one session key, since
    a bound widget's key is its URL name. Leaving the page forgets its settings."""
    page.goto(f"{server.url}/gradient_flow?depth=12")
    wait_ready(page, charts=2, timeout=120_000)
    _wait_query(page, "depth", ["12"])
    page.locator("[data-testid='stSidebarNav'] a[href$='/skip_connections']").click()
    wait_ready(page, timeout=120_000)  # its first section, the block: no chart
    assert page.url.split("?")[0].endswith("/skip_connections")
    assert "depth" not in _query(page)
    depth = page.locator("[data-testid='stSlider'] input[type='range']").first
    assert depth.get_attribute("aria-label") == "Depth (blocks)"
    assert depth.get_attribute("aria-valuetext") == "16"  # its own default, not 12
    assert page.locator("[data-testid='stAlertContentWarning']").count() == 0
    screenshot(page, "url_binding_other_page")
