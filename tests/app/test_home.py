"""The home page: one live chart (the Gradient flow page's first chart at that page's
defaults), a caption worded from its data, and a numbered path through the pages."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest

import resviz as rv
import ui.home
from resviz.gradients import PLAIN, RESIDUAL
from resviz.gradients.words import stream_change_over_seeds
from resviz.words.seeds import band_words
from tests.app.conftest import NUM, chart_frames
from tests.margins import printed
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
    Gradient flow page's defaults, seeds 0-2 (that section's default count), stacked
    under a seed column."""
    cfg = ui.home.home_config()
    parts = []
    for seed in range(ui.home.seeds()):
        base = rv.StackConfig(
            depth=cfg["depth"],
            width=cfg["width"],
            activation=cfg["act"],
            init=cfg["init"],
            norm=cfg["norm"],
            seed=seed,
        )
        per = {
            n: rv.gradients.layer_gradients(c, seed=seed)
            for n, c in rv.gradients.plain_and_residual(base).items()
        }
        parts.append(rv.gradients.stream_gradient_frame(per).assign(seed=seed))
    return pd.concat(parts, ignore_index=True)


def test_home_draws_one_chart_of_the_measured_gradients(home):
    assert ui.home.seeds() == 3
    assert len(home.get("vega_lite_chart")) == 1
    drawn = chart_frames(home)
    # The median line and, under it, the band from the lowest seed to the highest.
    (line,) = [d for d in drawn if "act_grad" in d.columns and "status" in d.columns]
    (band,) = [d for d in drawn if "act_grad_lo" in d.columns and "status" not in d.columns]
    want = direct()
    assert set(line["variant"]) == {rv.gradients.PLAIN, rv.gradients.RESIDUAL}
    for variant, part in want.groupby("variant"):
        by_block = part.groupby("block")["act_grad"]
        got = line[line["variant"] == variant].sort_values("block")
        np.testing.assert_allclose(got["act_grad"], by_block.median(), rtol=1e-9)
        assert list(got["block"]) == list(range(ui.home.home_config()["depth"] + 1))
        assert (got["seeds"] == 3).all()
        b = band[band["variant"] == variant].sort_values("block")
        np.testing.assert_allclose(b["act_grad_lo"], by_block.min(), rtol=1e-9)
        np.testing.assert_allclose(b["act_grad_hi"], by_block.max(), rtol=1e-9)
        assert (b["act_grad_hi"] > b["act_grad_lo"]).all()  # the seeds differ: a real band


def test_the_caption_states_the_drawn_numbers(home):
    text = next(c.value for c in home.caption if c.value.startswith("Measured on this server"))
    want = direct()
    at0 = want[want["block"] == 0].set_index(["seed", "variant"])["act_grad"]
    plain = [at0[(s, rv.gradients.PLAIN)] for s in range(3)]
    res = [at0[(s, rv.gradients.RESIDUAL)] for s in range(3)]
    m = re.search(
        rf"is {NUM}–{NUM} without shortcuts and {NUM}–{NUM} with them \({NUM}–{NUM} "
        r"times the plain stack's, seed by seed\)",
        text,
    )
    assert m, text
    got = [float(x) for x in m.groups()]
    assert got[:2] == printed([min(plain), max(plain)])
    assert got[2:4] == printed([min(res), max(res)])
    ratios = [b / a for a, b in zip(plain, res, strict=True)]
    assert got[4:] == printed([min(ratios), max(ratios)])
    # At these defaults every seed's plain stack loses gradient towards the input and
    # every seed's residual stack gains some: the sentence says so, with the count.
    gains = want[want["block"] == 0].set_index(["seed", "variant"])["gain"]
    assert all(
        gains[(s, rv.gradients.PLAIN)] < 1 < gains[(s, rv.gradients.RESIDUAL)] for s in range(3)
    )
    # Worded by the library's function from the same seeds' gains (its seed-agreement
    # phrase is tested in tests/unit/words/test_seeds.py).
    logs = want[want["block"] == 0].set_index(["seed", "variant"])["log10_gain"]
    plain_logs, res_logs = ([logs[(s, v)] for s in range(3)] for v in (PLAIN, RESIDUAL))
    assert stream_change_over_seeds(plain_logs, res_logs, [0, 1, 2]) in text
    assert "the plain stack's gradient shrinks from the output back" in text
    assert "the residual stack's grows" in text
    assert band_words([0, 1, 2]) in text
    depth, act = ui.home.home_config()["depth"], ui.home.home_config()["act"]
    assert f"a {depth}-block {act} stack" in text and "in each of 3 seeds" in text


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
    assert "is 2 without shortcuts and 0.5 with them (0.25 times the plain stack's" in text
    assert "the plain stack's gradient grows from the output back to the input (to 4 times" in text
    assert "the residual stack's shrinks (to 0.25 times)" in text
    assert "a 3-block relu stack" in text and "one backward pass (seed 0)" in text
    assert stream_change_over_seeds([math.log10(4.0)], [math.log10(0.25)], [0]) in text
    same = ui.home.caption(frame(1.0, 1.0, 1.0, 1.0), 1, "tanh")
    assert "(1 times the plain stack's" in same and "gradient keeps its size" in same
    tiny = ui.home.caption(frame(3e-40, 1.0, 3e-40, 1.0), 50, "sigmoid")
    assert "is 3e-40 without shortcuts" in tiny  # never printed as 0


def test_the_caption_says_when_the_seeds_split():
    # Two seeds' frames in which the residual stack's gradient goes opposite ways.
    two = pd.concat(
        [frame(0.1, 1.0, 0.1, 2.0).assign(seed=0), frame(0.1, 1.0, 0.1, 0.5).assign(seed=1)]
    )
    text = ui.home.caption(two, 2, "tanh")
    lg = math.log10
    assert stream_change_over_seeds([lg(0.1), lg(0.1)], [lg(2), lg(0.5)], [0, 1]) in text
    assert "the residual stack's grows (to 2 times)" in text
    assert "the residual stack's shrinks (to 0.5 times)" in text


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
