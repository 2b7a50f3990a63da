"""Experiments cached by config, shared by every session on the server.

Keys are frozen configs and plain values (never tensors or modules). Results
are pure functions of those keys, so sharing them across sessions is safe: the
first visitor computes a default view and everybody after reads it. Sizes are
bounded by ``max_entries`` and entries expire after an hour.
"""

from __future__ import annotations

import streamlit as st

import resviz as rv

# The one cache policy every cached wrapper uses (pages and ui modules alike)...
POLICY = {"max_entries": 64, "ttl": 3600}
# ...except where one value can reach megabytes (``Section.run(..., large=True)``).
# At the sinusoidal page's largest setting (1,000 x 1,024) the matrix section's result
# is 4 MB and its CSV 11 MB, the relative section's 1,000 x 1,000 dot products 8 MB
# and their CSV 19 MB: 64 of each would be 2.7 GB, more than the server has. Four
# results (with their CSVs) hold at most about 110 MB.
LARGE = {"max_entries": 4, "ttl": 3600}


# -------------------------------------------------------------- encoder playground
@st.cache_data(**POLICY)
def playground_setup(**settings: object) -> rv.encoder.Setup:
    """The playground's tokens and model (``rv.encoder.setup``): every section
    checks them before it runs its recipe."""
    return rv.encoder.setup(**settings)  # type: ignore[arg-type]
