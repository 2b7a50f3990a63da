"""Start nginx under supervisord (serve.py's ``[program:nginx]``): first kill what a
killed nginx left behind, then become nginx (exec: the same pid, so supervisord's stop
signal and its process group reach the new master).

A master killed with SIGKILL leaves its worker running, reparented, still serving on the
port with nothing managing it: the new master's bind fails (``98: Address already in
use``, five tries in 2.5 s) and it exits, so supervisord would restart it in a loop, and
its stop would never reach the orphan (measured with this nginx 1.22; docs/deploy.md,
"Supervision"). supervisord runs each program as a process-group leader, so the old
master's pid, which its pid file still names, is the group of what it left: every
``nginx:`` process of that group is killed (SIGKILL), and waited for up to 2 s.

Usage: start_nginx.py PIDFILE -- NGINX [ARGUMENT...]
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path


def group_members(pgid: int) -> list[int]:
    """The live nginx processes (their title starts ``nginx:``) of process group ``pgid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            title = (entry / "cmdline").read_bytes()
        except (OSError, IndexError):
            continue  # gone meanwhile
        if fields[0] != "Z" and int(fields[2]) == pgid and title.startswith(b"nginx:"):
            found.append(int(entry.name))
    return found


def kill_stale(pid_file: Path, wait: float = 2.0) -> list[int]:
    """Kill what is left of the nginx whose master ``pid_file`` names (nothing when there
    is no such file: nginx removes it when it stops as asked); the pids killed."""
    try:
        pgid = int(pid_file.read_text().strip())
    except (OSError, ValueError):
        return []
    stale = group_members(pgid)
    for pid in stale:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    deadline = time.monotonic() + wait
    while group_members(pgid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return stale


def main(argv: list[str]) -> None:
    if len(argv) < 3 or argv[1] != "--":
        sys.exit(__doc__)
    if stale := kill_stale(Path(argv[0])):
        print(f"start_nginx.py: killed what the last nginx left: pids {stale}", file=sys.stderr)
        sys.stderr.flush()
    os.execv(argv[2], argv[2:])


if __name__ == "__main__":
    main(sys.argv[1:])
