"""The gradient-flow page in Chromium: charts drawn, a CSV, live training, the sweep."""

import csv
import io
import re

import pytest

from tests.browser.conftest import download_named, screenshot, wait_ready

pytestmark = pytest.mark.browser

CHARTS_AT_LOAD = 8  # sections 1, 2 and 5
DOWNLOADS_AT_LOAD = 8


def _charts(pg) -> int:
    return pg.locator(
        "[data-testid='stVegaLiteChart'] canvas, [data-testid='stVegaLiteChart'] svg.marks"
    ).count()


def test_gradient_flow_deep_link_download_train_and_sweep(server, page):
    page.goto(f"{server.url}/gradient_flow?depth=6&steps=400")
    wait_ready(page, charts=CHARTS_AT_LOAD, downloads=DOWNLOADS_AT_LOAD, timeout=120_000)
    assert page.locator("[data-testid='stException']").count() == 0
    assert page.locator(".katex").count() >= 1  # the derivation is typeset

    # The stream-gradient CSV holds one row per position x_0..x_6 per variant.
    download = download_named(page, "activation_gradients.csv")
    rows = list(csv.DictReader(io.StringIO(open(download.path()).read())))
    assert len(rows) == 2 * 7
    assert all(float(r["act_grad"]) >= 0 for r in rows)
    screenshot(page, "gradient_flow_default")

    # Live training: the progress text counts up and the charts appear before the end.
    page.get_by_role("button", name="Train").click()
    progress = page.get_by_text(re.compile(r"gradflow_train: step \d+ of 400"))
    progress.first.wait_for(timeout=60_000)
    page.wait_for_function(
        f"""() => document.querySelectorAll(
            "[data-testid='stVegaLiteChart'] canvas, [data-testid='stVegaLiteChart'] svg.marks"
        ).length > {CHARTS_AT_LOAD}""",
        timeout=60_000,
    )
    partial = page.get_by_text(re.compile(r"step (\d+) of 400")).first.inner_text()
    done_at_partial = int(re.search(r"step (\d+) of", partial).group(1))
    screenshot(page, "gradient_flow_training_live")
    page.get_by_text("Finished 400 steps").wait_for(timeout=180_000)
    assert done_at_partial < 400
    wait_ready(page, charts=CHARTS_AT_LOAD + 3, timeout=60_000)
    screenshot(page, "gradient_flow_trained")

    # The depth sweep runs in the background too; its four panels appear.
    page.get_by_role("button", name="Sweep").click()
    page.get_by_text(re.compile(r"Finished \d+ stacks")).wait_for(timeout=240_000)
    wait_ready(page, charts=CHARTS_AT_LOAD + 3 + 4, timeout=60_000)
    assert page.locator("[data-testid='stException']").count() == 0
    assert _charts(page) >= CHARTS_AT_LOAD + 7
    screenshot(page, "gradient_flow_swept")
