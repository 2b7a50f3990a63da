"""What each page's URL may carry: its sections and its settings, declared once.

A page's widgets, its deep links, the URL checks and the workshop lessons all read
these declarations, so a value a lesson names is checked exactly as the page's
widget would check it from the URL. One module per page (``ui/specs/<page>.py``)
defines ``SECTIONS`` (tab labels, the first one opens by default) and ``PARAMS``.
Nothing here imports streamlit or torch.

A ``Param`` with ``section=None`` is shared by every section of its page (drawn
above the tabs); one with a section is drawn inside that tab only.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

INT = re.compile(r"[+-]?[0-9]{1,12}")
FLOAT = re.compile(r"[+-]?(?:[0-9]{1,20}(?:\.[0-9]{0,20})?|\.[0-9]{1,20})(?:[eE][+-]?[0-9]{1,3})?")

Kind = Literal["int", "float", "choice", "bool", "ints", "text"]


class InvalidParam(ValueError):
    """A parser's refusal. Its message is ours: it never repeats the user's text."""


def parse_int(s: str, lo: int, hi: int, step: int = 1) -> int:
    """A whole number in ASCII digits, within ``[lo, hi]``, on the grid ``lo + k step``."""
    if not INT.fullmatch(s):
        raise InvalidParam("not a whole number in the digits 0-9")
    v = int(s)
    if not lo <= v <= hi:
        raise InvalidParam(f"outside {lo} to {hi}")
    if (v - lo) % step:
        raise InvalidParam(f"not one of {lo}, {lo + step}, {lo + 2 * step}, ... (steps of {step})")
    return v


def parse_float(s: str, lo: float, hi: float, step: float | None = None) -> float:
    """A decimal number in ASCII digits, within ``[lo, hi]``, on the grid ``lo + k step``
    (snapped to it, so 0.30000000000000004 reads as 0.3)."""
    if len(s) > 40 or not FLOAT.fullmatch(s):
        raise InvalidParam("not a decimal number in the digits 0-9")
    v = float(s)
    if not math.isfinite(v):
        raise InvalidParam("not a finite number")
    if not lo <= v <= hi:
        raise InvalidParam(f"outside {lo:g} to {hi:g}")
    if step:
        k = (v - lo) / step
        if abs(k - round(k)) > 1e-6:
            raise InvalidParam(f"not on the slider's steps of {step:g} from {lo:g}")
        v = round(lo + round(k) * step, 10)
    return v


def parse_bool(s: str) -> bool:
    low = s.lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off"):
        return False
    raise InvalidParam("not true or false")


def parse_choice(s: str, options: Sequence[str]) -> str:
    if s not in options:
        raise InvalidParam(f"not one of {', '.join(options)}")
    return s


def parse_ints(s: str, options: Sequence[int], limit: int) -> list[int]:
    parts = [x for x in s.split(",") if x]
    if len(parts) > limit:
        raise InvalidParam(f"at most {limit} values")
    values = [parse_int(x, min(options), max(options)) for x in parts]
    if any(v not in options for v in values):
        raise InvalidParam("not among the choices")
    return sorted(set(values))


def parse_text(s: str, max_chars: int) -> str:
    if len(s) > max_chars:
        raise InvalidParam(f"longer than {max_chars} characters")
    return s


def fmt(value: Any) -> str:
    """A value as the URL carries it."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:.10g}"
    if isinstance(value, list | tuple):
        return ",".join(map(fmt, value))
    return str(value)


@dataclass(frozen=True)
class Param:
    """One URL setting: its kind, default and what the widget can hold.

    ``int``/``float``: ``lo``, ``hi``, ``step``; ``choice``: ``options``; ``ints``:
    ``options`` (whole numbers) and ``limit`` (how many); ``text``: ``limit`` (characters).
    Where a page narrows a range at run time (options that depend on another
    setting), the declaration holds the widest range and the page checks the rest.
    """

    name: str
    kind: Kind
    default: Any
    lo: float | None = None
    hi: float | None = None
    step: float | None = None
    options: tuple[Any, ...] = ()
    limit: int | None = None
    section: str | None = None

    def parse(self, raw: str) -> Any:
        """The value ``raw`` (URL text) stands for, or :class:`InvalidParam`."""
        if self.kind == "int":
            return parse_int(raw, int(self.lo), int(self.hi), int(self.step or 1))  # type: ignore[arg-type]
        if self.kind == "float":
            return parse_float(raw, float(self.lo), float(self.hi), self.step)  # type: ignore[arg-type]
        if self.kind == "bool":
            return parse_bool(raw)
        if self.kind == "choice":
            return parse_choice(raw, [str(o) for o in self.options])
        if self.kind == "ints":
            return parse_ints(raw, [int(o) for o in self.options], int(self.limit or 0))
        return parse_text(raw, int(self.limit or 0))

    def check(self, value: Any) -> Any:
        """A Python value (a lesson's TOML value) checked as its URL text would be."""
        if self.kind == "bool" and not isinstance(value, bool):
            raise InvalidParam("not true or false")
        if self.kind in ("int", "ints") and isinstance(value, bool):
            raise InvalidParam("not a whole number")
        if self.kind == "int" and not isinstance(value, int):
            raise InvalidParam("not a whole number")
        if self.kind == "float" and not isinstance(value, int | float):
            raise InvalidParam("not a number")
        if self.kind == "choice" and type(value) is int and str(value) in self.options:
            value = str(value)  # a lesson's seeds = 5 for the choice "5"
        if self.kind in ("choice", "text") and not isinstance(value, str):
            raise InvalidParam("not a string")
        if self.kind == "ints" and not (
            isinstance(value, list) and all(isinstance(v, int) for v in value)
        ):
            raise InvalidParam("not a list of whole numbers")
        return self.parse(fmt(value))


@dataclass(frozen=True)
class PageSpec:
    """A page's sections, URL settings and each section's recipe.

    ``recipes`` maps a section to the dotted name of its recipe under
    ``resviz.recipes`` (``"gradients.per_layer"``); the recipe's keyword settings
    are this page's parameter names (``seed`` is the sidebar's), so a URL, a lesson
    step and a notebook call name a setting the same way."""

    sections: tuple[str, ...] = ()
    params: tuple[Param, ...] = field(default_factory=tuple)
    recipes: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        names = [p.name for p in self.params]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ValueError(f"parameters declared twice: {sorted(dup)}")
        for p in self.params:
            if p.section is not None and p.section not in self.sections:
                raise ValueError(f"{p.name}: no section named {p.section!r}")
            p.parse(fmt(p.default))  # the default must be a value the widget can hold
        for section in self.recipes:
            if section not in self.sections:
                raise ValueError(f"recipe for {section!r}: no such section")

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)

    @property
    def names(self) -> frozenset[str]:
        return frozenset(p.name for p in self.params)


# The sidebar's settings, on every page; "section" names the open tab. A section
# runs seeds seed, seed + 1, ... (``seeds``; "auto" is the section's own default:
# 3 where a seed takes under a second, 1 where a seed trains; see resviz.recipes).
SECTION_PARAM = "section"
SEEDS_AUTO = "auto"
SEEDS_OPTIONS = (SEEDS_AUTO, *(str(n) for n in range(1, 11)))
SHARED = PageSpec(
    params=(
        Param("device", "choice", "auto", options=("auto", "cpu", "cuda", "mps")),
        Param("seed", "int", 0, lo=0, hi=1_000_000),
        Param("seeds", "choice", SEEDS_AUTO, options=SEEDS_OPTIONS),
    )
)


def seeds_count(choice: str, default: int) -> int:
    """The sidebar's ``seeds`` choice as a count: ``default`` (the section's) for auto."""
    return default if choice == SEEDS_AUTO else int(choice)
