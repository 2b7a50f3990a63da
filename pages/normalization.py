"""Normalization: where the norm sits around the residual sum (Pre-LN versus Post-LN)."""

import dataclasses

import pandas as pd
import streamlit as st

import resviz as rv
from resviz import charts
from ui import cache, views
from ui.params import PageParams
from ui.shell import page_setup

ctx = page_setup(
    "Normalization",
    "Post-LN (the original Transformer) normalizes after each residual sum, "
    "`x = LN(x + f(x))`; Pre-LN normalizes only the branch input, `x = x + f(LN(x))`, "
    "and leaves the stream itself alone (Xiong et al. 2020).",
)
p = PageParams("normalization")
c1, c2 = st.columns(2)
with c1:
    layers = p.slider("Layers", "layers", 1, 24, 12)
    d_model = p.select("d_model", "d_model", ["64", "128", "256"], "128")
with c2:
    norm = p.select("Norm", "norm", ["layer", "rms"], "layer")
p.sync()

base = rv.EncoderConfig(
    n_layers=layers, d_model=int(d_model), n_heads=4, d_ff=4 * int(d_model), norm=norm
)
frames = []
for placement in ("post", "pre"):
    cfg = dataclasses.replace(base, norm_position=placement)
    df, note = cache.stream_norms(cfg, ctx.seed, str(ctx.device))
    views.notice(note)
    frames.append(df.assign(variant=f"{placement.capitalize()}-LN"))
data = pd.concat(frames, ignore_index=True)
st.subheader("Hidden-state norm along the residual stream, at init")
views.chart(
    charts.line(
        data,
        "sublayer_index",
        "norm",
        "variant",
        x_title="sublayers from the input",
        y_title="mean token norm ||x||",
    ),
    data,
    "stream_norms",
    caption="Random tokens, batch 8 x 32. Post-LN resets the norm to about sqrt(d) after every "
    "sublayer; in Pre-LN each sublayer adds its output to the stream, so the norm grows with depth.",
)
