"""Puts the repository root on sys.path so tests import resviz, ui and the pages,
and gives every test the app's torch thread policy (one intra-op thread)."""

import pytest


@pytest.fixture(autouse=True, scope="session")
def app_thread_policy():
    import resviz as rv

    rv.configure_threads()


def pytest_terminal_summary(terminalreporter):
    """Report the widget-sweep size (the README quotes these counts)."""
    try:
        from tests.app.conftest import SWEEP_COUNTS
    except ImportError:
        return
    if SWEEP_COUNTS:
        total = sum(SWEEP_COUNTS.values())
        terminalreporter.write_sep(
            "-", f"widget sweep: {total} settings over {len(SWEEP_COUNTS)} pages"
        )
        for page, n in sorted(SWEEP_COUNTS.items()):
            terminalreporter.write_line(f"  {page}: {n}")
