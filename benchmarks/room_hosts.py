"""A room past one machine: two hosts, one Redis, one nginx in front, then one host lost.

    .venv/bin/python -u benchmarks/room_hosts.py [--participants 100] [--steps 5]
                                                 [--hosts 2] [--replicas 1]
                                                 [--kill-host-at SECONDS]

Each *host* is a workshop server as ``make workshop`` starts it on a machine
(``deploy/workshop/serve.py``: its replicas behind its own nginx), on a port of this
machine; all of them use one redis-server (Debian's, started here). In front of them
runs ``deploy/workshop/front.conf``, the multi-node front of ``compose.yaml``, in a
real nginx, its node names pointed at the hosts' ports and served as plain HTTP on
loopback (the front's TLS is not what is measured). The participants are
``benchmarks/room_load.py``'s: websocket clients speaking Streamlit's protocol through
the front as a browser does, each with its ``resviz_replica`` cookie, which picks the
host at the front and the replica inside it.

``--kill-host-at SECONDS``: that long after the presenter's first move, the host that
holds participant 0 is lost as a machine is: its serve.py and every process under it
(supervisor, nginx, replicas) SIGKILLed at once, and nothing restarts it. Its
participants reconnect through the front to the other host.

Reported as room_load.py reports (follow delays, votes clicked against stored,
measured answers), and for the lost host: the participants it held and their time from
the loss to their page drawn again.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.room_load import (  # noqa: E402
    Participant,
    descendants,
    replica_of,
    replica_pids,
    session,
    start_server,
    wait_up,
)
from benchmarks.server_load import pct  # noqa: E402
from tests.browser.conftest import free_port  # noqa: E402
from tests.roomstores import RedisServer  # noqa: E402
from ui.room.store import RedisStore  # noqa: E402

NGINX = shutil.which("nginx") or next(
    (p for p in ("/usr/sbin/nginx", "/sbin/nginx") if os.access(p, os.X_OK)), None
)


def front_config(hosts: list[str], port: int, folder: Path) -> Path:
    """front.conf with its nodes pointed at ``hosts`` (host:port) and plain HTTP on
    loopback ``port``; the lines it drops are the TLS ones."""
    text = (ROOT / "deploy" / "workshop" / "front.conf").read_text()
    nodes = [f"node{i + 1}:8500" for i in range(2)]
    upstream = "\n".join(f"    server {h} max_fails=1 fail_timeout=5s;" for h in hosts)
    lines = []
    for line in text.splitlines():
        s = line.strip()
        if any(s.startswith(f"server {n} ") for n in nodes):
            if s.startswith(f"server {nodes[0]} "):
                lines.append(upstream)
            continue
        if s.startswith(("ssl_", "error_page 497", "proxy_cookie_flags")):
            continue
        lines.append(line.replace("listen 443 ssl;", f"listen 127.0.0.1:{port};"))
    conf = folder / "front.conf"
    conf.write_text("\n".join(lines) + "\n")
    temp = " ".join(
        f"{t}_temp_path {folder}/{t};" for t in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    main = folder / "nginx.conf"
    main.write_text(
        f"worker_processes 1; pid {folder}/nginx.pid; error_log {folder}/error.log warn;\n"
        "events { worker_connections 4096; }\n"
        f"http {{ access_log off; {temp} include {conf}; }}\n"
    )
    return main


def start_front(hosts: list[str], folder: Path) -> tuple[subprocess.Popen, str]:
    if NGINX is None:
        raise SystemExit("nginx not installed (apt-get install nginx)")
    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    conf = front_config(hosts, port, folder)
    cmd = [NGINX, "-p", str(folder), "-e", str(folder / "error.log"), "-c", str(conf),
           "-g", "daemon off;"]  # fmt: skip
    proc = subprocess.Popen(cmd, stderr=(folder / "nginx.log").open("w"))
    return proc, wait_up(proc, f"http://127.0.0.1:{port}", 30, "the front nginx")


def lose_host(pid: int) -> None:
    """SIGKILL a host's serve.py and everything under it, as a machine lost."""
    under = descendants(pid)
    for p in [pid, *under, *descendants(pid)]:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass


async def lose_later(
    url: str, servers: list[subprocess.Popen], delay: float, people: list[Participant], out: dict
) -> None:
    host_of = {port: i for i, s in enumerate(servers) for port in replica_pids(s.pid)}
    held = [host_of[await asyncio.to_thread(replica_of, url, p.cookie)] for p in people]
    host = held[0]
    await asyncio.sleep(delay)
    lose_host(servers[host].pid)
    out.update(at=time.monotonic(), host=host, held=held.count(host))
    out["on_it"] = [p.k for p, h in zip(people, held, strict=True) if h == host]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--participants", type=int, default=100)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--hosts", type=int, default=2)
    ap.add_argument("--replicas", type=int, default=1, help="replicas per host")
    ap.add_argument("--kill-host-at", type=float, metavar="SECONDS")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="room-hosts-"))
    redis = RedisServer(tmp)
    env = {"REDIS_URL": redis.url, "MALLOC_ARENA_MAX": "2"}
    servers: list[subprocess.Popen] = []
    front = None
    try:
        urls = []
        for i in range(args.hosts):
            run = tmp / f"host{i + 1}"
            run.mkdir()
            proc, url = start_server(args.replicas, env, run)
            servers.append(proc)
            urls.append(url.removeprefix("http://"))
        front, url = start_front(urls, tmp / "front")
        kill = None
        if args.kill_host_at is not None:

            async def kill(people: list[Participant], out: dict) -> None:
                await lose_later(url, servers, args.kill_host_at, people, out)

        store = RedisStore(redis.url)
        out = asyncio.run(session(url, store, args.participants, args.steps, kill))
    finally:
        for proc in servers:
            if proc.poll() is None:
                proc.terminate()
                proc.wait(timeout=30)
        if front is not None:
            front.terminate()
            front.wait(timeout=10)
        redis.stop()
    n, s = args.participants, args.steps
    print(
        f"{n} participants, {s} steps ({s - 1} moves), {args.hosts} hosts of "
        f"{args.replicas} replica(s) behind one front nginx, one Redis"
    )
    m, d, k, b = out["moved"], out["drawn"], out["kill"], out["back"]
    print("| moves seen | follow p50 | p95 | max | drawn p50 | p95 | votes clicked / stored "
          "| measured answers | errors |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    print(
        f"| {len(m)}/{out['expected']} | {pct(m, 0.5):.2f} s | {pct(m, 0.95):.2f} s "
        f"| {max(m):.2f} s | {pct(d, 0.5):.2f} s | {pct(d, 0.95):.2f} s "
        f"| {out['sent']} / {out['stored']} of {out['asked']} "
        f"| {out['measured']} of {out['asked']} | {len(out['errors'])} |"
    )
    for e in out["errors"][:3]:
        print("   error:", e[:200])
    for who, step, clicked in out["missing"]:
        on = " (on the lost host)" if who in k.get("on_it", []) else ""
        print(f"   participant {who}{on} has no vote at step {step} "
              f"({'clicked' if clicked else 'never clicked'})")  # fmt: skip
    if args.kill_host_at is not None:
        spread = f"{pct(b, 0.5):.2f} s, p95 {pct(b, 0.95):.2f} s, max {max(b):.2f} s" if b else "-"
        ma = out["moved_after"]
        later = f"{pct(ma, 0.95):.2f} s over {out['moves_after']} moves" if ma else "-"
        print(
            f"host {k.get('host', 0) + 1} lost {args.kill_host_at:g} s after the first move: "
            f"it held {k.get('held', 0)} of {n}; {len(b)} reconnected, back p50 {spread}; "
            f"follow p95 after the loss {later}"
        )


if __name__ == "__main__":
    main()
