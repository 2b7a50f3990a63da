"""Every use of a Streamlit internal (not public API), in one place.

Streamlit's public API has no session id, no "is this session still connected",
no way to turn a frame into the Arrow bytes its charts carry, and no way to
change the URL value a bound widget is first given (it reads the URL as the
session opened it, whatever ``st.query_params`` says since). Each is reached
here and nowhere else; ``tests/app/test_st_internals.py`` checks every one against
the installed Streamlit, so an upgrade that moves one fails there with a message
naming it, instead of breaking a page silently.
"""

from __future__ import annotations

import pandas as pd

# Each internal this module uses: (module, attribute), for the upgrade test.
USED: tuple[tuple[str, str], ...] = (
    ("streamlit.runtime", "Runtime"),
    ("streamlit.runtime.scriptrunner", "get_script_run_ctx"),
    ("streamlit.dataframe_util", "convert_anything_to_arrow_bytes"),
    ("streamlit.runtime.state.query_params", "QueryParams"),  # ._initial_query_params
)


def session_id() -> str:
    """The id of the session whose script is running in this thread ('' outside one)."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    return ctx.session_id if ctx is not None else ""


def session_alive(sid: str) -> bool:
    """Whether the server still has a connected session ``sid``. Outside a server
    (AppTest, notebooks) every session counts as alive."""
    from streamlit.runtime import Runtime

    if not Runtime.exists():
        return True
    return bool(Runtime.instance().is_active_session(sid))


def arrow_bytes(df: pd.DataFrame) -> bytes:
    """A frame as Arrow IPC bytes, exactly as ``st.vega_lite_chart`` would send it."""
    from streamlit.dataframe_util import convert_anything_to_arrow_bytes

    return convert_anything_to_arrow_bytes(df)


def seed_from_url(name: str, values: list[str] | None) -> None:
    """What a widget bound to the URL parameter ``name`` reads on its first run:
    ``values`` (as the URL would carry them), or nothing (None: it opens at its
    default). Streamlit seeds a bound widget from the query string the session
    opened with, so removing or rewriting ``st.query_params[name]`` alone changes
    the address bar, not the value the widget gets."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    if ctx is None:
        return
    initial = ctx.session_state._state.query_params._initial_query_params
    if values is None:
        initial.pop(name, None)
    else:
        initial[name] = list(values)


def release_url_bindings() -> None:
    """Before ``st.switch_page(..., query_params=...)``: let go of every widget's
    binding to the URL. Streamlit refuses to set or clear a parameter bound to a
    widget of the page being left, even when the next page has no such widget
    (the workshop page's ``step`` setting and a lesson step's ``step``); the
    widgets of the page switched to bind their parameters again as they are drawn."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    if ctx is None:
        return
    params = ctx.session_state._state.query_params
    for widget_id in list(params._bindings_by_widget):
        params.unbind_widget(widget_id)
