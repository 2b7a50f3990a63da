"""Widgets whose values live in the URL, so a link reproduces the view.

On a page's first run in a session each widget's value is read from
``st.query_params`` and validated; malformed, out-of-range, unknown or repeated
parameters fall back to defaults and are listed in one visible warning. After
the widgets are drawn, their non-default values are written back to the URL.
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
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:])")


def md_escape(text: str, limit: int = 60) -> str:
    """User text made inert for Streamlit markdown: no links, images, HTML or math."""
    text = text.replace("\x00", "").replace("\n", " ")
    if len(text) > limit:
        text = text[:limit] + "..."
    return _MD_SPECIAL.sub(r"\\\1", text)


@dataclass
class _Spec:
    name: str
    default: Any
    parse: Callable[[str], Any]
    key: str


class PageParams:
    """URL-bound widgets for one page. Create it at the top of the page (the
    warning box appears there), draw widgets through it, then call :meth:`sync`."""

    def __init__(self, page: str, container: Any = None, owns_url: bool = True) -> None:
        self.page = page
        self.owns_url = owns_url
        self.specs: dict[str, _Spec] = {}
        self.problems: list[str] = []
        self._box = (container or st).empty()
        self._fresh = f"_params_seen:{page}" not in st.session_state

    # ------------------------------------------------------------- plumbing
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
            self.problems.append(
                f"{md_escape(name)} was given {len(raw)} times; using the default."
            )
        elif raw:
            try:
                value = parse(raw[0])
            except (ValueError, TypeError, OverflowError) as exc:
                self.problems.append(
                    f"{md_escape(name)} = {md_escape(raw[0])} ignored ({md_escape(str(exc), 120)}); "
                    f"using the default {md_escape(str(default))}."
                )
        st.session_state[key] = value
        return key

    @staticmethod
    def _int_parser(lo: int, hi: int) -> Callable[[str], int]:
        def parse(s: str) -> int:
            s = s.strip()
            if not re.fullmatch(r"[+-]?\d{1,12}", s):
                raise ValueError("not a whole number")
            v = int(s)
            if not lo <= v <= hi:
                raise ValueError(f"outside {lo} to {hi}")
            return v

        return parse

    @staticmethod
    def _float_parser(lo: float, hi: float) -> Callable[[str], float]:
        def parse(s: str) -> float:
            if len(s) > 32:
                raise ValueError("too long")
            v = float(s)
            if not math.isfinite(v):
                raise ValueError("not a finite number")
            if not lo <= v <= hi:
                raise ValueError(f"outside {lo} to {hi}")
            return v

        return parse

    # --------------------------------------------------------------- widgets
    def slider(
        self, label: str, name: str, lo: int, hi: int, default: int, step: int = 1, **kw: Any
    ) -> int:
        key = self._init(name, default, self._int_parser(lo, hi))
        return int(st.slider(label, lo, hi, step=step, key=key, **kw))

    def float_slider(
        self, label: str, name: str, lo: float, hi: float, default: float, step: float, **kw: Any
    ) -> float:
        key = self._init(name, float(default), self._float_parser(lo, hi))
        return float(st.slider(label, float(lo), float(hi), step=float(step), key=key, **kw))

    def number(self, label: str, name: str, lo: int, hi: int, default: int, **kw: Any) -> int:
        key = self._init(name, default, self._int_parser(lo, hi))
        return int(st.number_input(label, min_value=lo, max_value=hi, step=1, key=key, **kw))

    def select(self, label: str, name: str, options: Sequence[str], default: str, **kw: Any) -> str:
        opts = list(options)

        def parse(s: str) -> str:
            if s not in opts:
                raise ValueError(f"not one of {', '.join(opts)}")
            return s

        key = self._init(name, default, parse)
        return str(st.selectbox(label, opts, key=key, **kw))

    def radio(self, label: str, name: str, options: Sequence[str], default: str, **kw: Any) -> str:
        opts = list(options)

        def parse(s: str) -> str:
            if s not in opts:
                raise ValueError(f"not one of {', '.join(opts)}")
            return s

        key = self._init(name, default, parse)
        return str(st.radio(label, opts, key=key, horizontal=True, **kw))

    def toggle(self, label: str, name: str, default: bool, **kw: Any) -> bool:
        def parse(s: str) -> bool:
            low = s.strip().lower()
            if low in ("1", "true", "yes", "on"):
                return True
            if low in ("0", "false", "no", "off"):
                return False
            raise ValueError("not true or false")

        key = self._init(name, default, parse)
        return bool(st.toggle(label, key=key, **kw))

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
            parts = [x for x in s.split(",") if x.strip()]
            if len(parts) > limit:
                raise ValueError(f"at most {limit} values")
            values = [self._int_parser(opts[0], opts[-1])(x) for x in parts]
            return sorted(set(values))

        key = self._init(name, list(default), parse)
        return sorted(st.multiselect(label, opts, key=key, max_selections=limit, **kw))

    def text(self, label: str, name: str, default: str, max_chars: int, **kw: Any) -> str:
        def parse(s: str) -> str:
            if len(s) > max_chars:
                raise ValueError(f"longer than {max_chars} characters")
            return s

        key = self._init(name, default, parse)
        return str(st.text_input(label, key=key, max_chars=max_chars, **kw))

    # ------------------------------------------------------------------ URL
    def sync(self) -> None:
        """Warn about what the URL got wrong (first run only) and write the URL."""
        if self._fresh and self.owns_url:
            known = set(self.specs) | set(SHARED)
            unknown = sorted(k for k in st.query_params.keys() if k not in known)
            for k in unknown:
                self.problems.append(f"unknown parameter {md_escape(k, 30)} ignored.")
            st.session_state[f"_params_seen:{self.page}"] = True
        if self.problems:
            self._box.warning(
                "Some link parameters could not be used:\n\n"
                + "\n".join(f"- {p}" for p in self.problems),
                icon="⚠️",
            )
        for name, spec in self.specs.items():
            value = st.session_state.get(spec.key, spec.default)
            if value == spec.default:
                if name in st.query_params:
                    del st.query_params[name]
            else:
                if isinstance(value, bool):
                    text = str(value).lower()
                elif isinstance(value, list):
                    text = ",".join(map(str, value))
                else:
                    text = str(value)
                if st.query_params.get(name) != text:
                    st.query_params[name] = text
        if self.owns_url:
            for k in list(st.query_params.keys()):
                if k not in self.specs and k not in SHARED:
                    del st.query_params[k]
