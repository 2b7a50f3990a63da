"""Gradient flow: per-layer gradient norms at init, plain versus residual."""

import dataclasses

import pandas as pd
import streamlit as st

import resviz as rv
from resviz import charts
from ui import cache, views
from ui.params import PageParams
from ui.shell import page_setup

ctx = page_setup(
    "Gradient flow",
    "Backpropagation through a block with a shortcut multiplies the gradient by "
    "`I + J` instead of `J`, so the identity term carries it past layers whose "
    "Jacobian `J` is small.",
)
st.latex(
    r"\frac{\partial L}{\partial x_l} = \frac{\partial L}{\partial x_{l+1}}"
    r"\left(I + \frac{\partial f(x_l)}{\partial x_l}\right)"
)
p = PageParams("gradient_flow")
c1, c2, c3 = st.columns(3)
with c1:
    depth = p.slider("Depth (blocks)", "depth", 1, 100, 10)
    width = p.slider("Width", "width", 2, 512, 64)
with c2:
    act = p.select("Activation", "act", ["tanh", "relu", "gelu", "sigmoid"], "tanh")
    init = p.select("Init", "init", ["default", "kaiming", "xavier", "small"], "default")
with c3:
    norm = p.select("Norm (pre)", "norm", ["none", "layer", "rms", "batch"], "none")
p.sync()

base = rv.StackConfig(depth=depth, width=width, activation=act, init=init, norm=norm)
frames = []
for label, residual in (("plain: f(x)", "none"), ("residual: x + f(x)", "add")):
    df, note = cache.gradient_norms(
        dataclasses.replace(base, residual=residual), ctx.seed, str(ctx.device)
    )
    views.notice(note)
    w = df[df["param"].str.endswith("fc.weight")].assign(variant=label)
    frames.append(w)
data = pd.concat(frames, ignore_index=True)[["variant", "layer", "param", "grad_norm"]]
data["layer"] = data["layer"] + 1

st.subheader("Weight-gradient norm per layer, at init")
views.chart(
    charts.line(
        data,
        "layer",
        "grad_norm",
        "variant",
        log_y=True,
        x_title="layer (input side = 1)",
        y_title="||dL/dW|| (log)",
    ),
    data,
    "gradient_norms",
    caption="One backward pass of an MSE loss on a Gaussian batch of 32. A plain stack's "
    "gradient shrinks layer by layer towards the input; with shortcuts it stays within a "
    "small factor.",
)
first = data[data["layer"] == 1].set_index("variant")["grad_norm"]
last = data[data["layer"] == depth].set_index("variant")["grad_norm"]
cols = st.columns(len(first))
for col, (name, value) in zip(cols, first.items(), strict=True):
    ratio = value / last[name] if last[name] > 0 else float("nan")
    col.metric(f"first / last layer, {name}", f"{ratio:.3g}")
