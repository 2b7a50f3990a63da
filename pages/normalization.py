"""Normalization: what LayerNorm, BatchNorm and RMSNorm do, and where the norm sits."""

import inspect
import math

import altair as alt
import pandas as pd
import streamlit as st
import torch

import resviz as rv
from resviz import norms as N
from resviz.divergence import divergence_note
from ui import charts, jobs, views
from ui.cache import POLICY
from ui.params import PageParams
from ui.shell import budget, page_setup


# ------------------------------------------------------------------ cached experiments
@st.cache_data(**POLICY)
def four_views(batch: int, tokens: int, d: int, big: float, small: float, seed: int) -> dict:
    x = N.scaled_batch(batch, tokens, d, big, small, seed)
    v = N.apply_norms(x)
    return {
        "views": N.norm_views(v, 0),
        "stats": N.norm_stats(v),
        "hist": N.norm_histograms(v),
        "gap": N.layernorm_gap(x),
    }


@st.cache_data(**POLICY)
def invariances(
    shift: float, scale: float, seed: int, shape: tuple[int, int, int], big: float, small: float
) -> pd.DataFrame:
    b, t, d = shape
    return N.invariance_table(b, t, d, shift=shift, scale=scale, seed=seed, big=big, small=small)


@st.cache_data(**POLICY)
def batch_dep(seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    return N.batch_dependence(seed=seed)


@st.cache_data(show_spinner="Running Post-LN and Pre-LN encoders...", **POLICY)
def xiong(n_layers: int, d: int, init: str, seed: int) -> dict:
    depths = tuple(sorted({1, 2, 4, 8, 16, n_layers} & set(range(1, n_layers + 1))))
    grads = N.last_layer_grad(depths, (seed, seed + 1, seed + 2), d, init, batch_size=4)
    return {
        "stream": N.prepost_stream(n_layers, d, seed, init),
        "raw_stream": N.prepost_stream(n_layers, d, seed, "default", standardize=False),
        "grads": grads,
        "summary": N.grad_summary(grads),
    }


@st.cache_data(show_spinner="Timing on this device...", **POLICY)
def timing(size: str, device: str, nonce: int) -> pd.DataFrame:
    b, t, d = (int(v) for v in size.split("x"))
    return N.norm_timing(b, t, d, repeats=7, device=device)


SHORT_AXES = {
    "raw": "as drawn",
    "LayerNorm": "each token over features",
    "BatchNorm": "each feature over batch",
    "RMSNorm": "each token, no centring",
}


def heat(df: pd.DataFrame, view: str, height: int = 220) -> alt.Chart:
    sub = df[df["view"] == view]
    title = f"{view} ({SHORT_AXES[view]})"
    if len(sub) > 2000:
        m = sub.pivot(index="token", columns="feature", values="value").to_numpy()
        return charts.image_heatmap(
            m, title=title, x_title="feature", y_title="token", height=height
        )
    return charts.heatmap(sub, "feature", "token", "value", title=title, height=height)


def log_lines(df: pd.DataFrame, y: str, title: str) -> alt.Chart:
    return charts.line(
        df, "step", y, "variant", log_y=True, points=False, x_title="step", y_title=title
    )


def diverged_note(df: pd.DataFrame) -> str:
    """Which runs diverged (``rv.first_divergence``), at which step and why, and which
    did not: read off the frame on screen."""
    return divergence_note(df)


def half_sizes(views: pd.DataFrame, view: str, d: int) -> str:
    """Mean |value| of the first half of the features over the second half's, in one view."""
    sub = views[views["view"] == view]
    first = sub[sub["feature"] < d // 2]["value"].abs().mean()
    second = sub[sub["feature"] >= d // 2]["value"].abs().mean()
    return rv.ratio_words(first, second)


def defaults(fn: object) -> dict[str, object]:
    """A library function's default arguments, so a caption quotes the sizes it used."""
    return {
        k: v.default
        for k, v in inspect.signature(fn).parameters.items()  # type: ignore[arg-type]
        if v.default is not inspect.Parameter.empty
    }


ctx = page_setup(
    "Normalization",
    "LayerNorm, BatchNorm and RMSNorm on real activations, and why the norm's place around "
    "the residual sum can decide whether a deep transformer trains. Post-LN (the original "
    "Transformer) normalizes after each sum, `x = LN(x + f(x))`; Pre-LN normalizes only the "
    "branch input, `x = x + f(LN(x))` (Xiong et al. 2020). Every number below is measured.",
)
p = PageParams("normalization")

# ------------------------------------------------------------------- 1. four views
st.header("1. Same input, four views")
c1, c2, c3, c4 = st.columns(4)
with c1:
    batch = p.slider("batch size", "batch", 2, 16, 8)
with c2:
    n_tok = p.slider("tokens per sample", "tokens", 2, 32, 16)
with c3:
    d_in = int(p.select("features d", "d", ["16", "32", "64", "128"], "64"))
with c4:
    big = float(p.select("first half x", "big", ["1", "10", "100"], "10"))
    small = float(p.select("second half x", "small", ["1", "0.1", "0.01"], "0.1"))

# ------------------------------------------------------------------ widgets, sections 3-7
# (drawn where they belong below; declared through the same PageParams)
data = four_views(batch, n_tok, d_in, big, small, ctx.seed)
st.markdown(
    f"Gaussian input of {batch} samples x {n_tok} tokens x {d_in} features; features 0 to "
    f"{d_in // 2 - 1} multiplied by {big:g}, the rest by {small:g}. The heatmaps show sample 0 "
    "(rows: tokens, columns: features), each with its own colour scale."
)
cols = st.columns(2) + st.columns(2)
for col, view in zip(cols, N.VIEWS, strict=True):
    with col:
        views.altair(heat(data["views"], view), width="stretch")
views.csv_button(data["views"], "norm_views")
st.caption(
    "Mean |value| of the left half of the features as a multiple of the right half's, in "
    f"sample 0: raw {half_sizes(data['views'], 'raw', d_in)}. RMSNorm divides each row "
    "(token) by one number, so the ratio inside a row is kept: "
    f"{half_sizes(data['views'], 'RMSNorm', d_in)}. LayerNorm first subtracts the row's mean, "
    "which moves every feature of the row by the same amount: "
    f"{half_sizes(data['views'], 'LayerNorm', d_in)}. BatchNorm rescales each column (feature) "
    "over the batch to std 1, so the halves come out alike: "
    f"{half_sizes(data['views'], 'BatchNorm', d_in)}."
)
hist = data["hist"]
hist_chart = (
    alt.Chart(hist)
    .mark_bar()
    .encode(
        x=alt.X("bin_start:Q", title="value"),
        x2="bin_end:Q",
        y=alt.Y("count:Q", title="count"),
        color=alt.value(charts.PALETTE[0]),
        tooltip=["view", "bin_start", "bin_end", "count"],
    )
    .properties(width=380, height=150)
    .facet(facet=alt.Facet("view:N", sort=list(N.VIEWS), title=None), columns=2)
    .resolve_scale(x="independent", y="independent")
    .configure_axis(labelFontSize=12, titleFontSize=13)
    .configure_header(labelFontSize=14)
)
views.chart(
    hist_chart,
    hist,
    "norm_histograms",
    caption="All values of the batch. "
    + (
        f"Raw values mix two scales, x{big:g} and x{small:g}. "
        if big != small
        else f"Raw values share one scale, x{big:g}. "
    )
    + "Each norm sets a mean square of 1 (up to eps): LayerNorm and RMSNorm per token, "
    "BatchNorm per feature, so after any of them the values are of order 1.",
)
views.table(
    data["stats"].round(4),
    "norm_stats",
    caption="Per token: mean and std over its features; per feature: over the batch and tokens "
    "(population std). LayerNorm sets every token's mean to 0 and std to 1, BatchNorm every "
    "feature's, RMSNorm every token's root mean square to 1 (its mean is not set to 0); all "
    "up to eps.",
)

# ------------------------------------------------------- 2. textbook versus torch
st.header("2. Textbook versus library LayerNorm")
st.latex(
    r"\text{textbook: } \frac{x-\mu}{s_{n-1}+10^{-6}} \qquad "
    r"\text{torch: } \frac{x-\mu}{\sqrt{\sigma^2+10^{-5}}},\quad s_{n-1}=\sigma\sqrt{\tfrac{n}{n-1}}"
)
gap = data["gap"]
m1, m2, m3 = st.columns(3)
m1.metric("measured max |textbook - torch|", f"{gap['measured'].max():.4g}")
m2.metric("predicted by the formulas", f"{gap['predicted'].max():.4g}")
m3.metric("first order: max|y| (1 - sqrt((n-1)/n))", f"{gap['approx'].max():.4g}")
long_gap = gap.melt(
    id_vars=["token"], value_vars=["measured", "predicted"], var_name="what", value_name="gap"
)
views.chart(
    charts.line(
        long_gap, "token", "gap", "what", x_title="token (flat index)", y_title="max |diff|"
    ),
    gap,
    "layernorm_gap",
    caption=f"The hand-written version divides by the unbiased std (n - 1 = {d_in - 1}), so its "
    f"outputs are smaller by the factor sqrt((n-1)/n) = {((d_in - 1) / d_in) ** 0.5:.5f}, "
    "apart from eps: 1e-6 added to the std there, 1e-5 to the variance in torch, which change "
    "a token's outputs by relative amounts of about 1e-6/s and 1e-5/(2σ²). For the smallest "
    f"token std here, σ = {rv.format_number(gap['sigma'].min())}, that is at most "
    f"{rv.format_number(max(1e-6 / gap['sigma'].min(), 1e-5 / (2 * gap['sigma'].min() ** 2)))}."
    " The measured and predicted curves differ by at most "
    f"{rv.format_number((gap['measured'] - gap['predicted']).abs().max())}, against a gap of "
    f"up to {rv.format_number(gap['measured'].max())}.",
)

# --------------------------------------------------------------- 3. invariances
st.header("3. Invariances, measured")
c1, c2 = st.columns(2)
with c1:
    shift = p.float_slider("shift constant", "shift", 0.5, 20.0, 5.0, 0.5)
with c2:
    scale = p.float_slider("scale constant", "scale", 0.5, 10.0, 3.0, 0.5)
inv = invariances(shift, scale, ctx.seed, (batch, n_tok, d_in), big, small)
inv_label = inv["transformation"] + inv["measured_on"].map(
    lambda on: "" if on == "all samples" else f" (on {on})"
)


def invariant_rows(norm: str) -> str:
    """The rows where ``norm`` counts as invariant, or the rows where it does not."""
    mine = inv["norm"] == norm
    ok, not_ok = inv_label[mine & inv["invariant"]], inv_label[mine & ~inv["invariant"]]
    if not len(not_ok):
        return "every row"
    if not len(ok):
        return "no row"
    if len(ok) <= len(not_ok):
        return ", ".join(ok)
    return "every row but " + ", ".join(not_ok)


wide = inv.pivot_table(
    index=["transformation", "measured_on"], columns="norm", values="max_abs_change", sort=False
).reset_index()
views.table(
    wide,
    "invariances",
    caption="max |output change| of each norm, on h = x W^T (x the batch above, W a random "
    "d x d matrix). Below 1e-4 counts as invariant; here that holds for "
    + "; ".join(f"{n}: {invariant_rows(n)}" for n in N.INVARIANCE_NORMS)
    + ". In exact arithmetic LayerNorm ignores a shift or a scale of a token (so also a "
    "re-scaled or re-centred W) and RMSNorm a scale; eps under the square root makes the scale "
    "invariance approximate. BatchNorm in training mode normalizes each feature over the batch, "
    "so sample 0's output depends on the other samples; in eval mode it is a fixed affine map "
    "of each token.",
    column_config={n: st.column_config.NumberColumn(n, format="%.2e") for n in N.INVARIANCE_NORMS},
)

# ----------------------------------------------------------- 4. batch dependence
st.header("4. BatchNorm's batch dependence")
vals, summ = batch_dep(ctx.seed)
shown = vals[vals["feature"] < 16]
c1, c2 = st.columns(2)
for col, mode in ((c1, "train"), (c2, "eval")):
    with col:
        st.markdown(f"**{mode} mode**: sample 0, token 0")
        views.altair(
            charts.line(
                shown[shown["mode"] == mode],
                "feature",
                "value",
                "scenario",
                x_title="feature (first 16)",
                y_title="BatchNorm output",
                height=260,
            ),
            width="stretch",
        )
bd, sb = defaults(N.batch_dependence), defaults(N.scaled_batch)
moved = {
    mode: "; ".join(
        f"{r.scenario}: "
        + (
            rv.format_number(r.max_abs_change)
            if math.isfinite(r.max_abs_change)
            else "cannot be normalized"
        )
        for r in summ[(summ["mode"] == mode) & (summ["scenario"] != "original batch")].itertuples()
    )
    for mode in ("train", "eval")
}
views.table(
    summ,
    "batchnorm_batch_dependence",
    caption="The same token, normalized with different batch-mates (batch "
    f"{bd['batch_size']} x {bd['seq_len']} tokens x {bd['d_model']} features, halves "
    f"x{sb['big']:g} / x{sb['small']:g}). Largest change of its output in training mode: "
    f"{moved['train']}. In eval mode, with the running statistics of the original batch: "
    f"{moved['eval']}.",
)
views.csv_button(vals, "batchnorm_token_values")

# --------------------------------------------------------------- 5. Post vs Pre
st.header("5. Post-LN versus Pre-LN")
c1, c2, c3 = st.columns(3)
with c1:
    layers = p.slider("layers", "layers", 1, 24, 8)
with c2:
    d_model = int(p.select("d_model", "d_model", ["32", "64", "128"], "64"))
with c3:
    init = p.select(
        "weight init",
        "init",
        ["xavier", "default"],
        "xavier",
        help="xavier: Xiong et al.'s setting. default: PyTorch's Linear init, "
        "U(±1/sqrt(fan_in)), whose weights have a smaller std than Xavier's (1/sqrt(3 fan_in) "
        "against sqrt(2/(fan_in + fan_out))), so each sublayer adds less to the Pre-LN stream.",
    )
st.markdown(
    "An encoder with real attention and ReLU FFN sublayers (4 heads, FFN 4d) at init. **Input "
    "scale, on purpose:** token embeddings plus sinusoidal positions of random tokens, "
    "standardized to mean 0 and variance 1 per feature, so E||x₀||² = d as in Xiong et al.'s "
    "analysis."
)
xi = xiong(layers, d_model, init, ctx.seed)
raw_pre = xi["raw_stream"][xi["raw_stream"]["variant"] == "Pre-LN"].sort_values("layer")
st.markdown(
    "Without that standardization (the raw N(0, 1) embedding plus positions, about 1 + 1/2 "
    f"per feature) the input's ||x₀||²/d is {rv.format_number(raw_pre['sq_norm_per_dim'].iloc[0])}"
    f" for this model, and under PyTorch's default init the Pre-LN stream's ||x_l||²/d "
    f"{rv.trend_words(raw_pre['sq_norm_per_dim'].tolist(), within=1.25)} over {layers} layer(s)."
)
views.chart(
    charts.line(
        xi["stream"],
        "layer",
        "sq_norm_per_dim",
        "variant",
        x_title="layer (0 = input)",
        y_title="||x_l||² / d",
    ),
    xi["stream"],
    "prepost_stream",
    caption="Post-LN ends every layer with a LayerNorm, so its ||x_l||²/d is 1 (up to eps) after "
    "every layer. In Pre-LN each sublayer adds its output to an un-normalized stream, and "
    "Xiong et al. (Lemma 1) show that its expected ||x_l||² grows linearly with l. Here "
    "Pre-LN's ||x_l||²/d "
    + rv.trend_words(
        xi["stream"][xi["stream"]["variant"] == "Pre-LN"].sort_values("layer")["sq_norm_per_dim"],
        within=1.25,
    )
    + ".",
)
gs = xi["summary"]


def deepest_ratios(summary: pd.DataFrame) -> str:
    """Each variant's ratio at the deepest L, beside 1/sqrt(L) relative to the shallowest."""
    lo, hi = int(summary["n_layers"].min()), int(summary["n_layers"].max())
    if lo == hi:
        return f"Only L = {lo} is measured at this setting, so every ratio is 1."
    last = summary[summary["n_layers"] == hi].set_index("variant")
    return (
        f"At L = {hi} it is {rv.format_number(last.loc['Post-LN', 'ratio_to_L1'])} for Post-LN "
        f"and {rv.format_number(last.loc['Pre-LN', 'ratio_to_L1'])} for Pre-LN; "
        f"sqrt({lo}/{hi}) = {rv.format_number(last.loc['Pre-LN', 'inv_sqrt_L'])}."
    )


ref = gs[gs["variant"] == "Pre-LN"][["n_layers", "inv_sqrt_L"]].rename(
    columns={"inv_sqrt_L": "ratio_to_L1"}
)
plot = pd.concat([gs[["variant", "n_layers", "ratio_to_L1"]], ref.assign(variant="1/sqrt(L)")])
views.chart(
    charts.line(
        plot,
        "n_layers",
        "ratio_to_L1",
        "variant",
        log_x=True,
        x_title="number of layers L (log)",
        y_title="||dL/dW2 last layer|| (relative to the shallowest)",
    ),
    xi["grads"],
    "last_layer_grad",
    caption="Gradient norm of the last layer's second FFN weight, mean of "
    f"{xi['grads']['seed'].nunique()} seeds, divided by its value at the shallowest depth. "
    + deepest_ratios(gs)
    + " Xiong et al.: Pre-LN's final LayerNorm divides by ||x_L||, which grows like sqrt(L), so "
    "its last-layer gradient shrinks like 1/sqrt(L) once that growth dominates the input, while "
    "Post-LN's does not shrink with L; hence Pre-LN can take a large learning rate from step 0.",
)
views.table(gs.round(4), "last_layer_grad_summary")

# --------------------------------------------------------------- 5b. warm-up
st.subheader("Training with and without learning-rate warm-up")
c1, c2, c3, c4 = st.columns(4)
with c1:
    w_layers = p.slider("layers", "w_layers", 2, 12, 8)
with c2:
    w_lr = float(
        p.select("peak learning rate", "w_lr", ["0.001", "0.005", "0.015", "0.03"], "0.015")
    )
with c3:
    w_steps = p.slider("steps", "w_steps", 20, 300, 150, step=10)
with c4:
    w_warm = p.slider("warm-up steps", "w_warm", 5, 150, 50, step=5)
w_variants = N.warmup_variants(w_layers, 64)
# Both variants train side by side, twice (with and without warm-up): one refusal,
# shown by the panel below.
w_block = budget().check(
    rv.combine(
        rv.estimate(c, batch=16, seq_len=16, steps=2 * w_steps) for c in w_variants.values()
    ),
    "This training run",
)
w_cfg = w_variants["Post-LN"]
st.markdown(
    f"Post-LN and Pre-LN encoders ({w_layers} layers, d = {w_cfg.d_model}, {w_cfg.n_heads} heads) "
    f"are trained to copy their input tokens (vocabulary {w_cfg.vocab_size}, batch 16 x 16) "
    f"with Adam at a peak rate of {w_lr:g}, once at full rate from step 0 and once warmed up "
    f"linearly over {w_warm} steps."
)


def warmup_finding(df: pd.DataFrame) -> str:
    """Which of each placement's two runs ends lower, with the final losses."""
    final = N.run_summary(df).set_index("variant")["final_loss"]
    out = []
    for place in ("Post-LN", "Pre-LN"):
        a, b = f"{place}, no warm-up", f"{place}, warm-up {w_warm}"
        if a in final.index and b in final.index:
            out.append(f"{place}: " + rv.lower_words("without warm-up", final[a], "with", final[b]))
    return ("; ".join(out) + ". ") if out else ""


def render_warmup(job: jobs.Job) -> None:
    df = job.result if job.result is not None else job.frame
    if df is None or not len(df):
        return
    views.chart(
        log_lines(df, "loss", "cross-entropy (log)"),
        df,
        "warmup_training",
        caption=f"Guessing uniformly costs log {w_cfg.vocab_size} = "
        f"{math.log(w_cfg.vocab_size):.2f}. Final losses: "
        + warmup_finding(df)
        + "Xiong et al. explain why Post-LN needs warm-up at large learning rates: at init its "
        "gradients near the output are large, so full-size early steps can throw it off, while "
        "Pre-LN's are not. " + diverged_note(df),
    )
    views.table(N.run_summary(df), "warmup_summary")


def warm_work(report, should_stop):
    return N.train_warmup(
        w_variants,
        w_warm,
        steps=w_steps,
        lr=w_lr,
        seed=ctx.seed,
        device=ctx.device,
        callback=report,
        should_stop=should_stop,
    )


jobs.panel(
    "warmup",
    ("warmup", tuple(w_variants.values()), w_warm, w_steps, w_lr, ctx.seed, str(ctx.device)),
    warm_work,
    2 * w_steps,
    render_warmup,
    start_label="Train",
    blocked=w_block,
)

# ------------------------------------------------------------ 6. stability 2x2
st.header("6. Training stability: residual x norm")
c1, c2, c3, c4 = st.columns(4)
with c1:
    s_norm = p.select("norm type", "s_norm", ["layer", "rms", "batch"], "layer")
with c2:
    s_pos = p.radio("placement", "s_pos", ["pre", "post"], "pre")
with c3:
    s_lr = float(p.select("learning rate", "s_lr", ["0.0001", "0.001", "0.01", "0.1"], "0.001"))
with c4:
    s_steps = p.slider("Adam steps", "s_steps", 20, 300, 100, step=10)
c1, c2 = st.columns(2)
with c1:
    s_more_norms = p.toggle("add residual + the other norm types", "s_norms", False)
with c2:
    s_more_pos = p.toggle("add residual + the other placement", "s_place", False)
extra = tuple(n for n in ("layer", "rms", "batch") if s_more_norms and n != s_norm)
extra += ("other placement",) if s_more_pos else ()
s_variants = N.stability_variants(s_norm, s_pos, extra=extra)
st.markdown(
    "The seed notebook's experiment: 4 FFN blocks `W2 gelu(W1 x)` of width 128, regression of "
    "random targets from random inputs (batch 16 x 32), Adam, every variant from the same seed "
    "on the same batches."
)


def start_end_note(df: pd.DataFrame) -> str:
    """Each run's first loss and its mean over its last ten steps, from the data."""
    parts = []
    for name, run in df.groupby("variant", sort=False):
        loss = run.sort_values("step")["loss"]
        parts.append(
            f"{name} {rv.format_number(float(loss.iloc[0]))} to "
            f"{rv.format_number(float(loss.tail(10).mean()))}"
        )
    return "Loss at the first step, then over the last ten steps: " + "; ".join(parts) + "."


def render_stability(job: jobs.Job) -> None:
    df = job.result if job.result is not None else job.frame
    if df is None or not len(df):
        return
    c1, c2 = st.columns(2)
    with c1:
        views.altair(log_lines(df, "loss", "MSE loss (log)"), width="stretch")
    with c2:
        views.altair(log_lines(df, "grad_norm", "total gradient norm (log)"), width="stretch")
    st.caption(
        "The targets are fresh random numbers each step, independent of the inputs, so the "
        "best a run can do is a loss of 1 in expectation (predict 0; one batch can dip a little "
        "below it): the runs differ in how they get there and how large their gradients grow. "
        + start_end_note(df)
        + f" At learning rate {float(df['lr'].iloc[0]):g}: "
        + diverged_note(df)
    )
    views.csv_button(df, "stability_training")
    views.table(N.run_summary(df), "stability_summary")


def stab_work(report, should_stop):
    return rv.train_compare(
        s_variants,
        steps=s_steps,
        seed=ctx.seed,
        lr=s_lr,
        batch_size=16,
        seq_len=32,
        task="regression",
        device=ctx.device,
        callback=report,
        should_stop=should_stop,
    )


jobs.panel(
    "stability",
    ("stability", tuple(s_variants.items()), s_steps, s_lr, ctx.seed, str(ctx.device)),
    stab_work,
    s_steps,
    render_stability,
    start_label="Train",
)

# -------------------------------------------------------------------- 7. cost
st.header("7. Cost: LayerNorm versus RMSNorm")
size = p.select(
    "input size (batch x tokens x d)",
    "t_size",
    ["16x128x256", "16x128x512", "16x256x1024"],
    "16x128x256",
)
# The timing holds its input many times over (RMSNorm's backward most of all): it
# has its own estimate, and is refused like a model that does not fit.
t_refused = views.check_budget(
    N.norm_timing_cost(*(int(v) for v in size.split("x"))), "Timing at this size"
)
nonce = st.session_state.setdefault("_norm_timing_nonce", 0)
if st.button(
    "Measure again",
    key="normalization:remeasure",
    icon=":material/timer:",
    disabled=bool(t_refused),
):
    st.session_state["_norm_timing_nonce"] = nonce = nonce + 1
if not t_refused:
    tm = timing(size, str(ctx.device), nonce)
    views.chart(
        charts.bars(tm, "pass", "median_ms", "norm", y_title="median time (ms)", height=260),
        tm,
        "norm_timing",
        caption=f"Measured on {ctx.device} just now: 7 timed calls after one warm-up, median (min "
        "and max in the CSV). RMSNorm skips the mean, so it does less arithmetic; whether that "
        "makes it faster depends on the kernels PyTorch has for this device. Here RMSNorm took "
        + "; ".join(
            f"{rv.ratio_words(t.loc['RMSNorm', 'median_ms'], t.loc['LayerNorm', 'median_ms'])} "
            f"LayerNorm's time {direction}"
            for direction, t in (
                (d, g.set_index("norm")) for d, g in tm.groupby("pass", sort=False)
            )
        )
        + ".",
    )
if torch.cuda.is_available() and ctx.device.type != "cuda":
    st.caption("A GPU is available: pick it in the sidebar to time it there.")
