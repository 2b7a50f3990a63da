"""Entry point: routes to the pages. The home page imports no torch, so it draws at once."""

import streamlit as st

from ui import params
from ui.registry import PAGES

st.set_page_config(
    page_title="resviz: residual connections, measured", page_icon="➕", layout="wide"
)


def home() -> None:
    st.title("resviz: what residual connections do, measured")
    st.markdown(
        "Every chart here comes from a real PyTorch model built and run on your device "
        "when you open the page. Change a setting and the numbers are recomputed; the "
        "link in your address bar reproduces the view."
    )
    for page in PAGES:
        st.page_link(page.path, label=page.title, icon=page.icon)
        st.caption(page.blurb)
    st.divider()
    st.markdown(
        "In a notebook, the same numbers come from the library: "
        "`import resviz as rv; rv.gradient_norms(rv.StackConfig(residual='none'))`."
    )


nav = st.navigation(
    [st.Page(home, title="Home", icon=":material/home:", default=True)]
    + [st.Page(p.path, title=p.title, icon=p.icon, url_path=p.url_path) for p in PAGES]
)
# A page's URL parameters are judged after the whole page ran, when every widget
# is declared (ui/params.py); a run cut short by st.stop() or st.rerun() skips it.
params.begin_run()
nav.run()
params.finish_run()
