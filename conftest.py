"""Puts the repository root on sys.path so tests import resviz, ui and the pages,
gives every test the app's torch thread policy (one intra-op thread), and holds the one
Chromium every folder's browser tests share (Playwright's sync API allows one running
instance per thread, so a second one, in another folder, could not start)."""

import os

import pytest


@pytest.fixture(autouse=True, scope="session")
def app_thread_policy():
    import resviz as rv

    rv.configure_threads()


@pytest.fixture(scope="session")
def browser():
    """Debian's Chromium through Playwright. In CI (``CI`` set) a missing browser is a
    failure; elsewhere the tests that need it skip with the reason."""
    from tests.browser.conftest import CHROMIUM_ARGS, chromium_path

    path = chromium_path()
    if path is None:
        msg = "Chromium not found (apt-get install chromium, or set RESVIZ_CHROMIUM)"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=path, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


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
