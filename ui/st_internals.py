"""Every use of a Streamlit internal (not public API), in one place.

Streamlit's public API has no session id, no "is this session still connected",
and no way to turn a frame into the Arrow bytes its charts carry. Each is reached
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
