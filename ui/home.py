"""The home page: what resviz does, shown by one live measurement, and a path through
the pages.

The chart is the Gradient flow page's first chart at that page's default settings
(seeds 0-2, that recipe's default count): ``||dL/dx_l||`` at every stream position of
a stack without and with the shortcut, one backward pass at initialisation per seed,
drawn as the seeds' median over a min-max band: the ``streams`` frame of that
section's recipe (:func:`resviz.gradients.recipes.per_layer`), the call the page and
its notebook make. Its caption is worded from that frame, from every seed.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from .registry import NOTEBOOK_EXAMPLE, PAGES

# The pages in the order a first visit reads them; the workshop page is the presenter's.
PATH = [p for p in PAGES if p.url_path != "workshop"]
SEED = 0


def home_config() -> dict[str, object]:
    """The Gradient flow page's default stack (its declaration's defaults)."""
    from resviz.gradients.settings import Stack

    return Stack().values()


def seeds() -> int:
    """How many seeds the chart runs: the Per layer recipe's default, which is what the
    Gradient flow page runs at its sidebar's "auto", so the two share one cache entry."""
    from resviz.core import settings_of
    from resviz.gradients import recipes as gradients

    return int(settings_of(gradients.per_layer)["seeds"])


def input_gradients(depth: int, width: int, act: str, init: str, norm: str) -> pd.DataFrame:
    """``seed, variant, block, act_grad, gain, stream_norm`` of the plain and the
    residual stack: the Gradient flow page's Per layer frame at these settings and its
    default seeds from 0, read through the sections' shared cache, so that page's first
    view reuses it."""
    from .section import run_recipe

    settings = dict(
        depth=depth, width=width, act=act, init=init, norm=norm, seed=SEED, seeds=seeds()
    )
    result, _ = run_recipe("gradients.per_layer", tuple(sorted(settings.items())), "cpu")
    return result.streams


def caption(acts: pd.DataFrame, depth: int, act: str) -> str:
    """What the chart shows, worded from its frame: every seed's numbers (as ranges)
    and how many seeds show each direction (a frame without a ``seed`` column is one
    run, seed 0)."""
    import math

    import resviz as rv
    from resviz.gradients.words import log_span, stream_change_over_seeds
    from resviz.words.seeds import band_words

    if "seed" not in acts.columns:
        acts = acts.assign(seed=SEED)
    lg = lambda v: math.log10(v) if v > 0 else (-math.inf if v == 0 else math.nan)  # noqa: E731
    # The log10 columns hold what a float cannot (a gradient of 1e-420); a frame
    # without them (a test's) has its values' log10s taken here.
    for col in ("act_grad", "gain"):
        if f"log10_{col}" not in acts.columns:
            acts = acts.assign(**{f"log10_{col}": acts[col].map(lambda v: lg(float(v)))})
    seeds = list(dict.fromkeys(int(s) for s in acts["seed"]))
    at_input = acts[acts["block"] == 0].set_index(["seed", "variant"])
    p, r = rv.gradients.PLAIN, rv.gradients.RESIDUAL

    def per_seed(variant: str, col: str) -> list[float]:
        return [float(at_input.loc[(s, variant), col]) for s in seeds]

    plain, res = per_seed(p, "log10_act_grad"), per_seed(r, "log10_act_grad")
    ratios = [b - a for a, b in zip(plain, res, strict=True)]
    gains = {v: per_seed(v, "log10_gain") for v in (p, r)}
    runs = (
        f"one backward pass in each of {len(seeds)} seeds"
        if len(seeds) > 1
        else f"one backward pass (seed {seeds[0]})"
    )
    return (
        f"Measured on this server: a {depth}-block {act} stack at initialisation, {runs}. "
        f"At the input, the gradient norm ||dL/dx_0|| is {log_span(plain)} without shortcuts "
        f"and {log_span(res)} with them ({log_span(ratios)} times the plain stack's, seed by "
        f"seed). {stream_change_over_seeds(gains[p], gains[r], seeds)} {band_words(seeds)}"
    )


def chart(acts: pd.DataFrame):  # noqa: ANN201 (an Altair chart)
    import resviz as rv

    return rv.charts.line(
        acts,
        x="block",
        y="act_grad",
        color="variant",
        log_y=True,
        x_title="x_l (0 = the input, L = the output)",
        y_title="||dL/dx_l|| (log)",
        height=280,
    )


def home(root: Path) -> None:
    st.title("resviz: what residual connections do, measured")
    st.markdown(
        "A residual (skip) connection adds a block's input to its output, `x + f(x)`. "
        "resviz measures what that changes inside deep networks and transformers: the "
        "signal and the gradient at every layer, normalization around the sum, positional "
        "encodings, a whole encoder. Every chart is computed with PyTorch on this server "
        "from the settings on its page; the address bar holds the settings, so a link "
        "gives the same numbers again, and every section offers its data as CSV and a "
        "Jupyter notebook that recomputes it with `import resviz as rv`."
    )
    left, right = st.columns([3, 2], gap="large")
    with right:
        st.subheader("Start here")
        for i, page in enumerate(PATH, start=1):
            st.page_link(str(root / page.path), label=f"{i}. {page.title}", icon=page.icon)
            st.caption(page.blurb)
        workshop = [p for p in PAGES if p.url_path == "workshop"]
        for page in workshop:
            st.markdown("**Teaching a room?**")
            st.page_link(str(root / page.path), label=page.title, icon=page.icon)
            st.caption(page.blurb)
    with left:
        cfg = home_config()
        st.subheader("The gradient at every layer, with and without the shortcut")
        with st.spinner("Measuring two stacks (one backward pass each)..."):
            acts = input_gradients(**cfg)  # type: ignore[arg-type]
        st.altair_chart(chart(acts), width="stretch")
        st.caption(caption(acts, int(cfg["depth"]), str(cfg["act"])))
        step = next(i for i, p in enumerate(PATH, start=1) if p.url_path == "gradient_flow")
        st.caption(f"Depth, width and activation are yours to change on step {step}.")
    st.divider()
    st.markdown(
        f"In a notebook, the library gives the numbers behind the charts: "
        f"`{NOTEBOOK_EXAMPLE.code}` returns {NOTEBOOK_EXAMPLE.what}, at the page's default "
        "settings and seed 0."
    )
