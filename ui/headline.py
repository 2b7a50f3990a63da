"""A section's headline, then its detail: the one way every section states its finding.

:func:`headline` draws the finding first, at the top of the section (a
:func:`slot` kept under its title, above its settings): its big measured
figure(s) (``st.metric``) and its one short line, both from a
:class:`resviz.words.headline.Headline` (computed from the data on screen). The full
account, every seed's numbers, sits one click away under each chart, in a folded
expander (:func:`account`; ``views.chart(..., account=...)`` and
``Section.chart(..., account=...)`` draw it there).

    top = slot()                                      # under the section's title
    ...                                               # its settings, its recipe
    h = rv.gradients.headline.per_layer(...)   # Headline(line, figures)
    headline(h, detail=seeds_sentence, at=top)
    sec.chart("line", r, "streams", "activation_gradients", account=long_caption, ...)
"""

from __future__ import annotations

import hashlib
from contextlib import nullcontext
from typing import Any

import streamlit as st

from resviz.words.headline import Headline

ACCOUNT = "The full account"
# The headline's container is keyed "headline-...": a browser finds it by the class
# Streamlit gives it (``st-key-headline-...``).
KEY = "headline-"


def slot() -> Any:
    """The headline's place at the top of a section, kept before its settings are
    drawn (the finding is computed after them): pass it to :func:`headline`."""
    return st.container()


def headline(h: Headline, detail: str | None = None, at: Any = None) -> None:
    """The section's finding: its figures side by side (stacked on a phone), then its
    line in bold, then (folded) ``detail``, the sentence it sums up, seed by seed;
    drawn in ``at`` (a :func:`slot`) where given, else here."""
    key = KEY + hashlib.blake2b(h.line.encode("utf-8"), digest_size=6).hexdigest()
    with at if at is not None else nullcontext(), st.container(key=key):
        if h.figures:
            for col, f in zip(st.columns(len(h.figures)), h.figures, strict=True):
                col.metric(f.label, f.value)
        st.markdown(f"**{h.line}**")
        account(detail)


def account(text: str | None, label: str = ACCOUNT) -> None:
    """The full account of a chart or a finding (every seed's numbers), folded."""
    if text:
        with st.expander(label, icon=":material/notes:"):
            st.caption(text)
