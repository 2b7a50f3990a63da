"""The shared page frame: title, the sidebar (device, seed) and the thread policy."""

from __future__ import annotations

import gc
import os
import threading
import time
from dataclasses import dataclass

import streamlit as st
import torch

import resviz as rv

from .params import PageParams

# Garbage collection on a clock, not per run. Streamlit's default is a full
# ``gc.collect()`` after every script run, fragment polls included: with torch
# imported that walks a quarter of a million long-lived objects, about 75 ms a
# time and a fifth of the server's CPU under load (benchmarks/RESULTS.md).
# .streamlit/config.toml turns that off (runner.postScriptGC); instead one
# daemon thread collects every GC_PERIOD_S seconds, so what closed sessions
# leave behind is still freed within seconds (tests/browser/test_concurrency.py
# watches memory come back). Freezing what exists once the libraries are
# imported keeps those collections, and Python's automatic ones, short.
GC_PERIOD_S = 10.0


def _collect_forever(period: float) -> None:
    while True:
        time.sleep(period)
        gc.collect()


if not any(t.name == "resviz-gc" for t in threading.enumerate()):
    gc.freeze()
    threading.Thread(
        target=_collect_forever, args=(GC_PERIOD_S,), name="resviz-gc", daemon=True
    ).start()


@dataclass(frozen=True)
class Context:
    device: torch.device
    seed: int


def ensure_entry_point() -> None:
    """Make a page opened by deep link on a fresh server go through ``streamlit_app.py``.

    Streamlit keeps a legacy (v1) multipage router for apps with a ``pages/``
    folder: until the first ``st.navigation`` call in the process it runs a
    deep-linked page file directly, without the entry point. Pages call this
    first; under the legacy router it switches it off and reruns, and the rerun
    resolves to the same page (page ids are derived from the url path, which
    equals the file stem under both routers). A browser test covers it.
    """
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()


def page_setup(title: str, intro: str) -> Context:
    """Draw the page header and the shared sidebar; return the run settings."""
    ensure_entry_point()
    st.title(title)
    st.markdown(intro)
    return sidebar()


def sidebar() -> Context:
    threads = rv.configure_threads()
    shared = PageParams("shared", container=st.sidebar, owns_url=False)
    with st.sidebar:
        st.subheader("Run settings")
        avail = rv.available_devices()
        choice = shared.select(
            "Device",
            "device",
            ["auto", *avail],
            "auto",
            help="auto picks CUDA, then Apple MPS, then CPU. Results match across "
            "devices within float tolerance.",
        )
        seed = shared.number("Seed", "seed", 0, 1_000_000, 0, help="Same seed, same numbers.")
        device = rv.pick_device(choice)
        info = rv.device_info(device)
        st.caption(
            f"Running on **{info['name']}** (`{info['device']}`) · torch {info['torch']} · "
            f"{threads} CPU threads shared by all sessions"
        )
    shared.sync()
    return Context(device=device, seed=seed)


def budget() -> rv.Budget:
    """The server's per-request limits: environment variables, then a ``[budget]``
    table in Streamlit secrets (keys ``max_params``, ``max_activation_mb``, ``max_gflop``)."""
    values: dict[str, object] = dict(os.environ)
    try:
        section = st.secrets.get("budget")
    except Exception:  # noqa: BLE001 - no secrets file is the normal case
        section = None
    if section:
        values.update({str(k).lower(): v for k, v in dict(section).items()})
    return rv.Budget.from_mapping(values)
