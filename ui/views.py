"""Chart + CSV download, written once for every page."""

from __future__ import annotations

import hashlib
import threading

import altair as alt
import pandas as pd
import streamlit as st
from altair.vegalite.data import default_data_transformer

from . import projector, st_internals
from .budget import budget
from .charts import MEMO
from .headline import account as folded


def csv_button(df: pd.DataFrame | bytes, name: str, label: str = "Download CSV") -> None:
    """A CSV download; pass ready-made bytes for large frames (cache them)."""
    st.download_button(
        label,
        df if isinstance(df, bytes) else df.to_csv(index=False).encode("utf-8"),
        file_name=f"{name}.csv",
        mime="text/csv",
        key=f"csv:{name}",
        on_click="ignore",
        icon=":material/download:",
    )


# Charts are converted here, once, without JSON-schema validation (the specs come
# from resviz.charts, whose output the tests validate) and without the global
# lock Streamlit's own Altair path takes: validation was about a third of a warm
# rerun, and the lock serialised every session's charts. The "none" theme is
# what Streamlit applies itself.
#
# Chart data goes to the browser as Arrow, the way ``st.altair_chart`` sends it:
# a data transformer turns each frame straight into Arrow IPC bytes and leaves a
# named reference in the spec. Altair's default transformer would instead
# sanitise every frame into a list of row dicts, which Streamlit then turns back
# into a frame and then into Arrow; that round trip was about a quarter of the
# server's CPU per page visit (benchmarks/RESULTS.md).
_local = threading.local()


def _to_arrow_reference(data: object) -> dict[str, object]:
    datasets = getattr(_local, "datasets", None)
    if datasets is None or not isinstance(data, pd.DataFrame):
        return default_data_transformer(data, max_rows=None)
    payload = st_internals.arrow_bytes(data)
    name = "data-" + hashlib.blake2b(payload, digest_size=12).hexdigest()
    datasets[name] = payload
    return {"name": name}


alt.theme.enable("none")
alt.data_transformers.register("resviz_arrow", _to_arrow_reference)
alt.data_transformers.enable("resviz_arrow")


def altair(c: alt.TopLevelMixin, **kw: object) -> None:
    """``st.altair_chart`` without per-rerun schema validation or a global lock."""
    d = spec(c)
    if projector.on():
        d = projector.scale_chart(d)
    st.vega_lite_chart(d, width=kw.pop("width", "stretch"), **kw)


def spec(c: alt.TopLevelMixin) -> dict[str, object]:
    """The chart as a Vega-Lite dict whose ``datasets`` hold Arrow bytes (Streamlit
    passes bytes through to the browser unchanged). Charts from ``ui.charts``'s
    memo are converted once (a fresh copy each call: Streamlit edits the dict)."""
    cached = MEMO.spec(c)
    if cached is not None:
        return cached
    _local.datasets = {}
    try:
        out = c.to_dict(validate=False)
        if _local.datasets:
            out.setdefault("datasets", {}).update(_local.datasets)
    finally:
        _local.datasets = None
    MEMO.remember_spec(c, out)
    return out


def chart(
    c: alt.Chart,
    df: pd.DataFrame | bytes,
    name: str,
    caption: str | None = None,
    account: str | None = None,
) -> None:
    """Draw an Altair chart with its data downloadable as ``name.csv``: a short
    ``caption`` under it, and its full ``account`` (every seed's numbers) folded
    (:func:`ui.headline.account`)."""
    altair(c)
    if caption:
        st.caption(caption)
    folded(account)
    csv_button(df, name)


def table(
    df: pd.DataFrame,
    name: str,
    caption: str | None = None,
    account: str | None = None,
    **kw: object,
) -> None:
    """A table with its CSV, its short ``caption`` and its folded ``account``."""
    st.dataframe(df, hide_index=True, **kw)
    if caption:
        st.caption(caption)
    folded(account)
    csv_button(df, name)


def notice(text: str | None) -> None:
    """Show a device-fallback notice when there is one."""
    if text:
        st.warning(text, icon=":material/memory:")


BUDGET_MARK = "over this server's budget"


def over_budget(message: str) -> None:
    """The one error a widget sweep expects: a configuration refused with its numbers.

    ``message`` comes from ``rv.Budget.check`` and contains ``BUDGET_MARK``.
    """
    st.error(message, icon=":material/block:")


def check_budget(est: object, what: str = "This configuration") -> str | None:
    """Check an ``rv.estimate(...)`` against the server budget; show and return the refusal."""
    message = budget().check(est, what)  # type: ignore[arg-type]
    if message:
        over_budget(message)
    return message
