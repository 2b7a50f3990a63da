"""One page section: run its recipe, draw what it returns, record its notebook.

A section's computation is one call of a recipe from ``resviz.recipes``
(``resviz/core.py``). :meth:`Section.run` makes that call (cached and
shared by every session, on the sidebar's device, with the CPU as the fallback),
writes the same call into the section's notebook, and hands the result to whatever
plugged in (:mod:`ui.plugs`: the workshop's lesson step, when its question reads this
recipe), so a lesson's answer is computed from exactly what the section shows.
:meth:`Section.chart` draws a chart from one of the result's frames and writes the
same ``rv.charts`` call into the notebook; the CSV under it is that frame.

    sec = Section(TITLE, S.PER_LAYER, ctx)
    r = sec.run(rv.recipes.gradients.per_layer, depth=depth, width=width, ...)
    sec.chart("line", r, "weights", "gradient_norms", caption=..., x="block", ...)
    sec.download("gradient_flow_per_layer")
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pandas as pd
import streamlit as st
import torch

import resviz as rv
from resviz.core import NOT_SETTINGS, RECIPES, Recipe, Result, recipe_name, settings_of
from resviz.pretrained import PretrainedError
from resviz.settings import Settings

from . import charts, jobs, turns, views
from .cache import LARGE, POLICY
from .notebook import Notebook, literal
from .plugs import PLUGS
from .specs import SEEDS_AUTO, seeds_count

# What the app says where an optional part of the library is not installed: the
# pretrained models' packages (resviz's `pretrained` extra, which the library words as
# `pip install '.[pretrained]'` in a checkout). The app's requirements.txt brings them, so the
# app's fix is to install that file again.
MISSING_EXTRA = (
    "{what} needs the pretrained models' packages (transformers, safetensors): install "
    "them with `pip install -r requirements.txt` in the checkout."
)


def missing_extra(err: BaseException) -> bool:
    """Whether ``err`` says an optional part of the library is not installed
    (:class:`resviz.pretrained.PretrainedError` of kind ``extra``)."""
    return isinstance(err, PretrainedError) and err.kind == "extra"


def say_missing_extra(what: str = "This section") -> None:
    """The one line that stands where a missing optional part would have drawn."""
    st.warning(MISSING_EXTRA.format(what=what), icon=":material/extension_off:")


@dataclass
class Part:
    """What :func:`optional_part` found: ``missing`` once the block stopped at it."""

    missing: bool = False


@contextmanager
def optional_part(what: str = "This section") -> Iterator[Part]:
    """A block that may need an optional part of the library: where the part is not
    installed, the block stops there and :func:`say_missing_extra` draws the one line
    in its place (never a traceback), and the yielded :class:`Part` says so. Every
    other error passes through.

        with optional_part("Measuring this step") as part:
            result, _ = run_recipe(name, settings, device)
        if part.missing: ...
    """
    part = Part()
    try:
        yield part
    except PretrainedError as err:
        if not missing_extra(err):
            raise
        part.missing = True
        say_missing_extra(what)


def sidebar_seeds(fn: Recipe) -> int | None:
    """How many seeds ``fn`` runs at the sidebar's Seeds (None: it takes no seeds)."""
    default = settings_of(fn).get("seeds")
    if default is None:
        return None
    choice = st.session_state.get("seeds", SEEDS_AUTO)
    try:
        return seeds_count(str(choice), int(default))
    except ValueError:
        return int(default)


def _takes_device(fn: Recipe) -> bool:
    return "device" in inspect.signature(fn).parameters


def _run(
    name: str, settings: tuple[tuple[str, Any], ...], device: str
) -> tuple[Result, str | None]:
    fn = RECIPES[name]
    kw = dict(settings)
    if not _takes_device(fn):
        return fn(**kw), None
    return rv.run_with_fallback(lambda d: fn(**kw, device=d), torch.device(device))


@st.cache_data(show_spinner="Computing...", **POLICY)
def run_recipe(
    name: str, settings: tuple[tuple[str, Any], ...], device: str
) -> tuple[Result, str | None]:
    """``RECIPES[name](**settings)`` on ``device`` (the CPU if it fails there), cached by
    its settings: the same settings give the same numbers to every session."""
    return _run(name, settings, device)


@st.cache_data(show_spinner="Computing...", **LARGE)
def run_recipe_large(
    name: str,
    settings: tuple[tuple[str, Any], ...],
    device: str,
    csv_frames: tuple[str, ...] | None = None,
) -> tuple[Result, str | None, dict[str, bytes]]:
    """:func:`run_recipe` for results that can reach megabytes, under the LARGE policy
    (a few entries), with each frame's CSV (those in ``csv_frames``, where given) made
    once beside it (a 1,000 x 1,024 frame takes about a second to write)."""
    result, note = _run(name, settings, device)
    csvs = {
        k: df.to_csv(index=False).encode("utf-8")
        for k, df in result.frames.items()
        if csv_frames is None or k in csv_frames
    }
    return result, note, csvs


@contextmanager
def turn_for(key: str) -> Iterator[None]:
    """A computation's turn on the server's cores (:mod:`ui.turns`): none for a call
    computed lately (its result is cached); otherwise wait in line, the page saying how
    many computations are ahead, and compute once a core is free."""
    if turns.done(key):
        yield
        return
    box: list[Any] = []

    def on_wait(ahead: int) -> None:
        if not box:
            box.append(st.empty())
        box[0].info(turns.waiting_words(ahead), icon=":material/hourglass_top:")

    with turns.TURNS.turn(on_wait):
        if box:
            box[0].empty()
        yield
    turns.mark_done(key)


def with_seeds(fn: Recipe, settings: dict[str, Any]) -> dict[str, Any]:
    """``settings`` with the sidebar's seeds added where ``fn`` takes seeds and the
    page did not set them: every seeds-taking recipe runs as many as the sidebar says."""
    if "seeds" in settings:
        return settings
    n = sidebar_seeds(fn)
    if n is None:
        return settings
    out = dict(settings)
    out["seeds"] = n
    return out


def group_path(cls: type) -> str:
    """How a notebook names a group of settings: ``rv.gradients.Stack`` where the topic
    hands it on, else its module's path (``rv.gradients.settings.Stack``)."""
    import importlib

    module = cls.__module__.removeprefix("resviz.")
    package = module.rsplit(".", 1)[0]
    if getattr(importlib.import_module(f"resviz.{package}"), cls.__name__, None) is cls:
        module = package
    return f"rv.{module}.{cls.__name__}"


def call_code(fn: Recipe, settings: dict[str, Any], var: str = "r") -> str:
    """The notebook line that makes the same call: every setting spelled out, those of
    a group of settings the recipe takes as that group (``rv.gradients.Stack(...)``)."""
    name = recipe_name(fn)
    groups = getattr(fn, "groups", {})
    lines = []
    for default in groups.values():
        inside = [d.name for d in default.declared() if d.name in settings]
        if inside:
            fields = ", ".join(f"{k}={literal(settings[k])}" for k in inside)
            lines.append(f"    {group_path(type(default))}({fields}),\n")
    grouped = {d.name for g in groups.values() for d in g.declared()}
    lines += [f"    {k}={literal(v)},\n" for k, v in settings.items() if k not in grouped]
    return f"{var} = rv.recipes.{name}(\n{''.join(lines)})"


def chart_code(kind: str, frame: str, kw: dict[str, Any]) -> str:
    """The ``rv.charts`` call drawing what the page draws with ``ui.charts.<kind>``."""
    args = "".join(f",\n    {k}={v!r}" for k, v in kw.items())
    return f"rv.charts.{kind}(\n    {frame}{args},\n)"


def significant(df: pd.DataFrame) -> dict[str, Any]:
    """Column formats showing 4 significant digits in every float column of ``df`` (a
    table's default of 4 decimals would print 0 for a loss of 3e-5)."""
    return {
        c: st.column_config.NumberColumn(c, format="%.4g")
        for c in df.columns
        if pd.api.types.is_float_dtype(df[c])
    }


class Section:
    """A section of a page: its recipe runs, charts and notebook."""

    def __init__(self, page_title: str, name: str, device: torch.device | str = "cpu") -> None:
        self.name = name
        self.device = str(device)
        self.notebook = Notebook(page_title, name, st.query_params.to_dict())
        # The CSVs made with a large result (``run(..., large=True)``), by frame.
        self._csvs: tuple[Result | None, dict[str, bytes]] = (None, {})

    def run(
        self,
        fn: Recipe,
        /,
        *groups: Settings,
        var: str = "r",
        large: bool = False,
        csv_frames: tuple[str, ...] | None = None,
        **settings: Any,
    ) -> Result:
        """Run the recipe ``fn`` at ``groups`` (groups of settings it takes, as the page
        drew them) and ``settings`` (by name), record the call in the notebook as
        ``var = rv.recipes...(...)``, and answer the lesson step's question if it reads
        this recipe.

        ``large=True`` for a result that can reach megabytes (a 1,000 x 1,024 matrix):
        it is cached under ``ui.cache.LARGE`` (a few entries, not 64) and its frames'
        CSVs are written once, with it, instead of on every run: every frame's, or
        those in ``csv_frames`` (the ones the page offers from this result; a section
        that draws one seed's maps offers that seed's frames instead)."""
        name = recipe_name(fn)
        if RECIPES.get(name) is not fn:
            raise ValueError(f"{name} is not a registered recipe")
        settings = {**{k: v for g in groups for k, v in g.values().items()}, **settings}
        unknown = set(settings) & NOT_SETTINGS
        if unknown:
            raise ValueError(f"{sorted(unknown)} are not settings")
        settings = with_seeds(fn, settings)
        with turn_for(repr((name, sorted(settings.items()), self.device, large, csv_frames))):
            if large:
                result, note, csvs = run_recipe_large(
                    name, tuple(sorted(settings.items())), self.device, csv_frames
                )
                self._csvs = (result, csvs)
            else:
                result, note = run_recipe(name, tuple(sorted(settings.items())), self.device)
        views.notice(note)
        return self.shown(fn, result, var, **settings)

    def shown(self, fn: Recipe, result: Result, /, var: str = "r", **settings: Any) -> Result:
        """A result of ``fn`` at ``settings`` computed elsewhere (a background run with
        progress, ``ui/jobs.py``): record the same call in the notebook and answer the
        lesson step from it, as :meth:`run` does."""
        settings = with_seeds(fn, settings)
        self.notebook.code(call_code(fn, settings, var))
        PLUGS.shown(fn, result)
        return result

    def background(
        self,
        name: str,
        fn: Recipe,
        settings: dict[str, Any],
        total: int,
        render: Callable[[jobs.Job], None],
        *,
        start_label: str = "Train",
        unit: str = "step",
        blocked: str | None = None,
        finished: Callable[[Result], bool] = lambda r: True,
        stopped: bool = True,
        record_live: bool = False,
        key: Hashable | None = None,
        progress: Callable[[jobs.Report], jobs.Report] | None = None,
    ) -> Result | None:
        """Run ``fn`` at ``settings`` as a background job (:func:`ui.jobs.panel`: Start,
        Stop, Reset, progress over ``total`` units, ``render`` drawing it live), on the
        section's device with the CPU as its fallback, shared by every session that asks
        for the same settings. ``blocked`` (a refusal, e.g. over the memory budget)
        disables Start. Returns the finished run (done, or stopped where ``stopped``)
        once ``finished`` accepts it, recorded as :meth:`shown` (its notebook call; a
        lesson step answers from it); before that the notebook holds the call to run
        there, and None.

        ``record_live=True`` records the finished run inside the live view, just before
        ``render`` draws it, so the notebook cells ``render`` writes (a chart's, a
        table's) follow the call that made ``r``. ``key`` replaces the run's key
        (recipe, settings, device) where a setting must not key it as it is (a user's
        text, keyed by its digest); ``progress(report)`` wraps the job's report before
        the recipe gets it (to show more than the recipe reports)."""
        settings = with_seeds(fn, settings)
        takes_device = _takes_device(fn)

        def work(report: jobs.Report, should_stop: jobs.ShouldStop) -> Result:
            on_report = report if progress is None else progress(report)

            def call(device: Any = None) -> Result:
                on = {"device": device} if takes_device else {}
                return fn(**settings, **on, progress=on_report, should_stop=should_stop)

            if not takes_device:
                return call()
            return rv.run_with_fallback(call, torch.device(self.device))[0]

        def ended(job: jobs.Job) -> bool:
            """Whether ``job`` is a finished run to record and return."""
            ok = job.state == "done" or (stopped and job.state == "stopped")
            return ok and isinstance(job.result, Result) and finished(job.result)

        def live_render(job: jobs.Job) -> None:
            if ended(job):
                self.shown(fn, job.result, **settings)
            render(job)

        if key is None:
            key = (recipe_name(fn), tuple(settings.items()), self.device)
        job = jobs.panel(
            name,
            key,
            work,
            total,
            live_render if record_live else render,
            start_label=start_label,
            unit=unit,
            blocked=blocked,
        )
        if job is not None and ended(job):
            return job.result if record_live else self.shown(fn, job.result, **settings)
        self.code(call_code(fn, settings))
        return None

    def code(self, source: str) -> Section:
        """A notebook cell of our own (chart code the page draws another way)."""
        self.notebook.code(source)
        return self

    def chart(
        self,
        kind: str,
        r: Result,
        frame: str,
        csv: str,
        caption: str | None = None,
        var: str = "r",
        account: str | None = None,
        **kw: Any,
    ) -> None:
        """Draw ``ui.charts.<kind>(r.<frame>, **kw)`` with the frame as ``csv``.csv, and
        write the same ``rv.charts`` call into the notebook; a short ``caption`` under
        it and the full ``account`` folded (:func:`ui.headline.account`)."""
        df: pd.DataFrame = r[frame]
        views.chart(
            getattr(charts, kind)(df, **kw),
            self._csv(r, frame),
            csv,
            caption=caption,
            account=account,
        )
        self.notebook.code(chart_code(kind, f"{var}.{frame}", kw))
        self.notebook.frame(csv, f"{var}.{frame}")

    def table(
        self,
        r: Result,
        frame: str,
        csv: str,
        caption: str | None = None,
        var: str = "r",
        account: str | None = None,
        **kw: Any,
    ) -> None:
        """Show ``r.<frame>`` as a table with its CSV (a short ``caption``, the full
        ``account`` folded); the notebook displays it too."""
        views.table(r[frame], csv, caption=caption, account=account, **kw)
        self.notebook.code(f"{var}.{frame}")
        self.notebook.frame(csv, f"{var}.{frame}")

    def _csv(self, r: Result, frame: str) -> pd.DataFrame | bytes:
        """The frame, or its CSV made once where ``r`` is this section's large result."""
        made, csvs = self._csvs
        return csvs[frame] if r is made and frame in csvs else r[frame]

    def download(self, name: str) -> None:
        """The section's "Reproduce in a notebook" button."""
        self.notebook.download(name)
