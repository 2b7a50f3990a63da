"""Pretrained models: the measurements of the other pages on real trained transformers.

Each section is one recipe of ``resviz.pretrained.recipes`` (``Section.run``); the page
draws what it returns, worded by ``resviz.pretrained.captions`` and ``.words``."""

from __future__ import annotations

import os

import streamlit as st

from resviz import pretrained as P
from resviz.core import Result
from resviz.pretrained import headline as H
from resviz.pretrained import heal_sections as RH
from resviz.pretrained import recipes as R
from resviz.pretrained.captions import intros as I
from resviz.pretrained.captions import measures as M
from resviz.pretrained.replication.cards import Card
from resviz.pretrained.replication.rules import collapse_value
from resviz.pretrained.stream import heal as HL
from resviz.pretrained.stream import patching as PT
from ui import charts, jobs, views
from ui.headline import headline
from ui.markdown import _md_plain, md_escape
from ui.params import PageParams
from ui.section import Section, chart_code, missing_extra, say_missing_extra, with_seeds
from ui.shell import page_setup
from ui.specs import pretrained as S

TITLE = "Pretrained models"
ctx = page_setup(TITLE, I.PAGE_INTRO)
p = PageParams("pretrained")

demo, ladder = P.demo_model_path(), P.ladder_paths()
# A server can refuse folder paths (a public deployment): RESVIZ_MODEL_FOLDERS=0.
folders_allowed = os.environ.get("RESVIZ_MODEL_FOLDERS", "1").strip() not in ("0", "false", "no")
offered = {S.TINY: P.tiny_gpt2_path(), S.DEMO: demo, S.FOLDER: folders_allowed}
offered |= {name: n in ladder for n, name in S.SIBLINGS.items()}  # the depth ladder's
options = [o for o, ok in offered.items() if ok]

c1, c2 = st.columns([2, 3])
with c1:
    choice = p.widget("model", options=options, help=I.model_help(options))
with c2:
    path = p.widget("path", disabled=choice != S.FOLDER, placeholder="/path/to/a/saved/model")
reading = R.Reading(p.widget("text"))
if choice == S.FOLDER:
    # The budget as it is now (RESVIZ_MAX_MODEL_MB), shared by every session of the
    # server (resviz.pretrained.recipes.loaded).
    st.caption(I.budget_words(P.max_bytes_default()))
if demo is None:
    st.caption(I.MINILM_HINT)
# Every section's recipe takes the model (its path only for a folder); most, the text.
checkpoint = R.Checkpoint(model=choice, path=path).picked()


def fail(err: P.PretrainedError) -> None:
    # Our own words: load() never puts the user's path or text into a message.
    st.error(err.message, icon=":material/block:")


# The model and the text's trace, loaded once per process and shared with every section's
# recipe (resviz.pretrained.recipes.loaded): a bad path or a model over the budget is refused
# here, before any section runs. Missing packages (the `pretrained` extra) are said once, in
# the open section's place, below the lesson step a lesson opens here with.
trace: P.Trace | None = None
extra_missing = False
if choice == S.FOLDER and not path.strip():
    st.info("Type the path of a model folder on this server (or pick a model above).")
else:
    try:
        with st.spinner("Loading the model..."):
            trace = checkpoint.traced(reading)
    except P.PretrainedError as err:
        extra_missing = missing_extra(err)
        if not extra_missing:
            fail(err)
if trace is not None:
    st.caption(I.trace_words(trace))
tabs = p.sections()


def card(c: Card | None) -> None:
    """The replication card: the paper's figure, ours, the verdict (our words only)."""
    if c is None:
        return
    mark = {True: ":material/check_circle:", False: ":material/cancel:", None: ":material/help:"}
    with st.container(border=True):
        st.markdown(f"**Replication card** {mark[c.agrees]}")
        for line in c.markdown_lines():
            st.text(line)


# The charts the background sections draw (their notebooks draw the same).
PATCHING_MAP = dict(x="position", y="block", value="recovered", diverging=True,
                    x_title="position", y_title="x_l patched (block)")  # fmt: skip
HEAL_LINES = dict(x="step", y="held_out_loss", color="variant", x_title="training step",
                  y_title="held-out loss (nats per token)")  # fmt: skip
LADDER_LINES = dict(x="position", y="loss_increase", color="model", log_y=True,
                    x_title="deleted block's place, (b - 1/2) / L",
                    y_title="held-out loss increase (log)", tooltip_cols=["model", "block"])  # fmt: skip


def norms_section() -> None:
    st.subheader("How the stream's norm grows, block by block")
    sec = Section(TITLE, S.NORMS)
    r = sec.run(R.stream_norms, checkpoint, reading, seed=ctx.seed)
    headline(H.norms(r.norms, r.n_layers, float(r.growth)))
    sec.chart(
        "line", r, "norms", "stream_norms", account=M.norms_words(r),
        x="block", y="median_norm", color="variant", log_y=True, y_title="median ||x_l|| (log)",
    )  # fmt: skip
    card(r.card)
    sec.download("pretrained_stream_norms")


def influence_section() -> None:
    st.subheader("How much each block turns the stream")
    sec = Section(TITLE, S.INFLUENCE)
    r = sec.run(R.block_influence, checkpoint, reading, seed=ctx.seed)
    headline(H.influence(r.influence))
    sec.chart(
        "bars", r, "influence", "block_influence", account=M.influence_words(r),
        x="block", y="influence", y_title="1 - cos(x_(l-1), x_l)",
    )  # fmt: skip
    card(r.card)
    sec.download("pretrained_block_influence")


def similarity_section() -> None:
    st.subheader("Every stream state against every other")
    sec = Section(TITLE, S.SIMILARITY)
    r = sec.run(R.layer_similarity, checkpoint, reading, seed=ctx.seed)
    headline(H.similarity(r.similarity, r.n_layers))
    sec.chart(
        "heatmap", r, "similarity", "layer_similarity", account=M.similarity_words(r),
        x="block_b", y="block_a", value="angular", diverging=False, x_title="block",
        y_title="block",
    )  # fmt: skip
    card(r.card)
    sec.download("pretrained_similarity")


def deletion_section() -> None:
    st.subheader("Delete one block at a time")
    n = trace.model.n_layers if trace is not None else 0
    st.caption(I.deletion_intro(n))
    sec = Section(TITLE, S.DELETION)

    def render(job: jobs.Job) -> None:
        r = job.result
        if r is None or r.deletion.empty:
            return
        headline(H.deletion(r.deletion, r.measure))
        views.chart(charts.bars(r.deletion, **deletion_bars(r)), r.deletion, "layer_deletion",
                    account=R.deletion_words(r.deletion, r.measure))  # fmt: skip
        card(r.card)

    r = sec.background(
        "pretrained_deletion", R.layer_deletion,
        {**checkpoint.values(), **reading.values(), "seed": ctx.seed}, n, render,
        start_label="Delete", unit="block", finished=lambda r: not r.deletion.empty,
    )  # fmt: skip
    if r is not None:  # the notebook draws the chart drawn above
        sec.code(chart_code("bars", "r.deletion", deletion_bars(r)))
        sec.notebook.frame("layer_deletion", "r.deletion")
    sec.download("pretrained_deletion")


def deletion_bars(r: Result) -> dict:
    """The deletion chart's arguments: the column the card judges (accuracy kept)."""
    titles = {"accuracy_kept": "accuracy kept (deleted / full)"}
    return dict(x="block", y=r.measure, y_title=titles.get(r.measure, r.measure.replace("_", " ")))


def lens_section() -> None:
    st.subheader("The logit lens: what the stream predicts after each block")
    sec = Section(TITLE, S.LENS)
    r = sec.run(R.logit_lens, checkpoint, reading, seed=ctx.seed)
    if not r.decoder:
        st.info(I.needs_words("lens", r.architecture, folders_allowed))
        return
    headline(H.lens(r.lens, r.settled, lambda t: md_escape(t, 30)))
    sec.chart(
        "line", r, "lens", "logit_lens", account=M.lens_words(r, md_escape),
        x="block", y="answer_prob", color=None, log_y=True, y_title="P(final answer) (log)",
    )  # fmt: skip
    st.dataframe(r.lens, hide_index=True, column_order=R.LENS_COLUMNS)
    sec.code(f"r.lens[{R.LENS_COLUMNS!r}]")
    card(r.card)
    sec.download("pretrained_logit_lens")


def collapse_section() -> None:
    st.subheader("Rank collapse, with and without the shortcuts")
    st.caption(I.COLLAPSE_INTRO)
    sec = Section(TITLE, S.COLLAPSE)
    r = sec.run(R.rank_collapse, checkpoint, reading, seed=ctx.seed)
    headline(H.collapse(r.collapse, r.n_tokens, collapse_value, R.COLLAPSE_FLOOR))
    sec.chart(
        "line", r, "collapse", "rank_collapse", account=R.collapse_words(r),
        x="block", y="residual", color="variant", log_y=True, floor=R.COLLAPSE_FLOOR,
        y_title="distance from rank one (log)",
    )  # fmt: skip
    card(r.card)
    sec.download("pretrained_rank_collapse")


def sinks_section() -> None:
    st.subheader("Attention sinks and massive activations")
    sec = Section(TITLE, S.SINKS)
    r = sec.run(R.attention_sinks, checkpoint, reading, seed=ctx.seed)
    headline(H.sinks(r.sinks, r.massive))
    sec.chart(
        "heatmap", r, "sinks", "attention_sinks", account=M.sinks_words(r, md_escape),
        x="head", y="block", value="first_token_share", diverging=False,
        x_title="head", y_title="block",
    )  # fmt: skip
    card(r.sinks_card)
    sec.chart(
        "line", r, "massive", "massive_activations", account=M.massive_words(r, md_escape),
        x="block", y="ratio", color=None, log_y=True, y_title="max |x| / median |x| (log)",
    )  # fmt: skip
    card(r.massive_card)
    sec.download("pretrained_sinks")


def quote(token: str) -> str:
    """A token as the captions write it: its Python repr, escaped for markdown."""
    return md_escape(repr(token), 30)


def writes_section() -> None:
    st.subheader("Who writes what: each block's direct contribution to one logit")
    c1, c2, c3 = st.columns(3)
    with c1:
        position = p.widget("position")
    with c2:
        token = p.widget("token", placeholder="top prediction")
    with c3:
        versus = p.widget("versus", placeholder="runner-up")
    n_tokens = trace.n_tokens if trace is not None else 0
    if (warning := I.position_warning(position, n_tokens)) is not None:
        st.warning(warning, icon=":material/warning:")
        position = -1
    sec = Section(TITLE, S.WRITES)
    target = R.Target(position=position, token=token, versus=versus)
    r = sec.run(R.logit_attribution, checkpoint, reading, target, seed=ctx.seed)
    headline(H.attribution(r.parts, r.linear))
    if not r.linear:
        st.info(I.nonlinear_words(r))
        sec.chart(
            "bars", r, "parts", "logit_attribution", account=R.attribution_share_words(r, quote),
            x="block", y="share", color="part", y_title="share of the sum before the norm",
        )  # fmt: skip
    else:
        st.caption(I.ATTRIBUTION_INTRO)
        sec.chart(
            "bars", r, "parts", "logit_attribution", account=R.attribution_words(r, quote),
            x="block", y="logit", color="part", y_title="direct contribution to the logit",
        )  # fmt: skip
    if not r.heads.empty:
        value = "logit" if r.linear else "norm"
        sec.chart(
            "heatmap", r, "heads", "logit_attribution_heads", caption=I.HEADS_CAPTION,
            x="head", y="block", value=value, diverging=r.linear, x_title="head",
            y_title="block",
        )  # fmt: skip
    sec.table(r, "parts", "logit_attribution_parts")
    sec.download("pretrained_logit_attribution")


def travels_section() -> None:
    st.subheader("Where the answer travels: patching the stream from a clean prompt")
    if trace is not None and trace.model.unembedding is None:
        st.info(I.needs_words("patching", trace.model.architecture, folders_allowed))
        return
    pair = p.widget("pair")
    # The two boxes are always drawn; they take effect with "my own pair" only.
    own = pair == S.OWN_PAIR
    c1, c2 = st.columns(2)
    with c1:
        typed_clean = p.widget("clean", disabled=not own)
    with c2:
        typed_corrupted = p.widget("corrupted", disabled=not own)
    clean, corrupted = S.Prompts(pair, typed_clean, typed_corrupted).prompts()
    if not own:
        st.caption(I.prompts_words(clean, corrupted, S.OWN_PAIR, md_escape))
    n = trace.model.n_layers + 1 if trace is not None else 0
    st.caption(I.patching_intro(n))
    run_settings = {**checkpoint.values(), "seed": ctx.seed, "clean": clean, "corrupted": corrupted}
    try:  # a bad pair is an error; a pair this model does not flip is what the model does
        PT.setup(checkpoint.loaded(), clean, corrupted)
    except P.PretrainedError as err:
        if err.kind != "answer":
            raise
        st.info(_md_plain(err.message), icon=":material/info:")  # model tokens: inert
        return
    sec = Section(TITLE, S.TRAVELS)

    def render(job: jobs.Job) -> None:
        r = job.result
        if r is None or r.patching.empty:
            return
        headline(H.patching(R.answer_travel(r)))
        views.chart(charts.heatmap(r.patching, **PATCHING_MAP), r.patching, "patching",
                    account=R.patching_words(r, quote))  # fmt: skip

    r = sec.background(
        "pretrained_patching", R.patching, run_settings, n, render,
        start_label="Patch", unit="block", finished=lambda r: not r.patching.empty,
    )  # fmt: skip
    if r is not None:
        sec.code(chart_code("heatmap", "r.patching", PATCHING_MAP))
        sec.notebook.frame("patching", "r.patching")
    sec.download("pretrained_patching")


def heal_section() -> None:
    st.subheader("Delete, then heal: fine-tuning the rest against training from scratch")
    m = trace.model if trace is not None else None
    if m is not None and not m.decoder:
        st.info(I.needs_words("heal", m.architecture, folders_allowed))
        return
    healing = p.draw(RH.Healing, columns=4)
    steps = healing.steps
    d = healing.deletion()
    model = checkpoint.loaded()
    try:  # a deletion the model cannot take is said before any run
        d.check(model)
    except P.PretrainedError as err:
        st.warning(err.message, icon=":material/warning:")
        return
    st.caption(I.heal_intro(d, steps))
    sec = Section(TITLE, S.HEAL)
    v = with_seeds(R.heal, {**checkpoint.values(), **healing.values(), "seed": ctx.seed})

    def render(job: jobs.Job) -> None:
        r = job.result if job.result is not None else job.frame
        if not isinstance(r, Result) or r.healing.empty:
            return
        if job.result is not None:
            headline(H.heal(r.healing, r.deleted))
        views.chart(charts.line(r.healing, **HEAL_LINES), r.healing, "heal",
                    account=RH.heal_words(r.healing, d.label()))  # fmt: skip

    r = sec.background(
        "pretrained_heal", R.heal, v, steps * v["seeds"], render, start_label="Heal",
        blocked=HL.budget_refusal(model),
    )  # fmt: skip
    if r is not None:
        sec.code(chart_code("line", "r.healing", HEAL_LINES))
        sec.notebook.frame("heal", "r.healing")
    sec.download("pretrained_heal")


def ladder_section() -> None:
    st.subheader("Depth ladder: do deeper models tolerate deletion better?")
    st.caption(I.LADDER_INTRO)
    sec = Section(TITLE, S.LADDER)
    paths = P.ladder_paths()
    total = sum(n + 1 for n in paths)

    def render(job: jobs.Job) -> None:
        r = job.result
        if r is None or r.deletion.empty:
            return
        headline(H.ladder(r.depths))
        views.chart(charts.line(r.deletion, **LADDER_LINES), r.deletion, "ladder_deletion",
                    account=RH.ladder_words(r.depths))  # fmt: skip
        views.table(r.depths, "ladder_depths")

    r = sec.background(
        "pretrained_ladder", R.ladder, dict(seed=ctx.seed), total, render,
        start_label="Delete", unit="pass", finished=lambda r: not r.deletion.empty,
        blocked=None if paths else "The depth ladder's weights are not installed here.",
    )  # fmt: skip
    if r is not None:
        sec.code(chart_code("line", "r.deletion", LADDER_LINES))
        sec.notebook.frame("ladder_deletion", "r.deletion")
        sec.code("r.depths")
        sec.notebook.frame("ladder_depths", "r.depths")
    sec.download("pretrained_ladder")


SECTIONS = (
    norms_section, influence_section, similarity_section, deletion_section, lens_section,
    collapse_section, sinks_section, writes_section, travels_section, heal_section, ladder_section,
)  # fmt: skip
for tab, section in zip(tabs, SECTIONS, strict=True):
    if tab.open:
        with tab:
            if extra_missing:
                say_missing_extra()
            elif trace is None and section is not ladder_section:  # the ladder needs none
                st.info("Load a model to see this section.")
            else:
                try:
                    section()
                except P.PretrainedError as err:
                    fail(err)
