"""docs/api.md is generated from the docstrings: it fails here when it is stale."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_api_reference_is_current():
    spec = importlib.util.spec_from_file_location("make_api", ROOT / "docs" / "make_api.py")
    make_api = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_api)
    want = make_api.render()
    got = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    assert got == want, "docs/api.md is stale: run `python docs/make_api.py`"
    # It documents what it promises: every module and a known function with its signature.
    assert "## `resviz.core`" in got
    assert "- `def build(cfg:" in got
