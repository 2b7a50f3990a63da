"""The workshop server's logs rotate (deploy/workshop/serve.py, ``rotate_logs``): a log
past the limit is copied to ``NAME.1`` and emptied in place, and a writer that holds it
open in append mode (a replica's stdout, nginx) writes on at its new start, with no
gap of zeros; a log under the limit is left alone."""

from __future__ import annotations

import runpy
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SERVE = runpy.run_path(str(ROOT / "deploy" / "workshop" / "serve.py"), run_name="serve")


def test_a_log_past_the_limit_is_kept_once_and_emptied_for_its_writer(tmp_path: Path) -> None:
    log, small = tmp_path / "replica-1.log", tmp_path / "nginx-error.log"
    small.write_text("short\n")
    # A writer in another process, holding the log open in append mode as Popen's
    # stdout does: it writes, waits for a line on stdin, writes again.
    code = (
        "import sys\n"
        f"f = open({str(log)!r}, 'a')\n"
        "f.write('a' * 2000 + '\\n'); f.flush()\n"
        "sys.stdin.readline()\n"
        "f.write('after\\n'); f.flush()\n"
    )
    writer = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, text=True)
    try:
        for _ in range(200):
            if log.exists() and log.stat().st_size > 2000:
                break
            time.sleep(0.05)
        rotated = SERVE["rotate_logs"](tmp_path, max_bytes=1000)
        assert rotated == [log]
        assert (tmp_path / "replica-1.log.1").read_text() == "a" * 2000 + "\n"
        assert log.stat().st_size == 0
        writer.communicate("go\n", timeout=30)
    finally:
        if writer.poll() is None:
            writer.kill()
    assert log.read_bytes() == b"after\n"  # at the new start, no zeros before it
    assert small.read_text() == "short\n" and not (tmp_path / "nginx-error.log.1").exists()
    assert SERVE["rotate_logs"](tmp_path, max_bytes=1000) == []  # nothing past it now
