"""The sinusoidal page's image sections in a real browser: the largest matrix, the dot
products and the four side-by-side maps are drawn as pictures with their CSVs."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from tests.browser.conftest import download_named, screenshot, wait_ready

pytestmark = pytest.mark.browser


def test_largest_matrix_and_its_csv(server, page):
    page.goto(f"{server.url}/sinusoidal_encoding?section=Matrix&positions=1000&d_model=1024")
    wait_ready(page, charts=1, downloads=2)
    assert page.locator("[data-testid='stException']").count() == 0
    screenshot(page, "sinusoidal_matrix_1000x1024")
    path = download_named(page, "positional_matrix.csv").path()
    rows = list(csv.reader(io.StringIO(Path(path).read_text("utf-8"))))
    assert len(rows) == 1001 and len(rows[0]) == 1025 and rows[0][:2] == ["k", "P(k,0)"]


def test_relative_and_alternatives_draw_their_maps(server, page):
    page.goto(f"{server.url}/sinusoidal_encoding?section=Relative+position&positions=300&k=7")
    wait_ready(page, charts=2, downloads=3)
    assert page.locator("[data-testid='stException']").count() == 0
    screenshot(page, "sinusoidal_relative_300")
    page.goto(f"{server.url}/sinusoidal_encoding?section=Alternatives&positions=300&d_model=64")
    wait_ready(page, charts=5, downloads=6)
    assert page.locator("[data-testid='stException']").count() == 0
    assert page.get_by_text("The first 256 of the 300 positions.").count() == 1
    screenshot(page, "sinusoidal_alternatives_256")
