"""Encoder playground: a real transformer encoder on your text, seen from inside."""

import dataclasses

import pandas as pd
import streamlit as st

import resviz as rv
from resviz import charts
from ui import cache, views
from ui.params import PageParams
from ui.shell import page_setup

ctx = page_setup(
    "Encoder playground",
    "Pick a preset, type some text, and look inside an untrained encoder: where each "
    "token attends, and how the residual stream grows layer by layer.",
)
p = PageParams("encoder_playground")
preset = p.select("Preset", "preset", list(rv.ENCODER_PRESETS), "Pre-LN")
text = p.text("Text (one character = one token)", "text", "residual streams", max_chars=2000)
cfg = dataclasses.replace(rv.ENCODER_PRESETS[preset], seed=ctx.seed)
layer = p.slider("Layer", "layer", 1, cfg.n_layers, 1)
head = p.slider("Head", "head", 1, cfg.n_heads, 1)
p.sync()

ids, chars, truncated = rv.char_tokenize(text, cfg.vocab_size, min(cfg.max_len, 64))
if truncated:
    st.info(f"Only the first {len(ids)} characters are used.")
if not ids:
    st.info("Type some text to run the encoder.")
    st.stop()
st.caption(
    f"{preset}: {cache.parameter_count(cfg):,} parameters, {cfg.n_layers} layers, d_model {cfg.d_model}."
)

patterns, note = cache.attention_patterns(cfg, tuple(ids), str(ctx.device))
views.notice(note)
att = patterns[f"blocks.{layer - 1}"][head - 1]
labels = [f"{i}:{c}" for i, c in enumerate(chars)]
rows = [
    {"query": labels[q], "key": labels[k], "weight": float(att[q, k])}
    for q in range(len(labels))
    for k in range(len(labels))
]
att_df = pd.DataFrame(rows)
st.subheader(f"Attention, layer {layer}, head {head}")
views.chart(
    charts.heatmap(att_df, "key", "query", "weight", diverging=False, sort_x=labels, sort_y=labels),
    att_df,
    "attention",
    caption="Each row is a query token and sums to 1 over the keys it attends to.",
)
norms, note = cache.stream_norms(cfg, ctx.seed, str(ctx.device), tuple(ids))
views.notice(note)
st.subheader("Residual-stream norm after each sublayer")
views.chart(
    charts.line(
        norms,
        "sublayer_index",
        "norm",
        None,
        x_title="sublayers from the input",
        y_title="mean token norm",
    ),
    norms,
    "stream_norms",
)
