"""Entry point: routes to the pages. The home page imports no torch, so it draws at once."""

from pathlib import Path

import streamlit as st

from ui import params
from ui.registry import NOTEBOOK_EXAMPLE, PAGES

# Page files by absolute path, so the app also runs from another entry point
# (deploy/cloud/streamlit_app.py), whose folder Streamlit resolves paths against.
ROOT = Path(__file__).resolve().parent

st.set_page_config(
    page_title="resviz: residual connections, measured", page_icon="➕", layout="wide"
)


def home() -> None:
    st.title("resviz: what residual connections do, measured")
    st.markdown(
        "Every chart here is computed with PyTorch on this server, on the device chosen in "
        "each page's sidebar, from the settings on the page; long runs (training, the depth "
        "sweep) start when you press their button. The sidebar seed sets the weights and the "
        "data on every page, and the address bar holds the settings, so a link gives the same "
        "numbers again (within float rounding on another device; timings are measured anew). "
        "Each page shows one section at a time, named in the link; every section offers its "
        "data as CSV and a Jupyter notebook that recomputes them with `import resviz as rv`."
    )
    for page in PAGES:
        st.page_link(str(ROOT / page.path), label=page.title, icon=page.icon)
        st.caption(page.blurb)
    st.divider()
    st.markdown(
        f"In a notebook, the library gives the numbers behind the charts: "
        f"`{NOTEBOOK_EXAMPLE.code}` returns {NOTEBOOK_EXAMPLE.what}, at the page's default "
        "settings and seed 0."
    )


nav = st.navigation(
    [st.Page(home, title="Home", icon=":material/home:", default=True)]
    + [st.Page(str(ROOT / p.path), title=p.title, icon=p.icon, url_path=p.url_path) for p in PAGES]
)
# A page's URL parameters are judged after the whole page ran, when every widget
# is declared (ui/params.py); a run cut short by st.stop() or st.rerun() skips it.
params.begin_run()
nav.run()
params.finish_run()
