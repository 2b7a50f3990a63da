from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from ui.registry import PAGES

# Importing torch alone exceeds AppTest's 3 s default on a 2-core machine.
TIMEOUT = 120
ENTRY = str(Path(__file__).resolve().parents[2] / "streamlit_app.py")


@pytest.fixture
def app():
    def make(page: str | None = None, **params: str) -> AppTest:
        at = AppTest.from_file(ENTRY, default_timeout=TIMEOUT)
        for k, v in params.items():
            at.query_params[k] = v
        if page:
            at.switch_page(page)
        return at

    return make


PAGE_PATHS = [p.path for p in PAGES]


# page -> number of widget settings the sweep ran (reported at the end of the run).
SWEEP_COUNTS: dict[str, int] = {}
