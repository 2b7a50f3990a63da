"""The workshop server's own parts (deploy/workshop/): the supervisord configuration
serve.py writes, read back by supervisord's own parser and run by a real supervisord;
the replica ports it draws; health.py's rule for a hung replica; start_nginx.py's
clearing of what a killed nginx left.

What supervisord does with that configuration, for real processes (a killed replica
restarted with backoff, a killed nginx, a hung replica, SIGTERM), is
tests/browser/test_workshop_heals.py; the container's entry point as its non-root user
is tests/install/test_deploy.py."""

from __future__ import annotations

import os
import runpy
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from supervisor.options import ServerOptions

ROOT = Path(__file__).resolve().parents[2]
WORKSHOP = ROOT / "deploy" / "workshop"
SERVE = runpy.run_path(str(WORKSHOP / "serve.py"), run_name="serve")
HEALTH = runpy.run_path(str(WORKSHOP / "health.py"), run_name="health")
START_NGINX = runpy.run_path(str(WORKSHOP / "start_nginx.py"), run_name="start_nginx")
NGINX = ["/usr/sbin/nginx", "-p", "RUN", "-c", "RUN/nginx.conf", "-g", "daemon off;"]
MB = 2**20


def _config(run: Path, ports: list[int], **kw: str) -> Path:
    text = SERVE["supervisord_config"](
        run, ports, NGINX, "http://127.0.0.1:8500", "https://localhost:8500", "pw", **kw
    )
    conf = run / "supervisord.conf"
    conf.write_text(text)
    return conf


def _parsed(conf: Path) -> tuple[ServerOptions, dict]:
    """supervisord's own reading of ``conf``: its options, and each program's."""
    options = ServerOptions()
    options.realize(args=["-c", str(conf)])
    programs = {p.name: p for g in options.process_group_configs for p in g.process_configs}
    return options, programs


def test_supervisord_reads_every_program_as_serve_py_means_it(tmp_path: Path) -> None:
    """One program per replica, nginx and health.py, in one group (stopped together);
    every program restarted whenever it exits, stopped with its process group within
    1 s of its stop signal (a replica's: SIGKILL, which a stopped replica cannot leave
    pending); every log in the run folder, rotated past 10 MB with one older copy."""
    conf = _config(tmp_path, [21001, 21002])
    assert conf.read_text().count("password=pw") == 2
    options, programs = _parsed(conf)
    assert [g.name for g in options.process_group_configs] == ["workshop"]
    assert set(programs) == {"replica-21001", "replica-21002", "health", "nginx"}
    assert (options.logfile, options.logfile_maxbytes, options.logfile_backups) == (
        str(tmp_path / "supervisord.log"),
        10 * MB,
        1,
    )
    assert options.nodaemon is True
    # supervisorctl and health.py reach it on a socket only its owner may open.
    (server,) = options.server_configs
    assert server["family"] == socket.AF_UNIX and server["chmod"] == 0o700
    assert (server["username"], server["password"]) == ("resviz", "pw")
    for name, p in programs.items():
        assert p.autorestart is not False and p.startretries == 240, name
        assert p.stopasgroup and p.killasgroup and p.stopwaitsecs == 1, name
    for port in (21001, 21002):
        p = programs[f"replica-{port}"]
        words = shlex.split(p.command)
        assert words[:4] == [sys.executable, "-m", "streamlit", "run"]
        assert words[words.index("--server.port") + 1] == str(port)
        assert words[words.index("--server.address") + 1] == "127.0.0.1"
        assert (p.startsecs, p.stopsignal, p.autostart) == (10, signal.SIGKILL, True)
        assert p.redirect_stderr and p.directory == str(ROOT)
        assert p.stdout_logfile == str(tmp_path / f"replica-{port}.log")
        assert (p.stdout_logfile_maxbytes, p.stdout_logfile_backups) == (10 * MB, 1)
    nginx = programs["nginx"]
    words = shlex.split(nginx.command)
    assert words[1:4] == [str(WORKSHOP / "start_nginx.py"), str(tmp_path / "nginx.pid"), "--"]
    assert words[4:] == NGINX
    assert (nginx.autostart, nginx.stopsignal, nginx.startsecs) == (False, signal.SIGTERM, 5)
    assert nginx.stdout_logfile == str(tmp_path / "nginx-access.log")
    assert nginx.stderr_logfile == str(tmp_path / "nginx-error.log")
    for channel in ("stdout", "stderr"):
        assert getattr(nginx, f"{channel}_logfile_maxbytes") == 10 * MB
        assert getattr(nginx, f"{channel}_logfile_backups") == 1
    health = programs["health"]
    words = shlex.split(health.command)
    assert words[1] == str(WORKSHOP / "health.py")
    given = dict(zip(words[2::2], words[3::2], strict=True))
    assert given["--ports"] == "21001,21002" and given["--conf"] == str(conf)
    assert float(given["--hung-after"]) == SERVE["HUNG_AFTER_S"] == 6.0
    assert float(given["--start-grace"]) == SERVE["START_GRACE_S"] == 120.0
    # Its few lines on supervisord's own stdout (the terminal, docker logs), unrotated.
    assert (health.stdout_logfile, health.stdout_logfile_maxbytes) == ("/dev/stdout", 0)
    assert _parsed(_config(tmp_path, [21001], health_log=str(tmp_path / "h.log")))[1][
        "health"
    ].stdout_logfile_maxbytes == (10 * MB)


def test_a_crash_loop_backs_off_and_is_not_given_up_within_a_day() -> None:
    """supervisord's backoff (supervisor/process.py): a process that exits before
    ``startsecs`` is tried again after 1 s, 2 s, 3 s..., and is given up (FATAL) once
    ``startretries`` tries in a row have failed; one that ran ``startsecs`` is
    restarted at once. With 240 tries, giving up takes over 8 hours of failing."""
    retries = SERVE["STARTRETRIES"]
    assert sum(range(1, retries + 1)) >= 8 * 3600
    assert SERVE["STARTSECS"]["replica"] >= 10  # a replica answers 2 to 7 s after its start


def test_a_value_that_supervisord_would_cut_or_expand_is_escaped_or_refused() -> None:
    value = SERVE["conf_value"]
    assert value("/srv/100%/run") == "/srv/100%%/run"
    assert value(True) == "true" and value(10) == "10"
    assert value("nginx -g 'daemon off;'") == "nginx -g 'daemon off;'"  # no space before ;
    for bad in ("/srv/a ;b", "/srv/a #b", "a\nb"):
        with pytest.raises(ValueError):
            value(bad)


def test_a_run_folder_too_long_for_a_socket_name_puts_the_socket_in_tmp(tmp_path: Path) -> None:
    assert SERVE["socket_path"](tmp_path) == tmp_path / "supervisor.sock"
    deep = tmp_path / ("x" * 120)
    far = SERVE["socket_path"](deep)
    assert len(os.fsencode(far)) < 100 and far.name.startswith("resviz-supervisor-")
    assert SERVE["socket_path"](deep) == far  # the same folder, the same socket


def test_replica_ports_are_free_distinct_and_below_the_ephemeral_range() -> None:
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    ports = SERVE["replica_ports"](8)
    assert len(set(ports)) == 8
    assert all(SERVE["PORTS_FROM"] <= p < low for p in ports), ports
    assert all(SERVE["port_free"]("127.0.0.1", p) for p in ports)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        assert not SERVE["port_free"]("127.0.0.1", s.getsockname()[1])


@pytest.mark.slow
def test_a_real_supervisord_runs_the_configuration_rotates_logs_and_stops(
    tmp_path: Path,
) -> None:
    """The written configuration, run by supervisord itself with each replica's command
    swapped for a program that prints 3 KB and waits (running after 1 s, not 10, and
    logs rotated past 1 KB, not 10 MB): ``supervisorctl -c supervisord.conf status`` lists them running, each log
    past the limit was rotated to ``NAME.1``, and SIGTERM stops it all."""
    ports = [21011, 21012]
    conf = _config(tmp_path, ports)
    printer = tmp_path / "printer.py"
    printer.write_text(
        "import time\nfor _ in range(6):\n    print('x' * 499, flush=True)\ntime.sleep(60)\n"
    )
    lines = []
    for line in conf.read_text().splitlines():
        if line.startswith("command=") and " streamlit run " in line:
            line = f"command={shlex.join([sys.executable, str(printer)])}"
        line = line.replace("stdout_logfile_maxbytes=10MB", "stdout_logfile_maxbytes=1KB")
        lines.append(line.replace("startsecs=10", "startsecs=1"))
    conf.write_text("\n".join(lines) + "\n")
    out = (tmp_path / "out").open("a")
    cmd = [sys.executable, "-m", "supervisor.supervisord", "-c", str(conf)]
    sup = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    try:
        ctl = [sys.executable, "-m", "supervisor.supervisorctl", "-c", str(conf), "status"]
        deadline = time.monotonic() + 60
        while True:
            status = subprocess.run(ctl, capture_output=True, text=True).stdout
            running = {ln.split()[0] for ln in status.splitlines() if " RUNNING " in ln}
            if {f"workshop:replica-{p}" for p in ports} <= running:
                break
            assert sup.poll() is None, (tmp_path / "out").read_text()
            assert time.monotonic() < deadline, status
            time.sleep(0.5)
        assert "workshop:nginx" in status and "STOPPED" in status.split("workshop:nginx")[1]
        for port in ports:
            log, old = tmp_path / f"replica-{port}.log", tmp_path / f"replica-{port}.log.1"
            while not old.exists() and time.monotonic() < deadline:
                time.sleep(0.1)
            assert old.stat().st_size >= 1024 and log.stat().st_size < 1024
            assert not (tmp_path / f"replica-{port}.log.2").exists()  # one older copy
    finally:
        sup.send_signal(signal.SIGTERM)
        sup.wait(timeout=10)
    assert sup.returncode == 0
    said = (tmp_path / "supervisord.log").read_text()
    assert said.count("stopped: replica-") == 2 and "(terminated by SIGKILL)" in said


def test_health_py_writes_to_the_terminal_only_where_supervisord_can_reopen_it() -> None:
    """``/dev/stdout`` for health.py's lines where supervisord, as the server's user,
    can open its stdout again (a pipe or terminal of its own); not a pipe of another
    user's (``docker run`` as the image's user: root's), checked here as ``nobody``
    with this root-owned pipe where the test runs as root."""
    code = (
        "import runpy, sys\n"
        f"serve = runpy.run_path({str(WORKSHOP / 'serve.py')!r}, run_name='serve')\n"
        "sys.stderr.write(str(serve['stdout_reopenable']()))\n"
    )
    # serve.py needs the standard library alone: a Python that user may run.
    cases = [([sys.executable], {}, "True")]
    if os.geteuid() == 0 and Path("/usr/bin/python3").is_file():
        nobody = {"user": 65534, "group": 65534, "extra_groups": []}
        cases.append((["/usr/bin/python3"], nobody, "False"))
    for python, drop, expected in cases:
        done = subprocess.run(
            [*python, "-c", code], capture_output=True, text=True, cwd="/", **drop
        )
        assert done.stderr.strip().endswith(expected), (drop, done.stderr[-2000:])


# -------------------------------------------------------------------------- health.py
def test_a_replica_is_hung_after_6_s_without_an_answer_or_120_s_without_a_first() -> None:
    def hung(now: float, started: float, answered: float | None) -> float | None:
        return HEALTH["hung"](now, started, answered, 6.0, 120.0)

    assert hung(100.0, 0.0, 95.0) is None  # answered 5 s ago
    assert hung(100.0, 0.0, 94.0) is None  # exactly 6 s: not yet
    assert hung(100.5, 0.0, 94.0) == 6.5
    assert hung(100.0, 0.0, None) is None  # starting: 100 s without a first answer
    assert hung(120.0, 0.0, None) is None
    assert hung(121.0, 0.0, None) == 121.0
    assert hung(50.0, 45.0, None) is None  # a restarted process: counted from its start


def test_a_busy_replica_gets_a_minute_a_stopped_or_deadlocked_one_6_s() -> None:
    """Silent for 10 s: hung when it used (almost) no CPU meanwhile (SIGSTOP: none), busy
    when it used at least a twentieth of a core, then hung only past 60 s."""
    share, busy_after = HEALTH["BUSY_SHARE"], HEALTH["BUSY_AFTER_S"]
    assert (share, busy_after) == (0.05, 60.0)

    def hung(now: float, cpu: float) -> float | None:
        return HEALTH["hung"](now, 0.0, 90.0, 6.0, 120.0, cpu)

    assert hung(100.0, 0.0) == 10.0  # stopped
    assert hung(100.0, 0.49) == 10.0  # just under a twentieth of 10 s
    assert hung(100.0, 0.5) is None  # at it: busy
    assert hung(100.0, 7.0) is None
    assert hung(150.0, 3.0) is None  # 60 s silent, 3 s of CPU: busy, at the limit
    assert hung(150.5, 3.0) == 60.5
    assert hung(100.0, float("nan")) == 10.0  # CPU time unreadable: as none
    assert hung(100.0, -1.0) == 10.0
    assert HEALTH["hung"](200.0, 0.0, None, 6.0, 120.0, 50.0) == 200.0  # never answered


def test_cpu_seconds_reads_this_process_and_nan_for_none(tmp_path: Path) -> None:
    import os
    import time

    before = HEALTH["cpu_seconds"](os.getpid())
    end = time.process_time() + 0.3
    while time.process_time() < end:
        pass
    after = HEALTH["cpu_seconds"](os.getpid())
    assert 0.2 <= after - before <= 5.0, (before, after)
    gone = subprocess.Popen(["true"])
    gone.wait()
    assert HEALTH["cpu_seconds"](gone.pid) != HEALTH["cpu_seconds"](gone.pid)  # NaN


def test_health_reads_supervisords_socket_and_password_from_the_configuration(
    tmp_path: Path,
) -> None:
    (tmp_path / "100%").mkdir()
    conf = _config(tmp_path / "100%", [21001])  # '%' is doubled in the file, read back once
    url = f"unix://{tmp_path / '100%' / 'supervisor.sock'}"
    assert HEALTH["control"](conf) == (url, "resviz", "pw")


# --------------------------------------------------------------------- start_nginx.py
def _titled(title: str) -> str:
    return f"exec -a {shlex.quote(title)} sleep 60"


def _group(pgid: int) -> list[int]:
    """The live processes of process group ``pgid``."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            found.append(int(stat.parent.name))
    return found


def test_what_a_killed_nginx_master_left_is_killed_before_a_new_one_starts(
    tmp_path: Path,
) -> None:
    """A stand-in master (its title ``nginx: master process``) leads a process group
    with a worker (``nginx: worker process``) and a process that is not nginx's; the
    master is SIGKILLed, as the kernel's out-of-memory killer would: its worker, left
    running, is killed; the other process of the group is not; no pid file, nothing."""
    script = f"({_titled('nginx: worker process')}) & ({_titled('not nginx')}) & {_titled('nginx: master process')}"
    master = subprocess.Popen(["bash", "-c", script], process_group=0)
    try:
        deadline = time.monotonic() + 10
        while len(START_NGINX["group_members"](master.pid)) < 2:
            assert time.monotonic() < deadline, "the stand-in processes did not start"
            time.sleep(0.05)
        (worker,) = [p for p in START_NGINX["group_members"](master.pid) if p != master.pid]
        master.kill()
        master.wait()
        pid_file = tmp_path / "nginx.pid"
        assert START_NGINX["kill_stale"](pid_file) == []  # none written yet
        pid_file.write_text(f"{master.pid}\n")
        assert START_NGINX["kill_stale"](pid_file) == [worker]
        assert START_NGINX["group_members"](master.pid) == []
        assert len(_group(master.pid)) == 1  # the process that is not nginx's lives on
    finally:
        if _group(master.pid):
            os.killpg(master.pid, signal.SIGKILL)
