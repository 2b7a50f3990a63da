"""The Streamlit internals the app relies on still exist and behave (ui/st_internals.py).

An upgrade that moves one fails here, with a message naming it, rather than
breaking a page silently."""

from __future__ import annotations

import importlib

import pandas as pd
import pyarrow as pa
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from ui import st_internals


@pytest.mark.parametrize(("module", "attr"), st_internals.USED)
def test_internal_still_exists(module: str, attr: str) -> None:
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:  # pragma: no cover - only on an upgrade
        pytest.fail(
            f"Streamlit {st.__version__} has no module {module}: update ui/st_internals.py ({exc})"
        )
    assert hasattr(mod, attr), (
        f"Streamlit {st.__version__}: {module}.{attr} is gone; update ui/st_internals.py"
    )


def test_runtime_answers_session_questions() -> None:
    from streamlit.runtime import Runtime

    for name in ("exists", "instance"):
        assert callable(getattr(Runtime, name, None)), f"Runtime.{name} is gone"
    assert callable(getattr(Runtime, "is_active_session", None)), (
        "Runtime.is_active_session is gone"
    )
    # Outside a server every session counts as alive, and there is no session id.
    assert st_internals.session_alive("no-such-session") is True
    assert st_internals.session_id() == ""


def test_arrow_bytes_round_trip() -> None:
    df = pd.DataFrame({"step": [1, 2, 3], "loss": [0.5, 0.25, 0.125], "variant": list("abc")})
    table = pa.ipc.open_stream(st_internals.arrow_bytes(df)).read_all()
    back = table.to_pandas()
    for col in df.columns:
        assert list(back[col]) == list(df[col])


def _session_id_script() -> None:
    import streamlit as st

    from ui import st_internals

    st.write(st_internals.session_id())


def test_session_id_inside_a_script_run() -> None:
    at = AppTest.from_function(_session_id_script, default_timeout=60).run()
    assert not at.exception
    assert at.markdown[0].value, "no session id inside a script run"


def test_the_app_extra_allows_only_the_streamlit_these_checks_ran_on() -> None:
    """pyproject's ``app`` extra bounds Streamlit to the releases whose internals this
    file has checked: the installed release is inside the range, and the range ends at
    its next minor release. To widen it: install the new release, run this file (and the
    suite), then raise the bound; this test then asks for the next one."""
    import tomllib
    from pathlib import Path

    from packaging.requirements import Requirement
    from packaging.version import Version

    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    (req,) = [
        Requirement(r)
        for r in pyproject["project"]["optional-dependencies"]["app"]
        if Requirement(r).name == "streamlit"
    ]
    installed = Version(st.__version__)
    assert req.specifier.contains(installed), (req, installed)
    uppers = [s.version for s in req.specifier if s.operator == "<"]
    assert uppers == [f"{installed.major}.{installed.minor + 1}"], req
