"""Sinusoidal encoding: the positional-encoding table of your sentence."""

import pandas as pd
import streamlit as st

import resviz as rv
from ui import views
from ui.params import PageParams
from ui.shell import page_setup

page_setup(
    "Sinusoidal encoding",
    "Each position k gets a vector whose pair of columns (2i, 2i+1) holds "
    "sin and cos of k / n^(2i/d): fast waves in the first columns, slow ones in the last.",
)
st.latex(
    r"P(k, 2i) = \sin\!\left(\frac{k}{n^{2i/d}}\right),\quad P(k, 2i+1) = \cos\!\left(\frac{k}{n^{2i/d}}\right)"
)
p = PageParams("sinusoidal_encoding")
sentence = p.text("Sentence", "text", "I am a robot", max_chars=500)
c1, c2, c3 = st.columns(3)
with c1:
    d_model = p.slider("d_model (even)", "d", 2, 64, 4, step=2)
with c2:
    base = p.number("base n", "n", 2, 100_000, 100)
with c3:
    decimals = p.slider("decimals", "dec", 0, 6, 2)
p.sync()

tokens = sentence.split()[:64]
if not tokens:
    st.info("Type a sentence to see its table.")
    st.stop()
pe = rv.sinusoidal_encoding(len(tokens), d_model, float(base))
table = pd.DataFrame(pe.numpy().round(decimals), columns=[f"P(k,{j})" for j in range(d_model)])
table.insert(0, "k", range(len(tokens)))
table.insert(0, "token", tokens)
views.table(table, "positional_table")
