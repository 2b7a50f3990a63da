"""Cached experiments behind the gradient-flow page (same policy as ``ui/cache.py``).

Keys are frozen configs and plain values; results are pure functions of them,
so they are shared by every session on the server.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st
import torch

import resviz as rv
from resviz import gradflow as G

from .cache import POLICY


def _on(device: str, fn):  # noqa: ANN001, ANN202 - a thin adapter
    return rv.run_with_fallback(fn, torch.device(device))


@st.cache_data(show_spinner="Backpropagating...", **POLICY)
def layer_gradients(cfg: rv.StackConfig, seed: int, device: str) -> tuple[pd.DataFrame, str | None]:
    return _on(device, lambda d: G.layer_gradients(cfg, seed=seed, device=d))


@st.cache_data(show_spinner="Backpropagating...", **POLICY)
def identity_ratio(cfg: rv.StackConfig, seed: int, device: str) -> tuple[pd.DataFrame, str | None]:
    return _on(device, lambda d: G.identity_ratio(cfg, seed=seed, device=d))


@st.cache_data(show_spinner="Measuring the Jacobian...", **POLICY)
def block_jacobian(
    cfg: rv.StackConfig, block: int, seed: int, device: str
) -> tuple[pd.DataFrame, str | None]:
    # The spectral norms are the frame's largest singular values (G.jacobian_norms):
    # nothing rides in attrs, which the cache's pickling does not keep reliably.
    return _on(device, lambda d: G.block_jacobian(cfg, block, seed=seed, device=d))


@st.cache_data(show_spinner="Differentiating along the input line...", **POLICY)
def shattered(
    depths: tuple[int, ...], width: int, norm: str, seed: int, device: str
) -> tuple[tuple[pd.DataFrame, pd.DataFrame], str | None]:
    return _on(
        device,
        lambda d: G.shattered_summary(depths, width=width, norm=norm, seed=seed, device=d),
    )
