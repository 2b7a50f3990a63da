"""The normalization page in Chromium: heatmaps drawn, a CSV download, live training."""

import csv
import io

import pandas as pd
import pytest

import resviz as rv
from tests.browser.conftest import screenshot, wait_ready

pytestmark = pytest.mark.browser


# The first section: 4 heatmaps and the histograms.
FIRST_CHARTS = 5
STABILITY_VARIANTS = rv.norms.stability_variants("layer", "pre")


def test_normalization_deep_link_download_and_training(server, page):
    page.goto(f"{server.url}/normalization")
    # Three CSVs and the notebook.
    wait_ready(page, charts=FIRST_CHARTS, downloads=4, timeout=120_000)
    assert page.locator("h1").first.inner_text() == "Normalization"
    assert page.locator("[data-testid='stException']").count() == 0
    # Only the first section is drawn.
    assert page.locator("[data-testid='stVegaLiteChart']").count() == FIRST_CHARTS
    screenshot(page, "normalization_default")

    # The statistics table's CSV holds one row per view with the measured numbers.
    with page.expect_download() as dl:
        page.locator("[class*='norm_stats'] button").click()
    download = dl.value
    assert download.suggested_filename == "norm_stats.csv"
    rows = {r["view"]: r for r in csv.DictReader(io.StringIO(open(download.path()).read()))}
    assert set(rows) == {"raw", "LayerNorm", "BatchNorm", "RMSNorm"}
    assert abs(float(rows["LayerNorm"]["token_std_max"]) - 1) < 1e-3
    # Three seeds by default at init: a row per view and seed (rows above: the last seed's).
    frame = pd.read_csv(download.path())
    assert sorted(frame["seed"].unique()) == [0, 1, 2] and len(frame) == 12

    # Five seeds from the URL: the Pre-LN chart draws the median of the seeds over a
    # band, and its caption says so and counts the seeds.
    page.goto(f"{server.url}/normalization?section=Pre-LN+vs+Post-LN&seeds=5")
    wait_ready(page, charts=2, timeout=120_000)
    assert page.locator("[data-testid='stException']").count() == 0
    # The caption is the chart's full account, folded: in the page, not yet on screen.
    page.get_by_text("Lines: the median of 5 seeds (0-4)").first.wait_for(
        state="attached", timeout=60_000
    )
    assert page.get_by_text("In 5 of 5 seeds Pre-LN's").count() >= 1
    screenshot(page, "normalization_prepost_5_seeds")

    page.goto(f"{server.url}/normalization?section=Stability&s_steps=30&s_lr=0.1&s_pos=pre")
    # The models' CSV; the notebook comes with the finished run.
    wait_ready(page, downloads=1, timeout=120_000)
    selected = page.locator("[data-testid='stTab'][aria-selected='true']")
    assert selected.inner_text().strip() == "Stability"
    # Start the stability run: the live panel fills in with loss and gradient curves.
    before = page.locator("[data-testid='stVegaLiteChart']").count()
    page.locator("[class*='stability'][class*='start'] button").click()
    page.wait_for_function(
        "n => document.querySelectorAll(\"[data-testid='stVegaLiteChart']\").length >= n + 2",
        arg=before,
        timeout=120_000,
    )
    page.get_by_text("Finished 30 steps").wait_for(timeout=120_000)
    wait_ready(page, charts=before + 2)
    assert page.locator("[data-testid='stException']").count() == 0
    # The caption under the charts says which runs diverged, at which step and why,
    # and which did not: exactly what the definition gives on the downloaded CSV,
    # whatever this CPU's kernels do with float overflow.
    with page.expect_download() as dl:
        page.locator("[class*='stability_training'] button").click()
    # float32, as trained: the CSV holds the shortest repr that reads back exactly.
    frame = pd.read_csv(dl.value.path(), dtype={"loss": "float32", "grad_norm": "float32"})
    caption = page.get_by_text("At learning rate 0.1:").inner_text()
    assert set(frame["variant"]) == set(STABILITY_VARIANTS)
    calm = []
    for variant, g in frame.groupby("variant", sort=False):
        found = rv.first_divergence(g["loss"], g["grad_norm"])
        if found is None:
            calm.append(variant)
            assert g["step"].tolist() == list(range(30)) and not g["diverged"].any()
        else:  # stopped at its step, flagged there, named with step and reason
            assert g["step"].max() == found.step and g["diverged"].sum() == 1
            assert f"{variant} at step {found.step} ({found.label})" in caption
    if len(calm) == len(STABILITY_VARIANTS):
        assert "No run diverged" in caption
    elif calm:
        assert caption.endswith("Did not diverge: " + ", ".join(calm) + ".")
    screenshot(page, "normalization_trained")
    # Another tab: the timing alone, measured when it opens.
    page.get_by_role("tab", name="Cost").click()
    page.wait_for_url("**section=Cost**")
    wait_ready(page, charts=1, timeout=120_000)
    assert page.locator("[data-testid='stVegaLiteChart']").count() == 1
    # A hidden section's settings leave the address bar (Streamlit binds only drawn
    # widgets), so a link copied here opens Cost alone; they are kept, and come back
    # with their section.
    assert "s_steps" not in page.url
    screenshot(page, "normalization_cost")
    page.get_by_role("tab", name="Stability").click()
    page.wait_for_url("**s_steps=30**", timeout=60_000)
    assert "s_pos=pre" in page.url  # (s_lr=0.1 is the default: left out)
