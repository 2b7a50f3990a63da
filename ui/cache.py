"""Experiments cached by config, shared by every session on the server.

Keys are frozen configs and plain values (never tensors or modules). Results
are pure functions of those keys, so sharing them across sessions is safe: the
first visitor computes a default view and everybody after reads it. Sizes are
bounded by ``max_entries`` and entries expire after an hour.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st
import torch

import resviz as rv
from resviz import playground as PG

# The one cache policy every cached wrapper uses (pages and ui modules alike)...
POLICY = {"max_entries": 64, "ttl": 3600}
# ...except where one value can reach megabytes (``Section.run(..., large=True)``).
# At the sinusoidal page's largest setting (1,000 x 1,024) the matrix section's result
# is 4 MB and its CSV 11 MB, the relative section's 1,000 x 1,000 dot products 8 MB
# and their CSV 19 MB: 64 of each would be 2.7 GB, more than the server has. Four
# results (with their CSVs) hold at most about 110 MB.
LARGE = {"max_entries": 4, "ttl": 3600}


# -------------------------------------------------------------- encoder playground
@st.cache_data(**POLICY)
def playground_tokens(
    text: str, level: str, max_len: int, max_vocab: int
) -> tuple[PG.Tokens, PG.Vocab, tuple[int, ...]]:
    """The shown tokens, the vocabulary, and the ids training reads."""
    toks, vocab = PG.tokenize(text, level, max_len, max_vocab)  # type: ignore[arg-type]
    return toks, vocab, PG.encode(text, vocab, PG.TRAIN_MAX_TOKENS).ids


@st.cache_data(show_spinner="Running the encoder...", **POLICY)
def playground_views(
    cfg: rv.EncoderConfig, ids: tuple[int, ...], device: str
) -> tuple[dict[str, object], str | None]:
    return rv.run_with_fallback(
        lambda d: PG.inspect(rv.build(cfg, d), cfg, ids), torch.device(device)
    )


@st.cache_data(show_spinner="Comparing rank collapse...", **POLICY)
def playground_collapse(
    cfg: rv.EncoderConfig, ids: tuple[int, ...], device: str
) -> tuple[pd.DataFrame, str | None]:
    return rv.run_with_fallback(
        lambda d: PG.rank_collapse_compare(cfg, ids, d), torch.device(device)
    )


@st.cache_data(show_spinner="Timing a forward pass...", **POLICY)
def playground_latency(
    cfg: rv.EncoderConfig, ids: tuple[int, ...], device: str
) -> tuple[dict[str, float], str | None]:
    return rv.run_with_fallback(
        lambda d: PG.forward_latency(rv.build(cfg, d), ids), torch.device(device)
    )


@st.cache_data(**POLICY)
def playground_code(cfg: rv.EncoderConfig) -> str:
    return PG.generate_code(cfg)
