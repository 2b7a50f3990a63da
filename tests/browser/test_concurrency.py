"""Twenty sessions at once against one real server, each with its own settings.

Each session is its own websocket connection speaking Streamlit's protocol
(``wsclient``), so twenty can be held at once from one process without twenty
browsers. Each opens a page with its own settings and downloads that page's
CSV. Every session must get its own rows, no session may see an exception or
error, and the server must stay healthy. Memory: twenty sessions may cost at
most ``PER_WAVE_MB`` over the level after a warm-up visit, and a second wave
must reuse what the first left (at most ``REUSE_MB`` more), so nothing
accumulates from visitor to visitor. Resident memory does not fall back to the
warm-up level when sessions leave: glibc keeps freed memory for reuse rather
than returning it to the system (``MALLOC_ARENA_MAX=2``, set here as in ``make
run``, limits that to two arenas). Disconnected sessions are normally kept for
120 s (for reconnects); this server uses 3 s.
"""

import asyncio
import csv
import io
import time
import urllib.request

import pytest

from tests.browser.conftest import Server, rss_mb
from tests.browser.wsclient import open_page, run_sync

SESSIONS = 20
PER_WAVE_MB = 150  # 7.5 MB a session, held for 2 s each (measured: 50-90 MB)
REUSE_MB = 25


def sinusoidal(i: int) -> tuple[str, str]:
    return "sinusoidal_encoding", f"text=session{i}+speaks&d={4 + 2 * (i % 8)}"


def check_sinusoidal(i: int, rows: list[dict[str, str]]) -> None:
    assert rows[0]["token"] == f"session{i}", f"session {i} saw another session's text"
    assert len([k for k in rows[0] if k.startswith("P(k,")]) == 4 + 2 * (i % 8)
    assert float(rows[1]["P(k,0)"]) == pytest.approx(0.84, abs=0.006)  # sin(1)


@pytest.fixture(scope="module")
def busy_server():
    s = Server("--server.disconnectedSessionTTL", "3", env={"MALLOC_ARENA_MAX": "2"})
    yield s
    s.stop()


async def _all(server: Server, n: int, hold: float):
    return await asyncio.gather(
        *[
            open_page(server.url, *sinusoidal(i), timeout=240, hold=hold, downloads=1)
            for i in range(n)
        ]
    )


def _settle(server: Server, limit: float) -> float:
    rss = rss_mb(server.proc.pid)
    for _ in range(20):  # sessions are dropped 3 s after their sockets close
        if rss <= limit:
            break
        time.sleep(1)
        rss = rss_mb(server.proc.pid)
    return rss


@pytest.mark.parametrize("wave", [1, 2])
def test_twenty_concurrent_sessions_each_see_their_own_results(busy_server, wave):
    """Two waves: the second shows that memory is reused, not accumulated."""
    server = busy_server
    if wave == 1:
        warm = run_sync(open_page, server.url, *sinusoidal(0), timeout=240)
        assert not warm.exceptions
        time.sleep(4)
        server.baseline = rss_mb(server.proc.pid)
    baseline = server.baseline
    t0 = time.monotonic()
    runs = run_sync(_all, server, SESSIONS, hold=2.0)
    wall = time.monotonic() - t0
    peak = rss_mb(server.proc.pid)
    for i, run in enumerate(runs):
        assert not run.exceptions, (i, run.exceptions)
        assert not run.errors, (i, run.errors)
        rows = list(csv.DictReader(io.StringIO(run.downloads[0].decode("utf-8"))))
        check_sinusoidal(i, rows)
    with urllib.request.urlopen(f"{server.url}/_stcore/health", timeout=10) as r:
        assert r.read().strip() == b"ok"
    time.sleep(4)
    limit = baseline + PER_WAVE_MB if wave == 1 else server.after_first + REUSE_MB
    after = _settle(server, limit)
    log = server.log.read_text()
    assert "Traceback" not in log, log[-3000:]
    times = sorted(r.seconds for r in runs)
    print(
        f"\nwave {wave}, {SESSIONS} concurrent sessions: wall {wall:.1f} s, per-session p50 "
        f"{times[SESSIONS // 2]:.1f} s, p95 {times[int(SESSIONS * 0.95) - 1]:.1f} s; RSS "
        f"baseline {baseline:.0f} MB, peak {peak:.0f} MB, after leaving {after:.0f} MB"
    )
    assert after <= limit, (baseline, peak, after, limit)
    if wave == 1:
        server.after_first = after
