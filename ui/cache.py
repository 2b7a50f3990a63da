"""Experiments cached by config, shared by every session on the server.

Keys are frozen configs and plain values (never tensors or modules). Results
are pure functions of those keys, so sharing them across sessions is safe: the
first visitor computes a default view and everybody after reads it. Sizes are
bounded by ``max_entries`` and entries expire after an hour.
"""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st
import torch

import resviz as rv
from resviz import charts
from resviz import positional as P

# The one cache policy every cached wrapper uses (pages and ui modules alike)...
POLICY = {"max_entries": 64, "ttl": 3600}
# ...except where one value can reach megabytes. At the sinusoidal page's largest
# setting (1,000 x 1,024) the matrix's CSV is 10.6 MB, the position similarities
# 7.7 MB and the four side-by-side matrices 2 MB: 64 of each would be 1.3 GB, more
# than the server has. Four of each hold at most 81 MB.
LARGE = {"max_entries": 4, "ttl": 3600}


def matrix_frame(n_pos: int, d_model: int, base: float) -> pd.DataFrame:
    """The encoding matrix as a CSV-ready frame: one row per position."""
    return P.encoding_frame(n_pos, d_model, base)


@st.cache_data(**LARGE)
def position_similarity(n_pos: int, d_model: int, base: float) -> dict[str, object]:
    pe = rv.sinusoidal_encoding(n_pos, d_model, base, dtype=torch.float64)
    dot, _cos = P.position_similarity(pe)
    return {
        "dot": dot.numpy(),
        "by_offset": P.similarity_by_offset(pe),
        "offset_error": P.offset_dependence(pe),
    }


@st.cache_data(**LARGE)
def similarity_matrices(n_pos: int, d_model: int, base: float, seed: int) -> dict[str, object]:
    mats = P.similarity_matrices(n_pos, d_model, base, seed)
    return {name: m.numpy() for name, m in mats.items()}


@st.cache_data(**POLICY)
def encoding_norms(n_pos: int, d_model: int, seed: int) -> pd.DataFrame:
    return P.encoding_norms(
        {
            "sinusoidal": rv.sinusoidal_encoding(n_pos, d_model),
            "integer index": P.integer_index_encoding(n_pos, d_model),
            "learned (init)": P.learned_encoding(n_pos, d_model, seed=seed),
        }
    )


@st.cache_data(**POLICY)
def embedding_vs_position(n_pos: int, d_model: int, base: float, seed: int) -> pd.DataFrame:
    return P.embedding_vs_position(1000, d_model, n_pos, seed=seed, base=base)


@st.cache_data(**LARGE)
def matrix_csv(n_pos: int, d_model: int, base: float) -> bytes:
    return matrix_frame(n_pos, d_model, base).to_csv(index=False).encode("utf-8")


# A page view draws 6 images; the largest (the 1,000 x 1,024 matrix) is a 1.2 MB PNG.
@st.cache_data(max_entries=32, ttl=POLICY["ttl"])
def image_chart(key: tuple, matrix_fn: str, **kw: object) -> alt.LayerChart:
    """An image heatmap (PNG inside Altair axes), cached by what it draws.

    ``matrix_fn`` names the matrix: ``"pe"`` (key = (n_pos, d_model, base)),
    ``"dot"`` (same key) or ``"alt:<scheme>"`` (key = (n_pos, d_model, base, seed)).
    """
    if matrix_fn == "pe":
        m = rv.sinusoidal_encoding(*key).numpy()
    elif matrix_fn == "dot":
        m = position_similarity(*key)["dot"]
    else:
        m = similarity_matrices(*key)[matrix_fn.split(":", 1)[1]]
    return charts.image_heatmap(m, **kw)


# -------------------------------------------------------------- encoder playground
@st.cache_data(**POLICY)
def playground_setup(**settings: object) -> rv.recipes.encoder.Setup:
    """The playground's tokens and model (``rv.recipes.encoder.setup``): every section
    checks them before it runs its recipe."""
    return rv.recipes.encoder.setup(**settings)  # type: ignore[arg-type]
