"""The encoder playground in Chromium: charts drawn, a CSV that holds the attention
map, and a live training run that fills in after Start."""

import csv
import io
import urllib.parse

import pytest

from tests.browser.conftest import download_named, screenshot, wait_ready

pytestmark = pytest.mark.browser


SMALL = {
    "layers": "2",
    "d_model": "32",
    "heads": "4",
    "d_ff": "64",
    "max_len": "12",
    "steps": "30",
    "lr": "3e-3",
    "text": "the cat sat on the mat, the dog sat on the log. " * 4,
}


def test_playground_default_view(server, page):
    page.goto(f"{server.url}/encoder_playground")
    wait_ready(page, charts=6, downloads=6, timeout=120_000)
    assert page.locator("[data-testid='stException']").count() == 0
    assert page.locator("[data-testid='stAlertContentError']").count() == 0
    screenshot(page, "playground_default")


def test_playground_attention_csv_and_live_training(server, page):
    page.goto(f"{server.url}/encoder_playground?{urllib.parse.urlencode(SMALL)}")
    wait_ready(page, charts=6, downloads=6, timeout=120_000)
    download = download_named(page, "attention.csv")
    rows = list(csv.DictReader(io.StringIO(open(download.path(), encoding="utf-8").read())))
    assert len(rows) == 12 * 12
    by_query: dict[str, float] = {}
    for r in rows:
        by_query[r["query"]] = by_query.get(r["query"], 0.0) + float(r["weight"])
    assert len(by_query) == 12  # repeated words keep unique labels ("0:the", "4:the")
    assert all(abs(s - 1) < 1e-4 for s in by_query.values())
    assert "0:the" in by_query and "4:the" in by_query

    page.locator("[data-testid='stButton'] button", has_text="Train").first.click()
    page.get_by_text("Finished 30 steps").wait_for(timeout=120_000)
    wait_ready(page, charts=12, downloads=12, timeout=120_000)
    assert page.get_by_text("Predictions at masked positions").count() == 1
    assert page.locator("[data-testid='stException']").count() == 0
    screenshot(page, "playground_trained")
    # The page is taller than the window: scroll to the trained views and look there too.
    page.get_by_text("Predictions at masked positions").scroll_into_view_if_needed()
    screenshot(page, "playground_trained_views")
