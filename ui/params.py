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
from typing import TYPE_CHECKING, Any, TypeVar

import streamlit as st

from .markdown import _md_plain, md_escape
from .plugs import PLUGS

if TYPE_CHECKING:  # the specs import the library (and torch): a page's first run does
    from resviz.settings import Settings

    from .specs import PageSpec, Param

G = TypeVar("G", bound="Settings")

# Parameters every page may carry besides its own and the sidebar's: the open section,
# a lesson step's, and a workshop room participant's (ui/room/view.py).
SECTION = "section"
ROUTING = (SECTION, "lesson", "step", "room", "member")
# Hidden sections' widgets keep their values (and URL parameters) while the user
# stays on the page: a tab switch must not reset them.
PERSIST: dict[str, Any] = {"persist_state": "page"}
_RUN_KEY = "_params_run"


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
    from .specs import SHARED

    known = set(ROUTING).union(
        SHARED.names, *(p.specs for p in group), *(p.spec.names for p in group)
    )
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

    Each widget is drawn from its setting's one declaration (:mod:`resviz.settings`,
    read through the page's spec, ``ui/specs``): kind, label, help, range, step,
    options and default. :meth:`draw` draws a whole group and returns it, ready for
    the recipe; :meth:`widget` draws one setting. ``sections()`` draws the page's
    tabs, bound to the URL's ``section``."""

    def __init__(self, page: str, container: Any = None, owns_url: bool = True) -> None:
        from .specs import SHARED
        from .specs.pages import spec_of

        self.page = page
        self.owns_url = owns_url
        self.spec: PageSpec = SHARED if page == "shared" else spec_of(page)
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
        from resviz.settings import InvalidSetting, fmt

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
            except InvalidSetting as exc:
                why = _md_plain(str(exc))
            except (ValueError, TypeError, OverflowError):
                why = "not a valid value"
            else:
                why = None
            if why is not None:
                self.problem(
                    f"{md_escape(name)} = {md_escape(raw[0])} ignored ({why}); "
                    f"using the default {md_escape(fmt(default))}."
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
            from resviz.settings import fmt

            text = fmt(value)
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
        raw = st.query_params.get_all(SECTION)
        if self.fresh and raw and (len(raw) > 1 or raw[0] not in labels):
            shown = raw[0] if len(raw) == 1 else f"given {len(raw)} times"
            self.problem(
                f"section = {md_escape(shown)} ignored (not one of "
                f"{_md_plain(', '.join(labels))}); showing {_md_plain(labels[0])}."
            )
            del st.query_params[SECTION]
        tabs = list(
            st.tabs(
                labels,
                key=SECTION,
                default=labels[0],
                on_change="rerun",
                bind="query-params",
            )
        )
        return tabs if ready else [_Held(t) for t in tabs]

    # --------------------------------------------------------------- widgets
    def declared(self, name: str) -> Param:
        decl = self.spec.param(name)
        if decl is None:
            raise ValueError(f"{self.page}: no setting {name!r} is declared for this page")
        return decl

    def widget(self, name: str, **kw: Any) -> Any:
        """The declared setting ``name``'s widget, its value read from and written to
        the URL. ``options=`` narrows a choice's declared options at run time (they
        may depend on another setting); other keywords go to the Streamlit widget."""
        from resviz.settings import parse_choice, parse_ints

        d = self.declared(name)
        s = d.setting
        kw.setdefault("help", s.help)
        if s.kind in ("int", "float"):
            cast = int if s.kind == "int" else float
            lo, hi, step = cast(s.lo), cast(s.hi), cast(s.step or 1)
            key = self._init(name, cast(d.default), s.parse)
            if s.box:
                value = st.number_input(
                    s.label, min_value=lo, max_value=hi, step=step, key=key, **PERSIST, **kw
                )
            else:
                value = st.slider(s.label, lo, hi, step=step, key=key, **PERSIST, **kw)
            return self._publish(name, cast(value))
        if s.kind == "choice":
            opts = [str(o) for o in kw.pop("options", s.options)]
            key = self._init(name, d.default, lambda raw: parse_choice(raw, opts))
            draw: Any = st.radio if s.radio else st.selectbox
            extra = {"horizontal": True} if s.radio else {}
            return self._publish(name, str(draw(s.label, opts, key=key, **extra, **PERSIST, **kw)))
        if s.kind == "bool":
            key = self._init(name, bool(d.default), s.parse)
            return self._publish(name, bool(st.toggle(s.label, key=key, **PERSIST, **kw)))
        if s.kind == "ints":
            opts = [int(o) for o in kw.pop("options", s.options)]
            cap = int(s.limit or 0)
            key = self._init(name, sorted(d.default), lambda raw: parse_ints(raw, opts, cap))
            value = st.multiselect(s.label, opts, key=key, max_selections=cap, **PERSIST, **kw)
            return self._publish(name, sorted(value))
        cap = int(s.limit or 0)
        key = self._init(name, str(d.default), s.parse)
        value = st.text_input(s.label, key=key, max_chars=cap, **PERSIST, **kw)
        return self._publish(name, str(value))

    def draw(self, group: type[G], only: Sequence[str] | None = None, columns: int = 0) -> G:
        """The group's widgets (those named in ``only``; the others keep their
        defaults), in ``columns`` columns if given, and the group they set."""
        names = [d.name for d in group.declared() if only is None or d.name in only]
        cols = st.columns(columns) if columns else None
        values = {}
        for i, name in enumerate(names):
            if cols is None:
                values[name] = self.widget(name)
            else:
                with cols[i * columns // len(names)]:
                    values[name] = self.widget(name)
        return group(**values)
