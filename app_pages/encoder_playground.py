"""Encoder playground: configure an encoder, run it on your text, look inside, train it."""

import hashlib
import math
from dataclasses import dataclass

import pandas as pd
import streamlit as st

import resviz as rv
from resviz import playground as PG
from resviz.budget import human_bytes, human_count, human_flops
from ui import cache, charts, jobs, views
from ui.budget import budget
from ui.notebook import Notebook, literal
from ui.params import PageParams
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
BATCH = 8  # training windows per step
CODE_OPEN = "playground_code_open"  # the code expander's state (a view, not a setting)


def _widget_value(name: str, value: object) -> object:
    """A config field's value as the model widget ``name`` holds it."""
    kind = S.SPEC.param(name).kind  # type: ignore[union-attr]
    return {"choice": str, "int": int, "float": float, "bool": bool}[kind](value)


def preset_fills_in_the_model() -> None:
    """On the page's first run, a link that names a preset gets that preset's value
    for every model setting it leaves out (the widgets' own defaults are Pre-LN's)."""
    if f"{PAGE}:preset" in st.session_state:
        return
    raw = st.query_params.get_all("preset")
    if len(raw) != 1 or raw[0] not in PRESETS:
        return  # a bad or repeated preset is reported by its widget
    base = PRESETS[raw[0]]
    for name, fld in S.MODEL_FIELDS.items():
        key = f"{PAGE}:{name}"
        if key not in st.session_state and name not in st.query_params:
            st.session_state[key] = _widget_value(name, getattr(base, fld))


def apply_preset() -> None:
    """Choosing a preset sets every model widget to the preset's values."""
    base = PRESETS[st.session_state[f"{PAGE}:preset"]]
    for name, fld in S.MODEL_FIELDS.items():
        st.session_state[f"{PAGE}:{name}"] = _widget_value(name, getattr(base, fld))


preset_fills_in_the_model()
tabs = p.sections()


# ------------------------------------------------------------ shared settings
@dataclass(frozen=True)
class Setup:
    """What every section runs: the text's tokens and the model's configuration."""

    text: str
    level: str
    max_len: int
    max_vocab: int
    toks: PG.Tokens
    vocab: PG.Vocab
    train_ids: tuple[int, ...]
    preset: str
    cfg: rv.EncoderConfig

    @property
    def T(self) -> int:
        return len(self.toks)

    def code(self) -> str:
        """The notebook's first lines: the same tokens, configuration and device."""
        return (
            f"text = {literal(self.text)}\n"
            f"level, max_len, max_vocab = {literal(self.level)}, {self.max_len}, "
            f"{self.max_vocab}\n"
            "toks, vocab = rv.playground.tokenize(text, level, max_len, max_vocab)\n"
            f"cfg = rv.{self.cfg!r}\n"
            f"device = rv.pick_device({ctx.device.type!r})  # CPU where that is not here"
        )


def draw_settings() -> tuple[str, str, int, int, str, dict[str, object]]:
    """The text, tokenizer and model widgets (the same keys in every section)."""
    text = p.text("Text (stays on this server, is never rendered as HTML)", "text")
    c1, c2, c3 = st.columns(3)
    with c1:
        level = p.radio("Tokens", "level")
    with c2:
        max_len = p.slider("Max tokens shown and per training window", "max_len")
    with c3:
        max_vocab = p.slider(
            "Vocabulary: most frequent tokens kept",
            "vocab",
            help=f"The size includes the {len(PG.SPECIALS)} special tokens "
            f"{', '.join(PG.SPECIALS)}; the text's most frequent tokens fill the rest.",
        )
    preset = p.select("Preset", "preset", on_change=apply_preset)
    c1, c2, c3, c4 = st.columns(4)
    with c1:
        n_layers = p.slider("Layers", "layers")
        d_model = int(p.select("d_model", "d_model"))
        n_heads = int(p.select("Heads", "heads", help="must divide d_model"))
    with c2:
        d_ff = int(p.select("d_ff (FFN hidden)", "d_ff"))
        activation = p.select("Activation", "act")
        dropout = p.float_slider("Dropout (training only)", "dropout")
    with c3:
        norm = p.select("Norm", "norm")
        place = p.radio("Norm placement", "place")
        positional = p.select("Positions", "pos")
    with c4:
        residual = p.toggle("Residual connections", "residual")
        use_ffn = p.toggle("FFN sublayer", "ffn")
    model = dict(
        n_layers=n_layers,
        d_model=d_model,
        n_heads=n_heads,
        d_ff=d_ff,
        residual=residual,
        norm=norm,
        norm_position=place,
        positional=positional,
        use_ffn=use_ffn,
        dropout=dropout,
        activation=activation,
    )
    return text, level, max_len, max_vocab, preset, model


def shared_settings(full: bool) -> Setup | None:
    """Draw the shared settings (in full, or folded away) and check them; None, with
    the reason shown, where the model cannot run on this text."""
    if full:
        st.subheader("Your text and the model")
        drawn = draw_settings()
    else:
        with st.expander("Text and model (shared by every section)"):
            drawn = draw_settings()
    text, level, max_len, max_vocab, preset, model = drawn
    toks, vocab, train_ids = cache.playground_tokens(text, level, max_len, max_vocab)
    if not toks.ids:
        st.info(
            "There are no tokens to run: type some text (words for word-level tokens; "
            "whitespace, null bytes and control characters are dropped)."
        )
        return None
    d_model, n_heads = int(model["d_model"]), int(model["n_heads"])  # type: ignore[call-overload]
    if d_model % n_heads:
        fits = [h for h in S.HEAD_CHOICES if d_model % int(h) == 0]
        st.warning(
            f"The number of heads must divide d_model (each head gets d_model / heads "
            f"features): {n_heads} heads do not divide d_model = {d_model}. Pick "
            f"{', '.join(fits[:-1])} or {fits[-1]} heads, or change d_model.",
            icon=":material/warning:",
        )
        return None
    try:
        cfg = rv.EncoderConfig(
            **model,
            vocab_size=len(vocab),
            max_len=max_len,
            seed=ctx.seed,  # type: ignore[arg-type]
        )
    except ValueError as exc:
        # The message names widget values only (no user text).
        st.warning(f"This configuration cannot be built: {exc}")
        return None
    if views.check_budget(rv.estimate(cfg, batch=1, seq_len=len(toks)), "This model"):
        return None
    s = Setup(text, level, max_len, max_vocab, toks, vocab, train_ids, preset, cfg)
    if not full:
        st.caption(summary(s))
    return s


def summary(s: Setup) -> str:
    """One line saying what the folded settings hold (our words and numbers only)."""
    c = s.cfg
    ffn = f"FFN {c.d_ff} ({c.activation})" if c.use_ffn else "no FFN"
    norm = "no norm" if c.norm == "none" else f"{c.norm} norm, {c.norm_position}"
    return (
        f"{s.T} {s.level}-level tokens of your text, vocabulary of {len(s.vocab)}; "
        f"{c.n_layers} layer(s), d_model {c.d_model}, {c.n_heads} head(s), {ffn}, {norm}, "
        f"residual {'on' if c.residual else 'off'}, {c.positional} positions, seed {c.seed}."
    )


def views_at_init(s: Setup) -> dict[str, object]:
    res, note = cache.playground_views(s.cfg, s.toks.ids, str(ctx.device))
    views.notice(note)
    return res


def head_settings(cfg: rv.EncoderConfig) -> tuple[int, int]:
    """The block (layer) and head to look at, counted from 1, clamped to this model."""
    c1, c2 = st.columns(2)
    with c1:
        layer = p.slider("Layer", "layer")
    with c2:
        head = p.slider("Head", "head")
    block, shown_head = min(layer, cfg.n_layers), min(head, cfg.n_heads)
    if (block, shown_head) != (layer, head):
        st.caption(
            f"This model has {cfg.n_layers} layer(s) and {cfg.n_heads} head(s): showing layer "
            f"{block}, head {shown_head}."
        )
    return block, shown_head


def int_line(*args, **kw):
    """Every x axis on this page counts something whole: layers, sublayers, steps."""
    return charts.line(*args, x_int=True, **kw)


# -------------------------------------------------------------------- Model
def model_section(s: Setup) -> None:
    """The tokens, the model card and the code: no forward pass beyond the timing."""
    cfg, toks, T = s.cfg, s.toks, s.T
    if toks.truncated:
        st.info(
            f"The text has {toks.n_total:,} tokens: the views use the first {T}; "
            f"training reads the first {min(toks.n_total, PG.TRAIN_MAX_TOKENS):,}."
        )
    views.table(
        PG.token_table(toks),
        "tokens",
        caption=f"{T} tokens, vocabulary of {len(s.vocab)} built from your text (ids 0-2 "
        f"are [PAD], [UNK], [MASK]); {toks.n_unknown} shown token(s) fell outside it and "
        "became [UNK]. Word level lower-cases and splits off punctuation.",
        height=180,
    )
    st.subheader("Model card")
    est = rv.estimate(cfg, batch=1, seq_len=T)
    lat, note = cache.playground_latency(cfg, toks.ids, str(ctx.device))
    views.notice(note)
    m1, m2, m3, m4 = st.columns(4)
    m1.metric("Parameters", human_count(est.params))
    m2.metric(f"FLOPs per forward ({T} tokens)", human_flops(est.flops_forward))
    m3.metric("Activation memory (training, 1 sequence)", human_bytes(est.activation_bytes))
    m4.metric(f"Forward latency on {ctx.device.type}", f"{lat['latency_ms']:.2f} ms")
    views.table(
        PG.model_card(cfg, T, latency=lat),
        "model_card",
        caption="Parameters are counted exactly; FLOPs count 2 per multiply-add in every linear "
        "layer plus attention's two T x T products; activation memory is an estimate, from the "
        "layer shapes, of what autograd keeps for a backward pass. Latency is measured here, "
        "now, on a server others share.",
    )
    code = cache.playground_code(cfg)
    st.download_button(
        "Download encoder.py",
        code.encode("utf-8"),
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
            st.code(code, language="python")
            st.caption(
                "torch only. `build_model()` gives the same initial weights as this page "
                "(same seed, same modules in the same order); the module names match "
                "`rv.build`, so state dicts load either way. A test runs this code and "
                "compares the outputs."
            )
    nb = Notebook(TITLE, S.MODEL, st.query_params.to_dict())
    nb.code(s.code())
    nb.code(
        "tokens = rv.playground.token_table(toks)\n"
        "# The latency is a measurement: it differs from run to run and machine to machine.\n"
        "latency = rv.playground.forward_latency(rv.build(cfg, device), toks.ids)\n"
        "card = rv.playground.model_card(cfg, len(toks), latency=latency)\n"
        "card"
    ).frame("tokens", "tokens").frame("model_card", "card")
    nb.code(
        "code = rv.playground.generate_code(cfg)  # torch only; build_model() = rv.build(cfg)\n"
        "print(code)"
    )
    nb.download("playground_model")


# ---------------------------------------------------------------- Attention
def attention_section(s: Setup) -> None:
    st.subheader("Attention maps")
    block, head = head_settings(s.cfg)
    res = views_at_init(s)
    labels, T = s.toks.labels, s.T
    df = PG.attention_frame(res["attention"], labels, block, head)
    views.chart(
        charts.attention_map(df, labels, title=f"Layer {block}, head {head}"),
        df,
        "attention",
        caption="Rows are queries, columns keys; each row sums to 1. "
        + rv.spread_vs(
            res["attention"][block - 1, head - 1].ravel(),  # type: ignore[index]
            1 / T,
            "at init, in this head, the weights",
            f"uniform attention (1/{T})",
        )
        + " Labels are position:token, so repeated words stay apart.",
    )
    nb = Notebook(TITLE, S.ATTENTION, st.query_params.to_dict())
    nb.code(s.code() + f"\nblock, head = {block}, {head}  # counted from 1")
    nb.code(
        "views = rv.playground.inspect(rv.build(cfg, device), cfg, toks.ids)\n"
        "attention = rv.playground.attention_frame(views['attention'], toks.labels, block, head)\n"
        "rv.charts.attention_map(attention, toks.labels, title=f'Layer {block}, head {head}')"
    ).frame("attention", "attention")
    nb.download("playground_attention")


# ---------------------------------------------------------- Residual stream
def stream_section(s: Setup) -> None:
    st.subheader("The residual stream")
    cfg = s.cfg
    res = views_at_init(s)
    stream: pd.DataFrame = res["stream"]  # type: ignore[assignment]
    views.chart(
        int_line(
            stream,
            "index",
            "stream_norm",
            None,
            x_title="sublayers from the input",
            y_title="mean token norm",
            tooltip_cols=["block", "sublayer"],
        ),
        stream,
        "residual_stream",
        caption="The norm of the stream after each sublayer. "
        + rv.encoder_stream_rule(cfg.residual, cfg.norm, cfg.norm_position)
        + " "
        + rv.trend(
            [stream["input_norm"].iloc[0], *stream["stream_norm"]],
            ["the input", *(f"after L{r.block} {r.sublayer}" for r in stream.itertuples())],
            "here the mean token norm",
        ),
    )
    views.chart(
        int_line(
            stream,
            "block",
            "update_ratio",
            "sublayer",
            log_y=True,
            y_title="||f(x)|| / ||x|| (log)",
        ),
        stream[["block", "sublayer", "input_norm", "update_norm", "update_ratio"]],
        "update_ratio",
        caption="How big each sublayer's output is next to its input. With a residual, small "
        "ratios mean each layer nudges the stream rather than replacing it. "
        + rv.value_range(
            stream["update_ratio"],
            [f"L{r.block} {r.sublayer}" for r in stream.itertuples()],
            "here the ratio",
        ),
    )
    share: pd.DataFrame = res["share"]  # type: ignore[assignment]
    nb = Notebook(TITLE, S.STREAM, st.query_params.to_dict())
    nb.code(s.code())
    nb.code(
        "views = rv.playground.inspect(rv.build(cfg, device), cfg, toks.ids)\n"
        "stream = views['stream']\n"
        "rv.charts.line(stream, 'index', 'stream_norm', None, x_int=True, "
        "x_title='sublayers from the input', y_title='mean token norm', "
        "tooltip_cols=['block', 'sublayer'])"
    ).frame("residual_stream", "stream")
    nb.code(
        "ratio = stream[['block', 'sublayer', 'input_norm', 'update_norm', 'update_ratio']]\n"
        "rv.charts.line(stream, 'block', 'update_ratio', 'sublayer', x_int=True, log_y=True, "
        "y_title='||f(x)|| / ||x|| (log)')"
    ).frame("update_ratio", "ratio")
    if share.empty:
        st.info(
            "Share of the final representation: Post-LN normalizes after every residual sum, "
            "so the final vector is not a sum of sublayer outputs. Switch to Pre-LN (or no "
            "norm) to see it.",
            icon=":material/info:",
        )
    else:
        views.chart(
            charts.share_bars(share),
            share,
            "final_share",
            caption="Each component's projection on the final stream x_L (before the final "
            "norm), as a fraction of ||x_L||^2; the bars sum to 1. Without residuals all of it "
            "is the last sublayer's output. "
            + rv.share_of(share["share"], share["component"], "share"),
        )
        nb.code("share = views['share']\nrv.charts.share_bars(share)").frame("final_share", "share")
    nb.download("playground_stream")


# ------------------------------------------------------------ Rank collapse
def collapse_at_init(s: Setup) -> pd.DataFrame:
    collapse, note = cache.playground_collapse(s.cfg, s.toks.ids, str(ctx.device))
    views.notice(note)
    return collapse


def collapse_section(s: Setup) -> None:
    st.subheader("Rank collapse")
    if s.T < 2:
        st.info("Rank collapse needs at least 2 tokens.")
        return
    collapse = collapse_at_init(s)
    views.chart(
        int_line(
            collapse,
            "block",
            "residual",
            "variant",
            log_y=True,
            y_title="||X - 1 x^T|| / ||X|| (log)",
            x_title="block (0 = the input)",
        ),
        collapse,
        "rank_collapse",
        caption="Distance of the token matrix from rank one after each layer, at init. "
        "Dong et al. (2021) show that pure attention without shortcuts pulls the tokens "
        "towards one vector, doubly exponentially in depth, and that shortcuts counter it. "
        "Triangles at the bottom mark values a log axis cannot show, such as exact zeros. "
        + " ".join(
            rv.trend(
                g["residual"],
                ["the input" if n == 0 else f"block {n}" for n in g["block"]],
                f"{v}: the distance",
            )
            for v, g in collapse.groupby("variant", sort=False)
        ),
    )
    views.chart(
        int_line(
            collapse,
            "block",
            "cosine",
            "variant",
            y_title="mean cosine between tokens",
            x_title="block (0 = the input)",
        ),
        collapse[["variant", "block", "cosine"]],
        "token_cosine",
        caption="The same comparison seen as similarity: a mean cosine of 1 means every "
        "token vector points the same way. After the last layer: "
        + "; ".join(
            f"{v}: {rv.format_number(g['cosine'].iloc[-1])}"
            for v, g in collapse.groupby("variant", sort=False)
        )
        + ".",
    )
    nb = Notebook(TITLE, S.COLLAPSE, st.query_params.to_dict())
    nb.code(s.code())
    nb.code(
        "# Your model, its residual flipped, and attention only with and without shortcuts.\n"
        "collapse = rv.playground.rank_collapse_compare(cfg, toks.ids, device)\n"
        "rv.charts.line(collapse, 'block', 'residual', 'variant', x_int=True, log_y=True, "
        "y_title='||X - 1 x^T|| / ||X|| (log)', x_title='block (0 = the input)')"
    ).frame("rank_collapse", "collapse")
    nb.code(
        "cosine = collapse[['variant', 'block', 'cosine']]\n"
        "rv.charts.line(collapse, 'block', 'cosine', 'variant', x_int=True, "
        "y_title='mean cosine between tokens', x_title='block (0 = the input)')"
    ).frame("token_cosine", "cosine")
    nb.download("playground_collapse")


# ----------------------------------------------------------------- Training
def training_section(s: Setup) -> None:
    st.subheader("Train it live")
    cfg, T = s.cfg, s.T
    c1, c2, c3 = st.columns(3)
    with c1:
        against = p.select("Train against", "against")
    with c2:
        steps = p.slider("Steps", "steps")
    with c3:
        lr = float(p.select("Learning rate", "lr"))
    variants = PG.training_variants(cfg, against)
    name2 = next(n for n in variants if n != "your model")
    st.markdown(
        f"A tiny BERT-style task on your text: windows of up to {T} tokens, about 15% of "
        f"them replaced by [MASK], the loss is the cross-entropy of guessing them. Both "
        f"models start from seed {ctx.seed} and see the same {BATCH}-window batches."
    )
    if len(s.train_ids) < 2:
        st.info("Training needs at least 2 tokens of text.")
        return
    batch = PG.batch_frame(s.train_ids, s.vocab, BATCH, T, ctx.seed)
    views.table(
        batch,
        "training_batch",
        caption=f"The first batch, as the models see it: {len(batch)} windows of your text "
        f"with {int(batch['n_masked'].sum())} tokens hidden behind [MASK] (at least one per "
        "window); the loss asks for the hidden ones.",
    )
    total = rv.combine(
        rv.estimate(c, batch=BATCH, seq_len=T, steps=steps) for c in variants.values()
    )
    st.caption(f"Cost of this run before it starts: {total.describe()}.")
    blocked = budget().check(total, "This training run")
    device = ctx.device
    # Keyed by everything the user set, not by what it computes to: the text itself
    # (by digest) and every tokenizer, model and training setting. Two sessions whose
    # different texts tokenize to the same ids must not see or join each other's run.
    key = (
        "playground",
        hashlib.sha256(s.text.encode("utf-8", "surrogatepass")).hexdigest(),
        s.level,
        s.max_len,
        s.max_vocab,
        tuple(variants.items()),
        steps,
        lr,
        BATCH,
        ctx.seed,
        str(device),
    )

    def work(report, should_stop):
        return PG.train_masked(
            variants,
            s.train_ids,
            steps=steps,
            seed=ctx.seed,
            lr=lr,
            batch_size=BATCH,
            seq_len=T,
            device=device,
            callback=report,
            should_stop=should_stop,
        )

    def render(job: jobs.Job) -> None:
        curves = job.result.curves if job.result is not None else job.frame
        if curves is None or len(curves) == 0:
            return
        for row in curves[curves["diverged"].astype(bool)].itertuples():
            st.warning(
                f"{row.variant} diverged at step {row.step} ({row.divergence}); its training "
                "stopped there (dashed line)."
            )
        views.chart(
            int_line(curves, "step", "loss", "variant", points=False, y_title="masked-token loss"),
            curves,
            "training_loss",
            caption=f"Guessing uniformly over the {cfg.vocab_size} tokens of the vocabulary "
            f"gives a loss of ln {cfg.vocab_size} = {rv.format_number(math.log(cfg.vocab_size))}. "
            + rv.loss_race(curves, "your model", name2),
        )

    done = jobs.panel(
        "playground_train", key, work, steps, render, start_label="Train", blocked=blocked
    )
    nb = Notebook(TITLE, S.TRAINING, st.query_params.to_dict())
    nb.md(
        "The same training run as the page's (same variants, steps, learning rate, seed and "
        "batches), from the start: a run stopped early on the page covers fewer steps."
    )
    nb.code(
        s.code() + f"\nagainst, steps, lr, batch, seed = {literal(against)}, {steps}, {lr!r}, "
        f"{BATCH}, {ctx.seed}\n"
        "train_ids = rv.playground.encode(text, vocab, rv.playground.TRAIN_MAX_TOKENS).ids\n"
        "variants = rv.playground.training_variants(cfg, against)\n"
        "# The first batch both models see.\n"
        "batch_view = rv.playground.batch_frame(train_ids, vocab, batch, len(toks), seed)\n"
        "run = rv.playground.train_masked(variants, train_ids, steps=steps, seed=seed, lr=lr, "
        "batch_size=batch, seq_len=len(toks), device=device)\n"
        "curves = run.curves\n"
        "rv.charts.line(curves, 'step', 'loss', 'variant', x_int=True, points=False, "
        "y_title='masked-token loss')"
    ).frame("training_batch", "batch_view")
    if done is not None and done.result is not None:
        trained_views(s, done.result, nb)
    nb.download("playground_training")


def trained_views(s: Setup, run: PG.MaskedRun, nb: Notebook) -> None:
    """Predictions at masked positions and the views again, on the trained weights."""
    cfg, toks, T = s.cfg, s.toks, s.T
    device = ctx.device
    positions = PG.mask_positions(T, seed=ctx.seed)
    st.subheader("Predictions at masked positions of your text")
    preds = PG.masked_predictions(run, toks.ids, s.vocab, positions, device)
    views.table(
        preds,
        "masked_predictions",
        caption="The positions are masked all at once; p_token is the probability the "
        f"trained model gives the hidden token. Correct guesses at the {len(positions)} "
        "masked positions: "
        + "; ".join(
            f"{n}: {int(g['correct'].sum())}" for n, g in preds.groupby("variant", sort=False)
        )
        + ".",
    )
    st.subheader("The views again, on the trained models")
    block, head = head_settings(cfg)
    trained = PG.inspect_trained(run, toks.ids, device)
    att = PG.attention_frame(trained["your model"]["attention"], toks.labels, block, head)
    views.chart(
        charts.attention_map(
            att, toks.labels, title=f"Your trained model: layer {block}, head {head}"
        ),
        att,
        "attention_trained",
    )
    ratio = PG.ratio_before_after(views_at_init(s)["stream"], trained)  # type: ignore[arg-type]
    views.chart(
        rv.charts.legend_columns(
            int_line(
                ratio,
                "block",
                "update_ratio",
                "series",
                log_y=True,
                y_title="||f(x)|| / ||x|| (log)",
            )
        ),
        ratio.drop(columns="series"),
        "update_ratio_trained",
        caption="Update ratios before and after training.",
    )
    collapse = collapse_at_init(s)
    rc = PG.collapse_before_after(collapse, trained)
    views.chart(
        rv.charts.legend_columns(
            int_line(
                rc,
                "block",
                "residual",
                "series",
                log_y=True,
                y_title="||X - 1 x^T|| / ||X|| (log)",
                x_title="block (0 = the input)",
            )
        ),
        rc.drop(columns="series"),
        "rank_collapse_trained",
        caption="Rank collapse before and after training: has training pulled the "
        "tokens apart? "
        + rv.change(
            collapse.groupby("variant", sort=False)["residual"].last().iloc[0],
            trained["your model"]["collapse"]["residual"].iloc[-1],  # type: ignore[index]
            f"after layer {cfg.n_layers}, your model's distance from rank one",
        )[:-1]
        + " with training.",
    )
    nb.code(
        "positions = rv.playground.mask_positions(len(toks), seed=seed)\n"
        "predictions = rv.playground.masked_predictions(run, toks.ids, vocab, positions, device)\n"
        "predictions"
    ).frame("training_loss", "curves").frame("masked_predictions", "predictions")
    nb.code(
        f"block, head = {block}, {head}  # counted from 1\n"
        "trained = rv.playground.inspect_trained(run, toks.ids, device)\n"
        "attention_trained = rv.playground.attention_frame(trained['your model']['attention'], "
        "toks.labels, block, head)\n"
        "rv.charts.attention_map(attention_trained, toks.labels, "
        "title=f'Your trained model: layer {block}, head {head}')"
    ).frame("attention_trained", "attention_trained")
    nb.code(
        "init = rv.playground.inspect(rv.build(cfg, device), cfg, toks.ids)\n"
        "ratio = rv.playground.ratio_before_after(init['stream'], trained)\n"
        "ratio_csv = ratio.drop(columns='series')\n"
        "rv.charts.legend_columns(rv.charts.line(ratio, 'block', 'update_ratio', 'series', "
        "x_int=True, log_y=True, y_title='||f(x)|| / ||x|| (log)'))"
    ).frame("update_ratio_trained", "ratio_csv")
    nb.code(
        "collapse = rv.playground.rank_collapse_compare(cfg, toks.ids, device)\n"
        "rc = rv.playground.collapse_before_after(collapse, trained)\n"
        "rc_csv = rc.drop(columns='series')\n"
        "rv.charts.legend_columns(rv.charts.line(rc, 'block', 'residual', 'series', x_int=True, "
        "log_y=True, y_title='||X - 1 x^T|| / ||X|| (log)', x_title='block (0 = the input)'))"
    ).frame("rank_collapse_trained", "rc_csv")
    shares = []
    for k, (n, v) in enumerate(trained.items()):
        if not v["share"].empty:  # type: ignore[union-attr]
            name = f"final_share_trained_{k + 1}"
            views.chart(charts.share_bars(v["share"]), v["share"], name, caption=f"{n}, trained.")  # type: ignore[arg-type]
            nb.frame(name, f"trained[{literal(n)}]['share']")
            shares.append(f"rv.charts.share_bars(trained[{literal(n)}]['share'])")
    if shares:
        nb.code("# Each trained model's share of its final stream.\n" + "\n".join(shares))


for tab, section in zip(
    tabs,
    (model_section, attention_section, stream_section, collapse_section, training_section),
    strict=True,
):
    if tab.open:
        with tab:
            setup = shared_settings(full=section is model_section)
            if setup is not None:
                section(setup)
