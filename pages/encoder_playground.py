"""Encoder playground: configure an encoder, run it on your text, look inside, train it."""

import dataclasses
import hashlib
import math

import altair as alt
import pandas as pd
import streamlit as st

import resviz as rv
from resviz import playground as PG
from resviz.budget import human_bytes, human_count, human_flops
from ui import cache, charts, jobs, views
from ui.params import PageParams
from ui.shell import budget, page_setup

PAGE = "encoder_playground"
ctx = page_setup(
    "Encoder playground",
    "Type some text, build a transformer encoder with the switches from the other pages, "
    "and look inside it: where each token attends, how the norm of the residual stream "
    "changes from layer to layer, whether the tokens stay distinct, and what a short "
    "training run changes.",
)
p = PageParams(PAGE)
PRESETS = rv.ENCODER_PRESETS
DEFAULT_PRESET = "Pre-LN"
HEAD_CHOICES = ["1", "2", "3", "4", "8", "16"]

# Widget name -> (config field, how the widget stores it).
MODEL_WIDGETS = {
    "layers": ("n_layers", int),
    "d_model": ("d_model", str),
    "heads": ("n_heads", str),
    "d_ff": ("d_ff", str),
    "act": ("activation", str),
    "norm": ("norm", str),
    "place": ("norm_position", str),
    "pos": ("positional", str),
    "residual": ("residual", bool),
    "ffn": ("use_ffn", bool),
    "dropout": ("dropout", float),
}


def apply_preset() -> None:
    """Choosing a preset sets every model widget to the preset's values."""
    base = PRESETS[st.session_state[f"{PAGE}:preset"]]
    for name, (fld, kind) in MODEL_WIDGETS.items():
        st.session_state[f"{PAGE}:{name}"] = kind(getattr(base, fld))


# -------------------------------------------------------------------- widgets
st.header("1. Your text")
text = p.text(
    "Text (stays on this server, is never rendered as HTML)",
    "text",
    PG.DEFAULT_TEXT,
    max_chars=100_000,
)
c1, c2, c3 = st.columns(3)
with c1:
    level = p.radio("Tokens", "level", ["word", "char"], "word")
with c2:
    max_len = p.slider("Max tokens shown and per training window", "max_len", 4, 64, 32)
with c3:
    max_vocab = p.slider(
        "Vocabulary: most frequent tokens kept",
        "vocab",
        8,
        512,
        256,
        help=f"The size includes the {len(PG.SPECIALS)} special tokens "
        f"{', '.join(PG.SPECIALS)}; the text's most frequent tokens fill the rest.",
    )
tok_box = st.container()

st.header("2. The model")
preset = p.select("Preset", "preset", list(PRESETS), DEFAULT_PRESET, on_change=apply_preset)
base = PRESETS[preset]
c1, c2, c3, c4 = st.columns(4)
with c1:
    n_layers = p.slider("Layers", "layers", 1, 12, base.n_layers)
    d_model = int(p.select("d_model", "d_model", ["32", "64", "128", "256"], str(base.d_model)))
    n_heads = int(
        p.select(
            "Heads",
            "heads",
            HEAD_CHOICES,
            str(base.n_heads),
            help="must divide d_model",
        )
    )
with c2:
    d_ff = int(
        p.select("d_ff (FFN hidden)", "d_ff", ["64", "128", "256", "512", "1024"], str(base.d_ff))
    )
    activation = p.select(
        "Activation", "act", ["relu", "gelu", "tanh", "identity"], base.activation
    )
    dropout = p.float_slider("Dropout (training only)", "dropout", 0.0, 0.5, base.dropout, 0.05)
with c3:
    norm = p.select("Norm", "norm", ["layer", "rms", "none"], base.norm)
    place = p.radio("Norm placement", "place", ["pre", "post"], base.norm_position)
    positional = p.select("Positions", "pos", ["sinusoidal", "learned", "none"], base.positional)
with c4:
    residual = p.toggle("Residual connections", "residual", base.residual)
    use_ffn = p.toggle("FFN sublayer", "ffn", base.use_ffn)
card_box = st.container()

st.header("3. Attention maps")
c1, c2 = st.columns(2)
with c1:
    layer = p.slider("Layer", "layer", 1, 12, 1)
with c2:
    head = p.slider("Head", "head", 1, 16, 1)
att_box = st.container()
st.header("4. The residual stream")
stream_box = st.container()
st.header("5. Rank collapse")
rank_box = st.container()

st.header("6. Train it live")
c1, c2, c3 = st.columns(3)
with c1:
    against = p.select(
        "Train against",
        "against",
        ["the same, residual flipped", *PRESETS],
        "the same, residual flipped",
    )
with c2:
    steps = p.slider("Steps", "steps", 20, 400, 100, step=10)
with c3:
    lr = float(p.select("Learning rate", "lr", ["3e-4", "1e-3", "3e-3", "1e-2"], "1e-3"))
train_box = st.container()

# --------------------------------------------------------------------- tokens
toks, vocab, train_ids = cache.playground_tokens(text, level, max_len, max_vocab)
with tok_box:
    if not toks.ids:
        st.info(
            "There are no tokens to run: type some text (words for word-level tokens; "
            "whitespace, null bytes and control characters are dropped)."
        )
        st.stop()
    if toks.truncated:
        st.info(
            f"The text has {toks.n_total:,} tokens: the views use the first {len(toks)}; "
            f"training reads the first {min(toks.n_total, PG.TRAIN_MAX_TOKENS):,}."
        )
    views.table(
        PG.token_table(toks),
        "tokens",
        caption=f"{len(toks)} tokens, vocabulary of {len(vocab)} built from your text (ids 0-2 "
        f"are [PAD], [UNK], [MASK]); {toks.n_unknown} shown token(s) fell outside it and "
        "became [UNK]. Word level lower-cases and splits off punctuation.",
        height=180,
    )

# ---------------------------------------------------------------------- model
with card_box:
    if d_model % n_heads:
        fits = [h for h in HEAD_CHOICES if d_model % int(h) == 0]
        st.warning(
            f"The number of heads must divide d_model (each head gets d_model / heads "
            f"features): {n_heads} heads do not divide d_model = {d_model}. Pick "
            f"{', '.join(fits[:-1])} or {fits[-1]} heads, or change d_model.",
            icon=":material/warning:",
        )
        st.stop()
    try:
        cfg = rv.EncoderConfig(
            n_layers=n_layers,
            d_model=d_model,
            n_heads=n_heads,
            d_ff=d_ff,
            vocab_size=len(vocab),
            max_len=max_len,
            residual=residual,
            norm=norm,
            norm_position=place,
            positional=positional,
            use_ffn=use_ffn,
            dropout=dropout,
            activation=activation,
            seed=ctx.seed,
        )
    except ValueError as exc:
        # The message names widget values only (no user text).
        st.warning(f"This configuration cannot be built: {exc}")
        st.stop()
    T = len(toks)
    est = rv.estimate(cfg, batch=1, seq_len=T)
    if views.check_budget(est, "This model"):
        st.stop()
    lat, note = cache.playground_latency(cfg, toks.ids, str(ctx.device))
    views.notice(note)
    m1, m2, m3, m4 = st.columns(4)
    m1.metric("Parameters", human_count(est.params))
    m2.metric(f"FLOPs per forward ({T} tokens)", human_flops(est.flops_forward))
    m3.metric("Activation memory (training, 1 sequence)", human_bytes(est.activation_bytes))
    m4.metric(f"Forward latency on {ctx.device.type}", f"{lat['latency_ms']:.2f} ms")
    card = PG.model_card(cfg, T)
    card = pd.concat(
        [
            card,
            pd.DataFrame(
                [
                    {
                        "quantity": "forward latency",
                        "value": lat["latency_ms"],
                        "unit": f"ms (median of {lat['runs']:.0f})",
                    }
                ]
            ),
        ],
        ignore_index=True,
    )
    views.table(
        card,
        "model_card",
        caption="Parameters are counted exactly; FLOPs count 2 per multiply-add in every linear "
        "layer plus attention's two T x T products; activation memory is an estimate, from the "
        "layer shapes, of what autograd keeps for a backward pass. Latency is measured here, "
        "now, on a server others share.",
    )
    code = cache.playground_code(cfg)
    with st.expander("PyTorch code for exactly this configuration"):
        st.code(code, language="python")
        st.download_button(
            "Download encoder.py",
            code.encode("utf-8"),
            file_name="encoder.py",
            mime="text/x-python",
            key="code:encoder",
            on_click="ignore",
            icon=":material/download:",
        )
        st.caption(
            "torch only. `build_model()` gives the same initial weights as this page (same "
            "seed, same modules in the same order); the module names match `rv.build`, so "
            "state dicts load either way. A test runs this code and compares the outputs."
        )

res, note = cache.playground_views(cfg, toks.ids, str(ctx.device))
views.notice(note)
labels = toks.labels
cell = 100 + 24 * T  # the plot, every token label on the y axis, and the rotated x labels


def int_line(*args, **kw) -> alt.Chart:
    """Every x axis on this page counts something whole: layers, sublayers, steps."""
    return charts.line(*args, x_int=True, **kw)


def two_column_legend(chart: alt.Chart) -> alt.Chart:
    """Long series names (model, weights, sublayer) in two legend columns, not one long row."""
    return chart.configure_legend(
        labelFontSize=charts.FONT_SIZE, titleFontSize=charts.FONT_SIZE, labelLimit=400, columns=2
    )


def attention_chart(maps, layer_i: int, head_i: int, name: str, title: str) -> None:
    df = PG.attention_frame(maps, labels, layer_i, head_i)
    chart = charts.heatmap(
        df,
        "key",
        "query",
        "weight",
        diverging=False,
        sort_x=labels,
        sort_y=labels,
        title=title,
        height=cell,
    )
    # Every token gets its label: never thin them out; smaller type for long inputs.
    size = 14 if T <= 20 else 12
    chart = chart.configure_axisX(labelOverlap=False, labelFontSize=size).configure_axisY(
        labelOverlap=False, labelFontSize=size
    )
    views.chart(chart, df, name)


def share_chart(share: pd.DataFrame, name: str, caption: str) -> None:
    order = list(share["component"])
    chart = (
        alt.Chart(share)
        .mark_bar()
        .encode(
            x=alt.X("component:N", sort=order, title=None, axis=alt.Axis(labelAngle=-45)),
            y=alt.Y("share:Q", title="share of ||x_L||^2"),
            color=alt.Color(
                "sublayer:N",
                scale=alt.Scale(range=charts.PALETTE),
                legend=alt.Legend(orient="bottom"),
            ),
            tooltip=["component", alt.Tooltip("share:Q", format=".3f")],
        )
    )
    views.chart(charts.style(chart), share, name, caption=caption)


with att_box:
    li, hi = min(layer, cfg.n_layers) - 1, min(head, cfg.n_heads) - 1
    if (li + 1, hi + 1) != (layer, head):
        st.caption(
            f"This model has {cfg.n_layers} layer(s) and {cfg.n_heads} head(s): showing layer "
            f"{li + 1}, head {hi + 1}."
        )
    attention_chart(res["attention"], li, hi, "attention", f"Layer {li + 1}, head {hi + 1}")
    st.caption(
        "Rows are queries, columns keys; each row sums to 1. "
        + rv.spread_vs(
            res["attention"][li, hi].ravel(),
            1 / T,
            "at init, in this head, the weights",
            f"uniform attention (1/{T})",
        )
        + " Labels are position:token, so repeated words stay apart."
    )

stream = res["stream"]
with stream_box:
    views.chart(
        int_line(
            stream,
            "index",
            "stream_norm",
            None,
            x_title="sublayers from the input",
            y_title="mean token norm",
            tooltip_cols=["layer", "sublayer"],
        ),
        stream,
        "residual_stream",
        caption="The norm of the stream after each sublayer. "
        + rv.encoder_stream_rule(cfg.residual, cfg.norm, cfg.norm_position)
        + " "
        + rv.trend(
            [stream["input_norm"].iloc[0], *stream["stream_norm"]],
            ["the input", *(f"after L{r.layer} {r.sublayer}" for r in stream.itertuples())],
            "here the mean token norm",
        ),
    )
    views.chart(
        int_line(
            stream,
            "layer",
            "update_ratio",
            "sublayer",
            log_y=True,
            y_title="||f(x)|| / ||x|| (log)",
        ),
        stream[["layer", "sublayer", "input_norm", "update_norm", "update_ratio"]],
        "update_ratio",
        caption="How big each sublayer's output is next to its input. With a residual, small "
        "ratios mean each layer nudges the stream rather than replacing it. "
        + rv.value_range(
            stream["update_ratio"],
            [f"L{r.layer} {r.sublayer}" for r in stream.itertuples()],
            "here the ratio",
        ),
    )
    share = res["share"]
    if share.empty:
        st.info(
            "Share of the final representation: Post-LN normalizes after every residual sum, "
            "so the final vector is not a sum of sublayer outputs. Switch to Pre-LN (or no "
            "norm) to see it.",
            icon=":material/info:",
        )
    else:
        share_chart(
            share,
            "final_share",
            "Each component's projection on the final stream x_L (before the final norm), "
            "as a fraction of ||x_L||^2; the bars sum to 1. Without residuals all of it is "
            "the last sublayer's output. "
            + rv.share_of(share["share"], share["component"], "share"),
        )

with rank_box:
    collapse, note = cache.playground_collapse(cfg, toks.ids, str(ctx.device))
    views.notice(note)
    if T < 2:
        st.info("Rank collapse needs at least 2 tokens.")
    else:
        views.chart(
            int_line(
                collapse,
                "layer",
                "residual",
                "variant",
                log_y=True,
                y_title="||X - 1 x^T|| / ||X|| (log)",
                x_title="layer (0 = input)",
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
                    ["the input" if n == 0 else f"layer {n}" for n in g["layer"]],
                    f"{v}: the distance",
                )
                for v, g in collapse.groupby("variant", sort=False)
            ),
        )
        views.chart(
            int_line(
                collapse,
                "layer",
                "cosine",
                "variant",
                y_title="mean cosine between tokens",
                x_title="layer (0 = input)",
            ),
            collapse[["variant", "layer", "cosine"]],
            "token_cosine",
            caption="The same comparison seen as similarity: a mean cosine of 1 means every "
            "token vector points the same way. After the last layer: "
            + "; ".join(
                f"{v}: {rv.findings_stack.num(g['cosine'].iloc[-1])}"
                for v, g in collapse.groupby("variant", sort=False)
            )
            + ".",
        )


# ------------------------------------------------------------------- training
def second_config() -> tuple[str, rv.EncoderConfig]:
    if against == "the same, residual flipped":
        name = "same, " + ("no residuals" if cfg.residual else "with residuals")
        return name, dataclasses.replace(cfg, residual=not cfg.residual)
    other = dataclasses.replace(
        PRESETS[against], vocab_size=cfg.vocab_size, max_len=cfg.max_len, seed=cfg.seed
    )
    return against, other


with train_box:
    BATCH = 8
    name2, cfg2 = second_config()
    variants = {"your model": cfg, name2: cfg2}
    st.markdown(
        f"A tiny BERT-style task on your text: windows of up to {T} tokens, about 15% of "
        f"them replaced by [MASK], the loss is the cross-entropy of guessing them. Both "
        f"models start from seed {ctx.seed} and see the same {BATCH}-window batches."
    )
    if len(train_ids) < 2:
        st.info("Training needs at least 2 tokens of text.")
        st.stop()
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
        hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(),
        level,
        max_len,
        max_vocab,
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
            train_ids,
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
            f"gives a loss of ln {cfg.vocab_size} = {rv.findings_stack.num(math.log(cfg.vocab_size))}. "
            + rv.loss_race(curves, "your model", name2),
        )

    done = jobs.panel(
        "playground_train", key, work, steps, render, start_label="Train", blocked=blocked
    )
    if done is not None and done.result is not None:
        run = done.result
        positions = PG.mask_positions(T, seed=ctx.seed)
        st.subheader("Predictions at masked positions of your text")
        preds = pd.concat(
            [
                PG.predict_masked(run.model(n, device), toks.ids, vocab, positions).assign(
                    variant=n
                )
                for n in run.configs
            ],
            ignore_index=True,
        )
        views.table(
            preds[["variant", "position", "token", "prediction", "correct", "p_token", "top"]],
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
        trained = {
            n: PG.inspect(run.model(n, device), run.configs[n], toks.ids) for n in run.configs
        }
        attention_chart(
            trained["your model"]["attention"],
            li,
            hi,
            "attention_trained",
            f"Your trained model: layer {li + 1}, head {hi + 1}",
        )
        ratio = pd.concat(
            [stream.assign(model="your model, init")]
            + [v["stream"].assign(model=f"{n}, trained") for n, v in trained.items()],
            ignore_index=True,
        )
        ratio["series"] = ratio["model"] + " · " + ratio["sublayer"]
        views.chart(
            two_column_legend(
                int_line(
                    ratio,
                    "layer",
                    "update_ratio",
                    "series",
                    log_y=True,
                    y_title="||f(x)|| / ||x|| (log)",
                )
            ),
            ratio[["model", "layer", "sublayer", "stream_norm", "update_ratio"]],
            "update_ratio_trained",
            caption="Update ratios before and after training.",
        )
        rc = pd.concat(
            [collapse[collapse["variant"].str.startswith("your model")].assign(weights="init")]
            + [v["collapse"].assign(variant=n, weights="trained") for n, v in trained.items()],
            ignore_index=True,
        )
        rc["series"] = rc["variant"] + " · " + rc["weights"]
        views.chart(
            two_column_legend(
                int_line(
                    rc,
                    "layer",
                    "residual",
                    "series",
                    log_y=True,
                    y_title="||X - 1 x^T|| / ||X|| (log)",
                    x_title="layer (0 = input)",
                )
            ),
            rc[["variant", "weights", "layer", "residual", "cosine"]],
            "rank_collapse_trained",
            caption="Rank collapse before and after training: has training pulled the "
            "tokens apart? "
            + rv.change(
                collapse.groupby("variant", sort=False)["residual"].last().iloc[0],
                trained["your model"]["collapse"]["residual"].iloc[-1],
                f"after layer {cfg.n_layers}, your model's distance from rank one",
            )[:-1]
            + " with training.",
        )
        for k, (n, v) in enumerate(trained.items()):
            if not v["share"].empty:
                share_chart(v["share"], f"final_share_trained_{k + 1}", f"{n}, trained.")
