"""Entry point: routes to the pages. The home page (ui/home.py) draws its text and links at
once, then one live chart."""

from pathlib import Path

import streamlit as st

import ui.home
from ui import params, workshop
from ui.registry import PAGES

# Page files by absolute path, so the app also runs from another entry point
# (deploy/cloud/streamlit_app.py), whose folder Streamlit resolves paths against.
ROOT = Path(__file__).resolve().parent

st.set_page_config(
    page_title="resviz: residual connections, measured", page_icon="➕", layout="wide"
)


def home() -> None:
    ui.home.home(ROOT)


nav = st.navigation(
    [st.Page(home, title="Home", icon=":material/home:", default=True)]
    + [st.Page(str(ROOT / p.path), title=p.title, icon=p.icon, url_path=p.url_path) for p in PAGES]
)
# A page's URL parameters are judged after the whole page ran, when every widget
# is declared (ui/params.py); a run cut short by st.stop() or st.rerun() skips it.
workshop.plug_in()  # lesson steps and rooms on every page (ui/plugs.py)
params.begin_run()
nav.run()
params.finish_run()
