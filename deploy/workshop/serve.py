"""A workshop server: N Streamlit processes behind nginx, one URL for the room.

All sessions of one Streamlit process share one Python interpreter, so a single
process runs every page script on one core however many the machine has. This
starts ``--replicas`` processes (default: one per core) on loopback ports and nginx
in front of them on ``--port``, with websocket upgrade and sticky sessions: nginx
gives each browser a ``resviz_replica`` cookie on its first request and hashes
every later request (the websocket included) by it, so a session stays on the
process that holds it. Replicas share nothing (runs and caches are per process),
so they need nothing more. ``make workshop`` runs this; stop it with Ctrl-C.

It also supervises them: a replica that exits (a crash, an out-of-memory kill) is
started again on the same port, so nginx's upstream and the sticky hash stay valid,
after 0.5 s, doubling on each quick failure up to 30 s (back to 0.5 s once it has run
60 s); nginx is restarted the same way. Meanwhile nginx stops sending new connections
to the dead replica and a browser that reconnects lands on a live one (its session
starts afresh there: the room is in the store, the URL says the step). Each restart is
said on stderr. A replica that stops answering its health probe (alive, hung) is
killed after 10 s, so restarted the same way. SIGTERM or Ctrl-C stops everything within
2 s (docs/deploy.md). Its
logs (each replica's, nginx's) are rotated past 10 MB, one older copy kept.

It speaks HTTPS: with the instructor's certificate (``--cert``, ``--key``), else one it
makes with openssl at the first start and keeps in the run folder (self-signed: each
browser warns once). Every cookie is then ``Secure``, and plain HTTP to the port is
sent to HTTPS. ``--http`` serves plain HTTP, asked for by name: behind a proxy that
speaks TLS to the browsers (compose's front), or on a network you trust. The access
log keeps no query string, where a member's token travels.

Model folders on the Pretrained page are off (the shipped models only) unless
``--model-folders`` names the folders participants may load from.

Usage: python deploy/workshop/serve.py [--port 8500] [--replicas N] [--address 0.0.0.0]
                                       [--cert FILE --key FILE | --http]
                                       [--model-folders FOLDER[:FOLDER...]]
"""

from __future__ import annotations

import argparse
import ctypes
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Collection, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STOP_GRACE = 1.0  # seconds the children get to exit after a SIGTERM, then a kill
# (Streamlit alone takes 1.6-2.5 s to shut down gracefully here, idle; a replica holds
# no state worth the wait: its sessions end with it either way)
FIRST_DELAY = 0.5  # seconds before restarting a child that exited...
MAX_DELAY = 30.0  # ...doubling on each quick failure up to this...
STABLE_AFTER = 60.0  # ...and back to FIRST_DELAY once it had run this long
TICK = 0.2  # seconds between two looks at the children
# A hung replica (alive, not answering: stopped, or its event loop blocked) is killed
# and so restarted like a crash, which sends its browsers to a live replica. Each replica
# is asked for /_stcore/health every PROBE_EVERY_S, each ask given PROBE_TIMEOUT_S; one
# that answered since its start and then not for HUNG_AFTER_S, or never in
# START_GRACE_S, is killed. A script that computes for minutes does not hang it: the
# health answer comes from Streamlit's event loop, not from a session's script thread.
PROBE_EVERY_S = 1.0
PROBE_TIMEOUT_S = 2.0
# 6 s: a hung replica's browsers are back in the room within 15 s of the hang (the probe
# needs up to PROBE_EVERY_S more to notice, a browser about 2 s to reconnect).
HUNG_AFTER_S = 6.0
START_GRACE_S = 120.0

# Failover: a replica that refuses the connection (dead, or restarting) or answers 502
# or 503 (not ready) is marked down for 5 s after one failure, and the request, the
# websocket's upgrade included, goes to the next server of the hash ring; a 404 goes
# there too without marking anything (a session that moved while its replica was down
# asks for its images and downloads, kept by the process that holds it, through the
# cookie's replica once that one is back).
NGINX_CONF = """\
worker_processes 1;
pid {run}/nginx.pid;
error_log {run}/nginx-error.log warn;
events {{ worker_connections 4096; }}
http {{
    server_tokens off;
    # No query string in the log: a participant's member token and a room's code travel
    # there; the path, the status and the size are enough to follow a problem.
    log_format resviz '$remote_addr [$time_local] "$request_method $uri" $status '
                      '$body_bytes_sent $request_time';
    access_log {run}/nginx-access.log resviz;
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
        "" "resviz_replica=$request_id; Path=/; HttpOnly; SameSite=Lax{secure}";
        default "";
    }}

    upstream resviz {{
        hash $resviz_key consistent;
{servers}
    }}

    server {{
        listen {address}:{port}{tls};
{tls_conf}{real_ip}        location / {{
            proxy_pass http://resviz;
            proxy_http_version 1.1;
            proxy_set_header Upgrade $http_upgrade;
            proxy_set_header Connection $connection_upgrade;
            proxy_set_header Host $host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            # The client's address for the app's join limit (ui/room/view.client_address),
            # replacing whatever a client sent under that name.
            proxy_set_header X-Real-IP $remote_addr;
            proxy_connect_timeout 2s;
            proxy_next_upstream error timeout http_502 http_503 http_404;
            proxy_next_upstream_tries 3;
            proxy_read_timeout 1d;
            proxy_send_timeout 1d;
            proxy_buffering off;
            add_header Set-Cookie $resviz_set_cookie always;
{cookie_flags}{replica_header}        }}
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


# TLS: the instructor's certificate, or one made at the first start (make_certificate).
# A browser that speaks plain HTTP to the port is sent to HTTPS (nginx's 497).
TLS_CONF = """\
        ssl_certificate {cert};
        ssl_certificate_key {key};
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_session_cache shared:resviz:1m;
        error_page 497 =301 https://$host:$server_port$request_uri;
"""


def write_config(
    run: Path,
    address: str,
    port: int,
    backends: list[int],
    replica_header: bool = False,
    tls: tuple[Path, Path] | None = None,
    real_ip_from: tuple[str, ...] = (),
) -> Path:
    """nginx's configuration in ``run``: HTTPS with ``tls`` (certificate, key), every
    cookie then ``Secure``; plain HTTP without."""
    for sub in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (run / sub).mkdir(parents=True, exist_ok=True)
    servers = "\n".join(
        f"        server 127.0.0.1:{p} max_fails=1 fail_timeout=5s;" for p in backends
    )
    conf = run / "nginx.conf"
    # Which replica answered: for tests and benchmarks only (--replica-header), never
    # sent to a stranger by default.
    header = "            add_header X-Resviz-Replica $upstream_addr always;\n"
    conf.write_text(
        NGINX_CONF.format(
            run=run,
            servers=servers,
            address=address,
            port=port,
            replica_header=header if replica_header else "",
            tls=" ssl" if tls else "",
            tls_conf=TLS_CONF.format(cert=tls[0], key=tls[1]) if tls else "",
            # Behind a proxy (an Ingress, compose's front): the client's address from
            # its X-Forwarded-For, trusted from those addresses only.
            real_ip="".join(f"        set_real_ip_from {c};\n" for c in real_ip_from)
            + (
                "        real_ip_header X-Forwarded-For;\n        real_ip_recursive on;\n"
                if real_ip_from
                else ""
            ),
            secure="; Secure" if tls else "",
            # Streamlit's own cookies (its XSRF token) too, once the browser speaks TLS.
            cookie_flags="            proxy_cookie_flags ~ secure;\n" if tls else "",
        )
    )
    return conf


def local_names(address: str) -> list[str]:
    """The names a participant's browser may reach this machine by: localhost, its
    host name, the listen address, and the address of its route out (no packet sent)."""
    names = {"DNS:localhost", "IP:127.0.0.1", "IP:::1", f"DNS:{socket.gethostname()}"}
    ips = [] if address in ("0.0.0.0", "::") else [address]
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))  # TEST-NET-1: nothing is sent by a UDP connect
            ips.append(s.getsockname()[0])
    except OSError:
        pass
    for ip in ips:
        try:
            socket.inet_pton(socket.AF_INET6 if ":" in ip else socket.AF_INET, ip)
            names.add(f"IP:{ip}")
        except OSError:
            names.add(f"DNS:{ip}")
    return sorted(names)


def make_certificate(folder: Path, address: str) -> tuple[Path, Path]:
    """A self-signed certificate and its key in ``folder``, made with openssl at the
    first start and kept (a browser told once to trust it keeps trusting it); the key
    is readable by its owner only."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    if cert.is_file() and key.is_file():
        return cert, key
    openssl = shutil.which("openssl")
    if openssl is None:
        sys.exit(
            "openssl is not installed, and the workshop server makes its certificate with "
            "it: install openssl, or give your own with --cert and --key (or --http for "
            "plain HTTP on a network you trust)."
        )
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
    cmd = [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
           "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "397",
           "-subj", "/CN=resviz workshop",
           "-addext", "subjectAltName=" + ",".join(local_names(address))]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"openssl could not make the certificate: {done.stderr.strip()[-500:]}")
    key.chmod(0o600)
    return cert, key


def wait_healthy(url: str, proc: subprocess.Popen, deadline: float) -> None:
    # Our own server, by its loopback address: its certificate may be self-signed.
    context = ssl._create_unverified_context() if url.startswith("https:") else None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{url}: process exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2, context=context) as r:
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
    except Exception as exc:  # noqa: BLE001 - any other fault is said, and the server starts
        logging.getLogger(__name__).error(
            "workshop rooms: the store could not be checked: %s: %s", type(exc).__name__, exc
        )
        return False
    return True


def replica_env(base: Mapping[str, str], model_folders: str) -> dict[str, str]:
    """The replicas' environment: one cookie secret for every replica (a cookie one
    signs, another accepts), and the Pretrained page's model folders off unless the
    instructor named the folders they may come from (``--model-folders``): on a
    shared server, a path typed by a stranger reads nothing else of the disk, and no
    hub name is downloaded."""
    roots = os.pathsep.join(r for r in model_folders.split(os.pathsep) if r.strip())
    return {
        **base,
        "MALLOC_ARENA_MAX": base.get("MALLOC_ARENA_MAX", "2"),
        "STREAMLIT_SERVER_COOKIE_SECRET": secrets.token_hex(32),
        "RESVIZ_MODEL_FOLDERS": "1" if roots else "0",
        "RESVIZ_MODEL_ROOTS": roots,
        # The replicas listen on loopback, reached by nginx alone: its X-Real-IP header
        # is the client's address (the room's join limit per address).
        "RESVIZ_CLIENT_HEADER": "X-Real-IP",
    }


LOG_MAX_BYTES = 10 * 2**20  # a log past this is rotated...
ROTATE_EVERY_S = 30.0  # ...checked this often; one older copy is kept (NAME.1)


def rotate_logs(run: Path, max_bytes: int = LOG_MAX_BYTES) -> list[Path]:
    """Rotate every log in ``run`` (the replicas', nginx's) past ``max_bytes``: its text
    is copied to ``NAME.1`` (replacing the older copy) and the log emptied in place.
    The writers (the replicas' stdout, nginx) hold the file open in append mode, so
    they write on at its new end; no one need reopen it. Returns the logs rotated."""
    done = []
    for log in sorted(run.glob("*.log")):
        try:
            if log.stat().st_size <= max_bytes:
                continue
            shutil.copyfile(log, log.with_name(log.name + ".1"))
            with log.open("r+b") as f:
                f.truncate(0)
        except OSError as exc:  # a log that cannot be rotated is said, and left
            say(f"could not rotate {log.name}: {exc}")
            continue
        done.append(log)
    return done


def restart_delay(previous: float, uptime: float) -> float:
    """Seconds to wait before starting again a child that exited after ``uptime``
    seconds, ``previous`` being the wait before its last start (0 for none)."""
    if previous <= 0 or uptime >= STABLE_AFTER:
        return FIRST_DELAY
    return min(previous * 2, MAX_DELAY)


def how_it_ended(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit status {returncode}"


def say(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} serve.py: {message}", file=sys.stderr, flush=True)


def hung(now: float, started: float, answered: float | None) -> float | None:
    """Seconds a running replica started at ``started`` has gone without answering its
    health probe, if that makes it hung (else None); ``answered``: when it last
    answered since that start (None: not yet)."""
    silent = now - (started if answered is None else answered)
    limit = START_GRACE_S if answered is None else HUNG_AFTER_S
    return silent if silent > limit else None


class Probe(threading.Thread):
    """Asks one replica's port for /_stcore/health every :data:`PROBE_EVERY_S` and keeps
    when its process last answered (a daemon thread: it ends with serve.py)."""

    def __init__(self, child: Child, port: int) -> None:
        super().__init__(name=f"probe-{port}", daemon=True)
        self.child, self.url = child, f"http://127.0.0.1:{port}/_stcore/health"
        self.answered: tuple[int, float] | None = None  # (pid, when)

    def last_answer(self, pid: int) -> float | None:
        """When process ``pid`` last answered (None: not since it started)."""
        seen = self.answered
        return seen[1] if seen is not None and seen[0] == pid else None

    def run(self) -> None:
        while not Child.stopping:
            proc = self.child.proc
            if proc is not None and proc.poll() is None:
                try:
                    with urllib.request.urlopen(self.url, timeout=PROBE_TIMEOUT_S) as r:
                        if r.status == 200:
                            self.answered = (proc.pid, time.monotonic())
                except OSError:
                    pass
            time.sleep(PROBE_EVERY_S)


def kill_if_hung(child: Child, probe: Probe, now: float, known: Collection[int]) -> None:
    """Kill ``child`` (a replica) when its probe finds it hung (:func:`hung`); the next
    :meth:`Child.check` restarts it, as after a crash."""
    proc = child.proc
    if proc is None or child.restart_at is not None or proc.poll() is not None:
        return
    silent = hung(now, child.started, probe.last_answer(proc.pid))
    if silent is None:
        return
    say(
        f"{child.name} (pid {proc.pid}) has not answered its health probe for "
        f"{silent:.0f} s; killing it"
    )
    child.kill_group(known)  # one SIGKILL to its group; the restart clears what is left


class Stopping(BaseException):
    """SIGTERM or SIGINT arrived: stop every child and exit 0."""


class Child:
    """One supervised process (a replica or nginx) in a process group of its own, so
    that what it leaves behind (nginx's worker outlives a killed master, holding the
    port) goes with it, and a terminal's Ctrl-C reaches only this server, which stops
    the children itself."""

    stopping = False  # a stop signal came
    spawning = False  # a Popen is under way: a stop signal only sets ``stopping``

    def __init__(self, name: str, spawn: Callable[[], subprocess.Popen]) -> None:
        self.name, self.spawn = name, spawn
        self.proc: subprocess.Popen | None = None
        self.started = 0.0
        self.delay = 0.0  # the wait before the last start (0: never restarted)
        self.restart_at: float | None = None
        self.restarts = 0

    def start(self) -> None:
        Child.spawning = True
        try:
            self.proc = self.spawn()
        finally:
            Child.spawning = False
        self.started, self.restart_at = time.monotonic(), None
        if Child.stopping:  # it came during the Popen: this child is known now
            raise Stopping

    @property
    def process(self) -> subprocess.Popen:
        if self.proc is None:
            raise RuntimeError(f"{self.name} was never started")
        return self.proc

    def kill_group(self, known: Collection[int] = (), wait: float = 0.0) -> None:
        """Kill what is left of the child's process group; with ``wait``, up to that
        many seconds until it is gone (reaping strays, but none of ``known``). Only
        while a member is still this process's child (the child itself, or what it
        left behind, inherited as subreaper): a group that is gone may see its number
        reused by another program's group."""
        if self.proc is None:
            return
        deadline = time.monotonic() + wait
        while group_left(self.proc.pid):
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                return
            if time.monotonic() >= deadline:
                return
            time.sleep(0.01)
            reap_strays(known)

    def check(self, now: float, known: Collection[int]) -> None:
        """Restart the child when it has exited and its delay has passed; ``known``:
        the pids of every child, which reaping strays must leave to subprocess."""
        if self.proc is None:
            return
        if self.restart_at is None:
            if self.proc.poll() is None:
                return
            self.delay = restart_delay(self.delay, now - self.started)
            self.restart_at = now + self.delay
            say(
                f"{self.name} (pid {self.proc.pid}) {how_it_ended(self.proc.returncode)} "
                f"after {now - self.started:.1f} s; restarting it in {self.delay:g} s"
            )
        elif now >= self.restart_at:
            # What the child left behind goes first: nginx's worker outlives a killed
            # master and keeps serving on the port until now, which the new one needs.
            self.kill_group(known, wait=1.0)
            self.restarts += 1
            self.start()
            say(f"{self.name} restarted (pid {self.process.pid}, restart {self.restarts})")


def on_stop_signal(*_: object) -> None:
    if Child.stopping:
        return  # already stopping
    Child.stopping = True
    if not Child.spawning:
        raise Stopping


def stop(children: list[Child]) -> None:
    # Every child at once, then a shared grace of STOP_GRACE s before a kill, so the
    # whole server is gone within 2 s of a SIGTERM (tests/install/test_deploy.py).
    procs = [c.proc for c in children if c.proc is not None]
    for p in procs:
        if p.poll() is None:
            p.terminate()
    deadline = time.monotonic() + STOP_GRACE
    for p in procs:
        try:
            p.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    for c in children:
        c.kill_group()  # what is left, and anything a child left behind
    for p in procs:
        p.wait()
    reap_strays(pids(children))


def pids(children: list[Child]) -> set[int]:
    return {c.proc.pid for c in children if c.proc is not None}


def become_subreaper() -> None:
    """Processes orphaned below this one (nginx's worker when its master is killed)
    become this process's children, to be stopped and reaped here: the same under
    ``make workshop`` as in the container, where this is PID 1 and would inherit them
    anyway. Linux only; elsewhere nothing."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass


def own_children() -> list[int]:
    try:
        found = Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").read_text()
    except OSError:
        return []
    return [int(pid) for pid in found.split()]


def group_left(pgid: int) -> bool:
    """Whether a child of this process (exited or not, unreaped) is in that group."""
    for pid in own_children():
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[2]) == pgid:
            return True
    return False


def reap_strays(known: Collection[int]) -> None:
    """Reap exited children this process did not start (orphans it inherited), never
    one of ``known``, whose exit status subprocess reads."""
    for pid in own_children():
        if pid not in known:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, default=8500, help="the room's port (nginx)")
    ap.add_argument("--address", default="0.0.0.0", help="nginx listen address")
    # Default: $REPLICAS (the container's setting), else the CPUs this process may use.
    replicas = os.environ.get("REPLICAS") or len(os.sched_getaffinity(0)) or 1
    ap.add_argument("--replicas", type=int, default=int(replicas))
    ap.add_argument("--run-dir", default=str(ROOT / "artifacts" / "workshop"))
    ap.add_argument(
        "--https",
        action="store_true",
        help="HTTPS (the default, said by name): with a self-signed certificate made at "
        "the first start, or --cert and --key",
    )
    ap.add_argument(
        "--http",
        action="store_true",
        help="plain HTTP (default: HTTPS): behind a proxy that speaks TLS to the browsers "
        "(compose's front), or on a network you trust",
    )
    ap.add_argument(
        "--real-ip-from",
        action="append",
        default=[],
        metavar="CIDR",
        help="behind a proxy at these addresses (repeatable): take the client's address "
        "from its X-Forwarded-For (the room's join limit per address)",
    )
    ap.add_argument("--cert", help="your TLS certificate (PEM; default: one made here)")
    ap.add_argument("--key", help="its private key (PEM)")
    ap.add_argument(
        "--replica-header",
        action="store_true",
        help="say which replica answered in an X-Resviz-Replica header (tests, benchmarks)",
    )
    ap.add_argument(
        "--model-folders",
        default=os.environ.get("RESVIZ_MODEL_ROOTS", ""),
        metavar="FOLDER[:FOLDER...]",
        help="let the Pretrained page load model folders from inside these folders "
        "(default: $RESVIZ_MODEL_ROOTS, else none: the shipped models only)",
    )
    args = ap.parse_args(argv)
    if args.replicas < 1:
        ap.error("--replicas must be at least 1")
    if bool(args.cert) != bool(args.key):
        ap.error("--cert and --key go together")
    if args.http and (args.cert or args.https):
        ap.error("--http serves plain HTTP: leave out --https, --cert and --key")

    run = Path(args.run_dir).resolve()
    run.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, on_stop_signal)
    signal.signal(signal.SIGINT, on_stop_signal)
    become_subreaper()
    children: list[Child] = []
    try:
        check_room_store()
        env = replica_env(os.environ, args.model_folders)

        def replica(port: int) -> Child:
            def spawn() -> subprocess.Popen:
                log = (run / f"replica-{port}.log").open("a")  # a crash's log stays
                log.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} serve.py starts it\n")
                log.flush()
                cmd = [
                    sys.executable, "-m", "streamlit", "run", str(ROOT / "streamlit_app.py"),
                    "--server.port", str(port), "--server.address", "127.0.0.1",
                    "--server.headless", "true", "--browser.gatherUsageStats", "false",
                ]  # fmt: skip
                with log:
                    return subprocess.Popen(
                        cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                        process_group=0,
                    )  # fmt: skip

            return Child(f"replica 127.0.0.1:{port}", spawn)

        backends = [free_port() for _ in range(args.replicas)]
        children.extend(replica(port) for port in backends)
        for c in children:
            c.start()
        deadline = time.monotonic() + 120
        for i in range(len(backends)):
            # A free port can be taken by another program between free_port() and the
            # replica's bind ("Port N is not available"): start that replica again on
            # another port, a few times, instead of failing the whole server.
            for attempt in range(3):
                log = run / f"replica-{backends[i]}.log"
                try:
                    wait_healthy(f"http://127.0.0.1:{backends[i]}", children[i].process, deadline)
                    break
                except RuntimeError:
                    said = log.read_text(errors="replace").rsplit("--- ", 1)[-1]
                    if attempt == 2 or "is not available" not in said:
                        raise
                    backends[i] = free_port()
                    children[i] = replica(backends[i])
                    children[i].start()
        tls = None
        if args.cert:
            tls = (Path(args.cert).resolve(), Path(args.key).resolve())
        elif not args.http:
            tls = make_certificate(run / "tls", args.address)
        conf = write_config(
            run,
            args.address,
            args.port,
            backends,
            args.replica_header,
            tls,
            tuple(args.real_ip_from),
        )
        # -e: the error log from the start in the run folder (not /var/log/nginx, which
        # a non-root user cannot open).
        nginx_cmd = [nginx_binary(), "-p", str(run), "-e", str(run / "nginx-error.log")]
        nginx_cmd += ["-c", str(conf), "-g", "daemon off;"]

        def spawn_nginx() -> subprocess.Popen:
            with (run / "nginx.log").open("a") as log:
                return subprocess.Popen(nginx_cmd, stderr=log, process_group=0)

        nginx = Child("nginx", spawn_nginx)
        children.append(nginx)
        nginx.start()
        host = "localhost" if args.address in ("0.0.0.0", "127.0.0.1") else args.address
        try:  # nginx that cannot start (its port taken, say) fails the server at once
            local = "127.0.0.1" if args.address in ("0.0.0.0", "::") else args.address
            scheme = "http" if tls is None else "https"
            wait_healthy(f"{scheme}://{local}:{args.port}", nginx.process, time.monotonic() + 30)
        except RuntimeError as exc:
            said = (run / "nginx.log").read_text(errors="replace")[-1000:]
            say(f"nginx did not start: {exc}\n{said}")
            return 1
        print(
            f"resviz workshop server: {scheme}://{host}:{args.port} "
            f"({args.replicas} replicas on ports {', '.join(map(str, backends))}); Ctrl-C stops",
            flush=True,
        )
        if tls is not None and not args.cert:
            print(
                f"Its certificate is self-signed ({tls[0]}): each browser warns once; "
                "docs/workshop.md says how to use a real one.",
                flush=True,
            )
        probes = [Probe(children[i], port) for i, port in enumerate(backends)]
        for p in probes:
            p.start()
        next_rotation = 0.0
        while True:
            for p in probes:
                kill_if_hung(p.child, p, time.monotonic(), pids(children))
            for c in children:
                c.check(time.monotonic(), pids(children))
            reap_strays(pids(children))
            if time.monotonic() >= next_rotation:
                rotate_logs(run)
                next_rotation = time.monotonic() + ROTATE_EVERY_S
            time.sleep(TICK)
    except Stopping:
        return 0
    finally:
        stop(children)


if __name__ == "__main__":
    sys.exit(main())
