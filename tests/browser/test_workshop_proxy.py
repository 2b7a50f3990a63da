"""The workshop server (deploy/workshop/serve.py): replicas behind nginx.

Through the proxy: a deep link as the first request of fresh replicas draws its
chart (the websocket is proxied), each browser keeps to one replica (sticky
cookie), and different browsers are spread over the replicas."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.browser.conftest import ROOT, free_port, screenshot, wait_ready

pytestmark = pytest.mark.browser
NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)


@pytest.fixture(scope="module")
def proxy(tmp_path_factory):
    if NGINX is None:
        msg = "nginx not installed (apt-get install nginx)"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    port = free_port()
    run = tmp_path_factory.mktemp("workshop")
    log = (run / "serve.log").open("w")
    cmd = [sys.executable, str(ROOT / "deploy" / "workshop" / "serve.py"), "--port", str(port),
           "--address", "127.0.0.1", "--replicas", "2", "--run-dir", str(run)]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 150
    while time.monotonic() < deadline:
        assert proc.poll() is None, (run / "serve.log").read_text()
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    break
        except OSError:
            time.sleep(0.5)
    else:
        proc.kill()
        pytest.fail("workshop server not up: " + (run / "serve.log").read_text()[-2000:])
    yield url
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()


def _get(url: str, cookie: str | None = None):
    req = urllib.request.Request(url, headers={"Cookie": cookie} if cookie else {})
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.headers


def _replica_cookies(headers) -> list[str]:
    cookies = [c.split(";")[0] for c in headers.get_all("Set-Cookie") or []]
    return [c for c in cookies if c.startswith("resviz_replica=")]


def test_sticky_cookie_and_spread(proxy):
    first = _get(f"{proxy}/_stcore/health")
    (cookie,) = _replica_cookies(first)
    replica = first["X-Resviz-Replica"]
    for _ in range(5):
        again = _get(f"{proxy}/_stcore/health", cookie)
        assert again["X-Resviz-Replica"] == replica
        assert _replica_cookies(again) == []  # set once, then kept
    seen = {_get(f"{proxy}/_stcore/health", f"resviz_replica=browser{i}")["X-Resviz-Replica"]
            for i in range(24)}  # fmt: skip
    assert len(seen) == 2, f"24 browsers all landed on {seen}"


def test_deep_link_through_the_proxy(proxy, browser):
    replicas = set()
    for name in ("a", "b"):
        ctx = browser.new_context(viewport={"width": 1400, "height": 1200})
        pg = ctx.new_page()
        hits: set[str] = set()
        pg.on("response", lambda r, hits=hits: hits.add(r.headers.get("x-resviz-replica", "")))
        pg.goto(f"{proxy}/gradient_flow?depth=12&act=sigmoid")
        wait_ready(pg, charts=1)
        assert pg.locator("h1").first.inner_text() == "Gradient flow"
        assert pg.locator("[data-testid='stException']").count() == 0
        cookie = [c for c in ctx.cookies() if c["name"] == "resviz_replica"]
        assert cookie, "no sticky cookie in the browser"
        hits.discard("")
        assert len(hits) == 2 or len(hits) == 1  # the first page request may be hashed by its id
        replicas |= hits
        screenshot(pg, f"workshop_proxy_{name}")
        ctx.close()
    assert replicas
