"""The gradient-flow page in Chromium: each section drawn on its own, a CSV and a
notebook, live training, the sweep."""

import csv
import io
import json
import re

import pytest

from tests.browser.conftest import download_named, screenshot, wait_ready

pytestmark = pytest.mark.browser


def _charts(pg) -> int:
    return pg.locator(
        "[data-testid='stVegaLiteChart'] canvas, [data-testid='stVegaLiteChart'] svg.marks"
    ).count()


def _open(pg, label: str) -> None:
    pg.get_by_role("tab", name=label).click()
    pg.wait_for_url(f"**section={label.replace(' ', '+')}**")


def test_gradient_flow_sections_download_train_and_sweep(server, page):
    page.goto(f"{server.url}/gradient_flow?depth=6&steps=400")
    # The first view: two charts, their CSVs and the notebook.
    wait_ready(page, charts=2, downloads=3, timeout=120_000)
    assert page.locator("[data-testid='stException']").count() == 0
    assert _charts(page) == 2
    download = download_named(page, "activation_gradients.csv")
    rows = list(csv.DictReader(io.StringIO(open(download.path()).read())))
    # One row per position x_0..x_6 per variant per seed (3 by default), seed first.
    assert len(rows) == 3 * 2 * 7 and list(rows[0])[0] == "seed"
    assert {r["seed"] for r in rows} == {"0", "1", "2"}
    assert all(float(r["act_grad"]) >= 0 for r in rows)
    nb = json.loads(open(download_named(page, "gradient_flow_per_layer.ipynb").path()).read())
    code = "\n".join(c["source"] for c in nb["cells"] if c["cell_type"] == "code")
    assert "depth=6" in code and "rv.recipes.gradients.per_layer(" in code
    assert "seeds=3" in code  # the notebook runs the seeds the page shows
    # The median lines over a band (the band is an area mark, drawn under the lines).
    assert page.get_by_text("Lines: the median of 3 seeds (0-2)").count() == 2
    screenshot(page, "gradient_flow_per_layer")

    _open(page, "Derivation")
    wait_ready(page, charts=2, downloads=4, timeout=120_000)
    assert page.locator(".katex").count() >= 1  # the derivation is typeset
    assert "depth=6" in page.url  # the shared settings stay in the link
    screenshot(page, "gradient_flow_derivation")

    # Live training: the progress text counts up and the charts appear before the end.
    _open(page, "Training")
    wait_ready(page, downloads=1)
    assert _charts(page) == 0  # nothing runs until asked
    page.get_by_role("button", name="Train").click()
    progress = page.get_by_text(re.compile(r"gradflow_train: step \d+ of 400"))
    progress.first.wait_for(timeout=60_000)
    page.wait_for_function(
        """() => document.querySelectorAll(
            "[data-testid='stVegaLiteChart'] canvas, [data-testid='stVegaLiteChart'] svg.marks"
        ).length > 0""",
        timeout=60_000,
    )
    partial = page.get_by_text(re.compile(r"step (\d+) of 400")).first.inner_text()
    done_at_partial = int(re.search(r"step (\d+) of", partial).group(1))
    screenshot(page, "gradient_flow_training_live")
    page.get_by_text("Finished 400 steps").wait_for(timeout=180_000)
    assert done_at_partial < 400
    wait_ready(page, charts=3, timeout=60_000)  # the loss and a heatmap per stack
    screenshot(page, "gradient_flow_trained")

    # The depth sweep runs in the background too; its four panels appear.
    _open(page, "Depth sweep")
    wait_ready(page, downloads=1)
    page.get_by_role("button", name="Sweep").click()
    page.get_by_text(re.compile(r"Finished \d+ stacks")).wait_for(timeout=240_000)
    wait_ready(page, charts=4, timeout=60_000)
    assert page.locator("[data-testid='stException']").count() == 0
    assert _charts(page) == 4
    screenshot(page, "gradient_flow_swept")
