"""Turns on the server's cores: a section's computation waits in line for its turn.

One Python process runs every session's script, each in its own thread, and torch's
thread pool is process-wide: six sessions that open a page at once would otherwise
compute side by side and all get their results at the end (six uncached Depth sweeps
on 2 cores: every one after 15-17 s). Here at most :data:`SLOTS` computations run at
once (``RESVIZ_MAX_COMPUTE``, default 1: our sections are many small tensor operations
whose Python holds the interpreter's lock, so two at once in one process ran slower
than one after the other: the six got theirs after 3.1 to 12.6 s two at a time, after
1.2 to 8 s one at a time; ``benchmarks/turns.py``). The others wait first come, first
served, and each waiting page says how many computations are ahead of it. More cores
are used by more processes: the workshop server runs one per core. A result already
in the cache takes no turn. Background runs (training, :mod:`ui.jobs`) keep their own
queue.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager

POLL_S = 0.25


def _slots() -> int:
    try:
        return max(1, int(os.environ.get("RESVIZ_MAX_COMPUTE", 1)))
    except ValueError:
        return 1


SLOTS = _slots()


class Turns:
    """A first-come, first-served line in front of ``slots`` places."""

    def __init__(self, slots: int = SLOTS) -> None:
        self.slots = max(1, int(slots))
        self._cond = threading.Condition()
        self._line: deque[object] = deque()
        self._running = 0

    @property
    def running(self) -> int:
        with self._cond:
            return self._running

    @property
    def waiting(self) -> int:
        with self._cond:
            return len(self._line)

    @contextmanager
    def turn(self, on_wait: Callable[[int], None] | None = None) -> Iterator[None]:
        """Hold a place while the block runs; before that, wait in line, calling
        ``on_wait(ahead)`` (computations ahead: those running and those in line
        before this one) every :data:`POLL_S` seconds while it waits. Leaving the
        line (an exception, a rerun that stops the script) gives the place up."""
        me = object()
        with self._cond:
            self._line.append(me)
        try:
            while True:
                with self._cond:
                    if self._line[0] is me and self._running < self.slots:
                        self._line.popleft()
                        self._running += 1
                        break
                    ahead = self._running + self._line.index(me)
                if on_wait is not None:
                    on_wait(ahead)
                with self._cond:
                    if not (self._line[0] is me and self._running < self.slots):
                        self._cond.wait(POLL_S)
        except BaseException:
            with self._cond:
                if me in self._line:
                    self._line.remove(me)
                self._cond.notify_all()
            raise
        try:
            yield
        finally:
            with self._cond:
                self._running -= 1
                self._cond.notify_all()


TURNS = Turns()

# The calls computed lately (their results are in the cache, which takes no turn).
_DONE: dict[Hashable, None] = {}
_DONE_LOCK = threading.Lock()
_DONE_KEPT = 512


def done(key: Hashable) -> bool:
    """Whether ``key``'s computation finished lately (its result is likely cached)."""
    with _DONE_LOCK:
        return key in _DONE


def mark_done(key: Hashable) -> None:
    with _DONE_LOCK:
        _DONE[key] = None
        while len(_DONE) > _DONE_KEPT:
            del _DONE[next(iter(_DONE))]


def waiting_words(ahead: int, slots: int = SLOTS) -> str:
    """What a waiting page says: how many computations are ahead of it."""
    n = "1 computation is" if ahead == 1 else f"{ahead} computations are"
    at = "one at a time" if slots == 1 else f"{slots} at a time"
    return (
        f"Waiting for its turn: {n} ahead of this one (this page's server process computes "
        f"{at}, first come, first served)."
    )
