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


def open_section(at: AppTest, label: str) -> AppTest:
    """Switch an open page to another section, as a click on its tab does."""
    at.session_state["section"] = label
    at.query_params["section"] = label
    return at.run()


def _sections(page: str) -> list[str | None]:
    from ui.specs.pages import spec_of

    labels = spec_of(page.removeprefix("app_pages/").removesuffix(".py")).sections
    return list(labels) if labels else [None]


# Every (page, section) a deep link can open; section None for a page without sections.
SECTION_CASES = [(page, s) for page in PAGE_PATHS for s in _sections(page)]
SECTION_IDS = [f"{p.removeprefix('app_pages/').removesuffix('.py')}-{s}" for p, s in SECTION_CASES]


def section_params(section: str | None) -> dict[str, str]:
    return {"section": section} if section else {}
