"""A page whose computation finds every core taken waits its turn and says so
(ui/turns.py through ui/section.py's Section.run); a cached result takes no turn."""

from __future__ import annotations

import threading

from ui import turns

PAGE = "app_pages/sinusoidal_encoding.py"


def test_a_page_waits_for_a_free_core_and_says_how_many_are_ahead(app, monkeypatch):
    line = turns.Turns(1)
    monkeypatch.setattr(turns, "TURNS", line)
    monkeypatch.setattr(turns, "_DONE", {})
    said: list[int] = []
    words = turns.waiting_words

    def spy(ahead: int, slots: int = turns.SLOTS) -> str:
        said.append(ahead)
        return words(ahead, slots)

    monkeypatch.setattr(turns, "waiting_words", spy)
    taken, release = threading.Event(), threading.Event()

    def other_session() -> None:  # holds the only core until the page has said it waits
        with line.turn():
            taken.set()
            release.wait(60)

    holder = threading.Thread(target=other_session, daemon=True)
    holder.start()
    assert taken.wait(10)
    threading.Thread(target=lambda: (_wait_for(lambda: said), release.set()), daemon=True).start()
    at = app(PAGE, section="Matrix", d_model="24").run()
    holder.join(10)
    assert not at.exception and not at.error
    assert said and said[0] == 1  # the one holding the core was ahead of it
    assert at.get("vega_lite_chart")  # then it computed and drew
    assert line.running == 0 and line.waiting == 0
    # The same call again is cached: no turn, nothing said.
    said.clear()
    with line.turn():  # every core taken again
        again = app(PAGE, section="Matrix", d_model="24").run()
    assert not said and again.get("vega_lite_chart")


def _wait_for(cond, timeout: float = 60.0) -> None:
    done = threading.Event()
    while not cond() and not done.wait(0.05):
        timeout -= 0.05
        if timeout <= 0:
            return
