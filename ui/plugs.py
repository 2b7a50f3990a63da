"""Where another part of the app plugs into the page kit, so the kit imports none of it.

The kit (``ui/params.py``, ``ui/section.py``, ``ui/shell.py`` and what they use) calls
these two plugs; the workshop (``ui/workshop.py``: lessons and rooms) sets them once
the entry point has imported it. Unset, a page runs on its own: nothing is drawn above
its sections and a result is shown to nobody else. Imports nothing of the app.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


def _open(page: str) -> bool:
    return True


def _nobody(fn: Any, result: Any) -> None:
    return None


@dataclass
class Plugs:
    """``above_sections(page)`` draws what goes above a page's tabs and says whether
    its sections may open (False holds them shut, as a lesson step's unanswered
    question does). ``shown(recipe, result)`` is told of every result a section draws."""

    above_sections: Callable[[str], bool] = _open
    shown: Callable[[Any, Any], None] = _nobody


PLUGS = Plugs()


def plug(
    above_sections: Callable[[str], bool] | None = None,
    shown: Callable[[Any, Any], None] | None = None,
) -> None:
    """Set the plugs given (the same ones on every script run is a no-op)."""
    if above_sections is not None:
        PLUGS.above_sections = above_sections
    if shown is not None:
        PLUGS.shown = shown
