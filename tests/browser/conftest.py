"""A real ``streamlit run`` server on a free loopback port and Debian's Chromium.

In CI (``CI`` set) a missing browser is a failure; elsewhere the browser tests
skip with the reason.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts" / "screenshots"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


def chromium_path() -> str | None:
    for cand in (os.environ.get("RESVIZ_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium")):
        if cand and Path(cand).exists():
            return cand
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mb(pid: int) -> float:
    """Resident memory of a process in MB (Linux /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


class Server:
    def __init__(
        self, *extra: str, env: dict[str, str] | None = None, script: str = "streamlit_app.py"
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = (ROOT / "artifacts").joinpath(f"server-{self.port}.log")
        self.log.parent.mkdir(parents=True, exist_ok=True)
        cmd = [
            sys.executable, "-m", "streamlit", "run", script,
            "--server.port", str(self.port), "--server.address", "127.0.0.1",
            "--server.headless", "true", "--browser.gatherUsageStats", "false", *extra,
        ]  # fmt: skip
        self.proc = subprocess.Popen(
            cmd,
            cwd=ROOT,
            stdout=self.log.open("w"),
            stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})},
        )
        self.started = time.monotonic()
        deadline = self.started + 90
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"streamlit exited: {self.log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=2) as r:
                    if r.read().strip() == b"ok":
                        self.healthy_after = time.monotonic() - self.started
                        return
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError("streamlit did not become healthy within 90 s")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


@pytest.fixture(scope="module")
def server():
    s = Server()
    yield s
    s.stop()


@pytest.fixture
def page(browser):
    # Tall, so a full-page screenshot holds the whole page (Streamlit scrolls inside).
    ctx = browser.new_context(viewport={"width": 1400, "height": 4200}, accept_downloads=True)
    pg = ctx.new_page()
    yield pg
    ctx.close()


def wait_ready(
    pg, charts: int = 0, downloads: int = 0, timeout: float = 60_000, settle_ms: int = 500
) -> None:
    """Wait until the script has finished, ``charts`` Vega charts are drawn and
    ``downloads`` download buttons are shown, and (with ``settle_ms``) that it still
    holds that long after: Streamlit shows its running indicator only after a short
    delay, so one look can fall in the gap between two elements of a run. Timings
    pass ``settle_ms=0`` and take the first look."""
    pg.wait_for_selector("[data-testid='stApp']", timeout=timeout)
    for _ in range(2 if settle_ms else 1):
        # The app's own run state (set at once, where the status widget shows after a
        # delay): a cold server's first run can pause longer than settle_ms between two
        # elements (a fresh server's lesson link once read as drawn without its banner).
        pg.wait_for_function(
            """([n, d]) => {
                const app = document.querySelector("[data-testid='stApp']");
                if (!app || app.getAttribute("data-test-script-state") !== "notRunning") return false;
                const running = document.querySelector("[data-testid='stStatusWidget']");
                const title = document.querySelector("[data-testid='stMainBlockContainer'] h1");
                const drawn = document.querySelectorAll(
                    "[data-testid='stVegaLiteChart'] canvas, [data-testid='stVegaLiteChart'] svg.marks");
                const buttons = document.querySelectorAll("[data-testid='stDownloadButton']");
                return !running && title && drawn.length >= n && buttons.length >= d;
            }""",
            arg=[charts, downloads],
            timeout=timeout,
        )
        pg.wait_for_timeout(settle_ms)


def screenshot(pg, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    pg.screenshot(path=str(path), full_page=True)
    return path


def download_named(pg, filename: str, timeout: float = 60.0):
    """Click the page's download buttons until one yields ``filename``; return that
    download. Found by name, not by position, and waited for: sections may still be
    drawing (or the page rerunning) when this is called."""
    buttons = pg.locator("[data-testid='stDownloadButton'] button")
    tried: set[int] = set()
    deadline = time.monotonic() + timeout
    seen = -1
    while time.monotonic() < deadline:
        if buttons.count() != seen:  # the page changed: positions may have moved
            seen, tried = buttons.count(), set()
        for i in range(seen):
            if i in tried or not buttons.nth(i).is_visible():  # e.g. a collapsed expander
                continue
            with pg.expect_download(timeout=60_000) as dl:
                buttons.nth(i).click()
            tried.add(i)
            if dl.value.suggested_filename == filename:
                return dl.value
        pg.wait_for_timeout(250)
    raise AssertionError(f"no download named {filename} among {buttons.count()} buttons")
