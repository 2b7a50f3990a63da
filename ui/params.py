"""Widgets whose values live in the URL, so a link reproduces the view.

On a page's first run in a session each widget's value is read from
``st.query_params`` and validated: a value must be what the widget itself could
hold (ASCII digits only, inside the range, on the slider's step, one of the
options). Malformed, out-of-range, off-step, unknown or repeated parameters fall
back to defaults and are listed in one visible warning. Each widget writes its
value back to the URL as soon as it is drawn (a default value is left out), so
a widget can be declared anywhere on the page.

Unknown parameters are judged only once the whole page has run
(:func:`finish_run`, called by the entry point after the page): only then is
every widget declared. A run that ends early (``st.stop()``) judges nothing.

User text reaches the page only through :func:`md_escape`, which renders it as
an inline code span: Markdown draws no link, image, HTML, math, emoji or
directive inside one, where escaping characters cannot stop autolinks
(``www.x.com``, ``http://``, ``mailto:``, e-mail addresses).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import streamlit as st

# Parameters every page may carry (the shared sidebar's).
SHARED = ("device", "seed")
_RUN_KEY = "_params_run"
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:])")
_INT = re.compile(r"[+-]?[0-9]{1,12}")
_FLOAT = re.compile(r"[+-]?(?:[0-9]{1,20}(?:\.[0-9]{0,20})?|\.[0-9]{1,20})(?:[eE][+-]?[0-9]{1,3})?")


def _visible(text: str) -> str:
    """Every character Python deems unprintable (controls, bidi overrides, zero-width
    and other odd spaces, line separators, unassigned) shown as its escape."""
    return "".join(
        ch
        if ch.isprintable()
        else (f"\\u{ord(ch):04x}" if ord(ch) < 0x10000 else f"\\U{ord(ch):08x}")
        for ch in text
    )


def md_escape(text: str, limit: int = 60) -> str:
    """User text made inert for Streamlit markdown: an inline code span.

    Nothing inside a code span becomes a link (autolinks included), an image,
    HTML, math, an emoji or a Streamlit directive. Control and invisible
    characters are shown as ``\\uXXXX``; text beyond ``limit`` characters is cut.
    """
    text = _visible(text)
    cut = len(text) > limit
    if cut:
        text = text[:limit]
    if not text.strip(" "):
        return "(empty)" if not text else f"({len(text)} spaces)"
    # A fence one backtick longer than the longest run inside cannot be closed
    # early; a space pads text that starts or ends with a backtick (CommonMark
    # strips one space from each end).
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text[0] in "` " or text[-1] in "` " else ""
    return f"{fence}{pad}{text}{pad}{fence}" + ("..." if cut else "")


def _md_plain(text: str) -> str:
    """Our own text (never the user's) with Markdown's special characters escaped."""
    return _MD_SPECIAL.sub(r"\\\1", text)


class InvalidParam(ValueError):
    """A parser's refusal. Its message is ours: it never repeats the user's text."""


def _fmt(value: Any) -> str:
    """A value as the URL carries it."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:.10g}"
    if isinstance(value, list | tuple):
        return ",".join(map(_fmt, value))
    return str(value)


def parse_int(s: str, lo: int, hi: int, step: int = 1) -> int:
    """A whole number in ASCII digits, within ``[lo, hi]``, on the grid ``lo + k step``."""
    if not _INT.fullmatch(s):
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
    if len(s) > 40 or not _FLOAT.fullmatch(s):
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


@dataclass
class _Spec:
    name: str
    default: Any
    parse: Callable[[str], Any]
    key: str


def begin_run() -> None:
    """Start collecting this script run's URL-bound widgets (the entry point calls it)."""
    st.session_state[_RUN_KEY] = []


def finish_run() -> None:
    """After a page ran to its end: every widget is declared, so judge the URL's other
    parameters. On the page's first run they are listed in its warning; on every
    run they are removed from the URL. A run cut short by ``st.stop()`` never gets
    here, and a widget it did not reach keeps its parameter for a later run."""
    group: list[PageParams] = st.session_state.pop(_RUN_KEY, None) or []
    owners = [p for p in group if p.owns_url]
    if not owners:
        return
    known = set(SHARED).union(*(p.specs for p in group))
    unknown = sorted(k for k in st.query_params.keys() if k not in known)
    for p in owners:
        if p.fresh:
            for k in unknown:
                p.problem(f"unknown parameter {md_escape(k, 30)} ignored.")
            st.session_state[f"_params_seen:{p.page}"] = True
    for k in unknown:
        del st.query_params[k]


class PageParams:
    """URL-bound widgets for one page. Create it at the top of the page (the
    warning box appears there) and draw widgets through it, anywhere on the page."""

    def __init__(self, page: str, container: Any = None, owns_url: bool = True) -> None:
        self.page = page
        self.owns_url = owns_url
        self.specs: dict[str, _Spec] = {}
        self.problems: list[str] = []
        self._box = (container or st).empty()
        self.fresh = f"_params_seen:{page}" not in st.session_state
        group = st.session_state.get(_RUN_KEY)
        if isinstance(group, list):
            group.append(self)

    # ------------------------------------------------------------- plumbing
    def problem(self, text: str) -> None:
        """Add a line (Markdown; user text through :func:`md_escape`) to the warning."""
        self.problems.append(text)
        self._box.warning(
            "Some link parameters could not be used:\n\n"
            + "\n".join(f"- {p}" for p in self.problems),
            icon="⚠️",
        )

    def _key(self, name: str) -> str:
        return f"{self.page}:{name}"

    def _init(self, name: str, default: Any, parse: Callable[[str], Any]) -> str:
        key = self._key(name)
        self.specs[name] = _Spec(name, default, parse, key)
        if key in st.session_state:
            return key
        value = default
        raw = st.query_params.get_all(name)
        if len(raw) > 1:
            self.problem(f"{md_escape(name)} was given {len(raw)} times; using the default.")
        elif raw:
            try:
                value = parse(raw[0])
            except InvalidParam as exc:
                why = _md_plain(str(exc))
            except (ValueError, TypeError, OverflowError):
                why = "not a valid value"
            else:
                why = None
            if why is not None:
                self.problem(
                    f"{md_escape(name)} = {md_escape(raw[0])} ignored ({why}); "
                    f"using the default {md_escape(_fmt(default))}."
                )
        st.session_state[key] = value
        return key

    def _publish(self, name: str, value: Any) -> Any:
        """Write a drawn widget's value to the URL (leave a default value out)."""
        spec = self.specs[name]
        if value == spec.default:
            if name in st.query_params:
                del st.query_params[name]
        else:
            text = _fmt(value)
            if st.query_params.get_all(name) != [text]:
                st.query_params[name] = text
        return value

    # --------------------------------------------------------------- widgets
    def slider(
        self, label: str, name: str, lo: int, hi: int, default: int, step: int = 1, **kw: Any
    ) -> int:
        key = self._init(name, default, lambda s: parse_int(s, lo, hi, step))
        return self._publish(name, int(st.slider(label, lo, hi, step=step, key=key, **kw)))

    def float_slider(
        self, label: str, name: str, lo: float, hi: float, default: float, step: float, **kw: Any
    ) -> float:
        key = self._init(name, float(default), lambda s: parse_float(s, lo, hi, step))
        value = st.slider(label, float(lo), float(hi), step=float(step), key=key, **kw)
        return self._publish(name, float(value))

    def number(self, label: str, name: str, lo: int, hi: int, default: int, **kw: Any) -> int:
        key = self._init(name, default, lambda s: parse_int(s, lo, hi))
        value = st.number_input(label, min_value=lo, max_value=hi, step=1, key=key, **kw)
        return self._publish(name, int(value))

    @staticmethod
    def _option_parser(opts: list[str]) -> Callable[[str], str]:
        def parse(s: str) -> str:
            if s not in opts:
                raise InvalidParam(f"not one of {', '.join(opts)}")
            return s

        return parse

    def select(self, label: str, name: str, options: Sequence[str], default: str, **kw: Any) -> str:
        opts = list(options)
        key = self._init(name, default, self._option_parser(opts))
        return self._publish(name, str(st.selectbox(label, opts, key=key, **kw)))

    def radio(self, label: str, name: str, options: Sequence[str], default: str, **kw: Any) -> str:
        opts = list(options)
        key = self._init(name, default, self._option_parser(opts))
        return self._publish(name, str(st.radio(label, opts, key=key, horizontal=True, **kw)))

    def toggle(self, label: str, name: str, default: bool, **kw: Any) -> bool:
        def parse(s: str) -> bool:
            low = s.lower()
            if low in ("1", "true", "yes", "on"):
                return True
            if low in ("0", "false", "no", "off"):
                return False
            raise InvalidParam("not true or false")

        key = self._init(name, default, parse)
        return self._publish(name, bool(st.toggle(label, key=key, **kw)))

    def multi_int(
        self,
        label: str,
        name: str,
        options: Sequence[int],
        default: list[int],
        limit: int,
        **kw: Any,
    ) -> list[int]:
        """A multiselect of whole numbers, in the URL as ``1,5,9``."""
        opts = list(options)

        def parse(s: str) -> list[int]:
            parts = [x for x in s.split(",") if x]
            if len(parts) > limit:
                raise InvalidParam(f"at most {limit} values")
            values = [parse_int(x, opts[0], opts[-1]) for x in parts]
            if any(v not in opts for v in values):
                raise InvalidParam("not among the choices")
            return sorted(set(values))

        key = self._init(name, sorted(default), parse)
        value = sorted(st.multiselect(label, opts, key=key, max_selections=limit, **kw))
        return self._publish(name, value)

    def text(self, label: str, name: str, default: str, max_chars: int, **kw: Any) -> str:
        def parse(s: str) -> str:
            if len(s) > max_chars:
                raise InvalidParam(f"longer than {max_chars} characters")
            return s

        key = self._init(name, default, parse)
        return self._publish(name, str(st.text_input(label, key=key, max_chars=max_chars, **kw)))
