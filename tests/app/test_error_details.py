"""No traceback, exception text or server path reaches a user: Streamlit shows its
generic message (``client.showErrorDetails = "none"``), background runs name the
kind of error only, and the details go to the server log."""

from __future__ import annotations

import tomllib
from pathlib import Path

import streamlit as st
from streamlit import config

ROOT = Path(__file__).resolve().parents[2]
SINUS = "app_pages/sinusoidal_encoding.py"


def test_error_details_are_hidden_from_users():
    cfg = tomllib.loads((ROOT / ".streamlit/config.toml").read_text())
    assert cfg["client"]["showErrorDetails"] == "none"


def test_a_page_error_shows_no_traceback_or_paths(app, monkeypatch):
    """Force an error inside a page: the user gets Streamlit's generic message
    (no exception type, message, traceback or server path); the log gets the trace."""
    from resviz import positional

    def broken(*_a, **_k):
        raise RuntimeError(f"secret detail in {ROOT}/resviz/positional.py")

    monkeypatch.setattr(positional, "encoding_table", broken)
    st.cache_data.clear()  # the table's recipe runs now, not read back from an earlier test
    file_value = tomllib.loads((ROOT / ".streamlit/config.toml").read_text())["client"][
        "showErrorDetails"
    ]
    old = config.get_option("client.showErrorDetails")
    config.set_option("client.showErrorDetails", file_value)
    try:
        at = app(SINUS).run()
    finally:
        config.set_option("client.showErrorDetails", old)
    assert len(at.exception) == 1
    shown = at.exception[0]
    assert not shown.stack_trace
    assert not shown.proto.type
    assert "redacted" in shown.message
    assert str(ROOT) not in shown.message and "secret" not in shown.message


def test_a_failed_background_run_shows_its_kind_not_its_message(caplog):
    """A training run that raises: the page names the kind of error and points to
    the log; the message (which may hold paths or user text) and trace go to the log."""
    from streamlit.testing.v1 import AppTest

    from ui import jobs

    def script():
        from ui import jobs

        def boom(report, should_stop):
            raise RuntimeError("secret detail in /srv/resviz/x.py")

        jobs.panel(
            "failing", "test-url-safety-failing-run", boom, 1, lambda job: None, autostart=True
        )

    jobs.REGISTRY.forget("test-url-safety-failing-run", "")
    at = AppTest.from_function(script, default_timeout=60).run()
    assert jobs.REGISTRY.wait(10)
    at.run()
    shown = " ".join(e.value for e in at.error)
    assert "The run failed (RuntimeError)" in shown and "server log" in shown
    assert "secret" not in shown and "/srv" not in shown
    assert "secret detail" in caplog.text and "Traceback" in caplog.text
