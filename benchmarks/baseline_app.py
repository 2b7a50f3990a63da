"""The floor for the browser benchmark: a bare Streamlit page (a title, three small
Vega-Lite line charts, each with a CSV download) and no torch, no sidebar, no
widgets. ``browser_pages.py`` times it exactly like the real pages, so their
figures can be read against what Streamlit itself costs in this browser."""

import altair as alt
import pandas as pd
import streamlit as st

st.title("Baseline")
df = pd.DataFrame({"x": range(20), "y": [i * i for i in range(20)]})
for i in range(3):
    spec = alt.Chart(df).mark_line().encode(x="x", y="y").to_dict()
    st.vega_lite_chart(spec, width="stretch")
    st.download_button("Download CSV", df.to_csv(index=False), file_name=f"b{i}.csv")
