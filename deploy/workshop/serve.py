"""A workshop server: N Streamlit processes behind nginx, one URL for the room.

All sessions of one Streamlit process share one Python interpreter, so a single
process runs every page script on one core however many the machine has. This
starts ``--replicas`` processes (default: one per core) on loopback ports and nginx
in front of them on ``--port``, with websocket upgrade and sticky sessions: nginx
gives each browser a ``resviz_replica`` cookie on its first request and hashes
every later request (the websocket included) by it, so a session stays on the
process that holds it. Replicas share nothing (runs and caches are per process),
so they need nothing more. ``make workshop`` runs this; stop it with Ctrl-C.

Usage: python deploy/workshop/serve.py [--port 8500] [--replicas N] [--address 0.0.0.0]
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STOP_GRACE = 1.0  # seconds the children get to exit after a SIGTERM, then a kill
# (Streamlit alone takes 1.6-2.5 s to shut down gracefully here, idle; a replica holds
# no state worth the wait: its sessions end with it either way)

NGINX_CONF = """\
worker_processes 1;
pid {run}/nginx.pid;
error_log {run}/nginx-error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log {run}/nginx-access.log;
    client_body_temp_path {run}/client_body;
    proxy_temp_path {run}/proxy;
    fastcgi_temp_path {run}/fastcgi;
    uwsgi_temp_path {run}/uwsgi;
    scgi_temp_path {run}/scgi;

    map $http_upgrade $connection_upgrade {{ default upgrade; "" close; }}
    # Sticky sessions: the cookie if the browser has one, else this request's id,
    # which becomes the cookie (set below only when it was missing).
    map $cookie_resviz_replica $resviz_key {{ "" $request_id; default $cookie_resviz_replica; }}
    map $cookie_resviz_replica $resviz_set_cookie {{
        "" "resviz_replica=$request_id; Path=/; HttpOnly; SameSite=Lax";
        default "";
    }}

    upstream resviz {{
        hash $resviz_key consistent;
{servers}
    }}

    server {{
        listen {address}:{port};
        location / {{
            proxy_pass http://resviz;
            proxy_http_version 1.1;
            proxy_set_header Upgrade $http_upgrade;
            proxy_set_header Connection $connection_upgrade;
            proxy_set_header Host $host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_read_timeout 1d;
            proxy_send_timeout 1d;
            proxy_buffering off;
            add_header Set-Cookie $resviz_set_cookie always;
            add_header X-Resviz-Replica $upstream_addr always;
        }}
    }}
}}
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def nginx_binary() -> str:
    found = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else "")
    if not found:
        sys.exit("nginx is not installed: run `make workshop` (it installs Debian's nginx) first.")
    return found


def write_config(run: Path, address: str, port: int, backends: list[int]) -> Path:
    for sub in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (run / sub).mkdir(parents=True, exist_ok=True)
    servers = "\n".join(f"        server 127.0.0.1:{p} max_fails=0;" for p in backends)
    conf = run / "nginx.conf"
    conf.write_text(NGINX_CONF.format(run=run, servers=servers, address=address, port=port))
    return conf


def wait_healthy(url: str, proc: subprocess.Popen, deadline: float) -> None:
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{url}: process exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"{url} not healthy in time")


def check_room_store() -> bool:
    """Open the workshop rooms' store once, before any replica starts, so a store that
    cannot be written (a read-only folder, a Redis that refuses the password) is said in
    this server's own log, with its path and cause, not first found by a participant.
    The server still starts: every page but the room works without it."""
    import logging

    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from ui.room.store import StoreUnavailable, open_store

    logging.basicConfig(format="%(message)s", stream=sys.stderr)
    try:
        open_store()
    except StoreUnavailable:  # open_store logged the path and the cause
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, default=8500, help="the room's port (nginx)")
    ap.add_argument("--address", default="0.0.0.0", help="nginx listen address")
    # Default: $REPLICAS (the container's setting), else the CPUs this process may use.
    replicas = os.environ.get("REPLICAS") or len(os.sched_getaffinity(0)) or 1
    ap.add_argument("--replicas", type=int, default=int(replicas))
    ap.add_argument("--run-dir", default=str(ROOT / "artifacts" / "workshop"))
    args = ap.parse_args(argv)
    if args.replicas < 1:
        ap.error("--replicas must be at least 1")

    run = Path(args.run_dir).resolve()
    run.mkdir(parents=True, exist_ok=True)
    check_room_store()
    backends = [free_port() for _ in range(args.replicas)]
    # One cookie secret for every replica, so a cookie one signs another accepts.
    env = {
        **os.environ,
        "MALLOC_ARENA_MAX": os.environ.get("MALLOC_ARENA_MAX", "2"),
        "STREAMLIT_SERVER_COOKIE_SECRET": secrets.token_hex(32),
    }
    procs: list[subprocess.Popen] = []

    def stop(*_: object) -> None:
        # Every child at once, then a shared grace of STOP_GRACE s before a kill, so
        # the whole server is gone within 2 s of a SIGTERM (tests/install/test_deploy.py).
        for p in procs:
            if p.poll() is None:
                p.terminate()
        deadline = time.monotonic() + STOP_GRACE
        for p in procs:
            try:
                p.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    signal.signal(signal.SIGTERM, lambda *_: (stop(), sys.exit(0)))
    try:

        def start(port: int) -> subprocess.Popen:
            log = (run / f"replica-{port}.log").open("w")
            cmd = [
                sys.executable, "-m", "streamlit", "run", str(ROOT / "streamlit_app.py"),
                "--server.port", str(port), "--server.address", "127.0.0.1",
                "--server.headless", "true", "--browser.gatherUsageStats", "false",
            ]  # fmt: skip
            return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)

        procs.extend(start(port) for port in backends)
        deadline = time.monotonic() + 120
        for i in range(len(backends)):
            # A free port can be taken by another program between free_port() and the
            # replica's bind ("Port N is not available"): start that replica again on
            # another port, a few times, instead of failing the whole server.
            for attempt in range(3):
                try:
                    wait_healthy(f"http://127.0.0.1:{backends[i]}", procs[i], deadline)
                    break
                except RuntimeError:
                    said = (run / f"replica-{backends[i]}.log").read_text(errors="replace")
                    if attempt == 2 or "is not available" not in said:
                        raise
                    backends[i] = free_port()
                    procs[i] = start(backends[i])
        conf = write_config(run, args.address, args.port, backends)
        # -e: the error log from the start in the run folder (not /var/log/nginx, which
        # a non-root user cannot open).
        nginx = [nginx_binary(), "-p", str(run), "-e", str(run / "nginx-error.log")]
        nginx += ["-c", str(conf), "-g", "daemon off;"]
        procs.append(subprocess.Popen(nginx, stderr=(run / "nginx.log").open("w")))
        host = "localhost" if args.address in ("0.0.0.0", "127.0.0.1") else args.address
        print(
            f"resviz workshop server: http://{host}:{args.port} "
            f"({args.replicas} replicas on ports {', '.join(map(str, backends))}); Ctrl-C stops",
            flush=True,
        )
        while all(p.poll() is None for p in procs):
            time.sleep(1)
        failed = [p.args[0] for p in procs if p.poll() is not None]
        print(f"stopping: {failed} exited", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        stop()


if __name__ == "__main__":
    sys.exit(main())
