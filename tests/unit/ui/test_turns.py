"""Turns on the cores (ui/turns.py): at most ``slots`` computations at once, the rest
first come, first served, each told how many are ahead of it."""

from __future__ import annotations

import threading
import time

import pytest

from ui import turns as T


def _arrive_in_order(line: T.Turns, n: int, hold: threading.Event, log: list, said: dict):
    """n threads that join the line one after the other (each once the previous one
    is in it), hold their place until ``hold`` is set, and log when they start."""
    threads = []
    for i in range(n):

        def work(i: int = i) -> None:
            def on_wait(ahead: int) -> None:
                said.setdefault(i, []).append(ahead)

            with line.turn(on_wait):
                log.append(i)
                hold.wait(10)

        before = line.waiting + line.running
        t = threading.Thread(target=work, daemon=True)
        t.start()
        deadline = time.monotonic() + 10
        while line.waiting + line.running == before and time.monotonic() < deadline:
            time.sleep(0.005)
        threads.append(t)
    return threads


def test_at_most_slots_run_and_the_rest_start_in_the_order_they_came():
    line, hold, log, said = T.Turns(2), threading.Event(), [], {}
    threads = _arrive_in_order(line, 5, hold, log, said)
    assert line.running == 2 and line.waiting == 3 and log == [0, 1]
    # Each waiting one was told what is ahead of it: the 2 running, and those before it.
    deadline = time.monotonic() + 10
    while any(i not in said for i in (2, 3, 4)) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [said[i][-1] for i in (2, 3, 4)] == [2, 3, 4]
    assert 0 not in said and 1 not in said  # a free place: no wait, nothing said
    hold.set()
    for t in threads:
        t.join(10)
    assert log == [0, 1, 2, 3, 4] and line.running == 0 and line.waiting == 0


def test_leaving_the_line_gives_the_place_up():
    """A page that stops while waiting (Streamlit stops its script with an exception
    from inside an element call, here ``on_wait``) leaves the line; the next one goes."""
    line, got = T.Turns(1), []
    with line.turn():
        calls = []

        def stop(ahead: int) -> None:
            calls.append(ahead)
            raise RuntimeError("the script was stopped")

        with pytest.raises(RuntimeError):
            with line.turn(stop):
                got.append("ran")  # never: it waits behind the one holding the place
        assert calls == [1] and got == [] and line.waiting == 0
    with line.turn():  # the place is free again
        got.append("next")
    assert got == ["next"] and line.running == 0


def test_an_error_inside_the_turn_frees_the_place():
    line = T.Turns(1)
    with pytest.raises(ValueError), line.turn():
        raise ValueError("the recipe failed")
    assert line.running == 0
    with line.turn():
        assert line.running == 1


def test_one_at_a_time_unless_set(monkeypatch):
    monkeypatch.delenv("RESVIZ_MAX_COMPUTE", raising=False)
    assert T._slots() == 1
    monkeypatch.setenv("RESVIZ_MAX_COMPUTE", "3")
    assert T._slots() == 3
    for bad in ("zero", "-4", ""):
        monkeypatch.setenv("RESVIZ_MAX_COMPUTE", bad)
        assert T._slots() == 1


@pytest.mark.parametrize(
    ("ahead", "slots", "want"),
    [
        (1, 2, "Waiting for its turn: 1 computation is ahead of this one (this page's server "
         "process computes 2 at a time, first come, first served)."),
        (5, 1, "Waiting for its turn: 5 computations are ahead of this one (this page's "
         "server process computes one at a time, first come, first served)."),
    ],
)  # fmt: skip
def test_waiting_words(ahead, slots, want):
    assert T.waiting_words(ahead, slots) == want


def test_done_remembers_the_latest_calls_only():
    T.mark_done(("a", 1))
    assert T.done(("a", 1)) and not T.done(("a", 2))
    for i in range(T._DONE_KEPT):
        T.mark_done(("fill", i))
    assert not T.done(("a", 1)) and T.done(("fill", T._DONE_KEPT - 1))
