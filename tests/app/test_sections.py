"""The section contract: one test per section of every page, at its default view.

Each section is opened by deep link in AppTest and must:

* run with no exception and no error box, and no warning (a clean URL);
* draw a chart or a table (or offer its background run's Start), every chart valid
  against Vega-Lite's schema and readable on a phone (``tests/readable.py``);
* offer its data as a CSV and as a notebook whose code lines fit in 100 characters;
* state its finding where it has one (``tests/findings.py``);
* write into its notebook the very call the page made: every recipe call in the
  notebook's cells, evaluated with the recipes replaced by a recorder, names the
  recipe the page ran with the settings it ran (groups of settings flattened), in the
  order the page ran them. The notebook run in a real kernel, its tables compared with
  the CSVs, is ``test_notebooks.py`` (``make test``).

This is the page check ``make check`` runs: each fact about a page's behaviour once per
section; the numbers are the unit tests'."""

from __future__ import annotations

import ast
from typing import Any

import pytest
from altair.vegalite.v6.schema.core import Root

from tests.app.conftest import SECTION_CASES, SECTION_IDS, page_text, section_params
from tests.findings import missing, section_id
from tests.readable import problems, spec_of
from ui.notebook import WIDTH


def _flat(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """A recipe call's settings as ``Section.run`` flattens them: the groups' fields, then
    the settings by name."""
    from resviz.settings import Settings

    out: dict[str, Any] = {}
    for g in args:
        assert isinstance(g, Settings), f"a positional argument that is not a group: {g!r}"
        out.update(g.values())
    out.update(kwargs)
    return out


def effective(name: str, settings: dict[str, Any]) -> dict[str, Any]:
    """What the recipe ``name`` runs at ``settings``: every field of each group it takes
    (its default where not given), then the other settings."""
    from resviz.core import RECIPES
    from resviz.settings import groups_of

    out: dict[str, Any] = {}
    fn = RECIPES[name]
    for group in (getattr(fn, "groups", None) or groups_of(fn)).values():
        out.update(group.values())
    out.update(settings)
    return out


class _Recorder:
    """Stands for ``rv.recipes``: ``rv.recipes.<topic>.<name>(...)`` records the call."""

    def __init__(self, calls: list[tuple[str, dict[str, Any]]], path: str = "") -> None:
        self._calls, self._path = calls, path

    def __getattr__(self, name: str) -> _Recorder:
        return _Recorder(self._calls, f"{self._path}.{name}".lstrip("."))

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        self._calls.append((self._path, _flat(args, kwargs)))


class _Rv:
    """``rv`` for evaluating a notebook's recipe calls: the library, but its recipes."""

    def __init__(self, calls: list[tuple[str, dict[str, Any]]]) -> None:
        import resviz

        self._rv, self.recipes = resviz, _Recorder(calls)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._rv, name)


def notebook_calls(cells: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """Every ``rv.recipes`` call in the code cells, in order, as (recipe, settings): each
    call's arguments evaluated (literals and groups of settings), the recipe not run."""
    calls: list[tuple[str, dict[str, Any]]] = []
    env = {"rv": _Rv(calls)}
    for cell in cells:
        if cell["cell_type"] != "code" or "rv.recipes." not in cell["source"]:
            continue
        for node in ast.walk(ast.parse(cell["source"])):
            if isinstance(node, ast.Call) and ast.unparse(node.func).startswith("rv.recipes."):
                # Our own generated code (ui/section.py's call_code), never user input.
                eval(compile(ast.Expression(node), "<notebook>", "eval"), env)  # noqa: S307
    return calls


# Sections whose notebook is offered once their background run has ended (its cells
# follow what the run draws): their notebook's call is checked after a short run by
# test_notebooks.py.
NOTEBOOK_AFTER_RUN = {"normalization-Warm-up", "normalization-Stability"}


@pytest.fixture
def page_calls(monkeypatch: pytest.MonkeyPatch) -> tuple[list, list]:
    """The recipe calls a page makes, as the page runs: what ``Section.run`` hands to the
    cache, a background run's settings, and a result the page computed itself and shows
    (``Section.shown`` called by the page); and the notebooks it offers."""
    import ui.jobs
    import ui.notebook
    import ui.section
    from resviz.core import recipe_name

    ran: list[tuple[str, dict[str, Any]]] = []
    notebooks: list[ui.notebook.Notebook] = []
    inside: list[bool] = []  # within Section.run or .background: their own shown()
    Sec = ui.section.Section
    run, large = ui.section.run_recipe, ui.section.run_recipe_large
    sec_run, background, shown = Sec.run, Sec.background, Sec.shown
    download = ui.notebook.Notebook.download

    def run_recipe(name, settings, device):  # noqa: ANN001, ANN202
        ran.append((name, dict(settings)))
        return run(name, settings, device)

    def run_recipe_large(name, settings, device, csv_frames=None):  # noqa: ANN001, ANN202
        ran.append((name, dict(settings)))
        return large(name, settings, device, csv_frames)

    def within(method):  # noqa: ANN001, ANN202
        def wrapped(self, *a, **kw):  # noqa: ANN001, ANN202
            inside.append(True)
            try:
                return method(self, *a, **kw)
            finally:
                inside.pop()

        return wrapped

    def record_background(self, name, fn, settings, *a, **kw):  # noqa: ANN001, ANN202
        ran.append((recipe_name(fn), ui.section.with_seeds(fn, settings)))
        return within(background)(self, name, fn, settings, *a, **kw)

    def record_shown(self, fn, result, /, var="r", **settings):  # noqa: ANN001, ANN202
        if not inside:
            ran.append((recipe_name(fn), ui.section.with_seeds(fn, settings)))
        return shown(self, fn, result, var, **settings)

    def record_download(self, name):  # noqa: ANN001, ANN202
        notebooks.append(self)
        return download(self, name)

    monkeypatch.setattr(ui.section, "run_recipe", run_recipe)
    monkeypatch.setattr(ui.section, "run_recipe_large", run_recipe_large)
    monkeypatch.setattr(Sec, "run", within(sec_run))
    monkeypatch.setattr(Sec, "background", record_background)
    monkeypatch.setattr(Sec, "shown", record_shown)
    monkeypatch.setattr(ui.notebook.Notebook, "download", record_download)
    ui.jobs.REGISTRY.clear()
    yield ran, notebooks
    ui.jobs.REGISTRY.clear()


@pytest.mark.parametrize(("page", "section"), SECTION_CASES, ids=SECTION_IDS)
def test_section_contract(app, page_calls, page: str, section: str | None) -> None:
    ran, notebooks = page_calls
    at = app(page, **section_params(section)).run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert not at.warning, [w.value for w in at.warning]  # a clean URL gives no warning
    assert at.title, "page drew no title"
    # Its default setting shows the section's finding, where it has one.
    started = any(b.key and b.key.endswith(":start") for b in at.button)
    gaps = missing(section_id(page, section), page_text(at), started)
    assert not gaps, gaps
    if page.endswith("workshop.py"):  # the presenter's page: a step, its link and QR code
        assert at.get("image") and at.code, "workshop page drew no link or QR code"
        return
    # A background-run section draws its charts once its run is started.
    assert at.get("vega_lite_chart") or at.dataframe or started, "page drew no chart or table"
    assert at.get("download_button"), "page has no CSV download"
    # Charts are sent without per-rerun schema validation; validate them here, and each
    # reads on a phone: every series drawn named in a legend that fits, titles whole.
    for el in at.get("vega_lite_chart"):
        spec, datasets = spec_of(el)
        Root.validate(spec)
        assert not problems(spec, datasets), problems(spec, datasets)
    # The notebook makes the page's calls (Section.run's and the background run's).
    if section_id(page, section) in NOTEBOOK_AFTER_RUN:
        assert started and not notebooks, "offers its notebook now: leave NOTEBOOK_AFTER_RUN"
        return
    assert notebooks, "the section offers no notebook"
    for nb in notebooks:  # its code lines readable (ui/notebook.py wraps them)
        for cell in nb.cells:
            long = [ln for ln in cell["source"].split("\n") if len(ln) > WIDTH]
            assert cell["cell_type"] != "code" or not long, long
    written = [c for nb in notebooks for c in notebook_calls(nb.cells)]
    assert ran, "the section ran no recipe"
    assert [(n, effective(n, s)) for n, s in written] == [(n, effective(n, s)) for n, s in ran]


def test_the_recorder_sees_groups_and_settings() -> None:
    """The contract's own reader: a notebook cell as ``call_code`` writes it reads back as
    the settings it was written from (groups flattened), and a changed value differs."""
    import resviz as rv
    from ui.section import call_code

    fn = rv.recipes.gradients.per_layer
    settings = {**rv.gradients.Stack(depth=12, act="relu").values(), "seeds": 2, "seed": 4}
    cell = {"cell_type": "code", "source": call_code(fn, settings)}
    assert "rv.gradients.Stack(" in cell["source"]
    assert notebook_calls([cell]) == [("gradients.per_layer", settings)]
    other = {"cell_type": "code", "source": call_code(fn, {**settings, "depth": 13})}
    assert notebook_calls([other]) != [("gradients.per_layer", settings)]
    # A group written with some fields stands for the recipe's defaults in the others.
    some = {"width": 32, "seed": 0}
    cell = {"cell_type": "code", "source": call_code(rv.recipes.gradients.depth_sweep, some)}
    ((name, read),) = notebook_calls([cell])
    assert effective(name, read) == effective(name, some)
    assert effective(name, read)["depth"] == rv.gradients.Stack().depth
