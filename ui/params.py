"""Widgets whose values live in the URL, so a link reproduces the view.

Streamlit binds each widget to the URL (``bind="query-params"``): its key is the
setting's name, which is the URL parameter's; it reads the value when a session
opens the page (and when the browser goes back or forward), writes it back on
every change and leaves a default value out. What this module adds is the check
before a widget first reads the URL: a value must be what the widget itself
could hold (ASCII digits only, inside the range, on the slider's step, one of
the options, no longer than the box allows). Streamlit would silently drop some
of those and take others (an off-step number, a truncated text); here they fall
back to the default and are listed in one visible warning, and an accepted
value is written in the form Streamlit reads (``on`` becomes ``true``, a list
``1,3`` becomes ``?layers=1&layers=3``).

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
from typing import TYPE_CHECKING, Any, TypeVar

import streamlit as st
from streamlit.errors import StreamlitAPIException

from .markdown import _md_plain, md_escape
from .plugs import PLUGS
from .st_internals import seed_from_url

if TYPE_CHECKING:  # the specs import the library (and torch): a page's first run does
    from resviz.settings import Settings

    from .specs import PageSpec, Param

G = TypeVar("G", bound="Settings")

# Parameters every page may carry besides its own and the sidebar's: the open section,
# a lesson step's, and a workshop room participant's (ui/room/view.py).
SECTION = "section"
ROUTING = (SECTION, "lesson", "step", "room", "member")
# Streamlit binds each widget to the URL parameter named by its key. Hidden
# sections' widgets keep their values while the user stays on the page: a tab
# switch must not reset them.
BOUND: dict[str, Any] = {"bind": "query-params", "persist_state": "page"}
_RUN_KEY = "_params_run"
_PAGE_KEY = "_params_page"  # the page the last PageParams was drawn for


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
        SHARED.names, *(p.drawn for p in group), *(p.spec.names for p in group)
    )
    unknown = sorted(k for k in st.query_params.keys() if k not in known)
    for p in owners:
        if p.fresh:
            for k in unknown:
                p.problem(f"unknown parameter {md_escape(k, 30)} ignored.")
            st.session_state[f"_params_seen:{p.page}"] = True
    for k in unknown:
        del st.query_params[k]


def _rewrite(name: str, values: list[str] | None) -> None:
    """Set (None: remove) the URL's ``name``, and the value its widget first reads."""
    seed_from_url(name, values)
    try:
        if values is None:
            del st.query_params[name]
        else:
            st.query_params[name] = values if len(values) != 1 else values[0]
    except StreamlitAPIException:
        pass  # still bound to a widget of the last page: Streamlit removes it as stale


def _leave_last_page(page: str) -> None:
    """A widget's key is its setting's name, and session state is the whole app's:
    the Gradient flow page's ``depth`` and the Skip connections page's are one key.
    On arriving at another page, forget the last page's settings (not the sidebar's,
    which every page shares), so a page opens at its defaults or its URL's values,
    as it does in a new session."""
    from .specs import SHARED
    from .specs.pages import spec_of

    last = st.session_state.get(_PAGE_KEY)
    st.session_state[_PAGE_KEY] = page
    if last is None or last == page:
        return
    for name in spec_of(last).names - SHARED.names:
        st.session_state.pop(name, None)
    st.session_state.pop(f"_params_seen:{last}", None)


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
        self.drawn: set[str] = set()  # the settings whose widgets this run drew
        self.problems: list[str] = []
        self._box = (container or st).empty()
        self.fresh = f"_params_seen:{page}" not in st.session_state
        if owns_url and page != "shared":
            _leave_last_page(page)
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

    def _check(
        self,
        name: str,
        default: Any,
        parse: Callable[[str], Any],
        many: bool = False,
        show: Callable[[Any], str] | None = None,
    ) -> str:
        """The key of setting ``name``'s widget (its name: Streamlit binds it to the
        URL parameter of that name), after checking the URL's value for it once a
        session, before the widget reads it: a value the widget could not hold is
        reported and removed (the widget opens at its default); an accepted one is
        written in the form Streamlit reads. ``many``: a list, which the URL may
        carry as one comma-separated value or as repeated parameters. ``show``: how
        Streamlit writes a value in the URL (a choice drawn with a ``format_func``
        is written as its label), when not as :func:`resviz.settings.fmt` does."""
        from resviz.settings import InvalidSetting, fmt

        self.drawn.add(name)
        if name in st.session_state:  # drawn before, or set by a preset or a lesson
            return name
        raw = st.query_params.get_all(name)
        if not raw:
            return name
        if len(raw) > 1 and not many:
            self.problem(f"{md_escape(name)} was given {len(raw)} times; using the default.")
            _rewrite(name, None)
            return name
        try:
            value = parse(",".join(raw))
        except InvalidSetting as exc:
            why = _md_plain(str(exc))
        except (ValueError, TypeError, OverflowError):
            why = "not a valid value"
        else:
            write = show or fmt
            canonical = [write(v) for v in value] if many else [write(value)]
            if raw != canonical:
                _rewrite(name, canonical)
            return name
        shown = ",".join(raw)
        self.problem(
            f"{md_escape(name)} = {md_escape(shown)} ignored ({why}); "
            f"using the default {md_escape(fmt(default))}."
        )
        _rewrite(name, None)
        return name

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
            key = self._check(name, cast(d.default), s.parse)
            kind: Any = st.number_input if s.box else st.slider
            value = kind(s.label, lo, hi, cast(d.default), step=step, key=key, **BOUND, **kw)
            return cast(value)
        if s.kind == "choice":
            opts = [str(o) for o in kw.pop("options", s.options)]
            label = kw.get("format_func")
            shown = {str(label(o)): o for o in opts} if label else {}

            def parse(raw: str) -> str:
                # Streamlit writes a labelled choice as its label; a link may name it.
                return shown[raw] if raw in shown else parse_choice(raw, opts)

            show = (lambda v: str(label(v))) if label else None
            key = self._check(name, d.default, parse, show=show)
            index = opts.index(d.default) if d.default in opts else 0
            if s.radio:
                value = st.radio(s.label, opts, index, key=key, horizontal=True, **BOUND, **kw)
            else:
                value = st.selectbox(s.label, opts, index, key=key, **BOUND, **kw)
            return str(value)
        if s.kind == "bool":
            key = self._check(name, bool(d.default), s.parse)
            return bool(st.toggle(s.label, bool(d.default), key=key, **BOUND, **kw))
        if s.kind == "ints":
            opts = [int(o) for o in kw.pop("options", s.options)]
            cap = int(s.limit or 0)
            default = sorted(d.default)
            key = self._check(name, default, lambda raw: parse_ints(raw, opts, cap), many=True)
            value = st.multiselect(
                s.label, opts, default, key=key, max_selections=cap, **BOUND, **kw
            )
            return sorted(value)
        cap = int(s.limit or 0)
        key = self._check(name, str(d.default), s.parse)
        return str(st.text_input(s.label, str(d.default), key=key, max_chars=cap, **BOUND, **kw))

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
