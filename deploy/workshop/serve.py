"""A workshop server: N Streamlit processes behind nginx, one URL for the room.

All sessions of one Streamlit process share one Python interpreter, so a single
process runs every page script on one core however many the machine has. This
starts ``--replicas`` processes (default: one per core) on loopback ports and nginx
in front of them on ``--port``, with websocket upgrade and sticky sessions: nginx
gives each browser a ``resviz_replica`` cookie on its first request and hashes
every later request (the websocket included) by it, so a session stays on the
process that holds it. Replicas share nothing (runs and caches are per process),
so they need nothing more. ``make workshop`` runs this; stop it with Ctrl-C.

This file writes the configuration and hands over to supervisord, a standard process
manager (the ``supervisor`` package, requirements-workshop.txt): it writes nginx's
configuration and ``supervisord.conf`` in the run folder, then becomes ``supervisord
-n`` (exec: the same process, so Ctrl-C and ``docker stop``'s SIGTERM reach it, and in
the container it is PID 1, reaping what it inherits). supervisord starts the replicas
and nginx, restarts one that exits (a crash, an out-of-memory kill) on the same port,
backing off when one keeps failing to start, rotates every log past 10 MB, and stops
everything within 2 s of SIGTERM or Ctrl-C. ``supervisorctl -c RUN/supervisord.conf
status`` shows them. Two small programs it runs are ours, where supervisord cannot do
what the room needs (docs/deploy.md, "Supervision"): ``health.py`` asks each replica's
health endpoint every second and has supervisord restart one that stopped answering
(alive and hung, which supervisord cannot see); it also starts nginx once every replica
answers and says when the room is open. ``start_nginx.py`` clears the worker a killed
nginx master leaves holding the port before a new master starts.

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
import errno
import importlib.util
import os
import random
import re
import secrets
import shlex
import shutil
import socket
import stat
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
# A hung replica (alive, not answering: stopped, or its event loop blocked) is restarted
# by health.py, given these on its command line: one that answered since its start and
# then not for HUNG_AFTER_S, or never in START_GRACE_S, is restarted. 6 s: a hung
# replica's browsers are back in the room within 15 s of the hang (the probe needs up to
# 1 s more to notice, a browser about 2 s to reconnect once its websocket closes).
HUNG_AFTER_S = 6.0
START_GRACE_S = 120.0
# supervisord's settings (docs/deploy.md, "Supervision", says why each).
# A process that exits within STARTSECS of its start has failed to start: supervisord
# waits 1 s, then 2 s, 3 s... (one more each time) before the next try, and gives up
# (FATAL) after STARTRETRIES tries in a row, 1 + 2 + ... + 240 s = 8 h of failing: never
# during a workshop day. One that had run STARTSECS is restarted at once. 10 s: a replica
# answers its health probe 2 to 6 s after its start here, so one that fails at its
# imports or its port backs off.
STARTSECS = {"replica": 10, "nginx": 5, "health": 2}
STARTRETRIES = 240
# Stop: a replica is sent SIGKILL (it holds nothing worth a graceful stop: its sessions
# end either way, the room is in the store; Streamlit's own shutdown takes 1.6 to 2.5 s
# here, and a SIGSTOPped one would not act on SIGTERM at all), nginx SIGTERM (its fast
# shutdown), each to its whole process group; what is left after STOPWAITSECS is killed.
STOPWAITSECS = 1
LOG_MAX = "10MB"  # every log (supervisord's, each replica's, nginx's) rotates past this,
LOG_BACKUPS = 1  # one older copy kept (NAME.1)
# Replica ports are drawn from here up to the kernel's ephemeral range, which no
# outgoing connection or port-0 bind takes in the seconds before the replica binds.
PORTS_FROM = 20000

# Failover: a replica that refuses the connection (dead, or restarting) or answers 502
# or 503 (not ready) is marked down for 5 s after one failure, and the request, the
# websocket's upgrade included, goes to the next server of the hash ring; a 404 goes
# there too without marking anything (a session that moved while its replica was down
# asks for its images and downloads, kept by the process that holds it, through the
# cookie's replica once that one is back).
NGINX_CONF = """\
worker_processes 1;
pid {run}/nginx.pid;
error_log stderr warn;
events {{ worker_connections 4096; }}
http {{
    server_tokens off;
    # No query string in the log: a participant's member token and a room's code travel
    # there; the path, the status and the size are enough to follow a problem.
    log_format resviz '$remote_addr [$time_local] "$request_method $uri" $status '
                      '$body_bytes_sent $request_time';
    # To nginx's stdout (and its errors to stderr): supervisord writes them to
    # nginx-access.log and nginx-error.log in the run folder and rotates them.
    access_log /dev/stdout resviz;
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


def replica_ports(count: int) -> list[int]:
    """``count`` distinct loopback ports free now, drawn at random from
    :data:`PORTS_FROM` up to the kernel's ephemeral range: a port there is taken only by
    a program that asks for it by number, never by an outgoing connection or a port-0
    bind in the seconds before the replica binds it (supervisord would restart a replica
    whose port is taken again and again). Where that range leaves too few, any free
    port."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    ports: list[int] = []
    draw = random.SystemRandom()
    for _ in range(2000 if low - PORTS_FROM > 10 * count else 0):
        port = draw.randrange(PORTS_FROM, low)
        if port not in ports and port_free("127.0.0.1", port):
            ports.append(port)
            if len(ports) == count:
                return ports
    while len(ports) < count:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            if (port := s.getsockname()[1]) not in ports:
                ports.append(port)
    return ports


def port_free(address: str, port: int) -> bool:
    """Whether ``address:port`` can be listened on now (as nginx binds: SO_REUSEADDR)."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    with socket.socket(family) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((address, port))
        except OSError as exc:
            if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                return False
            raise
    return True


def conf_value(value: object) -> str:
    """A value as supervisord's configuration reads it back: ``%`` doubled (its
    expansions), booleans as ``true``/``false``; a value that would be cut (a newline,
    or `` ;`` and `` #``, which start a comment there) is refused."""
    text = str(value).lower() if isinstance(value, bool) else str(value)
    if "\n" in text or re.search(r"\s[;#]", text):
        raise ValueError(f"cannot be written into supervisord.conf: {text!r}")
    return text.replace("%", "%%")


def section(name: str, settings: Mapping[str, object]) -> str:
    lines = [f"[{name}]", *(f"{key}={conf_value(value)}" for key, value in settings.items())]
    return "\n".join(lines) + "\n"


def socket_path(run: Path) -> Path:
    """supervisord's control socket: in the run folder, unless that path is past what a
    Unix socket's name may hold (107 bytes), then in the temporary folder."""
    path = run / "supervisor.sock"
    if len(os.fsencode(path)) < 100:
        return path
    import hashlib

    digest = hashlib.sha256(os.fsencode(run)).hexdigest()[:16]
    return Path(os.environ.get("TMPDIR", "/tmp")) / f"resviz-supervisor-{digest}.sock"


def log_settings(log: Path, channel: str = "stdout") -> dict[str, object]:
    return {
        f"{channel}_logfile": log,
        f"{channel}_logfile_maxbytes": LOG_MAX,
        f"{channel}_logfile_backups": LOG_BACKUPS,
    }


def supervisord_config(
    run: Path,
    ports: Sequence[int],
    nginx: Sequence[str],
    front: str,
    shown: str,
    password: str,
    health_log: str = "/dev/stdout",
) -> str:
    """The text of ``supervisord.conf`` for the run folder ``run``: one program per
    replica (``replica-<port>``), ``nginx`` (the command ``nginx``, started through
    start_nginx.py, and by health.py once every replica answers) and ``health``
    (health.py: probes the replicas at their ports; says when ``front``, nginx's
    loopback URL, answers, naming the room by ``shown``). Every log in ``run``, rotated
    past :data:`LOG_MAX` but health.py's few lines, which go to ``health_log``
    (supervisord's own stdout by default: the terminal; else a file of ``run``)."""
    conf = run / "supervisord.conf"
    sock = socket_path(run)
    python = sys.executable
    # The shared settings of every program: restarted whenever it exits, backing off
    # while it keeps failing to start; stopped with its whole process group.
    common: dict[str, object] = {
        "autorestart": True,
        "startretries": STARTRETRIES,
        "stopasgroup": True,
        "killasgroup": True,
        "stopwaitsecs": STOPWAITSECS,
    }
    parts = [
        "; Written by deploy/workshop/serve.py at each start: edits are lost. Watch it with\n"
        f";   supervisorctl -c {conf_value(conf)} status\n",
        section(
            "supervisord",
            {
                "nodaemon": True,
                # Its own log: each start, exit and stop of a program (also on its
                # stdout, as it runs in the foreground).
                "logfile": run / "supervisord.log",
                "logfile_maxbytes": LOG_MAX,
                "logfile_backups": LOG_BACKUPS,
                "pidfile": run / "supervisord.pid",
                "childlogdir": run,
                "identifier": "resviz-workshop",
            },
        ),
        # Its control socket, for supervisorctl and health.py: the owner's alone, and a
        # password made at each start (this file is readable by its owner alone).
        section(
            "unix_http_server",
            {"file": sock, "chmod": "0700", "username": "resviz", "password": password},
        ),
        section(
            "supervisorctl",
            {"serverurl": f"unix://{sock}", "username": "resviz", "password": password},
        ),
        section(
            "rpcinterface:supervisor",
            {"supervisor.rpcinterface_factory": "supervisor.rpcinterface:make_main_rpcinterface"},
        ),
    ]
    for port in ports:
        cmd = [python, "-m", "streamlit", "run", str(ROOT / "streamlit_app.py"),
               "--server.port", str(port), "--server.address", "127.0.0.1",
               "--server.headless", "true", "--browser.gatherUsageStats", "false"]  # fmt: skip
        parts.append(
            section(
                f"program:replica-{port}",
                {
                    "command": shlex.join(cmd),
                    "directory": ROOT,
                    "priority": 100,
                    "startsecs": STARTSECS["replica"],
                    **common,
                    "stopsignal": "KILL",
                    "redirect_stderr": True,
                    **log_settings(run / f"replica-{port}.log"),
                },
            )
        )
    health = [python, str(HERE / "health.py"), "--conf", str(conf),
              "--ports", ",".join(map(str, ports)), "--front", front, "--shown", shown,
              "--hung-after", f"{HUNG_AFTER_S:g}", "--start-grace", f"{START_GRACE_S:g}"]  # fmt: skip
    parts.append(
        section(
            "program:health",
            {
                "command": shlex.join(health),
                "directory": ROOT,
                "priority": 200,
                "startsecs": STARTSECS["health"],
                **common,
                "stopsignal": "TERM",
                "redirect_stderr": True,
                "stdout_logfile": health_log,
                # A file of the run folder rotates; the terminal or a pipe cannot.
                "stdout_logfile_maxbytes": LOG_MAX if health_log.startswith(str(run)) else 0,
                "stdout_logfile_backups": LOG_BACKUPS,
            },
        )
    )
    start = [python, str(HERE / "start_nginx.py"), str(run / "nginx.pid"), "--", *nginx]
    parts.append(
        section(
            "program:nginx",
            {
                "command": shlex.join(start),
                "priority": 300,
                "autostart": False,  # health.py starts it once every replica answers
                "startsecs": STARTSECS["nginx"],
                **common,
                "stopsignal": "TERM",
                **log_settings(run / "nginx-access.log"),
                **log_settings(run / "nginx-error.log", "stderr"),
            },
        )
    )
    # One group: on SIGTERM supervisord stops a group at a time, waiting until each is
    # gone (up to a second of its poll per group); in one group every program is sent
    # its stop signal at once.
    names = [*(f"replica-{port}" for port in ports), "health", "nginx"]
    parts.append(section("group:workshop", {"programs": ",".join(names)}))
    return "\n".join(parts)


def stdout_reopenable() -> bool:
    """Whether supervisord, as this user, can open this process's stdout again as
    ``/dev/stdout`` for health.py's lines: not where it is a socket (systemd's journal),
    nor a pipe or file of another user's (``docker run`` as the image's user: the
    container's stdout belongs to root), which refuse it."""
    try:
        return not stat.S_ISSOCK(os.fstat(1).st_mode) and os.access("/dev/stdout", os.W_OK)
    except OSError:
        return False


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
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
    if importlib.util.find_spec("supervisor") is None:
        sys.exit(
            "supervisord is not installed here: `make workshop` installs it "
            "(pip install -r requirements-workshop.txt -c constraints.txt)."
        )
    nginx = nginx_binary()
    # nginx that cannot listen fails the server at once, not in supervisord's retries.
    if not port_free(args.address, args.port):
        sys.exit(f"port {args.port} on {args.address} is taken (or needs root): choose another.")

    run = Path(args.run_dir).resolve()
    run.mkdir(parents=True, exist_ok=True)
    check_room_store()
    env = replica_env(os.environ, args.model_folders)
    ports = replica_ports(args.replicas)
    tls = None
    if args.cert:
        tls = (Path(args.cert).resolve(), Path(args.key).resolve())
    elif not args.http:
        tls = make_certificate(run / "tls", args.address)
    nginx_conf = write_config(
        run, args.address, args.port, ports, args.replica_header, tls, tuple(args.real_ip_from)
    )
    # -e: the error log from the start on stderr (not /var/log/nginx, which a non-root
    # user cannot open), as the configuration's error_log.
    nginx_cmd = [nginx, "-p", str(run), "-e", "stderr", "-c", str(nginx_conf), "-g", "daemon off;"]
    scheme = "http" if tls is None else "https"
    local = "127.0.0.1" if args.address in ("0.0.0.0", "::") else args.address
    host = "localhost" if args.address in ("0.0.0.0", "127.0.0.1") else args.address
    conf = run / "supervisord.conf"
    text = supervisord_config(
        run,
        ports,
        nginx_cmd,
        front=f"{scheme}://{local}:{args.port}",
        shown=f"{scheme}://{host}:{args.port}",
        password=secrets.token_hex(16),
        health_log="/dev/stdout" if stdout_reopenable() else str(run / "health.log"),
    )
    conf.touch(mode=0o600)
    conf.chmod(0o600)
    conf.write_text(text)
    said = "" if "/dev/stdout" in text else f"; health.py's lines in {run / 'health.log'}"
    print(
        f"serve.py: {args.replicas} replicas and nginx start under supervisord "
        f"(supervisorctl -c {conf} status){said}",
        flush=True,
    )
    if tls is not None and not args.cert:
        print(
            f"Its certificate is self-signed ({tls[0]}): each browser warns once; "
            "docs/workshop.md says how to use a real one.",
            flush=True,
        )
    cmd = [sys.executable, "-m", "supervisor.supervisord", "-n", "-c", str(conf)]
    os.execve(sys.executable, cmd, env)  # supervisord takes this process's place


if __name__ == "__main__":
    sys.exit(main())
