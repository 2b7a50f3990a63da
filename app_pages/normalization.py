"""Normalization: what LayerNorm, BatchNorm and RMSNorm do, and where the norm sits.

Each section is one recipe of ``resviz.norms.recipes``: the page draws what it
returns and words it with ``resviz.norms.words`` (the training sections with
``resviz.norms.training_words``, the headlines with ``resviz.norms.headline``)."""

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import streamlit as st
import torch

import resviz as rv
from resviz import norms as N
from resviz.core import Recipe, Result
from resviz.norms import headline as H
from resviz.norms import recipes as R
from resviz.norms import training_words as NT
from resviz.norms import words as NW
from resviz.norms.settings import Inputs, PrePost, Stability, Timing, Transform, Warmup
from ui import charts, jobs, views
from ui.budget import budget
from ui.cache import POLICY
from ui.headline import account, headline, slot
from ui.params import PageParams
from ui.section import Section, chart_code, significant, with_seeds
from ui.shell import page_setup
from ui.specs import normalization as S

TITLE = "Normalization"
ctx = page_setup(
    TITLE,
    "What LayerNorm, BatchNorm and RMSNorm do to a batch whose features have very different "
    "scales, and why the norm's place around the residual sum can decide whether a deep "
    "transformer trains. Post-LN (the original Transformer) normalizes after each sum, "
    "`x = LN(x + f(x))`; Pre-LN normalizes the branch's input, `x = x + f(LN(x))`, and once "
    "more after the last block (Xiong et al. 2020). Every number below is computed live from "
    "the settings and seeds on screen.",
)
p = PageParams("normalization")
tabs = p.sections()
dev = str(ctx.device)


def chart_only(sec: Section, kind: str, r: Result, frame: str, **kw: Any) -> None:
    """``ui.charts.<kind>(r.<frame>, **kw)`` with no CSV (:func:`csv` offers it once)."""
    views.altair(getattr(charts, kind)(r[frame], **kw), width="stretch")
    sec.code(chart_code(kind, f"r.{frame}", kw))


def csv(sec: Section, r: Result, frame: str, name: str) -> None:
    """``r.<frame>`` as ``name``.csv; the notebook holds the same frame."""
    views.csv_button(r[frame], name)
    sec.notebook.frame(name, f"r.{frame}")


def one_seed(sec: Section, r: Result) -> tuple[Result, int]:
    """The first seed's own result, for the charts that cannot show a spread
    (heatmaps, histograms, one token's values); the notebook names it ``r0``."""
    sec.code(f"r0 = r.per_seed[0]  # seed {r.seeds[0]}: the charts drawn from one seed")
    return r.per_seed[0], r.seeds[0]


# The input batch, shared by the first three sections: drawn at the top of each (under
# its title and finding), it keeps its values (and its place in the URL) while another
# section is open.
def input_settings() -> Inputs:
    c1, c2, c3, c4 = st.columns(4)  # big and small share the fourth column
    names = ("batch", "tokens", "d", "big", "small")
    values = {}
    for col, name in zip((c1, c2, c3, c4, c4), names, strict=True):
        with col:
            values[name] = p.widget(name)
    return Inputs(**values)


# ------------------------------------------------------------------------ four views
def four_views_section() -> None:
    st.subheader("Same input, four views")
    top = slot()
    inputs = input_settings()
    sec = Section(TITLE, S.FOUR_VIEWS, dev)
    r = sec.run(R.four_views, inputs, seed=ctx.seed)
    r0, first = one_seed(sec, r)
    halves = [x.halves for x in r.per_seed]
    headline(H.four_views(halves, r.seeds), at=top)
    st.markdown(NW.four_views_intro(inputs, first))
    for col, view in zip(st.columns(2) + st.columns(2), N.VIEWS, strict=True):
        one, title = r0.views[r0.views["view"] == view], N.VIEW_TITLES[view]
        chart = charts.grid_heatmap(one, "feature", "token", "value", title=title, height=220)
        with col:
            views.altair(chart, width="stretch")
    sec.code(
        "for view in rv.norms.VIEWS:\n"
        "    display(rv.charts.grid_heatmap(r0.views[r0.views['view'] == view], 'feature', "
        "'token', 'value', title=rv.norms.VIEW_TITLES[view], height=220))"
    )
    csv(sec, r, "views", "norm_views")
    account(NW.four_views_account(halves, r.seeds))
    sec.chart(
        "histograms",
        r0,
        "histograms",
        "norm_histograms",
        account=NW.histograms_account(r.stats, inputs, r.seeds),
        var="r0",
        facet="view",
        sort=list(N.VIEWS),
        # One panel a row, 260 px: a facet keeps its pixel width, and two of 380 px
        # ran past a phone's column (926 px in 358).
        columns=1,
        width=260,
    )
    caption, formats = NW.STATS_CAPTION, significant(r.stats)
    sec.table(r, "stats", "norm_stats", caption=caption, column_config=formats)
    sec.download("normalization_four_views")


# --------------------------------------------------------------- textbook versus torch
GAP = dict(x="token", y="gap", color="what", x_title="token (flat index)", y_title="max |diff|")


def textbook_section() -> None:
    st.subheader("Textbook versus library LayerNorm")
    top = slot()
    inputs = input_settings()
    st.latex(
        r"\text{textbook: } \frac{x-\mu}{s_{n-1}+10^{-6}} \qquad "
        r"\text{torch: } \frac{x-\mu}{\sqrt{\sigma^2+10^{-5}}},\quad "
        r"s_{n-1}=\sigma\sqrt{\tfrac{n}{n-1}}"
    )
    sec = Section(TITLE, S.TEXTBOOK, dev)
    r = sec.run(R.textbook, inputs, seed=ctx.seed)
    measured, fit = [x.measured_max for x in r.per_seed], [x.fit for x in r.per_seed]
    headline(H.textbook(measured, fit, r.seeds, H.textbook_figures(r)), at=top)
    with top:
        st.caption(f"Each number: {NW.seeds_words(r.seeds)}.")
    sec.chart("line", r, "gap", "layernorm_gap", account=NW.textbook_account(r), **GAP)
    sec.download("normalization_textbook_layernorm")


# ------------------------------------------------------------------------ invariances
def invariances_section() -> None:
    st.subheader("Invariances, measured")
    top = slot()
    inputs = input_settings()
    transform = p.draw(Transform, columns=2)
    sec = Section(TITLE, S.INVARIANCES, dev)
    r = sec.run(R.invariances, inputs, transform, seed=ctx.seed)
    tables = [x.table for x in r.per_seed]
    headline(H.invariances(tables, N.INVARIANCE_NORMS, r.seeds), at=top)
    account = NW.invariances_account(tables, N.INVARIANCE_NORMS, r.seeds)
    formats = {n: st.column_config.NumberColumn(n, format="%.2e") for n in N.INVARIANCE_NORMS}
    sec.table(r, "wide", "invariances", account=account, column_config=formats)
    sec.download("normalization_invariances")


# ------------------------------------------------------------------- batch dependence
BATCH_LINE = dict(
    x="feature",
    y="value",
    color="scenario",
    x_title="feature (first 16)",
    y_title="BatchNorm output",
    height=260,
)


def batch_section() -> None:
    st.subheader("BatchNorm's batch dependence")
    sec = Section(TITLE, S.BATCH, dev)
    r = sec.run(R.batch_dependence, seed=ctx.seed)
    r0, first = one_seed(sec, r)
    headline(H.batch(r.summary, r.seeds))
    for col, mode in zip(st.columns(2), ("train", "eval"), strict=True):
        with col:
            title = f"{mode} mode: sample 0, token 0 (seed {first})"
            csv_name = f"batchnorm_{mode}_values"
            sec.chart("line", r0, mode, csv_name, var="r0", title=title, **BATCH_LINE)
    account, formats = NW.batch_account(r), significant(r.summary)
    sec.table(r, "summary", "batchnorm_batch_dependence", account=account, column_config=formats)
    sec.download("normalization_batch_dependence")


# ------------------------------------------------------------------ Pre-LN vs Post-LN
def prepost_section() -> None:
    st.subheader("Post-LN versus Pre-LN at init")
    top = slot()
    encoders = p.draw(PrePost, columns=3)
    st.markdown(H.PREPOST_INTRO)
    sec = Section(TITLE, S.PREPOST, dev)
    r = sec.run(R.prepost_ln, encoders, seed=ctx.seed)
    headline(H.prepost([x.stream for x in r.per_seed], r.seeds, encoders.layers), at=top)
    account(H.prepost_raw_account(r, encoders.layers))
    sec.chart(
        "line",
        r,
        "stream",
        "prepost_stream",
        account=H.prepost_stream_account(r),
        x="block",
        y="sq_norm_per_dim",
        color="variant",
        x_title="block (0 = the input)",
        y_title="||x_l||² / d",
    )
    sec.chart(
        "line",
        r,
        "ratios",
        "last_layer_grad_ratios",
        account=H.prepost_ratios_account(r),
        x="n_layers",
        y="ratio_to_L1",
        color="variant",
        log_x=True,
        x_title="number of layers L (log)",
        y_title="||dL/dW2|| ÷ shallowest's",
    )
    caption, formats = "A row per variant, depth and seed.", significant(r.grads)
    sec.table(r, "grads", "last_layer_grad", caption=caption, column_config=formats)
    sec.download("normalization_prepost")


# ------------------------------------------------------------------ training sections
Draw = Callable[[Result], None]


def training_panel(
    sec: Section, fn: Recipe, run: dict[str, Any], steps: int, draw: Draw, blocked: str | None
) -> None:
    """``fn`` at ``run`` (its settings) as a background run (:meth:`Section.background`),
    ``steps`` a seed, ``draw`` showing it as it goes; a run gone to its end is offered
    as a notebook whose cells follow ``draw``'s."""
    settings = with_seeds(fn, run)
    n = int(settings["seeds"])

    def render(job: jobs.Job) -> None:
        r = job.result if job.result is not None else job.frame
        if not isinstance(r, Result) or not len(r.runs):
            return
        if job.live and n > 1:
            st.caption(NT.seeds_progress_words(r.seeds, n))
        draw(r)
        for words in NT.stopped_words(r.seeds, n) if job.state == "stopped" else ():
            st.caption(words)

    name = fn.__name__  # "warmup", "stability": its buttons' keys and its notebook's name
    kw = dict(blocked=blocked, stopped=False, record_live=True)
    if sec.background(name, fn, settings, steps * n, render, **kw) is not None:
        sec.download(f"normalization_{name}")


# The models of a training section: one table, the same in every seed's result.
MODELS = "r.per_seed[0].models"


def log_lines(y: str, title: str) -> dict[str, Any]:
    return dict(
        x="step", y=y, color="variant", log_y=True, points=False, x_title="step", y_title=title
    )


# ----------------------------------------------------------------------------- warm-up
def warmup_section() -> None:
    st.subheader("Training with and without learning-rate warm-up")
    training = p.draw(Warmup, columns=4)
    variants = N.warmup_models(training.w_layers)
    # Both variants train side by side, twice (with and without warm-up): one refusal,
    # shown by the panel below.
    blocked = budget().check(
        rv.budget.combine(
            rv.estimate(c, batch=16, seq_len=16, steps=2 * training.w_steps)
            for c in variants.values()
        ),
        "This training run",
    )
    st.markdown(NT.warmup_intro(training, variants["Post-LN"]))
    sec = Section(TITLE, S.WARMUP, dev)
    caption = "The two models, the same in every seed."
    views.table(N.variant_table(variants), "warmup_variants", caption=caption)

    def draw(r: Result) -> None:
        found = H.warmup(r.history, r.w_warm)
        if found is not None:
            headline(found)
        lines = log_lines("loss", "cross-entropy (log)")
        sec.chart("line", r, "history", "warmup_training", account=NT.warmup_account(r), **lines)
        sec.table(r, "summary", "warmup_summary", column_config=significant(r.summary))
        sec.notebook.code(MODELS).frame("warmup_variants", MODELS)

    settings = {**training.values(), "seed": ctx.seed}
    training_panel(sec, R.warmup, settings, 2 * training.w_steps, draw, blocked)


# --------------------------------------------------------------------------- stability
# The section's two settings a button away (button key: its settings): its default,
# where the stacks part, and the tutorial notebook's own, as the widgets hold them.
STABILITY_SETTINGS = {
    "stability:use_default": ("Where they part (the default)", S.DEFAULT_STABILITY),
    "stability:use_tutorial": ("As in the tutorial notebook", S.TUTORIAL_STABILITY),
}


def use_settings(values: dict[str, Any]) -> None:
    """Set the Stability widgets to ``values`` (a button's callback: before they draw)."""
    for name, value in values.items():
        st.session_state[name] = value  # a widget's key is its setting's name


def stability_section() -> None:
    st.subheader("Training stability: residual x norm")
    run = p.draw(Stability, only=("s_norm", "s_pos", "s_lr", "s_steps"), columns=4)
    more = p.draw(Stability, only=("s_norms", "s_place"), columns=2)
    t = replace(run, s_norms=more.s_norms, s_place=more.s_place)
    now = t.values()
    for col, (key, (label, values)) in zip(st.columns(2), STABILITY_SETTINGS.items(), strict=True):
        kw = dict(on_click=use_settings, args=(values,), disabled=now == values, width="stretch")
        col.button(label, key=key, **kw)
    st.caption(NT.stability_presets(S.DEFAULT_STABILITY, S.TUTORIAL_STABILITY))
    st.markdown(NT.STABILITY_INTRO)
    sec = Section(TITLE, S.STABILITY, dev)
    models = N.variant_table(N.stability_models(t.s_norm, t.s_pos, t.s_norms, t.s_place))
    views.table(models, "stability_variants")
    no_norm = list(models.loc[models["norm"] == N.NORM_LABELS["none"], "variant"])

    def draw(r: Result) -> None:
        sec.notebook.code(MODELS).frame("stability_variants", MODELS)
        lines = (("loss", "MSE loss (log)"), ("grad_norm", "total gradient norm (log)"))
        for col, (y, title) in zip(st.columns(2), lines, strict=True):
            with col:
                chart_only(sec, "line", r, "history", **log_lines(y, title))
        found = H.stability(r.history, no_norm)
        if found is not None:
            headline(found)
        st.caption(NT.stability_account(r, no_norm, t.s_lr))
        csv(sec, r, "history", "stability_training")
        sec.table(r, "summary", "stability_summary", column_config=significant(r.summary))

    training_panel(sec, R.stability, {**now, "seed": ctx.seed}, t.s_steps, draw, None)


# -------------------------------------------------------------------------------- cost
@st.cache_data(show_spinner="Timing on this device...", **POLICY)
def timed(t_size: str, seed: int, device: str, nonce: int) -> tuple[Result, str | None]:
    """The Cost recipe on ``device`` (the CPU if it fails there), measured again for
    each ``nonce`` ("Measure again")."""
    return rv.run_with_fallback(
        lambda d: R.cost(Timing(t_size=t_size), seed=seed, device=d), torch.device(device)
    )


def cost_section() -> None:
    st.subheader("Cost: LayerNorm versus RMSNorm")
    top = slot()
    t_size = p.widget("t_size")
    # The timing holds its input many times over (RMSNorm's backward most of all): it
    # has its own estimate, and is refused like a model that does not fit.
    refused = views.check_budget(N.norm_timing_cost(*R.cost_size(t_size)), "Timing at this size")
    nonce = st.session_state.setdefault("_norm_timing_nonce", 0)
    again = dict(key="normalization:remeasure", icon=":material/timer:", disabled=bool(refused))
    if st.button("Measure again", **again):
        st.session_state["_norm_timing_nonce"] = nonce = nonce + 1
    if torch.cuda.is_available() and ctx.device.type != "cuda":
        st.caption("A GPU is available: pick it in the sidebar to time it there.")
    if refused:
        return
    r, note = timed(t_size, ctx.seed, dev, nonce)
    views.notice(note)
    sec = Section(TITLE, S.COST, dev)
    sec.shown(R.cost, r, t_size=t_size, seed=ctx.seed)
    # A timing is measured anew by every run: the notebook's numbers are its own, so
    # its CSV is not declared as a frame to compare (tests/app/test_notebooks.py
    # checks its columns only).
    headline(H.cost(r.timing, r.device), at=top)
    bars = dict(x="pass", y="median_ms", color="norm", y_title="median time (ms)", height=260)
    chart = charts.bars(r.timing, **bars)
    views.chart(chart, r.timing, "norm_timing", account=NW.cost_account(r.timing, r.device))
    sec.code(chart_code("bars", "r.timing", bars))
    sec.download("normalization_cost")


SECTIONS: dict[str, Callable[..., None]] = {
    S.FOUR_VIEWS: four_views_section,
    S.TEXTBOOK: textbook_section,
    S.INVARIANCES: invariances_section,
    S.BATCH: batch_section,
    S.PREPOST: prepost_section,
    S.WARMUP: warmup_section,
    S.STABILITY: stability_section,
    S.COST: cost_section,
}
for tab, label in zip(tabs, S.SPEC.sections, strict=True):
    if tab.open:
        with tab:
            SECTIONS[label]()
