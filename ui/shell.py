"""The shared page frame: title, the sidebar (device, seed) and the thread policy."""

from __future__ import annotations

import gc
from dataclasses import dataclass

import streamlit as st
import torch

import resviz as rv

from . import projector
from .params import PageParams
from .views import spec


# Streamlit runs a full ``gc.collect()`` after every script run, fragment reruns
# (the training panels' polls) included. With torch imported that walks a quarter
# of a million long-lived objects, about 75-100 ms a time on the reference
# machine and a fifth of the server's CPU under load (benchmarks/RESULTS.md).
# So, once per process, when the first page imports this module: load what the
# libraries load lazily on first use (Altair's Vega-Lite schema, the Arrow
# conversion, pandas' CSV writer, and autograd's backward, which imports sympy),
# collect, and freeze every live object out of later collections. Only objects created afterwards (sessions' state, results)
# are walked after each run, and they are still collected.
def _warm_up_and_freeze() -> None:
    import altair as alt
    import pandas as pd

    df = pd.DataFrame({"name": ["a", "b"], "value": [1.0, 2.0], "step": [1, 2]})
    spec(alt.Chart(df).mark_line(point=True).encode(x="step:Q", y="value:Q", color="name:N"))
    spec(alt.Chart(df).mark_rect().encode(x="name:N", y="step:O", color="value:Q"))
    df.to_csv(index=False)
    x = torch.ones(2, requires_grad=True)
    (2 * x).backward(torch.ones(2))
    gc.collect()
    gc.freeze()


_warm_up_and_freeze()


gc.freeze()


@dataclass(frozen=True)
class Context:
    device: torch.device
    seed: int
    # The sidebar's seeds: "auto" (each section's own default) or "1" to "10".
    seeds: str = "auto"


def page_setup(title: str, intro: str) -> Context:
    """Draw the page header and the shared sidebar; return the run settings."""
    projector.apply()
    st.title(title)
    st.markdown(intro)
    return sidebar()


def sidebar() -> Context:
    threads = rv.configure_threads()
    shared = PageParams("shared", container=st.sidebar, owns_url=False)
    with st.sidebar:
        st.subheader("Run settings")
        avail = rv.available_devices()
        choice = shared.widget("device", options=["auto", *avail])
        seed = shared.widget("seed")
        seeds = shared.widget("seeds")
        device = rv.pick_device(choice)
        info = rv.device_info(device)
        st.caption(
            f"Running on **{info['name']}** (`{info['device']}`) · torch {info['torch']} · "
            f"{threads} CPU threads shared by all sessions"
        )
    return Context(device=device, seed=seed, seeds=seeds)
