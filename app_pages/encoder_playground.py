"""Encoder playground: configure an encoder, run it on your text, look inside, train it.

Each section is one recipe of ``rv.recipes.encoder``; this page draws and words what
it returns (``ui/section.py``)."""

import hashlib
import math

import pandas as pd
import streamlit as st

import resviz as rv
from resviz.budget import human_bytes, human_count, human_flops
from resviz.encoder import headline as H
from resviz.encoder import recipes as E
from resviz.encoder import words as W
from resviz.words.headline import Figure
from ui import cache, charts, jobs, views
from ui.budget import budget
from ui.headline import headline, slot
from ui.params import PageParams
from ui.section import Section, call_code, chart_code, with_seeds
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
    for every model setting it leaves out (the widgets' own defaults are Pre-LN's)."""
    if f"{PAGE}:preset" in st.session_state:
        return
    raw = st.query_params.get_all("preset")
    if len(raw) != 1 or raw[0] not in PRESETS:
        return  # a bad or repeated preset is reported by its widget
    for name, value in rv.encoder.Model.of(PRESETS[raw[0]]).values().items():
        key = f"{PAGE}:{name}"
        if key not in st.session_state and name not in st.query_params:
            st.session_state[key] = value


def apply_preset() -> None:
    """Choosing a preset sets every model widget to the preset's values."""
    model = rv.encoder.Model.of(PRESETS[st.session_state[f"{PAGE}:preset"]])
    for name, value in model.values().items():
        st.session_state[f"{PAGE}:{name}"] = value


preset_fills_in_the_model()
tabs = p.sections()


# ------------------------------------------------------------ shared settings
def draw_settings() -> tuple[rv.encoder.Text, rv.encoder.Model]:
    """The text, tokenizer and model widgets (the same keys in every section): the
    groups of settings every recipe takes."""
    text = p.widget("text")
    c1, c2, c3 = st.columns(3)
    with c1:
        level = p.widget("level")
    with c2:
        max_len = p.widget("max_len")
    with c3:
        vocab = p.widget("vocab")
    p.widget("preset", on_change=apply_preset)
    c1, c2, c3, c4 = st.columns(4)
    with c1:
        layers = p.widget("layers")
        d_model = p.widget("d_model")
        heads = p.widget("heads")
    with c2:
        d_ff = p.widget("d_ff")
        act = p.widget("act")
        dropout = p.widget("dropout")
    with c3:
        norm = p.widget("norm")
        place = p.widget("place")
        pos = p.widget("pos")
    with c4:
        residual = p.widget("residual")
        ffn = p.widget("ffn")
    return (
        rv.encoder.Text(text=text, level=level, max_len=max_len, vocab=vocab),
        rv.encoder.Model(
            layers=layers, d_model=d_model, heads=heads, d_ff=d_ff, act=act, dropout=dropout,
            norm=norm, place=place, pos=pos, residual=residual, ffn=ffn,
        ),
    )  # fmt: skip


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
    d_model, heads = int(model.d_model), int(model.heads)
    if d_model % heads:
        fits = [h for h in rv.encoder.settings.HEAD_CHOICES if d_model % int(h) == 0]
        st.warning(
            f"The number of heads must divide d_model (each head gets d_model / heads "
            f"features): {heads} heads do not divide d_model = {d_model}. Pick "
            f"{', '.join(fits[:-1])} or {fits[-1]} heads, or change d_model.",
            icon=":material/warning:",
        )
        return None
    try:
        s = cache.playground_setup(**corpus.values(), **model.values(), seed=ctx.seed)
    except ValueError as exc:
        # The message names widget values only (no user text).
        st.warning(f"This configuration cannot be built: {exc}")
        return None
    if not s.toks.ids:
        st.info(
            "There are no tokens to run: type some text (words for word-level tokens; "
            "whitespace, null bytes and control characters are dropped)."
        )
        return None
    if views.check_budget(rv.estimate(s.cfg, batch=1, seq_len=s.T), "This model"):
        return None
    if not full:
        st.caption(summary(s))
    return corpus, model, s


def summary(s: rv.encoder.Setup) -> str:
    """One line saying what the folded settings hold (our words and numbers only)."""
    c = s.cfg
    ffn = f"FFN {c.d_ff} ({c.activation})" if c.use_ffn else "no FFN"
    norm = "no norm" if c.norm == "none" else f"{c.norm} norm, {c.norm_position}"
    return (
        f"{s.T} {s.vocab.level}-level tokens of your text, vocabulary of {len(s.vocab)}; "
        f"{c.n_layers} layer(s), d_model {c.d_model}, {c.n_heads} head(s), {ffn}, {norm}, "
        f"residual {'on' if c.residual else 'off'}, {c.positional} positions, first seed "
        f"{c.seed}."
    )


def head_settings() -> rv.encoder.Head:
    """The layer and head sliders (counted from 1; a recipe clamps them to the model)."""
    return p.draw(rv.encoder.Head, columns=2)


def clamped(asked: rv.encoder.Head, block: int, shown: int, n_layers: int, n_heads: int) -> None:
    if (block, shown) != (asked.layer, asked.head):
        st.caption(
            f"This model has {n_layers} layer(s) and {n_heads} head(s): showing layer "
            f"{block}, head {shown}."
        )


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
        st.info(
            f"The text has {r.n_total:,} tokens: the views use the first {T}; "
            f"training reads the first {r.train_tokens:,}."
        )
    sec.table(
        r,
        "tokens",
        "tokens",
        caption=f"{T} tokens, vocabulary of {r.vocab_size} built from your text (ids 0-2 "
        f"are [PAD], [UNK], [MASK]); {r.n_unknown} shown token(s) fell outside it and "
        "became [UNK]. "
        + (
            "Word level: lower-cased runs of letters and digits, each punctuation mark a "
            "token of its own."
            if s.vocab.level == "word"
            else "Character level: one token per character, every run of whitespace one space."
        ),
        height=180,
    )
    c = s.cfg
    count, flops = human_count(r.params), human_flops(r.flops)
    figures = (Figure("Parameters", count),)
    headline(H.model(c.n_layers, c.d_model, count, flops, T, figures), at=top)
    st.subheader("Model card")
    m2, m3, m4 = st.columns(3)
    m2.metric(f"FLOPs per forward ({T} tokens)", flops)
    m3.metric("Activation memory (training, 1 sequence)", human_bytes(r.activation_bytes))
    m4.metric(f"Forward latency on {r.device}", f"{r.latency_ms:.2f} ms")
    sec.table(
        r,
        "card",
        "model_card",
        caption="Parameters are counted exactly; FLOPs count 2 per multiply-add in every linear "
        "layer plus attention's two T x T products; activation memory is an estimate, from the "
        "layer shapes, of what autograd keeps for a backward pass. Latency is a timing on "
        f"this server's {r.device}, which others share, taken when these settings were "
        "computed and kept with them. No count here depends on the seed, so this section "
        f"runs one (the sidebar's Seeds does not apply); the code builds seed {ctx.seed}'s "
        "weights.",
    )
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
            st.caption(
                "torch only. `build_model()` gives the same initial weights as this page "
                "(same seed, same modules in the same order); the module names match "
                "`rv.build`, so state dicts load either way. A test runs this code and "
                "compares the outputs."
            )
    sec.code("print(r.code)  # torch only; build_model() gives rv.build's weights")
    sec.download("playground_model")


# ---------------------------------------------------------------- Attention
def attention_section(
    corpus: rv.encoder.Text, model: rv.encoder.Model, s: rv.encoder.Setup
) -> None:
    st.subheader("Attention maps")
    top = slot()
    shown = head_settings()
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
        account="Rows are queries, columns keys; each row sums to 1. A map has no band: "
        f"this is seed {shown}'s (the CSV holds every seed's). "
        + W.attention_spread_words(r.attention, shown, r.n_tokens)
        + " Labels are position:token, so repeated words stay apart.",
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
    bands = rv.words.band_words(r.seeds)
    many = len(r.seeds) > 1
    sec.chart(
        "line",
        r,
        "stream",
        "residual_stream",
        account="The norm of the stream after each sublayer. "
        + rv.encoder.words.encoder_stream_rule(cfg.residual, cfg.norm, cfg.norm_position)
        + " "
        + W.stream_norm_words(r.stream)
        + " "
        + bands,
        x="index",
        y="stream_norm",
        color=None,
        x_int=True,
        x_title="sublayers from the input",
        y_title="mean token norm",
        # Over seeds the chart draws (index)'s median and band only: block and
        # sublayer are not among its columns then.
        **({} if many else {"tooltip_cols": ["block", "sublayer"]}),
    )
    nudge = (
        "With residuals the stream goes on as x + f(x): a ratio below 1 means the sublayer "
        "nudges the stream rather than replacing it. "
        if cfg.residual
        else "Without residuals each sublayer's output replaces the stream. "
    )
    sec.chart(
        "line",
        r,
        "ratio",
        "update_ratio",
        account="How big each sublayer's output f(x) is next to the stream x entering it "
        "(mean over tokens of ||f(x)|| / ||x||). "
        + nudge
        + W.update_ratio_words(r.ratio)
        + " "
        + bands,
        x="block",
        y="update_ratio",
        color="sublayer",
        x_int=True,
        log_y=True,
        y_title="||f(x)|| / ||x|| (log)",
    )
    shown = r.seeds[0]
    one = r.share[r.share["seed"] == shown]
    views.chart(
        charts.share_bars(one),
        r.share,
        "final_share",
        account=f"Bars: seed {shown}'s (the CSV holds every seed's). " + W.share_words(r.share),
    )
    sec.code(
        f"rv.charts.share_bars(r.share[r.share['seed'] == {shown}])  # one seed's bars"
    ).notebook.frame("final_share", "r.share")
    sec.download("playground_stream")


# ------------------------------------------------------------ Rank collapse
COLLAPSE_AXES = dict(x="block", color="variant", x_int=True, x_title="block (0 = the input)")


def collapse_section(corpus: rv.encoder.Text, model: rv.encoder.Model, s: rv.encoder.Setup) -> None:
    st.subheader("Rank collapse")
    if s.T < 2:
        st.info("Rank collapse needs at least 2 tokens.")
        return
    sec = Section(TITLE, S.COLLAPSE, ctx.device)
    r = sec.run(E.collapse, corpus, model, seed=ctx.seed)
    collapse = r.collapse
    headline(H.collapse(collapse))
    floor = rv.words.FLOAT64_RESOLUTION
    hidden = not collapse["residual"].map(math.isfinite).all()
    under = collapse["residual"].abs().lt(floor).any()
    sec.chart(
        "line",
        r,
        "collapse",
        "rank_collapse",
        account="Distance of the token matrix X from the nearest matrix whose rows are all "
        "one vector (rank one, 1 x^T), after each layer, at init. Dong et al. (2021) show "
        "that pure attention without shortcuts pulls the tokens towards one vector, doubly "
        "exponentially in depth, and that shortcuts counter it. "
        + (
            f"Triangles at the bottom mark values {rv.words.resolution_words(floor)}: each "
            "model runs in float64, and a distance that small is rounding, not a measurement. "
            if under
            else ""
        )
        + ("Triangles also mark values that are not finite. " if hidden else "")
        + W.collapse_words(collapse)
        + " "
        + rv.words.band_words(r.seeds),
        y="residual",
        log_y=True,
        floor=floor,
        y_title="||X - 1 x^T|| / ||X|| (log)",
        **COLLAPSE_AXES,
    )
    sec.chart(
        "line",
        r,
        "cosine",
        "token_cosine",
        account="The same comparison seen as similarity: a mean cosine of 1 means every "
        "token vector points the same way. "
        + W.cosine_words(r.cosine)
        + " "
        + rv.words.band_words(r.seeds),
        y="cosine",
        y_title="mean cosine between tokens",
        **COLLAPSE_AXES,
    )
    sec.download("playground_collapse")


# ----------------------------------------------------------------- Training
def training_section(corpus: rv.encoder.Text, model: rv.encoder.Model, s: rv.encoder.Setup) -> None:
    st.subheader("Train it live")
    cfg, T = s.cfg, s.T
    train = p.draw(rv.encoder.Training, columns=3)
    steps = train.steps
    # The sidebar's seeds travel with the run (and key it): one run per seed.
    run_settings = with_seeds(
        E.training,
        {**corpus.values(), **model.values(), "seed": ctx.seed, **train.values()},
    )
    n_seeds = int(run_settings["seeds"])
    seeds = list(range(ctx.seed, ctx.seed + n_seeds))
    variants = rv.encoder.training_variants(cfg, train.against)
    start = (
        f"Both models start from seed {ctx.seed} and see the same {E.BATCH}-window batches."
        if n_seeds == 1
        else f"One run per seed ({rv.words.seeds_label(seeds)}), one after another: in each, "
        f"both models start from that seed and see the same {E.BATCH}-window batches."
    )
    st.markdown(
        f"A tiny BERT-style task on your text: windows of {T} tokens, each token hidden "
        f"behind [MASK] with probability 0.15 (at least one per window), the loss is the "
        f"cross-entropy of guessing the hidden ones. {start}"
    )
    if len(s.train_ids) < 2:
        st.info("Training needs at least 2 tokens of text.")
        return
    sec = Section(TITLE, S.TRAINING, ctx.device)
    # The first seed's first batch (each seed draws its own), under its seed column as
    # the recipe's frame has it.
    first = rv.encoder.training_batch(s, ctx.seed)
    batch = first.assign(seed=ctx.seed)[["seed", *first.columns]]
    hidden = int(batch["n_masked"].sum())
    views.table(
        batch,
        "training_batch",
        caption=f"The first batch of seed {ctx.seed}, as the models see it: {len(batch)} "
        f"windows of your text with {hidden} of their {len(batch) * T} tokens "
        f"({rv.format_number(100 * hidden / (len(batch) * T))}%) hidden behind [MASK]; the "
        "loss asks for the hidden ones.",
    )
    total = rv.budget.combine(
        rv.estimate(c, batch=E.BATCH, seq_len=T, steps=steps * n_seeds) for c in variants.values()
    )
    st.caption(f"Cost of this run before it starts: {total.describe()}.")
    blocked = budget().check(total, "This training run")
    device = ctx.device
    # Keyed by everything the user set, not by what it computes to: the text itself
    # (by digest) and every tokenizer, model and training setting. Two sessions whose
    # different texts tokenize to the same ids must not see or join each other's run.
    key = (
        "playground",
        hashlib.sha256(corpus.text.encode("utf-8", "surrogatepass")).hexdigest(),
        tuple((k, v) for k, v in run_settings.items() if k != "text"),
        E.BATCH,
        str(device),
    )

    def work(report, should_stop):  # noqa: ANN001, ANN202 - jobs.Work
        return E.training(
            **run_settings,
            device=device,
            progress=so_far(report, ctx.seed),
            should_stop=should_stop,
        )

    def render(job: jobs.Job) -> None:
        curves = job.result.curves if job.result is not None else job.frame
        if curves is None or len(curves) == 0:
            return
        if job.live and n_seeds > 1:
            k = min(job.step // max(steps, 1), n_seeds - 1)
            st.caption(
                f"Seed {seeds[k]} ({k + 1} of {n_seeds}): step {job.step - k * steps} of "
                f"{steps}; the chart holds the seeds run so far."
            )
        elif n_seeds > 1 and job.state == "done":
            st.caption(f"{n_seeds} seeds x {steps} steps: {n_seeds * steps} steps in all.")
        elif n_seeds > 1:
            ran = rv.words.seeds_label(sorted(int(x) for x in pd.unique(curves["seed"])))
            st.caption(
                f"Stopped: the curves are those of {ran} (of {rv.words.seeds_label(seeds)})."
            )
        for row in curves[curves["diverged"].astype(bool)].itertuples():
            st.warning(
                f"Seed {row.seed}: {row.variant} diverged at step {row.step} "
                f"({row.divergence}); its training stopped there (dashed vertical line)."
            )
        other = next(n for n in variants if n != "your model")
        done_seeds = list(pd.unique(curves["seed"]))
        headline(H.loss_race(curves, "your model", other))
        views.chart(
            charts.line(curves, **LOSS_LINE),
            curves,
            "training_loss",
            account=f"Guessing uniformly over the {cfg.vocab_size} tokens of the vocabulary "
            f"gives a loss of ln {cfg.vocab_size} = {rv.format_number(math.log(cfg.vocab_size))}. "
            + W.loss_race_words(curves, "your model", other)
            + " "
            + rv.words.band_words(done_seeds),
        )

    done = jobs.panel(
        "playground_train",
        key,
        work,
        steps * n_seeds,
        render,
        start_label="Train",
        blocked=blocked,
    )
    sec.notebook.md(
        "The same training run as the page's (same variants, steps, learning rate, seed and "
        "batches), from the start: a run stopped early on the page covers fewer steps."
    )
    if done is not None and done.result is not None:
        sec.shown(E.training, done.result, **run_settings)
        sec.code(BATCH_CODE.format(seed=ctx.seed)).notebook.frame("training_batch", "batch")
        trained_views(sec, done.result)
    else:
        # Not run yet (or still running): the notebook makes the same call.
        sec.code(call_code(E.training, run_settings))
        sec.code(BATCH_CODE.format(seed=ctx.seed)).notebook.frame("training_batch", "batch")
    sec.download("playground_training")


def so_far(report, seed: int):  # noqa: ANN001, ANN201 - jobs' report
    """``report`` given the finished seeds' curves beside the running seed's: the
    recipe reports one seed's partial curves (with its ``seed`` column when it runs
    several), and the live chart shows every seed run so far."""
    finished: dict[int, pd.DataFrame] = {}

    def report_all(frame, step, total):  # noqa: ANN001, ANN202
        if isinstance(frame, pd.DataFrame) and len(frame):
            if "seed" not in frame.columns:  # one seed: the recipe adds it at the end
                frame = frame.assign(seed=seed)[["seed", *frame.columns]]
            finished[int(frame["seed"].iloc[0])] = frame
            frame = pd.concat(finished.values(), ignore_index=True)
        report(frame, step, total)

    return report_all


BATCH_CODE = (
    "batch = r.batch[r.batch['seed'] == {seed}].reset_index(drop=True)  # the first seed's\nbatch"
)
LOSS_LINE = dict(
    x="step", y="loss", color="variant", x_int=True, points=False, y_title="masked-token loss"
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
    preds = r.predictions
    sec.table(
        r,
        "predictions",
        "masked_predictions",
        caption="The positions are masked all at once; p_token is the probability the "
        "trained model gives the hidden token. " + W.correct_words(preds),
    )
    st.subheader("The views again, on the trained models")
    asked = head_settings()
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
        caption=None if len(r.seeds) == 1 else f"A map has no band: this is seed {seed0}'s.",
    )
    sec.code(
        f"block, head = {block}, {shown}  # counted from 1\n"
        "first = r.per_seed[0]  # the first seed's own result\n"
        "attention_trained = rv.encoder.attention_frame(first.attention, r.labels, block, head)\n"
        "rv.charts.attention_map(attention_trained, r.labels, "
        f"title=f'Trained (seed {seed0}): layer {{block}}, head {{head}}')"
    ).notebook.frame("attention_trained", "attention_trained")
    bands = " " + rv.words.band_words(r.seeds)
    legend_line(
        sec,
        r,
        "ratio",
        "update_ratio_trained",
        "Update ratios ||f(x)|| / ||x|| of your model at init beside each trained model's." + bands,
        x="block",
        y="update_ratio",
        color="series",
        x_int=True,
        log_y=True,
        y_title="||f(x)|| / ||x|| (log)",
    )
    legend_line(
        sec,
        r,
        "collapse",
        "rank_collapse_trained",
        "Rank collapse before and after training: has training pulled the tokens apart? "
        + W.trained_collapse_words(r.collapse, r.n_layers)
        + bands,
        x="block",
        y="residual",
        color="series",
        x_int=True,
        log_y=True,
        y_title="||X - 1 x^T|| / ||X|| (log)",
        x_title="block (0 = the input)",
    )
    for k, name in enumerate(r.models, 1):
        share = r[f"share_{k}"]
        views.chart(
            charts.share_bars(share[share["seed"] == seed0]),
            share,
            f"final_share_trained_{k}",
            account=f"{name}, trained. Bars: seed {seed0}'s (the CSV holds every seed's). "
            + W.share_words(share),
        )
        sec.code(
            f"rv.charts.share_bars(r.share_{k}[r.share_{k}['seed'] == {seed0}])  # one seed's bars"
        ).notebook.frame(f"final_share_trained_{k}", f"r.share_{k}")


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
