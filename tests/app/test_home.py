"""The home page: one live chart (the Gradient flow page's first chart at that page's
defaults), a caption worded from its data, and a numbered path through the pages."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

import resviz as rv
import ui.home
from tests.app.conftest import NUM, chart_frames
from ui.registry import PAGES


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    from streamlit.testing.v1 import AppTest

    from tests.app.conftest import ENTRY, TIMEOUT

    at = AppTest.from_file(ENTRY, default_timeout=TIMEOUT).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def direct() -> pd.DataFrame:
    """The same frame computed here, without the page: the library's calls at the
    Gradient flow page's defaults and seed 0."""
    cfg = ui.home.home_config()
    base = rv.StackConfig(
        depth=cfg["depth"],
        width=cfg["width"],
        activation=cfg["act"],
        init=cfg["init"],
        norm=cfg["norm"],
        seed=0,
    )
    per = {
        n: rv.gradients.layer_gradients(c, seed=0)
        for n, c in rv.gradients.plain_and_residual(base).items()
    }
    return rv.gradients.stream_gradient_frame(per)


def test_home_draws_one_chart_of_the_measured_gradients(home):
    assert len(home.get("vega_lite_chart")) == 1
    (drawn,) = chart_frames(home)
    want = direct()
    assert set(drawn["variant"]) == {rv.gradients.PLAIN, rv.gradients.RESIDUAL}
    for variant, part in want.groupby("variant"):
        got = drawn[drawn["variant"] == variant].sort_values("block")
        np.testing.assert_allclose(got["act_grad"], part["act_grad"], rtol=1e-9)
        assert list(got["block"]) == list(range(ui.home.home_config()["depth"] + 1))


def test_the_caption_states_the_drawn_numbers(home):
    text = next(c.value for c in home.caption if c.value.startswith("Measured on this server"))
    want = direct().set_index(["variant", "block"])
    plain = want.loc[(rv.gradients.PLAIN, 0), "act_grad"]
    res = want.loc[(rv.gradients.RESIDUAL, 0), "act_grad"]
    m = re.search(rf"is {NUM} without shortcuts and {NUM} with them \((\S+) times", text)
    assert m, text
    assert float(m.group(1)) == pytest.approx(plain, rel=5e-3)
    assert float(m.group(2)) == pytest.approx(res, rel=5e-3)
    assert float(m.group(3)) == pytest.approx(res / plain, rel=5e-3)
    # At these defaults the plain stack loses gradient towards the input, the residual one not.
    assert "the plain stack's gradient shrinks to" in text
    depth, act = ui.home.home_config()["depth"], ui.home.home_config()["act"]
    assert f"a {depth}-block {act} stack" in text


def frame(plain: float, res: float, gain_p: float, gain_r: float) -> pd.DataFrame:
    rows = [
        (rv.gradients.PLAIN, 0, plain, gain_p),
        (rv.gradients.RESIDUAL, 0, res, gain_r),
        (rv.gradients.PLAIN, 1, plain / gain_p, 1.0),
        (rv.gradients.RESIDUAL, 1, res / gain_r, 1.0),
    ]
    return pd.DataFrame(rows, columns=["variant", "block", "act_grad", "gain"])


def test_the_caption_follows_the_data_where_a_typed_claim_would_be_false():
    # The opposite outcome: the shortcut's input gradient smaller, the plain one growing.
    text = ui.home.caption(frame(2.0, 0.5, 4.0, 0.25), 3, "relu")
    assert "is 2 without shortcuts and 0.5 with them (0.25 times the plain stack's)" in text
    assert "plain stack's gradient grows to 4 times" in text
    assert "residual stack's shrinks to 0.25 times" in text
    assert "a 3-block relu stack" in text
    same = ui.home.caption(frame(1.0, 1.0, 1.0, 1.0), 1, "tanh")
    assert "(exactly the plain stack's)" in same and "keeps exactly its size" in same
    tiny = ui.home.caption(frame(3e-40, 1.0, 3e-40, 1.0), 50, "sigmoid")
    assert "is 3e-40 without shortcuts" in tiny  # never printed as 0


def test_start_here_walks_the_pages_in_order(home):
    links = home.get("page_link")
    labels = [link.proto.label for link in links]
    path = [p for p in PAGES if p.url_path != "workshop"]
    numbered = [(i, link) for i, link in enumerate(links) if re.match(r"\d+\. ", link.proto.label)]
    assert [link.proto.label for _, link in numbered] == [
        f"{i}. {p.title}" for i, p in enumerate(path, start=1)
    ]
    assert [i for i, _ in numbered] == list(range(numbered[0][0], numbered[0][0] + len(path)))
    for page, (_, link) in zip(path, numbered, strict=True):
        assert link.proto.page == page.url_path, (page.url_path, link.proto.page)
    assert any(label == "Workshop" for label in labels)
    subheaders = [s.value for s in home.subheader]
    assert "Start here" in subheaders


def test_the_chart_names_the_step_where_its_settings_change(home):
    step = next(i for i, p in enumerate(ui.home.PATH, start=1) if p.url_path == "gradient_flow")
    assert any(c.value.endswith(f"to change on step {step}.") for c in home.caption)
    labels = [link.proto.label for link in home.get("page_link")]
    assert f"{step}. Gradient flow" in labels
