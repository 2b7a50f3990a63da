"""The sidebar seed sets the weights and the data on every page, and the home page's
notebook hint returns the numbers its page draws (issue 13, item 4)."""

import dataclasses
import io

import pandas as pd
import pytest
import streamlit as st

import resviz as rv
import ui.views
from resviz import gradients as G
from ui.registry import NOTEBOOK_EXAMPLE

# The first chart on each page whose numbers depend on random draws (weights or data).
# Each page's first seeded chart, and the section that draws it where the page has
# sections. The sinusoidal page's first four sections are closed forms: nothing random.
FIRST_SEEDED = {
    "app_pages/gradient_flow.py": ("gradient_norms", "Per layer"),
    "app_pages/skip_connections.py": ("forward_signal", "Signal"),
    "app_pages/normalization.py": ("norm_views", "Four views"),
    "app_pages/sinusoidal_encoding.py": ("encoding_norms", "Alternatives"),
    "app_pages/encoder_playground.py": ("attention", "Attention"),
}


@pytest.fixture
def frames(app, monkeypatch):
    """Run a page and return every frame it offered as a CSV, by CSV name."""
    original = ui.views.csv_button

    def run(page: str, seed: int, section: str | None = None) -> dict[str, pd.DataFrame]:
        seen: dict[str, pd.DataFrame] = {}

        def record(df, name, label="Download CSV"):  # noqa: ANN001, ANN202
            if isinstance(df, pd.DataFrame):
                seen[name] = df.copy()
            else:  # a large result's CSV, made once with it (Section.run(large=True))
                seen[name] = pd.read_csv(io.BytesIO(df))
            original(df, name, label)

        monkeypatch.setattr(ui.views, "csv_button", record)
        at = app(page, seed=str(seed), **({"section": section} if section else {})).run()
        assert not at.exception, [e.value for e in at.exception]
        assert at.number_input(key="seed").value == seed
        return seen

    return run


def _numbers(df: pd.DataFrame) -> pd.DataFrame:
    return df.select_dtypes("number")


@pytest.mark.parametrize("page", list(FIRST_SEEDED))
def test_the_seed_changes_the_numbers_and_repeats_them(frames, page):
    name, section = (
        FIRST_SEEDED[page] if isinstance(FIRST_SEEDED[page], tuple) else (FIRST_SEEDED[page], None)
    )
    zero, one = frames(page, 0, section)[name], frames(page, 1, section)[name]
    assert zero.shape == one.shape
    assert not _numbers(zero).equals(_numbers(one))
    st.cache_data.clear()  # recompute, rather than read the first run back
    pd.testing.assert_frame_equal(frames(page, 1, section)[name], one, check_exact=True)


def test_gradient_flow_weights_follow_the_sidebar_seed(frames):
    # Before issue 13 the page built every stack from seed 0 and used the sidebar
    # seed only for the batch.
    seed = 4
    shown = frames("app_pages/gradient_flow.py", seed)["gradient_norms"]
    assert sorted(set(shown["seed"])) == [4, 5, 6]  # seeds 4, 5, 6 (Seeds: auto = 3)
    shown = shown[shown["seed"] == seed]
    plain = shown[shown["variant"] == "plain: f(x)"]["grad_norm"].to_numpy()
    cfg = rv.StackConfig(residual="none", seed=seed)  # the page's defaults
    want = G.layer_gradients(cfg, seed=seed)["weight_grad"].to_numpy()[1:]
    assert plain == pytest.approx(want, rel=1e-9)  # seeds computed together (vmap)
    old = G.layer_gradients(dataclasses.replace(cfg, seed=0), seed=seed)["weight_grad"]
    assert plain.tolist() != old.to_numpy()[1:].tolist()


def test_skip_connections_weights_follow_the_sidebar_seed(frames):
    seed = 4
    shown = frames("app_pages/skip_connections.py", seed, "Signal")["forward_signal"]
    assert sorted(set(shown["seed"])) == [4, 5, 6]  # seeds 4, 5, 6 (Seeds: auto = 3)
    shown = shown[(shown["seed"] == seed) & (shown["variant"] == "shortcut: add")]
    shown = shown.drop(columns=["seed", "variant"])
    cfg = rv.StackConfig(  # the page's defaults
        depth=16, width=64, activation="relu", alpha=0.0, alpha_learnable=True, seed=seed
    )
    want = rv.shortcuts.forward_decomposition(cfg, seed=seed)
    pd.testing.assert_frame_equal(shown.reset_index(drop=True), want, check_exact=True)


def test_home_hint_returns_what_its_page_draws(app, frames):
    ex = NOTEBOOK_EXAMPLE
    home = app().run()
    text = " ".join(m.value for m in home.markdown)
    assert f"`{ex.code}`" in text and ex.what in text
    fn = rv
    for part in ex.function.split("."):  # a public function of the package, by its path
        fn = getattr(fn, part)
    got = fn(rv.StackConfig(**dict(ex.config)))
    shown = frames(ex.page, 0)[ex.chart]
    shown = shown[(shown["variant"] == ex.variant) & (shown["seed"] == 0)]
    shown = shown.drop(columns=["variant", "seed"]).reset_index(drop=True)
    assert len(shown) and set(shown.columns) <= set(got.columns)
    # The page computes its seeds together (vmap): the same numbers to float64 rounding.
    pd.testing.assert_frame_equal(shown, got[list(shown.columns)], rtol=1e-9, check_exact=False)


def test_the_sidebar_seeds_set_how_many_seeds_every_section_runs(frames, app):
    at = app("app_pages/gradient_flow.py", seeds="5", seed="2").run()
    assert not at.exception
    assert at.selectbox(key="seeds").value == "5"
    shown = frames("app_pages/gradient_flow.py", 2)  # auto: 3 seeds from seed 2
    assert sorted(set(shown["gradient_norms"]["seed"])) == [2, 3, 4]


@pytest.mark.parametrize("bad", ["11", "0", "three", "5,5"])
def test_a_seeds_value_the_sidebar_cannot_hold_falls_back_to_auto(app, bad):
    at = app("app_pages/gradient_flow.py", seeds=bad).run()
    assert not at.exception
    assert at.selectbox(key="seeds").value == "auto"
    assert any("seeds" in w.value and "ignored" in w.value for w in at.warning)
