"""A workshop room under load: participants following a presenter on 2 replicas.

    .venv/bin/python benchmarks/room_load.py [--participants 30] [--steps 5] [--replicas 2]
                                             [--kill-at SECONDS]

Starts ``deploy/workshop/serve.py`` (replicas behind nginx) once with the SQLite
store and once with Redis (Debian's redis-server, started here on a free port).
Each participant is a websocket client speaking Streamlit's protocol through
nginx, as a browser does: it opens the room's step page with its room and member
in the URL (the link joining gives), and sends the fragment poll reruns the
browser would send (``auto_rerun``: every second). The presenter moves the room
through ``--steps`` steps with the store call the Workshop page makes. On the
question step every participant votes through the page (its radio and button,
by widget id), the presenter reveals, and each page measures with its seed and
sends the answer to the room.

Per step and participant: the *follow delay*, from the presenter's move to the
participant's page switching to that step (``page_info_changed``), and to that
step's script run finishing (the page drawn). Lost votes: votes sent by pages
minus votes in the store.

``--kill-at SECONDS``: that long after the presenter's first move, SIGKILL the replica
that holds participant 0 (and every other participant its cookie hash sends there),
as a crash would. Its participants reconnect as Streamlit's page does: ask
``/_stcore/health`` through nginx until it answers, open a new websocket (nginx sends
it to a live replica) and run their page again with its URL; a vote form shown again
(the click was lost with the replica) is clicked again. Reported: the participants it
held, their time from the kill to their page drawn again, when the replica answers
again on its port (serve.py restarts it), the follow delays of every move, and votes
clicked (every click, a repeated one included) against votes stored.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Awaitable, Callable
from pathlib import Path

import websockets
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState
from websockets.exceptions import ConnectionClosed

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.server_load import pct  # noqa: E402
from tests.browser.conftest import free_port  # noqa: E402
from tests.roomstores import RedisServer  # noqa: E402
from ui.lessons import load_lessons  # noqa: E402
from ui.room.store import RedisStore, RoomStore, SQLiteStore  # noqa: E402

LESSON = load_lessons()[0]["residuals"]


class Participant:
    def __init__(self, base: str, code: str, token: str, seed: int, k: int) -> None:
        self.base, self.code, self.token, self.seed, self.k = base, code, token, seed, k
        self.moved: dict[int, float] = {}  # step -> when the page switched to it
        self.drawn: dict[int, float] = {}  # step -> when that step's run finished
        self.voted: set[int] = set()
        self.clicks = 0  # vote clicks, one shown again after a reconnect included
        self.errors: list[str] = []
        self.lost_at: float | None = None  # when its websocket closed under it
        self.back: list[float] = []  # seconds from losing it to a page drawn again
        self.step = 0
        self.query = ""
        self.page_hash = ""
        self.elements: list = []
        self.fragments: dict[str, float] = {}
        self.widgets: dict[str, object] = {}  # widget id -> WidgetState the user set
        self.stop = asyncio.Event()

    def _rerun(self, fragment: str = "", widgets: list | None = None) -> bytes:
        msg = BackMsg()
        msg.rerun_script.query_string = self.query
        msg.rerun_script.page_script_hash = self.page_hash
        if fragment:
            msg.rerun_script.fragment_id = fragment
            msg.rerun_script.is_auto_rerun = True
        # As a browser does: every rerun carries the widget values the user set
        # (a poll without them would reset the vote's radio); a click only once.
        for w in [*self.widgets.values(), *(widgets or [])]:
            msg.rerun_script.widget_states.widgets.append(w)
        return msg.SerializeToString()

    def _step_of(self, query: str) -> int:
        q = urllib.parse.parse_qs(query)
        return int(q["step"][0]) if "step" in q else 0

    @property
    def cookie(self) -> str:
        return f"resviz_replica=p{self.seed}"

    async def run(self, first_step: int) -> None:
        step = LESSON.steps[first_step - 1]
        q = step.query(LESSON.id, first_step)
        q.update(seed=str(self.seed), room=self.code, member=self.token)
        self.query = urllib.parse.urlencode(q)
        self.step = first_step
        while not self.stop.is_set():
            try:
                await self._session()
            except (ConnectionClosed, OSError):
                pass
            if self.stop.is_set():
                return
            # As Streamlit's page does when its websocket closes: ask the server's
            # health until it answers, then connect again and run the page again.
            self.lost_at = self.lost_at or time.monotonic()
            while not self.stop.is_set() and not await asyncio.to_thread(self._healthy):
                await asyncio.sleep(0.5)

    def _healthy(self) -> bool:
        req = urllib.request.Request(f"{self.base}/_stcore/health", headers={"Cookie": self.cookie})
        try:
            with urllib.request.urlopen(req, timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    async def _session(self) -> None:
        ws_url = self.base.replace("http", "ws", 1) + "/_stcore/stream"
        async with websockets.connect(
            ws_url,
            subprotocols=["streamlit"],
            max_size=None,
            additional_headers={"Cookie": self.cookie},
        ) as ws:
            # A new session: what the page knew of the old one's widgets and polls is
            # gone; a vote form shown again is a vote lost, clicked again.
            self.fragments.clear()
            self.widgets.clear()
            self.voted.discard(self.step)
            msg = BackMsg()
            msg.rerun_script.query_string = self.query
            msg.rerun_script.page_name = LESSON.steps[self.step - 1].page
            msg.rerun_script.page_script_hash = self.page_hash  # "" at first: the name
            await ws.send(msg.SerializeToString())
            poller = asyncio.create_task(self._poll(ws))
            try:
                while not self.stop.is_set():
                    try:
                        data = await asyncio.wait_for(ws.recv(), 0.5)
                    except TimeoutError:
                        continue
                    await self._handle(ws, data)
            finally:
                poller.cancel()

    async def _poll(self, ws) -> None:  # noqa: ANN001
        """The browser's side of ``st.fragment(run_every=...)``: a rerun request per interval."""
        try:
            while True:
                await asyncio.sleep(1.0)
                for fid in list(self.fragments):
                    await ws.send(self._rerun(fid))
        except ConnectionClosed:
            return

    async def _handle(self, ws, data: bytes) -> None:  # noqa: ANN001
        fm = ForwardMsg()
        fm.ParseFromString(data)
        kind = fm.WhichOneof("type")
        now = time.monotonic()
        if kind == "new_session":
            self.page_hash = fm.new_session.page_script_hash
            self.elements = []
        elif kind == "navigation" and fm.navigation.page_script_hash:
            # The page the run resolved, as the browser keeps it: a run asked by page
            # name (the first one, and the first after a reconnect) starts as the main
            # script's hash, which a later rerun would take for the home page.
            self.page_hash = fm.navigation.page_script_hash
        elif kind == "page_info_changed":
            self.query = fm.page_info_changed.query_string
            step = self._step_of(self.query)
            if step and step != self.step:
                self.step = step
                self.widgets.clear()  # a fresh view of the step's page
                self.moved.setdefault(step, now)
        elif kind == "auto_rerun":
            self.fragments[fm.auto_rerun.fragment_id] = fm.auto_rerun.interval
        elif kind == "stop_auto_rerun":
            self.fragments.clear()
        elif kind == "delta" and fm.delta.WhichOneof("type") == "new_element":
            el = fm.delta.new_element
            self.elements.append(el)
            if el.WhichOneof("type") == "exception":
                self.errors.append(el.exception.message)
        elif kind == "script_finished":
            if fm.script_finished == ForwardMsg.FINISHED_SUCCESSFULLY:
                self.drawn.setdefault(self.step, now)
                if self.lost_at is not None:
                    self.back.append(now - self.lost_at)
                    self.lost_at = None
                await self._maybe_vote(ws)

    async def _maybe_vote(self, ws) -> None:  # noqa: ANN001
        if self.step in self.voted:
            return
        radio = next(
            (e.radio for e in self.elements if e.WhichOneof("type") == "radio"
             and e.radio.label == "Your prediction"),
            None,
        )  # fmt: skip
        button = next(
            (e.button for e in self.elements if e.WhichOneof("type") == "button"
             and e.button.label == "Send my prediction"),
            None,
        )  # fmt: skip
        if radio is None or button is None:
            return
        choices = LESSON.steps[self.step - 1].predict.choices
        r = WidgetState(id=radio.id, string_value=choices[self.k % len(choices)])
        b = WidgetState(id=button.id, trigger_value=True)
        self.voted.add(self.step)
        self.clicks += 1
        self.widgets[radio.id] = r
        await ws.send(self._rerun(widgets=[b]))


def start_server(replicas: int, env: dict[str, str], run: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    cmd = [sys.executable, str(ROOT / "deploy/workshop/serve.py"), "--port", str(port),
           "--address", "127.0.0.1", "--replicas", str(replicas), "--run-dir", str(run), "--replica-header", "--http"]  # fmt: skip
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env={**os.environ, **env}, stdout=subprocess.DEVNULL,
        stderr=(run / "serve.err").open("w"),
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    return proc, wait_up(proc, url, 180, "workshop server")


def wait_up(proc: subprocess.Popen, url: str, seconds: float, what: str) -> str:
    """``url`` once its ``/_stcore/health`` answers; ``proc`` killed and an error
    raised if it has not within ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2):
                return url
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError(f"{what} not up in {seconds:g} s")


def descendants(pid: int) -> list[int]:
    """Every process under ``pid`` (children first found first), read from /proc."""
    found: list[int] = []
    todo = [pid]
    while todo:
        parent = todo.pop()
        for task in Path(f"/proc/{parent}/task").glob("*"):
            try:
                kids = [int(k) for k in (task / "children").read_text().split()]
            except (FileNotFoundError, ProcessLookupError):
                continue
            found += kids
            todo += kids
    return found


def replica_pids(serve_pid: int) -> dict[int, int]:
    """Port -> pid of each replica the workshop server runs (the Streamlit processes
    under it with --server.port, whichever supervisor started them)."""
    found = {}
    for pid in descendants(serve_pid):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_text().split("\0")
        except (FileNotFoundError, ProcessLookupError):
            continue
        if "--server.port" in cmd and "streamlit" in " ".join(cmd):
            found[int(cmd[cmd.index("--server.port") + 1])] = pid
    return found


def replica_of(url: str, cookie: str) -> int:
    """The replica port nginx sends this sticky cookie to."""
    req = urllib.request.Request(f"{url}/_stcore/health", headers={"Cookie": cookie})
    with urllib.request.urlopen(req, timeout=10) as r:
        return int(r.headers["X-Resviz-Replica"].split(",")[-1].rsplit(":", 1)[1])


def _answers(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


async def kill_later(
    url: str, serve_pid: int, delay: float, people: list[Participant], out: dict
) -> None:
    """SIGKILL the replica that holds participant 0, ``delay`` s from now; then wait
    until serve.py has it answering again on its port."""
    port = await asyncio.to_thread(replica_of, url, people[0].cookie)
    held = [await asyncio.to_thread(replica_of, url, p.cookie) for p in people]
    await asyncio.sleep(delay)
    pid = replica_pids(serve_pid)[port]
    os.kill(pid, signal.SIGKILL)
    killed = time.monotonic()
    out.update(port=port, held=held.count(port), at=killed)
    out["on_it"] = [p.k for p, where in zip(people, held, strict=True) if where == port]
    while time.monotonic() - killed < 180:
        new = replica_pids(serve_pid).get(port)
        if new not in (None, pid) and await asyncio.to_thread(_answers, port):
            out["back_after"] = time.monotonic() - killed
            return
        await asyncio.sleep(0.2)


async def session(
    url: str,
    store: RoomStore,
    n: int,
    steps: int,
    kill: Callable[[list[Participant], dict], Awaitable[None]] | None = None,
) -> dict[str, object]:
    """A room of ``n`` through ``steps`` steps; ``kill(people, out)``, when given, is
    started at the first move (it waits, kills, and records in ``out``: ``at`` the
    kill's time, ``held``/``on_it`` the participants it held, ``back_after``)."""
    room, secret = store.create(LESSON.id, step=1)
    q_steps = [i for i in range(1, steps + 1) if LESSON.steps[i - 1].predict]
    people = []
    for k in range(n):
        m = store.join(room.code, f"p{k}")
        people.append(Participant(url, room.code, m.token, m.seed, k))
    tasks = [asyncio.create_task(p.run(1)) for p in people]
    # Everyone on step 1 and drawn.
    await _until(lambda: all(1 in p.drawn for p in people), 180)
    await asyncio.sleep(2)
    moves: dict[int, float] = {}
    killed: dict = {}
    killer = None
    for step in range(2, steps + 1):
        moves[step] = time.monotonic()
        store.go_to(room.code, secret, step)
        if kill is not None and killer is None:
            killer = asyncio.create_task(kill(people, killed))
        await _until(lambda s=step: all(s in p.drawn for p in people), 120)
        if LESSON.steps[step - 1].predict:
            await _until(lambda s=step: len(store.votes(room.code, s, 1)) >= n, 60)
            store.set_phase(room.code, secret, "revealed")
            await _until(lambda s=step: len(store.measures(room.code, s)) >= n, 120)
        await asyncio.sleep(1.5)
    if killer is not None:
        await killer
    for p in people:
        p.stop.set()
    await asyncio.gather(*tasks, return_exceptions=True)
    moved = [p.moved[s] - moves[s] for p in people for s in moves if s in p.moved]
    after = [s for s in moves if "at" in killed and moves[s] > killed["at"]]
    moved_after = [p.moved[s] - moves[s] for p in people for s in after if s in p.moved]
    drawn = [p.drawn[s] - moves[s] for p in people for s in moves if s in p.drawn]
    sent = sum(p.clicks for p in people)
    stored = sum(len(store.votes(room.code, s, 1)) for s in q_steps)
    measured = sum(len(store.measures(room.code, s)) for s in q_steps)
    # Which participant's vote is missing at which step (and whether it never clicked).
    missing = []
    for s in q_steps:
        have = store.votes(room.code, s, 1)
        missing += [(p.k, s, s in p.voted) for p in people if p.token not in have]
    return {
        "moved": moved,
        "drawn": drawn,
        "expected": n * (steps - 1),
        "sent": sent,
        "stored": stored,
        "measured": measured,
        "asked": n * len(q_steps),
        "errors": [e for p in people for e in p.errors],
        "kill": killed,
        "back": [b for p in people for b in p.back],
        "missing": missing,
        "moved_after": moved_after,
        "moves_after": len(after),
    }


async def _until(cond, timeout: float) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            return
        await asyncio.sleep(0.1)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--participants", type=int, default=30)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--replicas", type=int, default=2)
    ap.add_argument("--stores", nargs="+", default=["sqlite", "redis"])
    ap.add_argument(
        "--kill-at",
        type=float,
        metavar="SECONDS",
        help="SIGKILL the replica of participant 0 this long after the first move",
    )
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="room-bench-"))
    rows = []
    for kind in args.stores:
        redis = None
        if kind == "redis":
            redis = RedisServer(tmp)
            env = {"REDIS_URL": redis.url}
            store: RoomStore = RedisStore(redis.url)
        else:
            db = tmp / "rooms.sqlite3"
            env = {"RESVIZ_ROOM_DB": str(db)}
            store = SQLiteStore(db)
        run = tmp / kind
        run.mkdir()
        proc, url = start_server(args.replicas, {**env, "MALLOC_ARENA_MAX": "2"}, run)
        try:
            kill = None
            if args.kill_at is not None:

                async def kill(people: list[Participant], out: dict, url=url, pid=proc.pid) -> None:  # noqa: ANN001
                    await kill_later(url, pid, args.kill_at, people, out)

            out = asyncio.run(session(url, store, args.participants, args.steps, kill))
        finally:
            proc.terminate()
            proc.wait(timeout=30)
            if redis:
                redis.stop()
        rows.append((kind, out))
    n, s = args.participants, args.steps
    print(f"{n} participants, {s} steps ({s - 1} moves), {args.replicas} replicas behind nginx")
    if args.kill_at is not None:
        print(f"one replica SIGKILLed {args.kill_at:g} s after the first move")
    print("| store | moves seen | follow p50 | p95 | max | drawn p50 | p95 | votes sent / stored "
          "| measured answers | errors |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    for kind, o in rows:
        m, d = o["moved"], o["drawn"]
        print(
            f"| {kind} | {len(m)}/{o['expected']} | {pct(m, 0.5):.2f} s | {pct(m, 0.95):.2f} s "
            f"| {max(m):.2f} s | {pct(d, 0.5):.2f} s | {pct(d, 0.95):.2f} s "
            f"| {o['sent']} / {o['stored']} of {o['asked']} | {o['measured']} of {o['asked']} "
            f"| {len(o['errors'])} |"
        )
        for e in o["errors"][:3]:
            print("   error:", e[:200])
    for kind, o in rows:
        for k, step, clicked in o["missing"]:
            on = " (on the killed replica)" if k in o["kill"].get("on_it", []) else ""
            said = "clicked" if clicked else "never clicked"
            print(f"   {kind}: participant {k}{on} has no vote at step {step} ({said})")
    if args.kill_at is None:
        return
    print()
    print("| store | participants on the killed replica | reconnected | back p50 | p95 | max "
          "| replica answering again after | follow p95, moves after the kill |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for kind, o in rows:
        k, b = o["kill"], o["back"]
        again = f"{k['back_after']:.2f} s" if "back_after" in k else "never"
        spread = (
            f"{pct(b, 0.5):.2f} s | {pct(b, 0.95):.2f} s | {max(b):.2f} s" if b else "- | - | -"
        )
        ma = o["moved_after"]
        later = f"{pct(ma, 0.95):.2f} s ({o['moves_after']} moves)" if ma else "-"
        print(f"| {kind} | {k.get('held', 0)} of {n} | {len(b)} | {spread} | {again} | {later} |")


if __name__ == "__main__":
    main()
