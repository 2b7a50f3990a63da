"""Encoder playground: configure an encoder, run it on your text, look inside, train it.

Each section is one recipe of ``rv.recipes.encoder``; this page draws what it returns
(``ui/section.py``), in the words of ``resviz.encoder.captions``."""

import dataclasses
import hashlib

import pandas as pd
import streamlit as st

import resviz as rv
from resviz.budget import human_bytes, human_count, human_flops
from resviz.encoder import captions as C
from resviz.encoder import headline as H
from resviz.encoder import recipes as E
from resviz.settings import fmt
from resviz.words.headline import Figure
from ui import cache, charts, jobs, views
from ui.budget import budget
from ui.headline import headline, slot
from ui.params import PageParams
from ui.section import Section, chart_code, with_seeds
from ui.shell import page_setup
from ui.specs import encoder_playground as S

PAGE = "encoder_playground"
TITLE = "Encoder playground"
ctx = page_setup(
    TITLE,
    "Type some text, build a transformer encoder with the switches from the other pages, "
    "and look inside it: where each token attends, how the norm of the residual stream "
    "changes from layer to layer, whether the tokens stay distinct, and what a short "
    "training run changes.",
)
p = PageParams(PAGE)
PRESETS = rv.ENCODER_PRESETS
CODE_OPEN = "playground_code_open"  # the code expander's state (a view, not a setting)


def preset_fills_in_the_model() -> None:
    """On the page's first run, a link that names a preset gets that preset's value
    for every model setting it leaves out, and the URL says so (the widgets' own
    defaults are Pre-LN's)."""
    if "preset" in st.session_state:  # a widget's key is its setting's (URL) name
        return
    raw = st.query_params.get_all("preset")
    if len(raw) != 1 or raw[0] not in PRESETS:
        return  # a bad or repeated preset is reported by its widget
    defaults = rv.encoder.Model().values()
    for name, value in rv.encoder.Model.of(PRESETS[raw[0]]).values().items():
        if name not in st.session_state and name not in st.query_params:
            st.session_state[name] = value
            if value != defaults[name]:
                st.query_params[name] = fmt(value)


def apply_preset() -> None:
    """Choosing a preset sets every model widget to the preset's values."""
    model = rv.encoder.Model.of(PRESETS[st.session_state["preset"]])
    for name, value in model.values().items():
        st.session_state[name] = value


preset_fills_in_the_model()
tabs = p.sections()


# The charts' axes, as the page and the notebook's rv.charts calls give them.
STREAM_LINE = dict(x="index", y="stream_norm", color=None, x_int=True,
                   x_title="sublayers from the input", y_title="mean token norm")  # fmt: skip
RATIO_LINE = dict(x="block", y="update_ratio", color="sublayer", x_int=True, log_y=True,
                  y_title="||f(x)|| / ||x|| (log)")  # fmt: skip
RATIO_TRAINED = {**RATIO_LINE, "color": "series"}
BLOCKS = dict(x="block", color="variant", x_int=True, x_title="block (0 = the input)")
DISTANCE_LINE = dict(y="residual", log_y=True, floor=rv.words.FLOAT64_RESOLUTION,
                     y_title="||X - 1 x^T|| / ||X|| (log)", **BLOCKS)  # fmt: skip
COSINE_LINE = dict(y="cosine", y_title="mean cosine between tokens", **BLOCKS)
DISTANCE_TRAINED = dict(x="block", y="residual", color="series", x_int=True, log_y=True,
                        y_title="||X - 1 x^T|| / ||X|| (log)",
                        x_title="block (0 = the input)")  # fmt: skip
LOSS_LINE = dict(x="step", y="loss", color="variant", x_int=True, points=False,
                 y_title="masked-token loss")  # fmt: skip


# ------------------------------------------------------------ shared settings
def draw_settings() -> tuple[rv.encoder.Text, rv.encoder.Model]:
    """The text, tokenizer and model widgets (the same keys in every section): the
    groups of settings every recipe takes."""
    text = p.widget("text")
    corpus = p.draw(rv.encoder.Text, only=("level", "max_len", "vocab"), columns=3)
    p.widget("preset", on_change=apply_preset)
    return dataclasses.replace(corpus, text=text), p.draw(rv.encoder.Model, columns=4)


Shared = tuple[rv.encoder.Text, rv.encoder.Model, rv.encoder.Setup]


def shared_settings(full: bool) -> Shared | None:
    """Draw the shared settings (in full, or folded away) and check them: the settings
    and what they make, or None, with the reason shown, where nothing can run."""
    if full:
        st.subheader("Your text and the model")
        corpus, model = draw_settings()
    else:
        with st.expander("Text and model (shared by every section)"):
            corpus, model = draw_settings()
    heads = C.heads_warning(int(model.d_model), int(model.heads))
    if heads is not None:
        st.warning(heads, icon=":material/warning:")
        return None
    try:
        s = cache.playground_setup(**corpus.values(), **model.values(), seed=ctx.seed)
    except ValueError as exc:
        # The message names widget values only (no user text).
        st.warning(f"This configuration cannot be built: {exc}")
        return None
    if not s.toks.ids:
        st.info(C.NO_TOKENS)
        return None
    if views.check_budget(rv.estimate(s.cfg, batch=1, seq_len=s.T), "This model"):
        return None
    if not full:
        st.caption(C.summary(s))
    return corpus, model, s


def clamped(asked: rv.encoder.Head, block: int, shown: int, n_layers: int, n_heads: int) -> None:
    said = C.clamped_words((asked.layer, asked.head), (block, shown), n_layers, n_heads)
    if said is not None:
        st.caption(said)


# -------------------------------------------------------------------- Model
def model_section(
    corpus: rv.encoder.Text, model: rv.encoder.Model, s: rv.encoder.Setup, top: object = None
) -> None:
    """The tokens, the model card and the code: no forward pass beyond the timing. The
    card's figures and its line are the section's headline, drawn in ``top`` (above the
    settings) where given."""
    sec = Section(TITLE, S.MODEL, ctx.device)
    r = sec.run(E.model, corpus, model, seed=ctx.seed)
    T = r.n_tokens
    if r.truncated:
        st.info(C.truncated_words(r.n_total, T, r.train_tokens))
    caption = C.tokens_caption(T, r.vocab_size, r.n_unknown, s.vocab.level)
    sec.table(r, "tokens", "tokens", caption=caption, height=180)
    c = s.cfg
    count, flops = human_count(r.params), human_flops(r.flops)
    figures = (Figure("Parameters", count),)
    headline(H.model(c.n_layers, c.d_model, count, flops, T, figures), at=top)
    st.subheader("Model card")
    m2, m3, m4 = st.columns(3)
    m2.metric(f"FLOPs per forward ({T} tokens)", flops)
    m3.metric("Activation memory (training, 1 sequence)", human_bytes(r.activation_bytes))
    m4.metric(f"Forward latency on {r.device}", f"{r.latency_ms:.2f} ms")
    sec.table(r, "card", "model_card", caption=C.card_caption(r.device, ctx.seed))
    st.download_button(
        "Download encoder.py",
        r.code.encode("utf-8"),
        file_name="encoder.py",
        mime="text/x-python",
        key="code:encoder",
        on_click="ignore",
        icon=":material/download:",
        help="The PyTorch code for exactly this configuration (torch only).",
    )
    # Drawn only once opened: highlighting the code is the browser's largest cost here.
    box = st.expander(
        "PyTorch code for exactly this configuration", key=CODE_OPEN, on_change="rerun"
    )
    if box.open:
        with box:
            st.code(r.code, language="python")
            st.caption(C.CODE_CAPTION)
    sec.code("print(r.code)  # torch only; build_model() gives rv.build's weights")
    sec.download("playground_model")


# ---------------------------------------------------------------- Attention
def attention_section(
    corpus: rv.encoder.Text, model: rv.encoder.Model, s: rv.encoder.Setup
) -> None:
    st.subheader("Attention maps")
    top = slot()
    shown = p.draw(rv.encoder.Head, columns=2)  # counted from 1; the recipe clamps them
    sec = Section(TITLE, S.ATTENTION, ctx.device)
    r = sec.run(E.attention, corpus, model, shown, seed=ctx.seed)
    clamped(shown, r.block, r.head, r.n_layers, r.n_heads)
    headline(H.attention(r.attention, r.n_tokens, r.block, r.head), at=top)
    shown = r.seeds[0]
    one = r.attention[r.attention["seed"] == shown]
    title = f"Layer {r.block}, head {r.head} (seed {shown})"
    views.chart(
        charts.attention_map(one, r.labels, title=title),
        r.attention,
        "attention",
        account=C.attention_account(r.attention, shown, r.n_tokens),
    )
    sec.code(
        f"one = r.attention[r.attention['seed'] == {shown}]  # one seed's map\n"
        f"rv.charts.attention_map(one, r.labels, title={title!r})"
    ).notebook.frame("attention", "r.attention")
    sec.download("playground_attention")


# ---------------------------------------------------------- Residual stream
def stream_section(corpus: rv.encoder.Text, model: rv.encoder.Model, s: rv.encoder.Setup) -> None:
    st.subheader("The residual stream")
    cfg = s.cfg
    sec = Section(TITLE, S.STREAM, ctx.device)
    r = sec.run(E.stream, corpus, model, seed=ctx.seed)
    headline(H.stream(r.stream))
    account = C.stream_account(cfg.residual, cfg.norm, cfg.norm_position, r.stream, r.seeds)
    # Over seeds the chart draws (index)'s median and band only: block and sublayer
    # are not among its columns then.
    tips = {} if len(r.seeds) > 1 else {"tooltip_cols": ["block", "sublayer"]}
    sec.chart("line", r, "stream", "residual_stream", account=account, **STREAM_LINE, **tips)
    account = C.ratio_account(cfg.residual, r.ratio, r.seeds)
    sec.chart("line", r, "ratio", "update_ratio", account=account, **RATIO_LINE)
    seed_bars(sec, r.share, "r.share", "final_share", C.share_account(r.share, r.seeds[0]))
    sec.download("playground_stream")


def seed_bars(sec: Section, share: pd.DataFrame, var: str, csv: str, account: str) -> None:
    """The first seed's share bars (a bar chart has no band), every seed's CSV."""
    seed = int(share["seed"].iloc[0])
    views.chart(charts.share_bars(share[share["seed"] == seed]), share, csv, account=account)
    sec.code(f"rv.charts.share_bars({var}[{var}['seed'] == {seed}])  # one seed's bars")
    sec.notebook.frame(csv, var)


# ------------------------------------------------------------ Rank collapse


def collapse_section(corpus: rv.encoder.Text, model: rv.encoder.Model, s: rv.encoder.Setup) -> None:
    st.subheader("Rank collapse")
    if s.T < 2:
        st.info("Rank collapse needs at least 2 tokens.")
        return
    sec = Section(TITLE, S.COLLAPSE, ctx.device)
    r = sec.run(E.collapse, corpus, model, seed=ctx.seed)
    headline(H.collapse(r.collapse))
    account = C.collapse_account(r.collapse, r.seeds)
    sec.chart("line", r, "collapse", "rank_collapse", account=account, **DISTANCE_LINE)
    account = C.cosine_account(r.cosine, r.seeds)
    sec.chart("line", r, "cosine", "token_cosine", account=account, **COSINE_LINE)
    sec.download("playground_collapse")


# ----------------------------------------------------------------- Training
def training_section(corpus: rv.encoder.Text, model: rv.encoder.Model, s: rv.encoder.Setup) -> None:
    st.subheader("Train it live")
    train = p.draw(rv.encoder.Training, columns=3)
    # The sidebar's seeds travel with the run (and key it): one run per seed.
    settings = with_seeds(
        E.training, {**corpus.values(), **model.values(), "seed": ctx.seed, **train.values()}
    )
    seeds = list(range(ctx.seed, ctx.seed + int(settings["seeds"])))
    st.markdown(C.training_intro(s.T, seeds, E.BATCH))
    if len(s.train_ids) < 2:
        st.info("Training needs at least 2 tokens of text.")
        return
    sec = Section(TITLE, S.TRAINING, ctx.device)
    # The first seed's first batch (each seed draws its own), under its seed column as
    # the recipe's frame has it.
    first = rv.encoder.training_batch(s, ctx.seed)
    batch = first.assign(seed=ctx.seed)[["seed", *first.columns]]
    views.table(batch, "training_batch", caption=C.batch_caption(batch, ctx.seed, s.T))
    other = next(n for n in rv.encoder.training_variants(s.cfg, train.against) if n != "your model")
    total = E.training_cost(s, train, len(seeds))
    st.caption(f"Cost of this run before it starts: {total.describe()}.")

    def render(job: jobs.Job) -> None:
        curves = job.result.curves if job.result is not None else job.frame
        if curves is None or len(curves) == 0:
            return
        state = "live" if job.live else job.state
        said = C.progress_words(job.step, train.steps, seeds, state, curves["seed"].unique())
        if said is not None:
            st.caption(said)
        for line in C.divergence_words(curves):
            st.warning(line)
        headline(H.loss_race(curves, "your model", other))
        account = C.loss_account(curves, s.cfg.vocab_size, "your model", other)
        views.chart(charts.line(curves, **LOSS_LINE), curves, "training_loss", account=account)

    sec.notebook.md(
        "The same training run as the page's (same variants, steps, learning rate, seed and "
        "batches), from the start: a run stopped early on the page covers fewer steps."
    )
    blocked = budget().check(total, "This training run")
    # Keyed by everything the user set, the text by its digest, not by what it computes
    # to: two texts that tokenize alike must not see or join each other's run.
    digest = hashlib.sha256(corpus.text.encode("utf-8", "surrogatepass")).hexdigest()
    rest = tuple((k, v) for k, v in settings.items() if k != "text")
    r = sec.background(
        "playground_train", E.training, settings, train.steps * len(seeds), render,
        blocked=blocked, key=("playground", digest, rest, E.BATCH, sec.device),
        progress=lambda report: E.progress_over_seeds(report, ctx.seed),
    )  # fmt: skip
    sec.code(BATCH_CODE.format(seed=ctx.seed)).notebook.frame("training_batch", "batch")
    if r is not None:
        trained_views(sec, r)
    sec.download("playground_training")


BATCH_CODE = (
    "batch = r.batch[r.batch['seed'] == {seed}].reset_index(drop=True)  # the first seed's\nbatch"
)
LEGEND_LINE = "rv.charts.legend_columns(rv.charts.line(\n    {frame},{args}\n))"


def legend_line(sec: Section, r: rv.recipes.Result, frame: str, csv: str, caption: str, **kw):  # noqa: ANN201
    """A line chart with its legend in columns (many series), drawn and written into
    the notebook as the same ``rv.charts`` calls."""
    df = r[frame]
    views.chart(rv.charts.legend_columns(charts.line(df, **kw)), df, csv, account=caption)
    args = "".join(f"\n    {k}={v!r}," for k, v in kw.items())
    sec.code(LEGEND_LINE.format(frame=f"r.{frame}", args=args))
    sec.notebook.frame(csv, f"r.{frame}")


def trained_views(sec: Section, r: rv.recipes.Result) -> None:
    """Predictions at masked positions and the views again, on the trained weights."""
    sec.code(chart_code("line", "r.curves", LOSS_LINE)).notebook.frame("training_loss", "r.curves")
    st.subheader("Predictions at masked positions of your text")
    caption = C.predictions_caption(r.predictions)
    sec.table(r, "predictions", "masked_predictions", caption=caption)
    st.subheader("The views again, on the trained models")
    asked = p.draw(rv.encoder.Head, columns=2)
    # A map has no band: the first seed's trained model (its maps are a value of
    # that seed's own result).
    first, seed0 = r.per_seed[0], r.seeds[0]
    n_layers, n_heads = first.attention.shape[:2]
    block, shown = min(asked.layer, n_layers), min(asked.head, n_heads)
    clamped(asked, block, shown, n_layers, n_heads)
    one = rv.encoder.attention_frame(first.attention, r.labels, block, shown)
    title = f"Trained (seed {seed0}): layer {block}, head {shown}"
    views.chart(
        charts.attention_map(one, r.labels, title=title),
        one,
        "attention_trained",
        caption=C.trained_map_caption(r.seeds),
    )
    sec.code(
        f"block, head = {block}, {shown}  # counted from 1\n"
        "first = r.per_seed[0]  # the first seed's own result\n"
        "attention_trained = rv.encoder.attention_frame(first.attention, r.labels, block, head)\n"
        "rv.charts.attention_map(attention_trained, r.labels, "
        f"title=f'Trained (seed {seed0}): layer {{block}}, head {{head}}')"
    ).notebook.frame("attention_trained", "attention_trained")
    account = C.trained_ratio_account(r.seeds)
    legend_line(sec, r, "ratio", "update_ratio_trained", account, **RATIO_TRAINED)
    account = C.trained_collapse_account(r.collapse, r.n_layers, r.seeds)
    legend_line(sec, r, "collapse", "rank_collapse_trained", account, **DISTANCE_TRAINED)
    for k, name in enumerate(r.models, 1):
        share, csv = r[f"share_{k}"], f"final_share_trained_{k}"
        seed_bars(sec, share, f"r.share_{k}", csv, C.share_account(share, seed0, name))


for tab, section in zip(
    tabs,
    (model_section, attention_section, stream_section, collapse_section, training_section),
    strict=True,
):
    if tab.open:
        with tab:
            full = section is model_section
            # The Model section's finding goes above its settings, the others' under
            # their titles (after the folded settings).
            top = slot() if full else None
            shared = shared_settings(full=full)
            if shared is not None:
                section(*shared, **({"top": top} if full else {}))
