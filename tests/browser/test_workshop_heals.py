"""The workshop server heals (deploy/workshop/serve.py, which runs supervisord): a
replica that dies or hangs is started again on its port while nginx and the other
replicas serve, and nginx sends a reconnecting browser to a live replica.

- supervisord alone (no browser): ``supervisorctl status`` lists every program running;
  a replica killed again and again as soon as it is back is restarted at once from
  RUNNING, then after 1, 2, 3 s (supervisord's backoff for a process that dies before
  ``startsecs``), each exit in supervisord's log, and nginx answers for that replica's
  cookie all along; a killed nginx is restarted with nothing of the old one left
  (start_nginx.py); a replica stopped with SIGSTOP is restarted by health.py's probe
  (its line in the log) and answers again as a new process; SIGTERM still stops all
  within 2 s.
- in Chromium, with each room store (a SQLite file in the data folder; a real
  redis-server): a presenter and participants on one replica, that replica killed or
  hung (``KILLS`` times in all, kill and hang in turn, each time the one that holds
  them): supervisord, nginx and the other replica live on, every page is connected again
  within ``RECONNECT_S`` of a kill, ``HANG_RECONNECT_S`` of a hang, on a live replica
  without Streamlit's "Connection error" dialog, at the room's step, every vote pressed
  stored or said not sent; the replica answers again on its port with a new process,
  and an image of a page that moved is still served once its first replica is back.

The configuration itself (programs, backoff, stop signals, log rotation) is read back by
supervisord's own parser and run by a real supervisord in
tests/unit/test_workshop_server.py.
"""

from __future__ import annotations

import base64
import os
import re
import runpy
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from tests.browser.conftest import ROOT, free_port, screenshot, wait_ready
from tests.browser.test_workshop_proxy import NGINX
from tests.install.test_deploy import alive
from tests.roomstores import RedisServer
from ui.lessons import load_lessons

pytestmark = pytest.mark.browser
SERVE = ROOT / "deploy" / "workshop" / "serve.py"
# Rounds per store in the browser test, each killing or hanging the replica that holds
# the presenter: 2 in `make test` (about 20 s a round); the 10 with
# RESVIZ_HEAL_KILLS=10 (figures in benchmarks/RESULTS.md).
KILLS = int(os.environ.get("RESVIZ_HEAL_KILLS", "2"))
RECONNECT_S = 10  # from the kill to both pages connected again, showing the room's step
HANG_RECONNECT_S = 15  # the same from a hang (SIGSTOP): health.py restarts it after 6 s
# Odd rounds kill the presenter's replica (SIGKILL), even rounds hang it (SIGSTOP).
FAULTS = ("kill", "hang")
DONE = {"kill": "killed", "hang": "stopped (SIGSTOP)"}
RESTART_S = 60  # from the kill to the replica answering again (a generous deadline)
# Quick kills of one replica in the supervisor's test: the first from RUNNING is
# restarted at once, the next (each before startsecs) after 1, 2, 3 s.
WAITS = [0, 1, 2, 3]
READY = "resviz workshop server:"


def _need_nginx() -> None:
    if NGINX is None:
        msg = "nginx not installed (apt-get install nginx)"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except FileNotFoundError:
        return []


def _cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text().split("\0")
    except FileNotFoundError:
        return []


def _get(url: str, cookie: str | None = None, timeout: float = 5) -> tuple[int, str]:
    """Status and the replica(s) nginx tried (X-Resviz-Replica) of a GET."""
    req = urllib.request.Request(url, headers={"Cookie": cookie} if cookie else {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.headers.get("X-Resviz-Replica", "")
    except urllib.error.HTTPError as err:
        return err.code, err.headers.get("X-Resviz-Replica", "")


def _port_of(upstreams: str) -> int:
    """The replica that answered: the last one nginx tried ("127.0.0.1:A, 127.0.0.1:B")."""
    return int(upstreams.split(",")[-1].strip().rsplit(":", 1)[1])


class Workshop:
    """``serve.py`` with 2 replicas on a free port, its output (supervisord's log and
    health.py's lines) in one file, appended to by both."""

    def __init__(self, folder: Path, env: dict[str, str]) -> None:
        self.folder, self.port = folder, free_port()
        self.run = folder / "run"
        self.url = f"http://127.0.0.1:{self.port}"
        self.out = folder / "serve.log"
        cmd = [sys.executable, str(SERVE), "--port", str(self.port), "--address", "127.0.0.1",
               "--replicas", "2", "--run-dir", str(self.run), "--replica-header", "--http"]  # fmt: skip
        self.proc = subprocess.Popen(
            cmd, cwd=ROOT, env=env, stdout=self.out.open("a"), stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + 150
        while READY not in self.log():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                pytest.fail("workshop server not up: " + self.log()[-3000:])
            time.sleep(0.2)

    def log(self) -> str:
        return self.out.read_text(errors="replace")

    def status(self) -> dict[str, str]:
        """``supervisorctl -c RUN/supervisord.conf status``: program -> its state."""
        conf = self.run / "supervisord.conf"
        cmd = [sys.executable, "-m", "supervisor.supervisorctl", "-c", str(conf), "status"]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        return {ln.split()[0]: ln.split()[1] for ln in done.stdout.splitlines() if ln.strip()}

    def replicas(self) -> dict[int, int]:
        """Replica port -> pid, as the processes say."""
        found = {}
        for pid in _children(self.proc.pid):
            cmd = _cmdline(pid)
            if "--server.port" in cmd and alive(pid):
                found[int(cmd[cmd.index("--server.port") + 1])] = pid
        return found

    def nginx(self) -> int:
        (pid,) = [p for p in _children(self.proc.pid) if "nginx: master" in " ".join(_cmdline(p))]
        return pid

    def cookies(self) -> dict[int, list[str]]:
        """Sticky cookie values that nginx hashes to each replica's port."""
        found: dict[int, list[str]] = {}
        for i in range(60):
            status, upstream = _get(f"{self.url}/_stcore/health", f"resviz_replica=c{i}")
            assert status == 200, (status, upstream)
            found.setdefault(_port_of(upstream), []).append(f"c{i}")
        assert len(found) == 2, found
        return found

    def restarted(self, port: int, old_pid: int, deadline_s: float) -> int:
        """The new pid on ``port`` once it answers /_stcore/health itself."""
        deadline = time.monotonic() + deadline_s
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.log()[-3000:]
            pid = self.replicas().get(port)
            if pid not in (None, old_pid):
                try:
                    if _get(f"http://127.0.0.1:{port}/_stcore/health", timeout=2)[0] == 200:
                        return pid
                except OSError:
                    pass
            time.sleep(0.2)
        raise AssertionError(f"replica {port} not back in {deadline_s} s: {self.log()}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def _sqlite_env(folder: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "RESVIZ_ROOM_DB")}
    return {**env, "RESVIZ_DATA_DIR": str(folder / "data")}


def _exits(log: str, name: str) -> int:
    """How many times supervisord says ``name`` died unasked, killed (SIGKILL)."""
    return log.count(f"exited: {name} (terminated by SIGKILL; not expected)")


# ------------------------------------------------------------ supervisord, no browser
def test_a_killed_or_hung_replica_and_a_killed_nginx_are_restarted_as_nginx_serves(
    tmp_path: Path,
) -> None:
    _need_nginx()
    serve = runpy.run_path(str(SERVE), run_name="serve")
    server = Workshop(tmp_path, _sqlite_env(tmp_path))
    try:
        replicas = server.replicas()
        assert len(replicas) == 2, replicas
        cookies = server.cookies()
        a, b = sorted(replicas)
        cookie_a = f"resviz_replica={cookies[a][0]}"
        b_pid, nginx_pid = replicas[b], server.nginx()
        # supervisorctl watches them (docs/deploy.md); once both replicas have run
        # startsecs, supervisord calls them RUNNING, and a first kill restarts at once.
        deadline = time.monotonic() + 60
        while (status := server.status()) != {
            "workshop:health": "RUNNING",
            "workshop:nginx": "RUNNING",
            f"workshop:replica-{a}": "RUNNING",
            f"workshop:replica-{b}": "RUNNING",
        }:
            assert time.monotonic() < deadline, status
            time.sleep(0.5)

        # Kill replica a as soon as each new process of it appears: every later run is
        # shorter than startsecs, so supervisord backs off 1 s more each time.
        pid, gaps, answered = replicas[a], [], 0
        for _ in WAITS:
            os.kill(pid, signal.SIGKILL)
            killed = time.monotonic()
            while (new := server.replicas().get(a)) in (None, pid):
                assert time.monotonic() - killed < 60, server.log()[-3000:]
                # Meanwhile nginx answers for a's browsers, from b.
                status, upstream = _get(f"{server.url}/_stcore/health", cookie_a)
                assert status == 200 and _port_of(upstream) == b, (status, upstream)
                answered += 1
                time.sleep(0.05)
            gaps.append(time.monotonic() - killed)
            pid = new
        log = server.log()
        assert _exits(log, f"replica-{a}") == len(WAITS), log[-3000:]
        assert log.count(f"spawned: 'replica-{a}' with pid") == len(WAITS) + 1, log[-3000:]
        for gap, wait in zip(gaps, WAITS, strict=True):
            # supervisord looks at its processes about once a second: up to 1.5 s late.
            assert wait <= gap < wait + 1.5 + 1.0, (gaps, log[-3000:])
        print(f"\nkill to new process: {[round(g, 2) for g in gaps]} s; {answered} answers")

        # The last one is left to come up: the same port, a new process; nginx sends a's
        # browsers to it again once its 5 s of being marked down are over.
        new_a = server.restarted(a, replicas[a], RESTART_S)
        deadline = time.monotonic() + 20
        while _port_of(_get(f"{server.url}/_stcore/health", cookie_a)[1]) != a:
            assert time.monotonic() < deadline, "nginx never went back to the restarted replica"
            time.sleep(0.5)
        assert server.replicas() == {a: new_a, b: b_pid}
        assert server.nginx() == nginx_pid and server.proc.poll() is None

        # nginx killed: restarted, its old worker (which outlives its master and holds
        # the port) killed first by start_nginx.py.
        old_workers = _children(nginx_pid)
        assert old_workers
        os.kill(nginx_pid, signal.SIGKILL)
        killed = time.monotonic()
        while True:
            try:
                new_nginx = server.nginx()
                if new_nginx != nginx_pid and _get(f"{server.url}/_stcore/health")[0] == 200:
                    break
            except (OSError, ValueError):
                pass
            assert time.monotonic() - killed < 15, server.log()[-3000:]
            time.sleep(0.1)
        print(f"killed nginx answering again after {time.monotonic() - killed:.1f} s")
        assert not [w for w in old_workers if alive(w)], "the old nginx worker is left"
        assert _exits(server.log(), "nginx") == 1
        said = (server.run / "nginx-error.log").read_text()
        assert f"start_nginx.py: killed what the last nginx left: pids {old_workers}" in said
        assert server.replicas() == {a: new_a, b: b_pid}

        # A hung replica (stopped: alive, its port open, not answering) is restarted by
        # health.py through supervisord; meanwhile nginx answers b's browsers from a
        # once the kill has closed b's connections.
        b_now = server.replicas()[b]
        os.kill(b_now, signal.SIGSTOP)
        hung_at = time.monotonic()
        new_b = server.restarted(b, b_now, serve["HUNG_AFTER_S"] + RESTART_S)
        back = time.monotonic() - hung_at
        log = server.log()
        said = re.search(
            rf"health\.py: replica-{b} \(pid {b_now}\) has not answered its health probe "
            r"for (\d+) s; restarting it",
            log,
        )
        assert said and int(said.group(1)) >= serve["HUNG_AFTER_S"], log[-3000:]
        assert f"stopped: replica-{b} (terminated by SIGKILL)" in log
        assert not alive(b_now)
        print(f"stopped replica answering again as a new process after {back:.1f} s")
        assert server.replicas() == {a: new_a, b: new_b}
        for name in (f"replica-{a}.log", f"replica-{b}.log", "nginx-access.log"):
            assert (server.run / name).stat().st_size > 0, name  # every log in the run folder

        # SIGTERM still stops everything within 2 s, restarted children included.
        tree = [server.proc.pid, *_children(server.proc.pid), *_children(server.nginx())]
        start = time.monotonic()
        server.proc.send_signal(signal.SIGTERM)
        server.proc.wait(timeout=10)
        while any(alive(p) for p in tree) and time.monotonic() - start < 10:
            time.sleep(0.02)
        stopped = time.monotonic() - start
        print(f"SIGTERM to every process gone: {stopped:.2f} s")
        assert not [p for p in tree if alive(p)], "processes left after SIGTERM"
        assert server.proc.returncode == 0
        assert stopped < 2.0, f"stopped {stopped:.2f} s after SIGTERM"
    finally:
        server.stop()


# --------------------------------------------------------------- in Chromium, per store
@pytest.fixture(params=["sqlite", "redis"])
def healing(request, tmp_path: Path):
    """(the server, the store's kind, a function reading a room's step from the store,
    the store), the server loading the drill lesson (:func:`heal_lesson`) too."""
    _need_nginx()
    env = _sqlite_env(tmp_path)
    env["RESVIZ_LESSONS"] = str(heal_lesson(tmp_path / "lessons", KILLS))
    redis = None
    if request.param == "redis":
        redis = RedisServer(tmp_path)
        env["REDIS_URL"] = redis.url
    server = Workshop(tmp_path, env)
    from ui.room.store import RedisStore, SQLiteStore

    store = RedisStore(redis.url) if redis else SQLiteStore(tmp_path / "data" / "rooms.sqlite3")

    def room_step(code: str) -> int:
        room = store.room(code)
        assert room is not None, f"no room {code} in the store"
        return room.step

    try:
        yield server, request.param, room_step, store
    finally:
        server.stop()
        if redis:
            redis.stop()


# Whether Streamlit's "Connection error" dialog ever showed, checked every 100 ms.
WATCH_DIALOG = """
setInterval(() => {
  for (const d of document.querySelectorAll("[role='dialog']")) {
    if (d.innerText.includes("Connection error")) window.__resvizConnectionError = true;
  }
}, 100);
"""


class Tab:
    """A Chromium page pinned by its sticky cookie, watching its websockets through the
    DevTools protocol: each handshake (when, and the replica(s) nginx tried, from the
    X-Resviz-Replica header) and each full script run finished on it (Streamlit's
    ``script_finished`` message), so a page that shows what its last replica drew is
    not taken for one connected again."""

    def __init__(self, browser, url: str, cookie: str, **kw) -> None:
        self.ctx = browser.new_context(**kw)
        self.ctx.add_cookies([{"name": "resviz_replica", "value": cookie, "url": url}])
        self.ctx.add_init_script(WATCH_DIALOG)
        self.page = self.ctx.new_page()
        self.sockets: dict[str, tuple[float, str]] = {}  # request id -> (when, upstreams)
        self.runs: dict[str, list[float]] = {}  # request id -> when each run finished
        cdp = self.ctx.new_cdp_session(self.page)
        cdp.send("Network.enable")
        cdp.on("Network.webSocketHandshakeResponseReceived", self._handshake)
        cdp.on("Network.webSocketFrameReceived", self._frame)

    def _handshake(self, event: dict) -> None:
        if event["response"]["status"] != 101:
            return
        headers = {k.lower(): v for k, v in event["response"].get("headers", {}).items()}
        upstream = headers.get("x-resviz-replica", "")
        self.sockets[event["requestId"]] = (time.monotonic(), upstream)

    def _frame(self, event: dict) -> None:
        frame = event["response"]
        if frame.get("opcode") != 2:
            return
        msg = ForwardMsg()
        msg.ParseFromString(base64.b64decode(frame["payloadData"]))
        if msg.WhichOneof("type") == "script_finished":
            if msg.script_finished == ForwardMsg.FINISHED_SUCCESSFULLY:
                self.runs.setdefault(event["requestId"], []).append(time.monotonic())

    def replica(self) -> int:
        """The replica holding this page's session: its last websocket's."""
        assert self.sockets, "no websocket yet"
        return _port_of(max(self.sockets.values())[1])

    def reconnected(self, since: float, heading: str, deadline: float) -> tuple[float, str]:
        """Seconds from ``since`` until the page has a new websocket, a full run of its
        script finished over it, and shows ``heading`` with no connection status; the
        replica(s) nginx tried for that websocket."""
        pg = self.page
        while True:
            new = [(t, rid, up) for rid, (t, up) in self.sockets.items() if t > since]
            if new and self.runs.get(min(new)[1]):
                break
            assert time.monotonic() < deadline, f"no run on a new websocket: {new}"
            pg.wait_for_timeout(50)
        left = max(0.0, deadline - time.monotonic()) * 1000
        pg.wait_for_function(
            """(title) => {
                if (document.querySelector("[data-testid='stConnectionStatus']")) return false;
                return [...document.querySelectorAll("[data-testid='stHeading']")]
                    .some(h => h.innerText.includes(title));
            }""",
            arg=heading,
            timeout=max(left, 1),
        )
        _, rid, upstream = min(new)
        return self.runs[rid][0] - since, upstream

    def saw_connection_error(self) -> bool:
        return bool(self.page.evaluate("() => window.__resvizConnectionError === true"))


def _warm(browser, url: str, cookie: str, paths: list[str]) -> None:
    tab = Tab(browser, url, cookie)
    for path in paths:
        tab.page.goto(f"{url}/{path}")
        wait_ready(tab.page, settle_ms=0)
    tab.ctx.close()


def heal_lesson(folder: Path, rounds: int) -> Path:
    """A lesson of ``rounds`` question steps between a first and a last plain step, all
    on one light section (Skip connections > Signal), so a round costs a vote, not a
    training run; written to ``folder`` for ``RESVIZ_LESSONS``."""
    step = 'title = "{title}"\npage = "skip_connections"\nsection = "Signal"\ntext = "{text}"\n'
    parts = [
        'title = "Heal drill"\nsummary = "Votes while a replica dies."\n',
        "[[steps]]\n" + step.format(title="Everyone in", text="The room gathers."),
    ]
    for r in range(1, rounds + 1):
        parts.append(
            "[[steps]]\n"
            + step.format(title=f"Vote round {r}", text=f"Round {r}: a stack of {8 + r} blocks.")
            + f'[steps.settings]\ndepth = {8 + r}\nmode = "add"\n'
            + '[steps.predict]\nquestion = "In the last block, which term holds most of the '
            'output?"\nchoices = ["shortcut", "update"]\nexpect = "shortcut"\n'
            'measure = "skip_last_block_term"\n'
        )
    parts.append("[[steps]]\n" + step.format(title="All done", text="The drill is over."))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "heal.toml").write_text("\n".join(parts), encoding="utf-8")
    lessons, errors = load_lessons([folder])
    assert not errors and len(lessons["heal"].steps) == rounds + 2, errors
    return folder


LEADS = [-0.05, 0.0, 0.05, 0.1, 0.3]  # seconds from Ada's Send to the kill, by round
VOTE_SAID = re.compile("is recorded|has not reached the room|was not sent")


def _heading(tab: Tab, title: str, timeout_s: float) -> None:
    tab.page.locator("[data-testid='stHeading']", has_text=title).first.wait_for(
        timeout=timeout_s * 1000
    )


def _pick(tab: Tab, choice: str) -> None:
    pg = tab.page
    pg.get_by_text("Predict first:").wait_for(timeout=30_000)
    pg.locator("[data-testid='stRadio']").get_by_text(choice, exact=True).click()
    pg.get_by_text("Not sent yet").wait_for(timeout=30_000)


def _send(tab: Tab) -> None:
    tab.page.get_by_role("button", name="Send my prediction").click(no_wait_after=True)


def _settle_vote(tab: Tab, choice: str) -> str:
    """What the page said of a vote whose Send may have died with its replica:
    "stored" (it says recorded) or "not sent" (it says so; sent again until recorded).
    A page that says neither within 30 s fails the test: a silent loss. (A click the
    browser had queued while its server was gone is delivered on reconnecting: the
    page may say "not reached" for the moment before that click's run records it,
    and then the Send button is gone.)"""
    pg = tab.page
    pg.get_by_text(VOTE_SAID).first.wait_for(timeout=30_000)
    outcome = "stored" if "is recorded" in pg.inner_text("body") else "not sent"
    recorded = pg.get_by_text(f"Your prediction is recorded: {choice}")
    deadline = time.monotonic() + 30
    while not recorded.count():
        assert time.monotonic() < deadline, f"never recorded: {pg.inner_text('body')[-600:]}"
        send = pg.get_by_role("button", name="Send my prediction")
        if send.count():
            try:
                send.click(timeout=2_000)
            except PlaywrightTimeout:
                pass  # redrawn under the click: look again
        pg.wait_for_timeout(200)
    return outcome


def test_a_room_mid_vote_survives_its_presenters_replica_killed_or_hung(healing, browser) -> None:
    """A presenter and 3 participants through nginx and 2 replicas; in each round the
    room moves to a question, one participant's vote is sent, and the replica holding
    the presenter and a second participant is killed (odd rounds) or hung by SIGSTOP
    (even rounds: the health probe kills it) as that second participant presses Send
    (``LEADS``: from 0.05 s after the fault to 0.3 s before), a third sending just after.
    Within ``RECONNECT_S`` of a kill, ``HANG_RECONNECT_S`` of a hang, all four are in the
    room at its step with no connection dialog;
    every vote pressed is in the store, or its page said it was not sent and the
    resend is; the presenter's Next still moves the room. Then the two reload once
    their replica is back (presenting survives a reload), for the next round."""
    server, kind, room_step, store = healing
    url = server.url
    cookies = server.cookies()
    home, other = sorted(cookies)  # presenter and Ada's replica; Bo and Cy's
    size = {"viewport": {"width": 1280, "height": 1000}}
    presenter = Tab(browser, url, cookies[home][0], viewport={"width": 1500, "height": 1400})
    pp = presenter.page
    pp.goto(f"{url}/workshop?lesson=heal")
    wait_ready(pp)
    pp.get_by_role("button", name="Open as a room").click()
    pp.get_by_text(re.compile(r"Room code: [A-Z0-9]{6}")).wait_for(timeout=30_000)
    code = re.search(r"Room code: ([A-Z0-9]{6})", pp.inner_text("body")).group(1)
    ada = Tab(browser, url, cookies[home][1], **size)
    bo = Tab(browser, url, cookies[other][0], **size)
    cy = Tab(browser, url, cookies[other][1], **size)
    people = {"Ada": ada, "Bo": bo, "Cy": cy}
    for name, tab in people.items():
        tab.page.goto(f"{url}/workshop?join={code}")
        wait_ready(tab.page)
        tab.page.get_by_label("Your name (optional)").fill(name)
        tab.page.get_by_role("button", name="Join", exact=True).click()
        _heading(tab, "Everyone in", 60)
    assert presenter.replica() == ada.replica() == home
    assert bo.replica() == cy.replica() == other

    outcomes: list[str] = []
    waits: list[float] = []
    for r in range(1, KILLS + 1):
        step, title = r + 1, f"Vote round {r}"
        pp.get_by_role("button", name="Next", exact=True).click()
        pp.get_by_text(f"Step {step} of").first.wait_for(timeout=30_000)
        for tab in people.values():
            _heading(tab, title, 30)
        choices = {"Ada": "shortcut", "Bo": "update", "Cy": ["shortcut", "update"][r % 2]}
        _pick(bo, choices["Bo"])
        _send(bo)
        bo.page.get_by_text(f"Your prediction is recorded: {choices['Bo']}").wait_for(
            timeout=30_000
        )
        _pick(ada, choices["Ada"])
        _pick(cy, choices["Cy"])
        replicas = server.replicas()
        assert presenter.replica() == ada.replica() == home, "not on their replica"
        nginx_pid = server.nginx()
        # Ada presses Send this long before the kill (after it, when negative): the
        # vote may be on its way, committed, or pressed on a page that has lost its server.
        lead = LEADS[(r - 1) % len(LEADS)]
        if lead >= 0:
            _send(ada)
            time.sleep(lead)
        fault = FAULTS[(r - 1) % len(FAULTS)]
        exits = _exits(server.log(), f"replica-{home}")
        os.kill(replicas[home], signal.SIGKILL if fault == "kill" else signal.SIGSTOP)
        killed = time.monotonic()
        if lead < 0:
            time.sleep(-lead)
            _send(ada)
        _send(cy)  # on the live replica, just after
        deadline = killed + (RECONNECT_S if fault == "kill" else HANG_RECONNECT_S)
        a_took, a_via = ada.reconnected(killed, title, deadline)
        p_took, p_via = presenter.reconnected(killed, f"Step {step} of", deadline)
        for tab in (bo, cy):
            _heading(tab, title, max(0.1, deadline - time.monotonic()))
        waits.append(max(a_took, p_took))
        # Everyone is in the room at its step, on a live replica, nothing said.
        assert _port_of(a_via) == _port_of(p_via) == other, (a_via, p_via)
        assert server.proc.poll() is None and server.nginx() == nginx_pid
        assert server.replicas().get(other) == replicas[other]
        assert room_step(code) == step
        for name, tab in [("presenter", presenter), *people.items()]:
            assert not tab.saw_connection_error(), f"{name}: the Connection error dialog"
            assert tab.page.locator("[data-testid='stException']").count() == 0, name
        for tab in people.values():
            assert f"room={code}" in tab.page.url and f"step={step}" in tab.page.url
        assert pp.get_by_role("button", name="Open as a room").count() == 0

        # Every vote pressed is stored, or was said not sent and is stored once resent.
        outcomes.append(_settle_vote(ada, choices["Ada"]))
        assert _settle_vote(cy, choices["Cy"]) == "stored"  # its replica never went down
        assert sorted(store.votes(code, step, 1).values()) == sorted(choices.values())
        pp.get_by_text("Predictions: 3 of 3 answered").wait_for(timeout=30_000)
        print(
            f"\n{kind}, round {r}: replica {home} {DONE[fault]} as Ada sent; Ada connected again "
            f"after {a_took:.1f} s, the presenter after {p_took:.1f} s (via {other}); "
            f"Ada's vote, pressed {abs(lead):.2f} s {'before' if lead >= 0 else 'after'} the "
            f"{fault}: {outcomes[-1]}"
        )

        # The killed replica answers again on its port, a new process, said in the log
        # (supervisord's exit line for a kill; health.py's line, then supervisord's stop,
        # for a hang); the presenter's images (held by the live replica now) are still
        # served: its cookie's replica answers 404 and nginx passes the request on.
        server.restarted(home, replicas[home], RESTART_S)
        log = server.log()
        pid = replicas[home]
        assert _exits(log, f"replica-{home}") == exits + (fault == "kill"), log[-2000:]
        probed = rf"health\.py: replica-{home} \(pid {pid}\) has not answered its health probe"
        assert bool(re.search(probed, log)) is (fault == "hang"), log[-2000:]
        src = pp.locator("[data-testid='stImage'] img").first.get_attribute("src")
        fetch = "async (src) => { const r = await fetch(src); " \
                "return [r.status, r.headers.get('x-resviz-replica')]; }"  # fmt: skip
        for _ in range(40):
            status, tried = pp.evaluate(fetch, src)
            if tried and tried.startswith(f"127.0.0.1:{home},"):
                break
            pp.wait_for_timeout(500)
        assert status == 200 and tried.startswith(f"127.0.0.1:{home},"), (status, tried)
        # The presenter and Ada reload: back on their own replica, presenting, in the room.
        for tab, heading in ((presenter, f"Step {step} of"), (ada, title)):
            since = time.monotonic()
            tab.page.reload()
            tab.reconnected(since, heading, since + 60)
        assert presenter.replica() == ada.replica() == home
        assert pp.get_by_role("button", name="Open as a room").count() == 0

    # The presenter still drives: the last Next moves every participant.
    pp.get_by_role("button", name="Next", exact=True).click()
    for tab in people.values():
        _heading(tab, "All done", 30)
    assert room_step(code) == KILLS + 2
    silent = KILLS - outcomes.count("stored") - outcomes.count("not sent")
    print(
        f"\n{kind}: {KILLS} faults (kill and hang in turn); Ada's vote at the fault: "
        f"{outcomes.count('stored')} "
        f"stored, {outcomes.count('not sent')} said not sent and resent, {silent} silent "
        f"losses; back in the room after at most {max(waits):.1f} s "
        f"(median {sorted(waits)[len(waits) // 2]:.1f} s)"
    )
    assert silent == 0
    screenshot(ada.page, f"workshop_heals_{kind}_participant")
    screenshot(pp, f"workshop_heals_{kind}_presenter")
    for tab in (presenter, *people.values()):
        tab.ctx.close()
