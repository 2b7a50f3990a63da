"""A section's settings, each declared once: its name, kind, range, default, label and help.

A group of settings is a frozen dataclass (a :class:`Settings`), each field made by one
of :func:`whole`, :func:`decimal`, :func:`choice`, :func:`flag`, :func:`text` and
:func:`whole_numbers`::

    @dataclass(frozen=True)
    class Stack(Settings):
        depth: int = whole(10, 1, 100, label="Depth (blocks)")

The recipe takes the group (``per_layer(stack: Stack = Stack(), *, seed=0)``) and a
notebook builds it (``per_layer(Stack(depth=30), seed=1)``); the page draws each field's
widget from its declaration and binds it to the URL under the field's name; a lesson's
value is checked by :meth:`Setting.check`, as the URL's text is by :meth:`Setting.parse`.

The parsers accept only what the widget itself could hold (ASCII digits, inside the
range, on the slider's steps, one of the options) and refuse with a message of ours
that never repeats the input.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

INT = re.compile(r"[+-]?[0-9]{1,12}")
FLOAT = re.compile(r"[+-]?(?:[0-9]{1,20}(?:\.[0-9]{0,20})?|\.[0-9]{1,20})(?:[eE][+-]?[0-9]{1,3})?")

Kind = Literal["int", "float", "choice", "bool", "ints", "text"]


class InvalidSetting(ValueError):
    """A parser's refusal. Its message is ours: it never repeats the user's text."""


def parse_int(s: str, lo: int, hi: int, step: int = 1) -> int:
    """A whole number in ASCII digits, within ``[lo, hi]``, on the grid ``lo + k step``."""
    if not INT.fullmatch(s):
        raise InvalidSetting("not a whole number in the digits 0-9")
    v = int(s)
    if not lo <= v <= hi:
        raise InvalidSetting(f"outside {lo} to {hi}")
    if (v - lo) % step:
        raise InvalidSetting(
            f"not one of {lo}, {lo + step}, {lo + 2 * step}, ... (steps of {step})"
        )
    return v


def parse_float(s: str, lo: float, hi: float, step: float | None = None) -> float:
    """A decimal number in ASCII digits, within ``[lo, hi]``, on the grid ``lo + k step``
    (snapped to it, so 0.30000000000000004 reads as 0.3)."""
    if len(s) > 40 or not FLOAT.fullmatch(s):
        raise InvalidSetting("not a decimal number in the digits 0-9")
    v = float(s)
    if not math.isfinite(v):
        raise InvalidSetting("not a finite number")
    if not lo <= v <= hi:
        raise InvalidSetting(f"outside {lo:g} to {hi:g}")
    if step:
        k = (v - lo) / step
        if abs(k - round(k)) > 1e-6:
            raise InvalidSetting(f"not on the slider's steps of {step:g} from {lo:g}")
        v = round(lo + round(k) * step, 10)
    return v


def parse_bool(s: str) -> bool:
    low = s.lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off"):
        return False
    raise InvalidSetting("not true or false")


def parse_choice(s: str, options: Sequence[str]) -> str:
    if s not in options:
        raise InvalidSetting(f"not one of {', '.join(options)}")
    return s


def parse_ints(s: str, options: Sequence[int], limit: int) -> list[int]:
    parts = [x for x in s.split(",") if x]
    if len(parts) > limit:
        raise InvalidSetting(f"at most {limit} values")
    values = [parse_int(x, min(options), max(options)) for x in parts]
    if any(v not in options for v in values):
        raise InvalidSetting("not among the choices")
    return sorted(set(values))


def parse_text(s: str, max_chars: int) -> str:
    if len(s) > max_chars:
        raise InvalidSetting(f"longer than {max_chars} characters")
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
class Setting:
    """What one setting's widget shows and can hold.

    ``int``/``float``: ``lo``, ``hi``, ``step``; ``choice``: ``options``; ``ints``:
    ``options`` (whole numbers) and ``limit`` (how many); ``text``: ``limit``
    (characters). ``radio``: a choice drawn as a row of buttons, not a box; ``box``: a
    whole number typed in a box, not a slider.
    Where a page narrows a range at run time (options that depend on another
    setting), the declaration holds the widest range and the page checks the rest."""

    kind: Kind
    label: str
    lo: float | None = None
    hi: float | None = None
    step: float | None = None
    options: tuple[Any, ...] = ()
    limit: int | None = None
    help: str | None = None
    radio: bool = False
    box: bool = False

    def parse(self, raw: str) -> Any:
        """The value ``raw`` (URL text) stands for, or :class:`InvalidSetting`."""
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
            raise InvalidSetting("not true or false")
        if self.kind in ("int", "ints") and isinstance(value, bool):
            raise InvalidSetting("not a whole number")
        if self.kind == "int" and not isinstance(value, int):
            raise InvalidSetting("not a whole number")
        if self.kind == "float" and not isinstance(value, int | float):
            raise InvalidSetting("not a number")
        if self.kind == "choice" and type(value) is int and str(value) in self.options:
            value = str(value)  # a lesson's seeds = 5 for the choice "5"
        if self.kind in ("choice", "text") and not isinstance(value, str):
            raise InvalidSetting("not a string")
        if self.kind == "ints" and not (
            isinstance(value, list | tuple) and all(isinstance(v, int) for v in value)
        ):
            raise InvalidSetting("not a list of whole numbers")
        return self.parse(fmt(value))


_KEY = "resviz.setting"


def _declare(default: Any, setting: Setting) -> Any:
    setting.parse(fmt(default))  # the default must be a value the widget can hold
    return dataclasses.field(default=default, metadata={_KEY: setting})


def whole(
    default: int,
    lo: int,
    hi: int,
    *,
    label: str,
    step: int = 1,
    help: str | None = None,
    box: bool = False,
) -> Any:
    """A whole number from ``lo`` to ``hi`` in steps of ``step`` (a slider; a box
    to type it in with ``box``)."""
    return _declare(default, Setting("int", label, lo=lo, hi=hi, step=step, help=help, box=box))


def decimal(
    default: float, lo: float, hi: float, *, step: float, label: str, help: str | None = None
) -> Any:
    """A decimal number from ``lo`` to ``hi`` in steps of ``step`` (a slider)."""
    return _declare(default, Setting("float", label, lo=lo, hi=hi, step=step, help=help))


def choice(
    default: str,
    options: Sequence[str],
    *,
    label: str,
    help: str | None = None,
    radio: bool = False,
) -> Any:
    """One of ``options`` (a select box, or a row of buttons with ``radio``)."""
    return _declare(
        default, Setting("choice", label, options=tuple(options), help=help, radio=radio)
    )


def flag(default: bool, *, label: str, help: str | None = None) -> Any:
    """On or off (a toggle)."""
    return _declare(default, Setting("bool", label, help=help))


def text(default: str, limit: int, *, label: str, help: str | None = None) -> Any:
    """Up to ``limit`` characters of text (a text box)."""
    return _declare(default, Setting("text", label, limit=limit, help=help))


def whole_numbers(
    default: tuple[int, ...],
    options: Sequence[int],
    limit: int,
    *,
    label: str,
    help: str | None = None,
) -> Any:
    """Up to ``limit`` of ``options`` (a multiselect; a tuple, sorted)."""
    return _declare(
        tuple(default), Setting("ints", label, options=tuple(options), limit=limit, help=help)
    )


@dataclass(frozen=True)
class Declared:
    """One field of a group: its name, declaration and default."""

    name: str
    setting: Setting
    default: Any


class Settings:
    """A group of settings: subclass it as a frozen dataclass whose fields are made by
    :func:`whole`, :func:`choice`, ... A recipe takes the group as one parameter
    (its default an instance); its fields are the recipe's settings, by name."""

    __dataclass_fields__: ClassVar[dict[str, Any]]

    @classmethod
    def declared(cls) -> tuple[Declared, ...]:
        """Every field's declaration, in order."""
        return tuple(
            Declared(f.name, f.metadata[_KEY], f.default)
            for f in dataclasses.fields(cls)
            if _KEY in f.metadata
        )

    def values(self) -> dict[str, Any]:
        """The group's values by name (what the URL and a lesson name)."""
        return {d.name: getattr(self, d.name) for d in self.declared()}


def groups_of(fn: Any) -> dict[str, Settings]:
    """The groups a recipe takes: each parameter whose default is a :class:`Settings`,
    by parameter name, with its default."""
    return {
        name: p.default
        for name, p in inspect.signature(fn).parameters.items()
        if isinstance(p.default, Settings)
    }


def grouped(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn``, which takes groups of settings, also called by the groups' field names.

    ``f(Stack(depth=30), seed=1)``, ``f(stack=Stack(depth=30), seed=1)`` and
    ``f(depth=30, seed=1)`` make the same call (a field given by name overrides the
    group's). Its signature lists every field as a keyword setting, so a URL, a lesson
    and a notebook name a setting by one name. ``normalize(args, kw)`` is the call's
    keywords with each group built (what a recipe over seeds hands on)."""
    groups = groups_of(fn)
    if not groups:
        return fn
    owner = {d.name: g for g, default in groups.items() for d in default.declared()}
    sig = inspect.signature(fn)
    params: list[inspect.Parameter] = []
    for p in sig.parameters.values():
        if p.name in groups:
            params += [
                inspect.Parameter(d.name, p.KEYWORD_ONLY, default=getattr(p.default, d.name))
                for d in p.default.declared()
            ]
        elif p.kind is p.POSITIONAL_OR_KEYWORD:
            params.append(p.replace(kind=p.KEYWORD_ONLY))
        else:
            params.append(p)

    def normalize(args: tuple[Any, ...], kw: dict[str, Any]) -> dict[str, Any]:
        kw = dict(kw)
        chosen = {g: kw.pop(g, default) for g, default in groups.items()}
        for a in args:
            g = next((g for g, d in groups.items() if type(a) is type(d)), None)
            if g is None:
                takes = ", ".join(type(d).__name__ for d in groups.values())
                raise TypeError(f"{fn.__name__}() takes {takes} as settings, not {a!r}")
            chosen[g] = a
        fields: dict[str, dict[str, Any]] = {}
        for name in [k for k in kw if k in owner]:
            fields.setdefault(owner[name], {})[name] = kw.pop(name)
        for g, given in fields.items():
            chosen[g] = dataclasses.replace(chosen[g], **given)
        return {**chosen, **kw}

    @functools.wraps(fn)
    def run(*args: Any, **kw: Any) -> Any:
        return fn(**normalize(args, kw))

    run.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
    run.normalize = normalize  # type: ignore[attr-defined]
    run.groups = groups  # type: ignore[attr-defined]
    return run
