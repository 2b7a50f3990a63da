"""The workshop server (deploy/workshop/serve.py): replicas behind nginx.

Through the proxy: a deep link as the first request of fresh replicas draws its
chart (the websocket is proxied), each browser keeps to one replica (sticky
cookie), and different browsers are spread over the replicas. The multi-node front
(front.conf) in a real nginx sends a dead node's browsers to the other node. What
happens when a replica dies: test_workshop_heals.py."""

from __future__ import annotations

import http.client
import http.server
import os
import shutil
import signal
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
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
           "--address", "127.0.0.1", "--replicas", "2", "--run-dir", str(run), "--replica-header", "--http"]  # fmt: skip
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
    assert first["Server"] == "nginx", first["Server"]  # no version for a stranger to read


def test_a_stranger_gets_no_internal_header(tmp_path):
    """Without --replica-header (every real server), nginx's configuration names no
    replica in a response and no version of itself; the real nginx accepts it."""
    import runpy

    serve = runpy.run_path(str(ROOT / "deploy" / "workshop" / "serve.py"), run_name="serve")
    conf = serve["write_config"](tmp_path, "127.0.0.1", free_port(), [free_port(), free_port()])
    text = conf.read_text()
    assert "X-Resviz-Replica" not in text and "server_tokens off;" in text
    (tmp_path / "logs").mkdir()
    checked = subprocess.run(
        [serve["nginx_binary"](), "-t", "-p", str(tmp_path), "-e", str(tmp_path / "e.log"),
         "-c", str(conf)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert checked.returncode == 0, checked.stderr
    on = serve["write_config"](tmp_path, "127.0.0.1", free_port(), [free_port()], True)
    assert "add_header X-Resviz-Replica $upstream_addr always;" in on.read_text()


def test_https_serves_the_room_with_secure_cookies_and_redirects_plain_http(tmp_path):
    """serve.py as `make workshop` runs it (no --http), in front of a real Streamlit
    replica: HTTPS with the certificate made at the first start (key 0600), every cookie
    Secure (Streamlit's XSRF too), plain HTTP sent to HTTPS."""
    port, run = free_port(), tmp_path / "run"
    cmd = [sys.executable, str(ROOT / "deploy" / "workshop" / "serve.py"), "--port", str(port),
           "--address", "127.0.0.1", "--replicas", "1", "--run-dir", str(run)]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=(tmp_path / "serve.log").open("w"),
                            stderr=subprocess.STDOUT)  # fmt: skip
    unverified = ssl._create_unverified_context()  # its own self-signed certificate
    try:
        deadline = time.monotonic() + 150
        while True:
            assert proc.poll() is None, (tmp_path / "serve.log").read_text()
            try:
                with urllib.request.urlopen(
                    f"https://127.0.0.1:{port}/workshop", timeout=5, context=unverified
                ) as r:
                    cookies = r.headers.get_all("Set-Cookie") or []
                    break
            except OSError:
                assert time.monotonic() < deadline, "the HTTPS server never answered"
                time.sleep(0.5)
        assert (run / "tls" / "key.pem").stat().st_mode & 0o777 == 0o600
        named = {c.split("=", 1)[0]: c for c in cookies}
        assert "resviz_replica" in named and "HttpOnly" in named["resviz_replica"]
        assert all("Secure" in c for c in cookies), cookies
        plain = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        plain.request("GET", "/workshop")
        moved = plain.getresponse()
        assert moved.status == 301
        assert moved.getheader("Location") == f"https://127.0.0.1:{port}/workshop"
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


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


class _Echo(http.server.BaseHTTPRequestHandler):
    """A stand-in replica: answers with the X-Real-IP header nginx passed it."""

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        body = (self.headers.get("X-Real-IP") or "").encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        pass


def test_the_replicas_see_the_clients_address_and_no_forged_one(tmp_path):
    """The room's join limit per address reads X-Real-IP (RESVIZ_CLIENT_HEADER): the
    workshop server's nginx writes the client's own address there, whatever the
    client sent under that name."""
    if NGINX is None:
        pytest.skip("nginx not installed (apt-get install nginx)")
    import runpy

    echo = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    threading.Thread(target=echo.serve_forever, daemon=True).start()
    serve = runpy.run_path(str(ROOT / "deploy" / "workshop" / "serve.py"), run_name="serve")
    port = free_port()
    conf = serve["write_config"](tmp_path, "127.0.0.1", port, [echo.server_address[1]])
    assert _through(conf, tmp_path, port, {"X-Real-IP": "203.0.113.9"}) == "127.0.0.1"
    # Behind a proxy it trusts (--real-ip-from: an Ingress, compose's front), the
    # client is the one that proxy names in X-Forwarded-For.
    conf = serve["write_config"](
        tmp_path, "127.0.0.1", port, [echo.server_address[1]], real_ip_from=("127.0.0.1/32",)
    )
    forwarded = {"X-Forwarded-For": "198.51.100.7", "X-Real-IP": "203.0.113.9"}
    assert _through(conf, tmp_path, port, forwarded) == "198.51.100.7"
    echo.shutdown()


def _through(conf, tmp_path, port, headers) -> str:  # noqa: ANN001
    """nginx with ``conf`` in front of the echo replica: the X-Real-IP it passed on."""
    nginx = subprocess.Popen(
        [NGINX, "-p", str(tmp_path), "-e", str(tmp_path / "e.log"), "-c", str(conf),
         "-g", "daemon off;"],
        stderr=(tmp_path / "nginx.log").open("w"),
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                req = urllib.request.Request(f"http://127.0.0.1:{port}/", headers=headers)
                with urllib.request.urlopen(req, timeout=5) as r:
                    return r.read().decode()
            except OSError:
                assert nginx.poll() is None, (tmp_path / "nginx.log").read_text()
                assert time.monotonic() < deadline, "nginx never answered"
                time.sleep(0.1)
    finally:
        nginx.terminate()
        nginx.wait(timeout=10)


# ------------------------------------------------ the multi-node front (compose.yaml)
class _Node(http.server.BaseHTTPRequestHandler):
    """A stand-in workshop node: answers with its name; /media/... only on node2 (a
    page's image, kept by the node that holds its session)."""

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        name = self.server.name  # type: ignore[attr-defined]
        status = 404 if self.path.startswith("/media/") and name != "node2" else 200
        body = name.encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        pass


def _node(name: str) -> http.server.ThreadingHTTPServer:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Node)
    server.name = name  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _fetch(url: str, cookie: str) -> tuple[int, str]:
    req = urllib.request.Request(url, headers={"Cookie": cookie})
    unverified = ssl._create_unverified_context()  # the test's own self-signed front
    try:
        with urllib.request.urlopen(req, timeout=10, context=unverified) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def test_front_conf_sends_a_dead_nodes_browsers_to_the_other_node(tmp_path: Path) -> None:
    """deploy/workshop/front.conf in a real nginx, the nodes' names pointed at two
    stand-in nodes on loopback: a node's browsers keep to it; a 404 from it goes on to
    the other node; once it is gone they land on the other node, and nginx marks it
    down after the first refused connection (no connect attempt per request)."""
    if NGINX is None:
        pytest.skip("nginx not installed (apt-get install nginx)")
    nodes = {"node1": _node("node1"), "node2": _node("node2")}
    port = free_port()
    front = (ROOT / "deploy" / "workshop" / "front.conf").read_text()
    for name, node in nodes.items():
        assert front.count(f"server {name}:8500 ") == 1
        front = front.replace(f"{name}:8500", f"127.0.0.1:{node.server_address[1]}")
    assert front.count("listen 443 ssl;") == 1
    front = front.replace("listen 443 ssl;", f"listen 127.0.0.1:{port} ssl;")
    import runpy

    serve = runpy.run_path(str(ROOT / "deploy" / "workshop" / "serve.py"), run_name="serve")
    cert, key = serve["make_certificate"](tmp_path / "tls", "127.0.0.1")
    front = front.replace("/etc/nginx/tls/cert.pem", str(cert))
    front = front.replace("/etc/nginx/tls/key.pem", str(key))
    (tmp_path / "front.conf").write_text(front)
    temp = " ".join(f"{t}_temp_path {tmp_path}/{t};" for t in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))  # fmt: skip
    (tmp_path / "nginx.conf").write_text(
        f"worker_processes 1; pid {tmp_path}/nginx.pid; error_log {tmp_path}/error.log info;\n"
        "events { worker_connections 64; }\n"
        f"http {{ access_log off; {temp} include {tmp_path}/front.conf; }}\n"
    )
    cmd = [NGINX, "-p", str(tmp_path), "-e", str(tmp_path / "error.log"),
           "-c", str(tmp_path / "nginx.conf"), "-g", "daemon off;"]  # fmt: skip
    nginx = subprocess.Popen(cmd, stderr=(tmp_path / "nginx.log").open("w"))
    url = f"https://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            assert nginx.poll() is None, (tmp_path / "nginx.log").read_text()
            try:
                _fetch(f"{url}/", "resviz_replica=x")
                break
            except OSError:
                assert time.monotonic() < deadline, "the front nginx never answered"
                time.sleep(0.1)
        on = {}
        for i in range(40):
            on.setdefault(_fetch(f"{url}/", f"resviz_replica=c{i}")[1], f"resviz_replica=c{i}")
        assert set(on) == {"node1", "node2"}, on
        first = on["node1"]
        assert {_fetch(f"{url}/", first) for _ in range(5)} == {(200, "node1")}
        assert _fetch(f"{url}/media/x.png", first) == (200, "node2")  # 404 passed on
        plain = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        plain.request("GET", "/workshop?join=ABC123")
        moved = plain.getresponse()
        assert moved.status == 301, moved.status
        assert moved.getheader("Location") == f"https://127.0.0.1:{port}/workshop?join=ABC123"
        plain.close()

        nodes["node1"].shutdown()
        nodes["node1"].server_close()
        assert {_fetch(f"{url}/", first) for _ in range(10)} == {(200, "node2")}
        errors = (tmp_path / "error.log").read_text()
        assert errors.count("Connection refused") == 1, errors
        assert "upstream server temporarily disabled" in errors
    finally:
        nginx.terminate()
        nginx.wait(timeout=10)
        nodes["node2"].shutdown()
