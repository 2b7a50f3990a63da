"""Skip connections: build deep stacks with and without shortcuts and measure them.

Each section is one recipe of ``resviz.shortcuts.recipes``; this page draws what it
returns, worded by ``resviz.shortcuts.words`` and ``training_words``."""

from typing import Any

import streamlit as st

import resviz as rv
from resviz.recipes import Result
from resviz.shortcuts import headline as H
from resviz.shortcuts import recipes as R
from resviz.shortcuts import settings as SS
from resviz.shortcuts import training_words as WS
from resviz.shortcuts import words as W
from ui import charts, jobs, views
from ui.budget import budget
from ui.headline import account, headline, slot
from ui.params import PageParams
from ui.section import Section, chart_code, with_seeds
from ui.shell import page_setup
from ui.specs import skip_connections as S

TITLE = "Skip connections"
ctx = page_setup(
    TITLE,
    "A residual block outputs `x + f(x)`: the input passes through unchanged and the "
    "block only adds an update. Build a stack, read its code, and measure what the "
    "shortcut changes: the signal at every layer, the paths through the network, "
    "how well deep stacks train, and what happens when a block is deleted.",
)
p = PageParams("skip_connections")
tabs = p.sections()
dev = str(ctx.device)


# ------------------------------------------------------------------ settings
def settings(full: bool) -> dict[str, Any]:
    """Draw the stack's settings; return them by URL name. ``full``: the whole stack
    (Stack, Signal, Paths: :class:`resviz.shortcuts.Stack`); else the block settings
    the trained stacks take (:class:`resviz.shortcuts.Block`)."""
    v: dict[str, Any] = {}
    if full:
        v["preset"] = p.widget("preset", format_func=preset_label)
    seed_net = v.get("preset") == S.PRESETS[1]
    c1, c2, c3 = st.columns(3)
    with c1:
        if full:
            v["depth"] = p.widget("depth", disabled=seed_net)
            v["width"] = p.widget("width", disabled=seed_net)
        v["act"] = p.widget("act")
        v["init"] = p.widget("init")
    with c2:
        v["mode"] = p.widget("mode")
        # A stack without a shortcut has nothing to join (the trained sections train
        # add in its place, where it does).
        no_join = full and v["mode"] == "none"
        v["join"] = p.widget("join", disabled=no_join)
        if full:
            v["mismatch"] = p.widget("mismatch")
    with c3:
        # Each of these acts under one shortcut only: elsewhere it is drawn disabled,
        # keeping its value (and URL), with a note saying which shortcut it waits for.
        scaled = v["mode"] == "scaled"
        v["alpha"] = p.widget("alpha", disabled=not scaled)
        v["learnable"] = p.widget("learnable", disabled=not scaled)
        if full:
            v["project"] = p.widget("project", disabled=v["mode"] != "concat")
        if notes := W.settings_notes(v["mode"], full):
            st.caption(notes)
    return v


def preset_label(preset: str) -> str:
    """How the Network box names a preset (the URL keeps its value)."""
    if preset == S.PRESETS[1]:
        return "widths " + ", ".join(map(str, S.SEED_WIDTHS))
    return "depth x width (set below)"


def stack_settings() -> SS.Stack | None:
    """The Stack, Signal and Paths settings, or None (with the reason shown) for a
    stack that cannot be built."""
    stack = SS.Stack(**settings(full=True))
    try:
        stack.config()
    except ValueError as exc:
        st.warning(f"This stack cannot be built: {exc}", icon=":material/warning:")
        return None
    return stack


def chart_with_csv(
    sec: Section, kind: str, r: Result, frame: str, data: str, csv: str, account: str, **kw: Any
) -> None:
    """Draw ``r.<frame>`` as ``kind`` and offer ``r.<data>`` (the same numbers, wide) as
    ``csv``.csv, its ``account`` folded under it; the notebook draws the same chart and
    declares the same table."""
    views.chart(getattr(charts, kind)(r[frame], **kw), r[data], csv, account=account)
    sec.code(chart_code(kind, f"r.{frame}", kw))
    sec.notebook.frame(csv, f"r.{data}")


# ------------------------------------------------------------------ Stack
def stack_section() -> None:
    """The block's formula, which blocks got a shortcut, and the generated code."""
    st.subheader("The block")
    top = slot()
    stack = stack_settings()
    if stack is None:
        return
    sec = Section(TITLE, S.STACK, dev)
    r = sec.run(R.stack, stack, seed=ctx.seed)
    headline(H.stack(r.shortcuts), at=top)
    st.latex(r.formula)
    st.markdown(W.STACK_INTRO)
    caption = W.shortcut_table_caption(r, stack.values(), S.SEED_WIDTHS)
    sec.table(r, "shortcuts", "shortcuts", caption=caption)
    st.markdown(W.code_intro(ctx.seed))
    st.code(r.code, language="python")
    sec.code("print(r.formula)  # the block, as LaTeX\nprint(r.code)  # this stack, torch only")
    sec.download("skip_stack")


# ------------------------------------------------------------------ Signal
def signal_section() -> None:
    """Per-layer norm, identity share and cosine at init."""
    st.subheader("Forward signal, layer by layer")
    top = slot()
    stack = stack_settings()
    if stack is None or views.check_budget(
        rv.estimate(stack.config(ctx.seed), batch=256), "This stack"
    ):
        return
    sec = Section(TITLE, S.SIGNAL, dev)
    r = sec.run(R.signal, stack, seed=ctx.seed)
    headline(H.signal(r, stack.mode), at=top)
    sec.chart(
        "line", r, "signal", "forward_signal", account=W.signal_caption(r, stack.values()),
        x="block", y="norm", color="variant", log_y=True, y_title="mean ||x_l|| (log)",
    )  # fmt: skip
    if stack.mode != "none":
        chart_with_csv(
            sec, "line", r, "shares", "terms", "identity_share", W.share_caption(r),
            x="block", y="value", color="measure", y_title="share / cosine",
        )  # fmt: skip
    sec.download("skip_signal")


# ------------------------------------------------------------------ Paths
def paths_section() -> None:
    """The unrolled stack's path lengths."""
    st.subheader("Paths through the stack")
    top = slot()
    stack = stack_settings()
    if stack is None:
        return
    sec = Section(TITLE, S.PATHS, dev)
    r = sec.run(R.paths, stack, seed=ctx.seed)
    headline(H.paths(r.blocks, r.with_shortcut), at=top)
    sec.chart(
        "bars", r, "paths", "path_lengths", account=W.paths_caption(r),
        x="length", y="paths", x_title="path length (branches passed through)",
        y_title="fraction of paths",
    )  # fmt: skip
    sec.download("skip_paths")


# ------------------------------------------------------------------ training
def task_picture(sec: Section, cfg: rv.shortcuts.SpiralStacksConfig, name: str, seeds: int) -> None:
    """The spirals the stacks learn, drawn before any training: the first seed's
    points (each seed draws its own). ``r.per_seed[0].task`` of the section's recipe
    is this frame (the same function, ``resviz.shortcuts.task_frame``): the notebook
    draws and declares that."""
    points = rv.shortcuts.task_frame(cfg, ctx.seed)
    kw = dict(x="x1", y="x2", color="class", title=f"The task: {W.per_arm(cfg.turns)}", height=340)
    views.chart(charts.scatter(points, **kw), points, name, caption=W.task_caption(ctx.seed, seeds))
    sec.code(chart_code("scatter", "r.per_seed[0].task", kw))
    sec.notebook.frame(name, "r.per_seed[0].task")


def stopped_note(sec: Section, r: Result) -> None:
    if W.stopped(r):
        sec.notebook.md(W.STOPPED_NOTE)


def seed_range(n: int) -> tuple[int, ...]:
    """The seeds a section of ``n`` seeds runs: the sidebar's seed and the next ones."""
    return tuple(range(ctx.seed, ctx.seed + n))


CURVE = dict(x="step", color="variant", points=False, height=280)


def progress_curves(job: jobs.Job, csv: str | None, seeds: int) -> None:
    """A live run's curves so far (the final result is drawn outside the panel)."""
    if isinstance(job.result, Result) or job.frame is None or not len(job.frame):
        return
    if seeds > 1:
        st.caption(W.seed_progress(job.step, job.total, seeds, ctx.seed))
    curves = job.frame
    loss = charts.line(curves, y="loss", log_y=True, y_title="training loss (log)", **CURVE)
    if csv:
        views.chart(loss, curves, csv)
    views.altair(charts.line(curves, y="error", y_title="training error", **CURVE), width="stretch")


def degradation_section() -> None:
    """He et al.'s degradation experiment, trained in the background."""
    st.subheader("Degradation: does depth help?")
    top = slot()
    block = SS.Block(**settings(full=False))
    run = p.draw(SS.DegradationRun, columns=4)
    try:
        dcfg = run.config(block)
    except ValueError as exc:
        st.warning(
            f"The experiment cannot run with these settings: {exc}", icon=":material/warning:"
        )
        return
    if block.mode == "none":
        st.caption("Shortcut is set to none; the residual stacks here use add.")
    sec = Section(TITLE, S.DEGRADATION, dev)
    # The sidebar's Seeds: the job runs as many.
    v = with_seeds(R.degradation, {**block.values(), **run.values()})
    n = v["seeds"]
    text, picture = st.columns([3, 2])
    with text:
        st.markdown(WS.degradation_intro(dcfg) + " " + WS.seeds_run_words(seed_range(n)))

    # The four stacks train side by side; the refusal, if any, is shown by the panel below.
    refusal = budget().check(
        rv.budget.combine(
            rv.estimate(c, batch=dcfg.n_points, steps=dcfg.steps)
            for c in dcfg.variants(ctx.seed).values()
        ),
        "This experiment",
    )

    r = sec.background(
        "degradation", R.degradation, {**v, "seed": ctx.seed}, dcfg.steps * n,
        lambda job: progress_curves(job, "degradation_curves", n), blocked=refusal,
    )  # fmt: skip
    with picture:  # beside the text above; its notebook cells read the run's r
        task_picture(sec, dcfg, "spirals", n)
    if r is not None:
        curves = [run.curves for run in r.per_seed]
        headline(H.degradation(curves, r.shallow, r.deep, r.seeds or (ctx.seed,)), at=top)
        degradation_result(sec, r, v)
    sec.download("skip_degradation")


def degradation_result(sec: Section, r: Result, v: dict[str, Any]) -> None:
    """The trained stacks: curves, where each ended, and the cosine at init and trained."""
    sec.chart(
        "line", r, "curves", "degradation_curves", y="loss", log_y=True,
        y_title="training loss (log)", **CURVE,
    )  # fmt: skip
    views.altair(
        charts.line(r.curves, y="error", y_title="training error", **CURVE), width="stretch"
    )
    sec.code(chart_code("line", "r.curves", dict(y="error", y_title="training error", **CURVE)))
    account(WS.degradation_caption(r))
    for warning in W.diverged_words(r):
        st.warning(warning, icon=":material/warning:")
    sec.table(r, "final", "degradation_final", caption=W.final_caption(r))
    stopped_note(sec, r)
    if r.cosine["cosine"].notna().any():
        sec.chart(
            "line", r, "cosine", "cosine_init_vs_trained", account=WS.cosine_caption(r, v),
            x="block", y="cosine", color="series", y_title="cos(shortcut, update)", height=260,
        )  # fmt: skip


# ------------------------------------------------------------------ Lesion
def lesion_section() -> None:
    """Veit et al.'s lesion study, trained in the background."""
    st.subheader("Lesion study: delete one block")
    top = slot()
    block = SS.Block(**settings(full=False))
    run = p.draw(SS.LesionRun, columns=2)
    try:
        lcfg = run.config(block)
    except ValueError as exc:
        st.warning(
            f"The lesion study cannot run with these settings: {exc}", icon=":material/warning:"
        )
        return
    if block.mode == "none":
        st.caption("Shortcut is set to none; the residual stack here uses add.")
    sec = Section(TITLE, S.LESION, dev)
    # The sidebar's Seeds: the job runs as many.
    v = with_seeds(R.lesion, {**block.values(), **run.values()})
    n = v["seeds"]
    text, picture = st.columns([3, 2])
    with text:
        intro = WS.lesion_intro(lcfg, rv.shortcuts.DegradationConfig.turns)
        st.markdown(intro + " " + WS.seeds_run_words(seed_range(n)))

    # The panel shows the refusal itself (with Train disabled): check without showing.
    refusal = budget().check(
        rv.estimate(
            lcfg.variants(ctx.seed)[f"residual, {lcfg.depth} blocks"],
            batch=lcfg.n_points,
            steps=2 * lcfg.steps,
        ),
        "This lesion study",
    )

    r = sec.background(
        "lesion", R.lesion, {**v, "seed": ctx.seed}, lcfg.steps * n,
        lambda job: progress_curves(job, None, n), start_label="Lesion", blocked=refusal,
    )  # fmt: skip
    with picture:  # beside the text above; its notebook cells read the run's r
        task_picture(sec, lcfg, "lesion_spirals", n)
    if r is not None:
        summaries = [run.summary for run in r.per_seed]
        headline(H.lesion(summaries, r.seeds or (ctx.seed,)), at=top)
        sec.chart(
            "line", r, "lesion", "lesion", account=WS.lesion_account(r), x="block",
            y="accuracy", color="variant", y_title="accuracy, block deleted", height=280,
        )  # fmt: skip
        many = "One row per seed and stack." if len(r.per_seed) > 1 else None
        sec.table(r, "summary", "lesion_summary", caption=many)
        stopped_note(sec, r)
    sec.download("skip_lesion")


SECTIONS = (stack_section, signal_section, paths_section, degradation_section, lesion_section)
for tab, section in zip(tabs, SECTIONS, strict=True):
    if tab.open:
        with tab:
            section()
