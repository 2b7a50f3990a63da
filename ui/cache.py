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

_CACHE = {"max_entries": 64, "ttl": 3600}


@st.cache_data(show_spinner="Computing gradients...", **_CACHE)
def gradient_norms(
    cfg: rv.StackConfig | rv.EncoderConfig, seed: int, device: str
) -> tuple[pd.DataFrame, str | None]:
    return rv.run_with_fallback(
        lambda d: rv.gradient_norms(cfg, seed=seed, device=d), torch.device(device)
    )


@st.cache_data(show_spinner="Running the stack...", **_CACHE)
def forward_signal(cfg: rv.StackConfig, seed: int, device: str) -> tuple[pd.DataFrame, str | None]:
    return rv.run_with_fallback(
        lambda d: rv.forward_signal(cfg, seed=seed, device=d), torch.device(device)
    )


@st.cache_data(show_spinner="Running the encoder...", **_CACHE)
def stream_norms(
    cfg: rv.EncoderConfig, seed: int, device: str, tokens: tuple[int, ...] | None = None
) -> tuple[pd.DataFrame, str | None]:
    tok = torch.tensor([tokens]) if tokens else None
    return rv.run_with_fallback(
        lambda d: rv.stream_norms(cfg, seed=seed, tokens=tok, device=d), torch.device(device)
    )


@st.cache_data(show_spinner="Running the encoder...", **_CACHE)
def attention_patterns(
    cfg: rv.EncoderConfig, tokens: tuple[int, ...], device: str
) -> tuple[dict[str, object], str | None]:
    def run(d: torch.device) -> dict[str, object]:
        model = rv.build(cfg, d).eval()
        acts = rv.capture(model, torch.tensor([tokens], device=d))
        return {
            f"blocks.{i}": acts[f"blocks.{i}.attn_pattern"][0].numpy() for i in range(cfg.n_layers)
        }

    return rv.run_with_fallback(run, torch.device(device))
