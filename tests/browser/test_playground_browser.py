"""The encoder playground in Chromium: the first view (tokens, model card, code), a
section's CSV that holds the attention map, and a live training run that fills in
after Start."""

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
    # Tokens and model card CSVs, encoder.py and the notebook; no chart.
    wait_ready(page, downloads=4, timeout=120_000)
    assert page.locator("[data-testid='stVegaLiteChart']").count() == 0
    assert page.locator("[data-testid='stException']").count() == 0
    assert page.locator("[data-testid='stAlertContentError']").count() == 0
    # The code is drawn once its expander is opened.
    assert page.locator("[data-testid='stCode']").count() == 0
    page.get_by_text("PyTorch code for exactly this configuration").click()
    page.locator("[data-testid='stCode']").first.wait_for(timeout=60_000)
    assert "class Encoder(nn.Module)" in page.locator("[data-testid='stCode']").first.inner_text()
    screenshot(page, "playground_default")


def test_playground_attention_csv_and_live_training(server, page):
    page.goto(f"{server.url}/encoder_playground?{urllib.parse.urlencode(SMALL)}&section=Attention")
    wait_ready(page, charts=1, downloads=2, timeout=120_000)
    download = download_named(page, "attention.csv")
    every = list(csv.DictReader(io.StringIO(open(download.path(), encoding="utf-8").read())))
    # Every seed's map (3 by default); the chart draws the first seed's.
    assert {r["seed"] for r in every} == {"0", "1", "2"} and len(every) == 3 * 12 * 12
    rows = [r for r in every if r["seed"] == "0"]
    assert page.get_by_text("(seed 0)").count() >= 1
    by_query: dict[str, float] = {}
    for r in rows:
        by_query[r["query"]] = by_query.get(r["query"], 0.0) + float(r["weight"])
    assert len(by_query) == 12  # repeated words keep unique labels ("0:the", "4:the")
    assert all(abs(s - 1) < 1e-4 for s in by_query.values())
    assert "0:the" in by_query and "4:the" in by_query

    # The Training section, by its tab: the text and model settings come along.
    page.get_by_role("tab", name="Training").click()
    page.wait_for_url("**section=Training**")
    wait_ready(page, downloads=2, timeout=120_000)  # the first batch's CSV, the notebook
    assert "layers=2" in page.url
    page.locator("[data-testid='stButton'] button", has_text="Train").first.click()
    page.get_by_text("Finished 30 steps").wait_for(timeout=120_000)
    # The loss, then attention, update ratios, rank collapse and two shares, trained.
    wait_ready(page, charts=6, downloads=9, timeout=120_000)
    assert page.get_by_text("Predictions at masked positions").count() == 1
    assert page.locator("[data-testid='stException']").count() == 0
    screenshot(page, "playground_trained")
    # The page is taller than the window: scroll to the trained views and look there too.
    page.get_by_text("Predictions at masked positions").scroll_into_view_if_needed()
    screenshot(page, "playground_trained_views")


def test_playground_stream_draws_bands_over_seeds(server, page):
    """The Residual stream's curves over three seeds (the default): each line is the
    seeds' median over a band from their lowest to their highest, and the caption says
    so and counts the seeds that agree."""
    page.goto(
        f"{server.url}/encoder_playground?{urllib.parse.urlencode(SMALL)}&section=Residual+stream"
    )
    wait_ready(page, charts=3, downloads=4, timeout=120_000)
    assert page.locator("[data-testid='stException']").count() == 0
    assert page.get_by_text("Lines: the median of 3 seeds (0-2)").count() == 2
    assert page.get_by_text("In 3 of 3 seeds").count() >= 2
    page.locator("[data-testid='stVegaLiteChart']").nth(1).scroll_into_view_if_needed()
    screenshot(page, "playground_stream_bands")
