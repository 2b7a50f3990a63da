"""The workshop's part of every page: a lesson step above the sections (and a room
participant's bar), and each shown result handed to the step's question. The entry
point calls :func:`plug_in` before the page runs; the page kit knows only
:mod:`ui.plugs`. The lesson modules (and torch with them) are imported when a page
first draws its sections, so the home page stays quick to open."""

from __future__ import annotations

from typing import Any

from . import plugs


def _above_sections(page: str) -> bool:
    from .lesson_view import banner

    return banner(page)


def _shown(fn: Any, result: Any) -> None:
    from .lesson_state import answer

    answer(fn, result)


def plug_in() -> None:
    plugs.plug(above_sections=_above_sections, shown=_shown)
