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

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import streamlit as st

from .markdown import _md_plain, md_escape
from .plugs import PLUGS
from .specs import (
    SECTION_PARAM,
    InvalidParam,
    PageSpec,
    Param,
    fmt,
    parse_bool,
    parse_choice,
    parse_float,
    parse_int,
    parse_ints,
    parse_text,
)
from .specs import SHARED as SHARED_SPEC
from .specs.pages import spec_of

# Parameters every page may carry (the shared sidebar's, the open section, a lesson
# step's, and a workshop room participant's: ui/room/view.py).
SHARED = (*sorted(SHARED_SPEC.names), SECTION_PARAM, "lesson", "step", "room", "member")
# Hidden sections' widgets keep their values (and URL parameters) while the user
# stays on the page: a tab switch must not reset them.
PERSIST: dict[str, Any] = {"persist_state": "page"}
_RUN_KEY = "_params_run"
_fmt = fmt


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
    # Declared this run, or declared for the page (a hidden section's settings).
    known = set(SHARED).union(*(p.specs for p in group), *(p.spec.names for p in group))
    unknown = sorted(k for k in st.query_params.keys() if k not in known)
    for p in owners:
        if p.fresh:
            for k in unknown:
                p.problem(f"unknown parameter {md_escape(k, 30)} ignored.")
            st.session_state[f"_params_seen:{p.page}"] = True
    for k in unknown:
        del st.query_params[k]


class _Held:
    """A tab held back until the lesson step's prediction is locked in: never open."""

    open = False

    def __init__(self, tab: Any) -> None:
        self._tab = tab

    def __enter__(self) -> Any:
        return self._tab.__enter__()

    def __exit__(self, *exc: object) -> Any:
        return self._tab.__exit__(*exc)


class PageParams:
    """URL-bound widgets for one page. Create it at the top of the page (the
    warning box appears there) and draw widgets through it, anywhere on the page.

    A page declared in ``ui/specs`` takes each widget's default, range, step and
    options from there: pass only the label and the name (values passed as well
    must agree with the declaration, or the page fails loudly). ``sections()``
    draws the page's tabs, bound to the URL's ``section``."""

    def __init__(self, page: str, container: Any = None, owns_url: bool = True) -> None:
        self.page = page
        self.owns_url = owns_url
        self.spec: PageSpec = SHARED_SPEC if page == "shared" else spec_of(page)
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

    def _declared(self, name: str, kind: str, **given: Any) -> dict[str, Any]:
        """The widget's settings: the page's declaration, checked against ``given``."""
        decl: Param | None = self.spec.param(name)
        if decl is None:
            missing = [k for k, v in given.items() if v is None and k != "step"]
            if missing:
                raise ValueError(f"{self.page}:{name} is not declared in ui/specs; pass {missing}")
            return given
        if decl.kind != kind:
            raise ValueError(f"{self.page}:{name} is declared as {decl.kind}, drawn as {kind}")
        out = {}
        for k, v in given.items():
            ref = getattr(decl, k)
            if k == "options":
                ref = list(ref)
                v = None if v is None else list(v)
            if v is not None and ref not in (None, ()) and v != ref and k != "options":
                raise ValueError(f"{self.page}:{name}: {k} {v!r} differs from ui/specs ({ref!r})")
            out[k] = ref if v is None else v
        return out

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

    # -------------------------------------------------------------- sections
    def sections(self) -> list[Any]:
        """The page's sections as tabs; only the open one's ``.open`` is True, and
        only it should compute and draw. The open tab is ``?section=<label>``."""
        labels = list(self.spec.sections)
        if not labels:
            raise ValueError(f"{self.page} declares no sections in ui/specs")
        ready = PLUGS.above_sections(self.page)  # a lesson step, when opened from one
        raw = st.query_params.get_all(SECTION_PARAM)
        if self.fresh and raw and (len(raw) > 1 or raw[0] not in labels):
            shown = raw[0] if len(raw) == 1 else f"given {len(raw)} times"
            self.problem(
                f"section = {md_escape(shown)} ignored (not one of "
                f"{_md_plain(', '.join(labels))}); showing {_md_plain(labels[0])}."
            )
            del st.query_params[SECTION_PARAM]
        tabs = list(
            st.tabs(
                labels,
                key=SECTION_PARAM,
                default=labels[0],
                on_change="rerun",
                bind="query-params",
            )
        )
        return tabs if ready else [_Held(t) for t in tabs]

    # --------------------------------------------------------------- widgets
    def slider(
        self,
        label: str,
        name: str,
        lo: float | None = None,
        hi: float | None = None,
        default: float | None = None,
        step: float | None = None,
        **kw: Any,
    ) -> Any:
        """A slider of whole numbers or of decimals, as ``ui/specs`` declares ``name``
        (an undeclared one: decimals where a bound, default or step is a float)."""
        decl = self.spec.param(name)
        given = (lo, hi, default, step)
        decimals = decl.kind == "float" if decl else any(isinstance(v, float) for v in given)
        kind, cast, parse = ("float", float, parse_float) if decimals else ("int", int, parse_int)
        d = self._declared(name, kind, lo=lo, hi=hi, default=default, step=step)
        lo, hi, step = cast(d["lo"]), cast(d["hi"]), cast(d["step"] or 1)
        key = self._init(name, cast(d["default"]), lambda s: parse(s, lo, hi, step))
        value = st.slider(label, lo, hi, step=step, key=key, **PERSIST, **kw)
        return self._publish(name, cast(value))

    def number(
        self,
        label: str,
        name: str,
        lo: int | None = None,
        hi: int | None = None,
        default: int | None = None,
        **kw: Any,
    ) -> int:
        d = self._declared(name, "int", lo=lo, hi=hi, default=default)
        lo, hi = int(d["lo"]), int(d["hi"])
        key = self._init(name, int(d["default"]), lambda s: parse_int(s, lo, hi))
        value = st.number_input(label, min_value=lo, max_value=hi, step=1, key=key, **PERSIST, **kw)
        return self._publish(name, int(value))

    def _choice(
        self, name: str, options: Sequence[str] | None, default: str | None
    ) -> tuple[list[str], str]:
        """A select box's or radio's options and widget key (one URL check for both)."""
        d = self._declared(name, "choice", options=options, default=default)
        opts = [str(o) for o in d["options"]]
        return opts, self._init(name, d["default"], lambda s: parse_choice(s, opts))

    def select(
        self,
        label: str,
        name: str,
        options: Sequence[str] | None = None,
        default: str | None = None,
        **kw: Any,
    ) -> str:
        opts, key = self._choice(name, options, default)
        return self._publish(name, str(st.selectbox(label, opts, key=key, **PERSIST, **kw)))

    def radio(
        self,
        label: str,
        name: str,
        options: Sequence[str] | None = None,
        default: str | None = None,
        **kw: Any,
    ) -> str:
        opts, key = self._choice(name, options, default)
        value = st.radio(label, opts, key=key, horizontal=True, **PERSIST, **kw)
        return self._publish(name, str(value))

    def toggle(self, label: str, name: str, default: bool | None = None, **kw: Any) -> bool:
        d = self._declared(name, "bool", default=default)
        key = self._init(name, bool(d["default"]), parse_bool)
        return self._publish(name, bool(st.toggle(label, key=key, **PERSIST, **kw)))

    def multi_int(
        self,
        label: str,
        name: str,
        options: Sequence[int] | None = None,
        default: list[int] | None = None,
        limit: int | None = None,
        **kw: Any,
    ) -> list[int]:
        """A multiselect of whole numbers, in the URL as ``1,5,9``. ``options`` may
        narrow the declared ones at run time (they may depend on another setting)."""
        d = self._declared(name, "ints", options=options, default=default, limit=limit)
        opts, cap = [int(o) for o in d["options"]], int(d["limit"])
        key = self._init(name, sorted(d["default"]), lambda s: parse_ints(s, opts, cap))
        value = sorted(st.multiselect(label, opts, key=key, max_selections=cap, **PERSIST, **kw))
        return self._publish(name, value)

    def text(
        self,
        label: str,
        name: str,
        default: str | None = None,
        max_chars: int | None = None,
        **kw: Any,
    ) -> str:
        d = self._declared(name, "text", default=default, limit=max_chars)
        cap = int(d["limit"])
        key = self._init(name, str(d["default"]), lambda s: parse_text(s, cap))
        value = st.text_input(label, key=key, max_chars=cap, **PERSIST, **kw)
        return self._publish(name, str(value))
