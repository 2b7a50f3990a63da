"""Chart + CSV download, written once for every page."""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st


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
# what Streamlit applies itself; large data belong in image charts, not rows.
alt.theme.enable("none")
alt.data_transformers.enable("default", max_rows=None)


def altair(c: alt.TopLevelMixin, **kw: object) -> None:
    """``st.altair_chart`` without per-rerun schema validation."""
    st.vega_lite_chart(c.to_dict(validate=False), width=kw.pop("width", "stretch"), **kw)


def chart(c: alt.Chart, df: pd.DataFrame | bytes, name: str, caption: str | None = None) -> None:
    """Draw an Altair chart with its data downloadable as ``name.csv``."""
    altair(c)
    if caption:
        st.caption(caption)
    csv_button(df, name)


def table(df: pd.DataFrame, name: str, caption: str | None = None, **kw: object) -> None:
    st.dataframe(df, hide_index=True, **kw)
    if caption:
        st.caption(caption)
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
    from .shell import budget

    message = budget().check(est, what)  # type: ignore[arg-type]
    if message:
        over_budget(message)
    return message
