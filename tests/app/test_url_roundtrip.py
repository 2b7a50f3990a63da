"""Every widget on every page lives in the URL: it is bound to the URL parameter
named after its setting, and a new session opened with a URL that carries the
values set shows the same values.

The widgets are the ones AppTest finds on each page's default view (sidebar
included), so a widget added later is covered without editing this test. Any
value widget must be URL-bound: Streamlit binds it (``bind="query-params"``, which
only ``ui.params.PageParams`` passes) to the parameter of its key, a setting the
page or the sidebar declares. A widget kind this test cannot set fails it rather
than being skipped. Streamlit writes a bound widget's value to the URL from the
browser, which AppTest has none of: tests/browser/test_url_binding_browser.py sees
the URL change in Chromium, for each kind of widget.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from streamlit.testing.v1.element_tree import (
    Button,
    DownloadButton,
    Element,
    UnknownElement,
    Widget,
)

from resviz.settings import fmt
from tests.app.conftest import PAGE_PATHS
from ui.specs import SHARED
from ui.specs.pages import spec_of

# Widgets that act rather than hold a view setting: they are not in the URL.
ACTIONS = (Button, DownloadButton)
ACTION_TYPES = {"button", "download_button", "form_submit_button", "link_button", "page_link"}


def _page_name(page: str) -> str:
    return page.removeprefix("app_pages/").removesuffix(".py")


# The workshop room's join and open forms (ui/room): a participant's name, the
# presenter's hide-names choice. Deliberately never in a link.
NOT_IN_URL = ("room:",)


def _value_widgets(at) -> dict[str, Element]:
    """Every value-holding widget on the page, by key, in page order (sidebar last)."""
    found: dict[str, Element] = {}
    for node in [*at.main, *at.sidebar]:
        if isinstance(node, ACTIONS) or getattr(node, "type", None) in ACTION_TYPES:
            continue
        if isinstance(node, Widget) or (
            isinstance(node, UnknownElement) and getattr(node.proto, "id", "")
        ):
            assert node.key, f"a {node.type} widget without a key cannot be in the URL"
            found[node.key] = node
    return found


def _other_value(w: Element, options: Sequence[str] | None = None):
    """A valid value different from the widget's current one (a small step, so the
    page stays cheap to draw). ``options``: a choice's values as the page declares them,
    where its box shows them otherwise (a ``format_func``: AppTest lists the labels)."""
    kind = w.type
    if kind == "slider":
        step = w.step
        v = w.value - step if w.value - step >= w.min else w.value + step
        return round(v, 10) if isinstance(w.value, float) else int(v)
    if kind == "number_input":
        return w.value + 1 if w.value + 1 <= w.max else w.value - 1
    if kind in ("selectbox", "radio"):
        declared = [o for o in options or () if o != w.value]
        return (declared or [o for o in w.options if o != w.value])[0]
    if kind in ("toggle", "checkbox"):
        return not w.value
    if kind == "multiselect":
        return w.value[:-1] if w.value else [w.options[0]]
    if kind in ("text_input", "text_area"):
        return "round trip" if w.value != "round trip" else "round trip 2"
    raise AssertionError(f"the URL round-trip test cannot set a {kind} widget: teach it how")


def _bound_to(w: Element) -> str:
    """The URL parameter Streamlit binds the widget to ('' when unbound)."""
    return getattr(w.proto, "query_param_key", "")


def _values(at, keys) -> dict[str, object]:
    widgets = _value_widgets(at)
    return {k: widgets[k].value for k in keys if k in widgets}


def _sections(page: str) -> list[str | None]:
    labels = spec_of(_page_name(page)).sections
    return list(labels) if labels else [None]


CASES = [(page, section) for page in PAGE_PATHS for section in _sections(page)]


@pytest.mark.parametrize(("page", "section"), CASES, ids=[f"{p}-{s}" for p, s in CASES])
def test_every_widget_round_trips_through_the_url(app, page, section):
    """Each section of each page, opened by deep link: every widget it draws."""
    base = {"section": section} if section else {}
    at = app(page, **base).run()
    assert not at.exception
    widgets = _value_widgets(at)
    assert len(widgets) >= 2
    prefix = _page_name(page)
    declared = spec_of(prefix).names | SHARED.names
    unbound = [k for k, w in widgets.items() if not k.startswith(NOT_IN_URL) and _bound_to(w) != k]
    assert not unbound, f"widgets not bound to the URL (use ui.params.PageParams): {unbound}"
    undeclared = [k for k in widgets if not k.startswith(NOT_IN_URL) and k not in declared]
    assert not undeclared, f"bound to parameters no setting declares: {undeclared}"

    # Last widget first: a widget that disables or resets others (a preset, a
    # network choice) then comes after them, and the view they end in is still
    # what the URL must reproduce.
    for key in reversed(list(widgets)):
        if widgets[key].disabled or key.startswith(NOT_IN_URL):
            continue  # checked below, through the URL alone
        w = _value_widgets(at)[key]
        if w.type in ("selectbox", "radio") and len(w.options) < 2:
            continue  # one choice (one lesson): nothing else to set
        setting = spec_of(prefix).param(key)
        target = _other_value(w, setting.options if setting else None)
        w.set_value(target).run()
        assert not at.exception, (key, target)
        now = _value_widgets(at)[key].value
        assert now == target, f"{key}: set {target!r}, the page shows {now!r}"

    final = _values(at, widgets)
    url = {k: fmt(v) for k, v in final.items() if not k.startswith(NOT_IN_URL)}
    fresh = app(page, **base, **url).run()
    assert not fresh.exception
    assert not fresh.warning, [w.value for w in fresh.warning]
    assert _values(fresh, widgets) == final

    # A widget disabled in the default view: its URL value still opens the page.
    for key in [k for k, w in widgets.items() if w.disabled]:
        w = widgets[key]
        target = _other_value(w)
        opened = app(page, **base, **{key: fmt(target)}).run()
        assert not opened.warning, [x.value for x in opened.warning]
        assert _value_widgets(opened)[key].value == target


@pytest.mark.parametrize("page", [p for p in PAGE_PATHS if spec_of(_page_name(p)).sections])
def test_declared_settings_are_the_drawn_widgets(app, page):
    """ui/specs declares exactly the settings the page's sections draw: a lesson or a
    deep link can name each declared one, and no drawn widget is undeclared."""
    spec = spec_of(_page_name(page))
    drawn: set[str] = set()
    for section in spec.sections:
        at = app(page, section=section).run()
        assert not at.exception
        for key in _value_widgets(at):
            if key in spec.names or key not in SHARED.names and not key.startswith(NOT_IN_URL):
                drawn.add(key)
        # A declared section setting is drawn only in its own section.
        own = {p.name for p in spec.params if p.section == section}
        assert own <= drawn
    assert drawn == set(spec.names)
