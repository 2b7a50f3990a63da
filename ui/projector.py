"""Projector mode: larger type in text and charts, the sidebar out of the way.

The presenter turns it on on the Workshop page; it stays on for their session on
every page (participants' own sessions are unaffected). The CSS is a constant of
ours, never user text.
"""

from __future__ import annotations

import copy
from typing import Any

import streamlit as st

KEY = "_projector"
SCALE = 1.35  # text and chart labels, relative to the normal size
CSS = """<style>
html, body, [data-testid="stAppViewContainer"] { font-size: 22px; }
[data-testid="stMarkdownContainer"] p, [data-testid="stMarkdownContainer"] li,
[data-testid="stCaptionContainer"] { font-size: 1.15rem; line-height: 1.5; }
[data-testid="stSidebar"] { display: none; }
[data-testid="stMainBlockContainer"] { max-width: 96vw; padding-top: 2rem; }
</style>"""


def on() -> bool:
    return bool(st.session_state.get(KEY, False))


def apply() -> None:
    """Called by every page's header: inject the projector CSS when it is on."""
    if on():
        st.html(CSS)


def scale_chart(spec: dict[str, Any]) -> dict[str, Any]:
    """A Vega-Lite spec with its label, title and legend fonts enlarged."""
    out = copy.copy(spec)
    config = copy.deepcopy(out.get("config", {}))
    for part, keys in (
        ("axis", ("labelFontSize", "titleFontSize")),
        ("legend", ("labelFontSize", "titleFontSize")),
        ("title", ("fontSize",)),
        ("header", ("labelFontSize", "titleFontSize")),
    ):
        section = config.setdefault(part, {})
        for k in keys:
            section[k] = round(float(section.get(k, 14)) * SCALE, 1)
    out["config"] = config
    return out
