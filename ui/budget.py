"""The server's per-request budget, read once per call from the environment and secrets.

Both the page shell and the shared views (``check_budget``) need it; living here, neither
imports the other for it.
"""

from __future__ import annotations

import os

import streamlit as st

import resviz as rv


def budget() -> rv.Budget:
    """The server's per-request limits: environment variables, then a ``[budget]``
    table in Streamlit secrets (keys ``max_params``, ``max_activation_mb``, ``max_memory_mb``,
    ``max_gflop``)."""
    values: dict[str, object] = dict(os.environ)
    try:
        section = st.secrets.get("budget")
    except Exception:  # noqa: BLE001 - no secrets file is the normal case
        section = None
    if section:
        values.update({str(k).lower(): v for k, v in dict(section).items()})
    return rv.Budget.from_mapping(values)
