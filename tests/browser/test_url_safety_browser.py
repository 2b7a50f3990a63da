"""In a real browser, text from the URL never becomes a link (Markdown autolinks
``www.``, ``http://``, ``mailto:`` and e-mail addresses even when every
punctuation character is escaped)."""

from urllib.parse import urlencode

import pytest

from tests.browser.conftest import screenshot, wait_ready

pytestmark = pytest.mark.browser

HOSTILE = {
    "www.evil.com/login": "1",
    "http://evil.example/a": "1",
    "d": "mailto:someone@evil.example",
    "dec": "someone@evil.example",
    "n": "[click](https://evil.example)",
    "positions": "<a href='https://evil.example'>x</a>",
    "text": "www.evil.com and https://evil.example/b and x@evil.example",
}


def test_url_text_in_warnings_is_not_a_link(server, page):
    page.goto(f"{server.url}/sinusoidal_encoding?{urlencode(HOSTILE)}")
    wait_ready(page, charts=0, downloads=1)  # the first section: the table
    warning = page.locator("[data-testid='stAlertContentWarning']")
    assert warning.count() == 1
    text = warning.inner_text()
    assert "www.evil.com/login" in text and "someone@evil.example" in text
    links = page.eval_on_selector_all("a[href]", "els => els.map(e => e.getAttribute('href'))")
    bad = [h for h in links if "evil" in h or h.startswith("mailto:")]
    assert not bad, bad
    assert warning.locator("code").count() >= 6  # the echoed text, as code
    assert page.locator("[data-testid='stException']").count() == 0
    screenshot(page, "url_safety_warning")
