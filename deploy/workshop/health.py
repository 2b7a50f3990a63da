"""The workshop replicas' health probe: a program supervisord runs beside them
(deploy/workshop/serve.py writes it into ``supervisord.conf`` as ``[program:health]``).

supervisord restarts a process that exits; it cannot see one that is alive and hung
(stopped by SIGSTOP, its event loop blocked), whose browsers wait on a silent
websocket. superlance's ``httpok``, the usual add-on, cannot tell a replica that is still
starting from a hung one (it probes whatever supervisord calls RUNNING, which only means
up for ``startsecs``), acts on one failed request, and runs on supervisord's TICK_5 at
the finest (docs/deploy.md, "Supervision", has the measurements). So this part is ours:
each replica is asked for ``/_stcore/health`` every second (2 s to answer); one that
answered since its start and then not for ``--hung-after`` seconds, or not once in
``--start-grace`` seconds from its start, is stopped and started again through
supervisord's XML-RPC interface (a replica's stop signal is SIGKILL, which a stopped
process cannot leave pending). Its websockets close with it, so its browsers reconnect
to a live replica at once. A script that computes for minutes does not trip it: the
answer comes from Streamlit's event loop, not from a session's script.

A replica that is *busy* is not hung. Under a room the event loop itself falls behind
(each participant's poll is a script run, and every run's messages pass through the
loop, which waits for Python's interpreter lock while sections compute): measured here,
a room of 15 on 2 replicas on a loaded machine kept ``/_stcore/health`` waiting 7.6 s at
the median, 18 s at p95 (benchmarks/RESULTS.md), and a probe that took that for a hang
killed a replica every 30-40 s, each kill throwing its participants onto the other.
So a replica silent past ``--hung-after`` whose CPU time grew by at least
:data:`BUSY_SHARE` of that silence (it is working, not stopped or deadlocked: a
SIGSTOPped process uses none) gets :data:`BUSY_AFTER_S` before it is restarted.

It also opens the room: nginx (``autostart=false``) is started once every replica has
answered (or the start grace is over), so the first browsers spread over them all, and
the line ``resviz workshop server: URL ...`` is said once nginx answers.

It is a plain program that supervisord runs and restarts, not an event listener: the
finest tick supervisord sends one is 5 s, too coarse for the room's 15 s, so it would
keep its own clock anyway. Its lines go to supervisord's stdout (the terminal), or to
``health.log`` in the run folder where supervisord cannot open that stdout again (a
socket; another user's pipe, as under ``docker run`` as the image's user);
``supervisorctl tail workshop:health`` shows them there.
"""

from __future__ import annotations

import argparse
import configparser
import os
import ssl
import threading
import time
import urllib.request
import xmlrpc.client
from pathlib import Path
from typing import Any

from supervisor.xmlrpc import SupervisorTransport

PROBE_EVERY_S = 1.0  # each replica is asked this often...
PROBE_TIMEOUT_S = 2.0  # ...and given this long to answer
# How often the answers are looked at, each time asking supervisord over its socket,
# which also wakes its loop: it sees a stop signal within this (else up to its poll's
# 1 s), part of the 2 s from SIGTERM to every process gone.
TICK_S = 0.25
# A silent replica that used at least this share of one core since its last answer is
# busy, and gets BUSY_AFTER_S in place of --hung-after (a machine at ten times its cores'
# load still gives a working process more than a twentieth of one).
BUSY_SHARE = 0.05
BUSY_AFTER_S = 60.0
ALIVE = ("STARTING", "RUNNING")  # supervisord's states of a process that has a pid
# Our own servers, on loopback: never through a proxy the environment names.
OPENER = urllib.request.build_opener(
    urllib.request.ProxyHandler({}),
    urllib.request.HTTPSHandler(context=ssl._create_unverified_context()),  # self-signed
)


def say(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} health.py: {message}", flush=True)


def answers(url: str, timeout: float = PROBE_TIMEOUT_S) -> bool:
    """Whether ``url`` answers 200 within ``timeout`` seconds."""
    try:
        with OPENER.open(url, timeout=timeout) as r:
            return bool(r.status == 200)
    except OSError:
        return False


def hung(
    now: float,
    started: float,
    answered: float | None,
    hung_after: float,
    start_grace: float,
    cpu: float = 0.0,
) -> float | None:
    """Seconds a replica started at ``started`` has gone without answering its health
    probe, if that makes it hung (else None); ``answered``: when it last answered since
    that start (None: not yet), then allowed ``hung_after`` seconds of silence, else
    ``start_grace`` from its start. ``cpu``: the CPU seconds it used during the silence;
    at least :data:`BUSY_SHARE` of the silence means busy, allowed :data:`BUSY_AFTER_S`
    (a NaN, a CPU time that could not be read, counts as none)."""
    silent = now - (started if answered is None else answered)
    if answered is None:
        limit = start_grace
    elif cpu >= BUSY_SHARE * silent:
        limit = max(hung_after, BUSY_AFTER_S)
    else:
        limit = hung_after
    return silent if silent > limit else None


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds process ``pid`` has used (Linux ``/proc``); NaN
    where it cannot be read."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")


class Probe(threading.Thread):
    """Asks one replica's port for /_stcore/health every :data:`PROBE_EVERY_S` while a
    process runs there (``pid``, set by the main loop) and keeps when it last answered
    (a daemon thread: it ends with this program)."""

    def __init__(self, port: int) -> None:
        super().__init__(name=f"probe-{port}", daemon=True)
        self.url = f"http://127.0.0.1:{port}/_stcore/health"
        self.pid = 0  # the replica's process now (0: none)
        self.answered: tuple[int, float] | None = None  # (pid, when)

    def last_answer(self, pid: int) -> float | None:
        """When process ``pid`` last answered (None: not since it started)."""
        seen = self.answered
        return seen[1] if seen is not None and seen[0] == pid else None

    def run(self) -> None:
        while True:
            pid = self.pid
            if pid and answers(self.url):
                self.answered = (pid, time.monotonic())
            time.sleep(PROBE_EVERY_S)


def control(conf: Path) -> tuple[str, str, str]:
    """supervisord's socket URL, user name and password, as ``conf``'s
    ``[supervisorctl]`` section names them (what supervisorctl itself reads)."""
    parser = configparser.ConfigParser(inline_comment_prefixes=(";", "#"))
    parser.read(conf)
    ctl = parser["supervisorctl"]
    return ctl["serverurl"], ctl.get("username", ""), ctl.get("password", "")


def connect(conf: Path) -> Any:
    """supervisord's XML-RPC interface (its ``supervisor`` namespace) over its socket."""
    url, user, password = control(conf)
    transport = SupervisorTransport(user, password, url)
    return xmlrpc.client.ServerProxy("http://127.0.0.1", transport=transport).supervisor


def call(what: str, method: Any, *args: object) -> bool:
    """``method(*args)`` on supervisord; a fault (the process moved on meanwhile) or a
    lost connection (supervisord stopping) is said, and False."""
    try:
        method(*args)
    except (OSError, xmlrpc.client.Error) as exc:
        say(f"{what}: {exc}")
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--conf", type=Path, required=True, help="supervisord.conf")
    ap.add_argument("--ports", required=True, help="the replicas' ports, comma-separated")
    ap.add_argument("--front", required=True, help="nginx's URL, asked on loopback")
    ap.add_argument("--shown", required=True, help="the room's URL, as said")
    ap.add_argument("--hung-after", type=float, required=True, metavar="SECONDS")
    ap.add_argument("--start-grace", type=float, required=True, metavar="SECONDS")
    args = ap.parse_args(argv)
    ports = [int(p) for p in args.ports.split(",")]
    probes = {f"replica-{port}": Probe(port) for port in ports}
    for probe in probes.values():
        probe.start()
    supervisor = connect(args.conf)
    begun = time.monotonic()
    seen: dict[str, tuple[int, float]] = {}  # name -> (pid, when first seen here)
    restarting: set[str] = set()  # stopped here, to be started again
    used: dict[str, tuple[int, float | None, float]] = {}  # name -> (pid, answer, CPU s then)
    opened = announced = False
    while True:
        time.sleep(TICK_S)
        try:
            infos: dict[str, dict[str, Any]] = {
                i["name"]: i for i in supervisor.getAllProcessInfo()
            }
            names = {name: f"{i['group']}:{name}" for name, i in infos.items()}
        except (OSError, xmlrpc.client.Error):
            continue  # supervisord is starting or stopping
        now = time.monotonic()
        for name, probe in probes.items():
            state = infos.get(name, {}).get("statename")
            if name in restarting:  # stopped here: started again until it runs
                if state == "STOPPED":
                    call(f"starting {name}", supervisor.startProcess, names[name], False)
                elif state in ALIVE:
                    restarting.discard(name)
            probe.pid = pid = infos[name]["pid"] if state in ALIVE else 0
            if not pid:
                continue
            if seen.get(name, (0, 0.0))[0] != pid:
                seen[name] = (pid, now)
            last = probe.last_answer(pid)
            if last is not None and used.get(name, (0, None, 0.0))[:2] != (pid, last):
                used[name] = (pid, last, cpu_seconds(pid))  # its CPU time at that answer
            # The CPU time is read only for a replica silent past --hung-after.
            late = last is not None and now - last > args.hung_after
            cpu = cpu_seconds(pid) - used[name][2] if late else 0.0
            silent = hung(now, seen[name][1], last, args.hung_after, args.start_grace, cpu)
            if silent is None:
                continue
            if probe.last_answer(pid) is None:
                said = f"has not answered its health probe once in {silent:.0f} s"
            else:
                said = f"has not answered its health probe for {silent:.0f} s"
            say(f"{name} (pid {pid}) {said}; restarting it")
            if call(f"stopping {name}", supervisor.stopProcess, names[name], True):
                restarting.add(name)
                call(f"starting {name}", supervisor.startProcess, names[name], False)
            seen.pop(name, None)
        nginx = infos.get("nginx", {})
        if not opened and nginx.get("start"):  # this program was restarted: it is open
            opened = announced = True
        if not opened:
            waiting = [n for n, p in probes.items() if p.last_answer(p.pid) is None]
            if waiting and now - begun <= args.start_grace:
                continue
            if waiting:
                say(f"{', '.join(waiting)} not answering after {args.start_grace:.0f} s; opening")
            # Once: a start that fails leaves nginx to supervisord's own retries.
            call("starting nginx", supervisor.startProcess, names["nginx"], False)
            opened = True
        elif not announced and answers(f"{args.front}/_stcore/health", timeout=0.5):
            announced = True
            print(
                f"resviz workshop server: {args.shown} ({len(ports)} replicas on ports "
                f"{', '.join(map(str, ports))}); Ctrl-C stops",
                flush=True,
            )


if __name__ == "__main__":
    raise SystemExit(main())
