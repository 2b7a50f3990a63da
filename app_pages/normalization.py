"""Normalization: what LayerNorm, BatchNorm and RMSNorm do, and where the norm sits."""

import inspect
import math

import pandas as pd
import streamlit as st
import torch

import resviz as rv
from resviz import norms as N
from resviz.divergence import divergence_note
from ui import charts, jobs, views
from ui.budget import budget
from ui.cache import POLICY
from ui.notebook import Notebook
from ui.params import PageParams
from ui.shell import page_setup
from ui.specs import normalization as S

TITLE = "Normalization"


# ------------------------------------------------------------------ cached experiments
@st.cache_data(**POLICY)
def four_views(batch: int, tokens: int, d: int, big: float, small: float, seed: int) -> dict:
    v = N.apply_norms(N.scaled_batch(batch, tokens, d, big, small, seed))
    return {"views": N.norm_views(v, 0), "stats": N.norm_stats(v), "hist": N.norm_histograms(v)}


@st.cache_data(**POLICY)
def layernorm_gap(
    batch: int, tokens: int, d: int, big: float, small: float, seed: int
) -> pd.DataFrame:
    return N.layernorm_gap(N.scaled_batch(batch, tokens, d, big, small, seed))


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
    grads = N.prepost_grads(n_layers, d, seed, init)
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


def log_lines(df: pd.DataFrame, y: str, title: str):  # noqa: ANN201
    return charts.line(
        df, "step", y, "variant", log_y=True, points=False, x_title="step", y_title=title
    )


def half_sizes(frame: pd.DataFrame, view: str) -> str:
    """Mean |value| of the first half of the features over the second half's, in one view."""
    return rv.ratio_words(*N.half_means(frame, view))


def defaults(fn: object) -> dict[str, object]:
    """A library function's default arguments, so a caption quotes the sizes it used."""
    return {
        k: v.default
        for k, v in inspect.signature(fn).parameters.items()  # type: ignore[arg-type]
        if v.default is not inspect.Parameter.empty
    }


ctx = page_setup(
    TITLE,
    "LayerNorm, BatchNorm and RMSNorm on real activations, and why the norm's place around "
    "the residual sum can decide whether a deep transformer trains. Post-LN (the original "
    "Transformer) normalizes after each sum, `x = LN(x + f(x))`; Pre-LN normalizes only the "
    "branch input, `x = x + f(LN(x))` (Xiong et al. 2020). Every number below is measured.",
)
p = PageParams("normalization")
tabs = p.sections()


def notebook(section: str) -> Notebook:
    return Notebook(TITLE, section, st.query_params.to_dict())


def device_code() -> str:
    """The notebook line that picks the device on screen (CPU where it is missing)."""
    return f"device = rv.pick_device({ctx.device.type!r})"


# The input batch, shared by the first three sections: drawn at the top of each, it
# keeps its values (and its place in the URL) while another section is open.
batch, n_tok, d_in, big, small = 8, 16, 64, 10.0, 0.1


def input_settings() -> None:
    global batch, n_tok, d_in, big, small
    c1, c2, c3, c4 = st.columns(4)
    with c1:
        batch = p.slider("batch size", "batch")
    with c2:
        n_tok = p.slider("tokens per sample", "tokens")
    with c3:
        d_in = int(p.select("features d", "d"))
    with c4:
        big = float(p.select("first half x", "big"))
        small = float(p.select("second half x", "small"))


def input_code() -> str:
    return (
        f"batch, tokens, d, big, small, seed = {batch}, {n_tok}, {d_in}, {big!r}, {small!r}, "
        f"{ctx.seed}\n"
        "x = rv.norms.scaled_batch(batch, tokens, d, big, small, seed)"
    )


# ------------------------------------------------------------------------ four views
def four_views_section() -> None:
    st.subheader("Same input, four views")
    data = four_views(batch, n_tok, d_in, big, small, ctx.seed)
    st.markdown(
        f"Gaussian input of {batch} samples x {n_tok} tokens x {d_in} features; features 0 to "
        f"{d_in // 2 - 1} multiplied by {big:g}, the rest by {small:g}. The heatmaps show "
        "sample 0 (rows: tokens, columns: features), each with its own colour scale."
    )
    frame = data["views"]
    cols = st.columns(2) + st.columns(2)
    for col, view in zip(cols, N.VIEWS, strict=True):
        with col:
            views.altair(
                charts.grid_heatmap(
                    frame[frame["view"] == view],
                    "feature",
                    "token",
                    "value",
                    title=N.VIEW_TITLES[view],
                    height=220,
                ),
                width="stretch",
            )
    views.csv_button(frame, "norm_views")
    st.caption(
        "Mean |value| of the left half of the features as a multiple of the right half's, in "
        f"sample 0: raw {half_sizes(frame, 'raw')}. RMSNorm divides each row "
        "(token) by one number, so the ratio inside a row is kept: "
        f"{half_sizes(frame, 'RMSNorm')}. LayerNorm first subtracts the row's mean, "
        "which moves every feature of the row by the same amount: "
        f"{half_sizes(frame, 'LayerNorm')}. BatchNorm rescales each column (feature) "
        "over the batch to std 1, so the halves come out alike: "
        f"{half_sizes(frame, 'BatchNorm')}."
    )
    hist = data["hist"]
    views.chart(
        charts.histograms(hist, "view", sort=list(N.VIEWS)),
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
        caption="Per token: mean and std over its features; per feature: over the batch and "
        "tokens (population std). LayerNorm sets every token's mean to 0 and std to 1, "
        "BatchNorm every feature's, RMSNorm every token's root mean square to 1 (its mean is "
        "not set to 0); all up to eps.",
    )
    nb = notebook(S.FOUR_VIEWS)
    nb.code(
        input_code() + "\n"
        "v = rv.norms.apply_norms(x)\n"
        "views = rv.norms.norm_views(v, 0)\n"
        "hist = rv.norms.norm_histograms(v)\n"
        "stats = rv.norms.norm_stats(v).round(4)\n"
        "stats"
    )
    nb.code(
        "for view in rv.norms.VIEWS:\n"
        "    display(rv.charts.grid_heatmap(views[views['view'] == view], 'feature', 'token', "
        "'value', title=rv.norms.VIEW_TITLES[view], height=220))\n"
        "rv.charts.histograms(hist, 'view', sort=list(rv.norms.VIEWS))"
    )
    nb.frame("norm_views", "views").frame("norm_histograms", "hist").frame("norm_stats", "stats")
    nb.download("normalization_four_views")


# --------------------------------------------------------------- textbook versus torch
def textbook_section() -> None:
    st.subheader("Textbook versus library LayerNorm")
    st.latex(
        r"\text{textbook: } \frac{x-\mu}{s_{n-1}+10^{-6}} \qquad "
        r"\text{torch: } \frac{x-\mu}{\sqrt{\sigma^2+10^{-5}}},\quad "
        r"s_{n-1}=\sigma\sqrt{\tfrac{n}{n-1}}"
    )
    gap = layernorm_gap(batch, n_tok, d_in, big, small, ctx.seed)
    m1, m2, m3 = st.columns(3)
    m1.metric("measured max |textbook - torch|", f"{gap['measured'].max():.4g}")
    m2.metric("predicted by the formulas", f"{gap['predicted'].max():.4g}")
    m3.metric("first order: max|y| (1 - sqrt((n-1)/n))", f"{gap['approx'].max():.4g}")
    sigma = gap["sigma"].min()
    views.chart(
        charts.line(
            N.gap_long(gap),
            "token",
            "gap",
            "what",
            x_title="token (flat index)",
            y_title="max |diff|",
        ),
        gap,
        "layernorm_gap",
        caption=f"The hand-written version divides by the unbiased std (n - 1 = {d_in - 1}), so "
        f"its outputs are smaller by the factor sqrt((n-1)/n) = {((d_in - 1) / d_in) ** 0.5:.5f}, "
        "apart from eps: 1e-6 added to the std there, 1e-5 to the variance in torch, which "
        "change a token's outputs by relative amounts of about 1e-6/s and 1e-5/(2σ²). For the "
        f"smallest token std here, σ = {rv.format_number(sigma)}, that is at most "
        f"{rv.format_number(max(1e-6 / sigma, 1e-5 / (2 * sigma**2)))}."
        " The measured and predicted curves differ by at most "
        f"{rv.format_number((gap['measured'] - gap['predicted']).abs().max())}, against a gap of "
        f"up to {rv.format_number(gap['measured'].max())}.",
    )
    nb = notebook(S.TEXTBOOK)
    nb.code(
        input_code() + "\n"
        "gap = rv.norms.layernorm_gap(x)\n"
        "print('measured max |textbook - torch|:', gap['measured'].max())\n"
        "print('predicted by the formulas:', gap['predicted'].max())\n"
        "rv.charts.line(rv.norms.gap_long(gap), 'token', 'gap', 'what', "
        "x_title='token (flat index)', y_title='max |diff|')"
    )
    nb.frame("layernorm_gap", "gap").download("normalization_textbook_layernorm")


# ------------------------------------------------------------------------ invariances
def invariances_section() -> None:
    st.subheader("Invariances, measured")
    c1, c2 = st.columns(2)
    with c1:
        shift = p.float_slider("shift constant", "shift")
    with c2:
        scale = p.float_slider("scale constant", "scale")
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

    views.table(
        N.invariance_wide(inv),
        "invariances",
        caption="max |output change| of each norm, on h = x W^T (x the batch above, W a random "
        "d x d matrix). Below 1e-4 counts as invariant; here that holds for "
        + "; ".join(f"{n}: {invariant_rows(n)}" for n in N.INVARIANCE_NORMS)
        + ". In exact arithmetic LayerNorm ignores a shift or a scale of a token (so also a "
        "re-scaled or re-centred W) and RMSNorm a scale; eps under the square root makes the "
        "scale invariance approximate. BatchNorm in training mode normalizes each feature over "
        "the batch, so sample 0's output depends on the other samples; in eval mode it is a "
        "fixed affine map of each token.",
        column_config={
            n: st.column_config.NumberColumn(n, format="%.2e") for n in N.INVARIANCE_NORMS
        },
    )
    nb = notebook(S.INVARIANCES)
    nb.code(
        input_code() + "\n"
        f"shift, scale = {shift!r}, {scale!r}\n"
        "inv = rv.norms.invariance_table(batch, tokens, d, shift=shift, scale=scale, seed=seed, "
        "big=big, small=small)\n"
        "wide = rv.norms.invariance_wide(inv)\n"
        "wide"
    )
    nb.frame("invariances", "wide").download("normalization_invariances")


# ------------------------------------------------------------------- batch dependence
def batch_section() -> None:
    st.subheader("BatchNorm's batch dependence")
    vals, summ = batch_dep(ctx.seed)
    c1, c2 = st.columns(2)
    for col, mode in ((c1, "train"), (c2, "eval")):
        with col:
            views.altair(
                charts.line(
                    N.batch_values_shown(vals, mode),
                    "feature",
                    "value",
                    "scenario",
                    title=f"{mode} mode: sample 0, token 0",
                    x_title="feature (first 16)",
                    y_title="BatchNorm output",
                    height=260,
                ),
                width="stretch",
            )
    bd, sb = defaults(N.batch_dependence), defaults(N.scaled_batch)
    others = summ[summ["scenario"] != "original batch"]
    moved = {
        mode: "; ".join(
            f"{r.scenario}: "
            + (
                rv.format_number(r.max_abs_change)
                if math.isfinite(r.max_abs_change)
                else "cannot be normalized"
            )
            for r in others[others["mode"] == mode].itertuples()
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
    nb = notebook(S.BATCH)
    nb.code(
        f"seed = {ctx.seed}\n"
        "values, summary = rv.norms.batch_dependence(seed=seed)\n"
        "for mode in ('train', 'eval'):\n"
        "    display(rv.charts.line(rv.norms.batch_values_shown(values, mode), 'feature', "
        "'value', 'scenario', title=f'{mode} mode: sample 0, token 0', "
        "x_title='feature (first 16)', y_title='BatchNorm output', height=260))\n"
        "summary"
    )
    nb.frame("batchnorm_batch_dependence", "summary").frame("batchnorm_token_values", "values")
    nb.download("normalization_batch_dependence")


# ------------------------------------------------------------------ Pre-LN vs Post-LN
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


def prepost_section() -> None:
    st.subheader("Post-LN versus Pre-LN at init")
    c1, c2, c3 = st.columns(3)
    with c1:
        layers = p.slider("layers", "layers")
    with c2:
        d_model = int(p.select("d_model", "d_model"))
    with c3:
        init = p.select(
            "weight init",
            "init",
            help="xavier: Xiong et al.'s setting. default: PyTorch's Linear init, "
            "U(±1/sqrt(fan_in)), whose weights have a smaller std than Xavier's "
            "(1/sqrt(3 fan_in) against sqrt(2/(fan_in + fan_out))), so each sublayer adds "
            "less to the Pre-LN stream.",
        )
    st.markdown(
        "An encoder with real attention and ReLU FFN sublayers (4 heads, FFN 4d) at init. "
        "**Input scale, on purpose:** token embeddings plus sinusoidal positions of random "
        "tokens, standardized to mean 0 and variance 1 per feature, so E||x₀||² = d as in "
        "Xiong et al.'s analysis."
    )
    xi = xiong(layers, d_model, init, ctx.seed)
    raw_pre = xi["raw_stream"][xi["raw_stream"]["variant"] == "Pre-LN"].sort_values("block")
    st.markdown(
        "Without that standardization (the raw N(0, 1) embedding plus positions, about "
        "1 + 1/2 per feature) the input's ||x₀||²/d is "
        f"{rv.format_number(raw_pre['sq_norm_per_dim'].iloc[0])} for this model, and under "
        "PyTorch's default init the Pre-LN stream's ||x_l||²/d "
        f"{rv.trend_words(raw_pre['sq_norm_per_dim'].tolist(), within=1.25)} over {layers} "
        "layer(s)."
    )
    stream = xi["stream"]
    views.chart(
        charts.line(
            stream,
            "block",
            "sq_norm_per_dim",
            "variant",
            x_title="block (0 = the input)",
            y_title="||x_l||² / d",
        ),
        stream,
        "prepost_stream",
        caption="Post-LN ends every layer with a LayerNorm, so its ||x_l||²/d is 1 (up to eps) "
        "after every layer. In Pre-LN each sublayer adds its output to an un-normalized stream, "
        "and Xiong et al. (Lemma 1) show that its expected ||x_l||² grows linearly with l. Here "
        "Pre-LN's ||x_l||²/d "
        + rv.trend_words(
            stream[stream["variant"] == "Pre-LN"].sort_values("block")["sq_norm_per_dim"],
            within=1.25,
        )
        + ".",
    )
    gs = xi["summary"]
    views.chart(
        charts.line(
            N.grad_ratio_lines(gs),
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
        + " Xiong et al.: Pre-LN's final LayerNorm divides by ||x_L||, which grows like "
        "sqrt(L), so its last-layer gradient shrinks like 1/sqrt(L) once that growth dominates "
        "the input, while Post-LN's does not shrink with L; hence Pre-LN can take a large "
        "learning rate from step 0.",
    )
    views.table(gs.round(4), "last_layer_grad_summary")
    nb = notebook(S.PREPOST)
    nb.code(
        f"layers, d_model, init, seed = {layers}, {d_model}, {init!r}, {ctx.seed}\n"
        "stream = rv.norms.prepost_stream(layers, d_model, seed, init)\n"
        "raw_stream = rv.norms.prepost_stream(layers, d_model, seed, 'default', "
        "standardize=False)\n"
        "grads = rv.norms.prepost_grads(layers, d_model, seed, init)\n"
        "summary = rv.norms.grad_summary(grads)\n"
        "summary_csv = summary.round(4)\n"
        "display(rv.charts.line(stream, 'block', 'sq_norm_per_dim', 'variant', "
        "x_title='block (0 = the input)', y_title='||x_l||² / d'))\n"
        "rv.charts.line(rv.norms.grad_ratio_lines(summary), 'n_layers', 'ratio_to_L1', "
        "'variant', log_x=True, x_title='number of layers L (log)', "
        "y_title='||dL/dW2 last layer|| (relative to the shallowest)')"
    )
    nb.frame("prepost_stream", "stream").frame("last_layer_grad", "grads")
    nb.frame("last_layer_grad_summary", "summary_csv").download("normalization_prepost")


# ----------------------------------------------------------------------------- warm-up
def warmup_section() -> None:
    st.subheader("Training with and without learning-rate warm-up")
    c1, c2, c3, c4 = st.columns(4)
    with c1:
        w_layers = p.slider("layers", "w_layers")
    with c2:
        w_lr = float(p.select("peak learning rate", "w_lr"))
    with c3:
        w_steps = p.slider("steps", "w_steps")
    with c4:
        w_warm = p.slider("warm-up steps", "w_warm")
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
        f"Post-LN and Pre-LN encoders ({w_layers} layers, d = {w_cfg.d_model}, "
        f"{w_cfg.n_heads} heads) are trained to copy their input tokens (vocabulary "
        f"{w_cfg.vocab_size}, batch 16 x 16) with Adam at a peak rate of {w_lr:g}, once at full "
        f"rate from step 0 and once warmed up linearly over {w_warm} steps."
    )
    views.table(
        N.variant_table(w_variants),
        "warmup_variants",
        caption="The two models, built from the same seed; each is trained twice, without "
        "and with warm-up, on the same batches.",
    )

    def warmup_finding(df: pd.DataFrame) -> str:
        """Which of each placement's two runs ends lower, with the final losses."""
        final = N.run_summary(df).set_index("variant")["final_loss"]
        out = []
        for place in ("Post-LN", "Pre-LN"):
            a, b = f"{place}, no warm-up", f"{place}, warm-up {w_warm}"
            if a in final.index and b in final.index:
                out.append(
                    f"{place}: " + rv.lower_words("without warm-up", final[a], "with", final[b])
                )
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
            + "Xiong et al. explain why Post-LN needs warm-up at large learning rates: at init "
            "its gradients near the output are large, so full-size early steps can throw it "
            "off, while Pre-LN's are not. " + divergence_note(df),
        )
        views.table(N.run_summary(df), "warmup_summary")

    def warm_work(report, should_stop):  # noqa: ANN001, ANN202
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
    nb = notebook(S.WARMUP)
    nb.code(
        f"w_layers, w_lr, w_steps, w_warm, seed = {w_layers}, {w_lr!r}, {w_steps}, {w_warm}, "
        f"{ctx.seed}\n"
        f"{device_code()}\n"
        "variants = rv.norms.warmup_variants(w_layers, 64)\n"
        "models = rv.norms.variant_table(variants)\n"
        "display(models)\n"
        "runs = rv.norms.train_warmup(variants, w_warm, steps=w_steps, lr=w_lr, seed=seed, "
        "device=device)\n"
        "summary = rv.norms.run_summary(runs)\n"
        "display(summary)\n"
        "rv.charts.line(runs, 'step', 'loss', 'variant', log_y=True, points=False, "
        "x_title='step', y_title='cross-entropy (log)')"
    )
    nb.frame("warmup_variants", "models")
    nb.frame("warmup_training", "runs").frame("warmup_summary", "summary")
    nb.download("normalization_warmup")


# --------------------------------------------------------------------------- stability
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


def stability_section() -> None:
    st.subheader("Training stability: residual x norm")
    c1, c2, c3, c4 = st.columns(4)
    with c1:
        s_norm = p.select("norm type", "s_norm")
    with c2:
        s_pos = p.radio("placement", "s_pos")
    with c3:
        s_lr = float(p.select("learning rate", "s_lr"))
    with c4:
        s_steps = p.slider("Adam steps", "s_steps")
    c1, c2 = st.columns(2)
    with c1:
        s_more_norms = p.toggle("add residual + the other norm types", "s_norms")
    with c2:
        s_more_pos = p.toggle("add residual + the other placement", "s_place")
    extra = tuple(n for n in ("layer", "rms", "batch") if s_more_norms and n != s_norm)
    extra += ("other placement",) if s_more_pos else ()
    s_variants = N.stability_variants(s_norm, s_pos, extra=extra)  # type: ignore[arg-type]
    st.markdown(
        "The seed notebook's experiment: 4 FFN blocks `W2 gelu(W1 x)` of width 128, regression "
        "of random targets from random inputs (batch 16 x 32), Adam, every variant from the "
        "same seed on the same batches."
    )
    views.table(N.variant_table(s_variants), "stability_variants")

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
            "best a run can do is a loss of 1 in expectation (predict 0; one batch can dip a "
            "little below it): the runs differ in how they get there and how large their "
            "gradients grow. "
            + start_end_note(df)
            + f" At learning rate {float(df['lr'].iloc[0]):g}: "
            + divergence_note(df)
        )
        views.csv_button(df, "stability_training")
        views.table(N.run_summary(df), "stability_summary")

    def stab_work(report, should_stop):  # noqa: ANN001, ANN202
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
    nb = notebook(S.STABILITY)
    nb.code(
        f"norm, placement, extra = {s_norm!r}, {s_pos!r}, {extra!r}\n"
        f"lr, steps, seed = {s_lr!r}, {s_steps}, {ctx.seed}\n"
        f"{device_code()}\n"
        "variants = rv.norms.stability_variants(norm, placement, extra=extra)\n"
        "models = rv.norms.variant_table(variants)\n"
        "display(models)\n"
        "runs = rv.train_compare(variants, steps=steps, seed=seed, lr=lr, batch_size=16, "
        "seq_len=32, task='regression', device=device)\n"
        "summary = rv.norms.run_summary(runs)\n"
        "display(summary)\n"
        "display(rv.charts.line(runs, 'step', 'loss', 'variant', log_y=True, points=False, "
        "x_title='step', y_title='MSE loss (log)'))\n"
        "rv.charts.line(runs, 'step', 'grad_norm', 'variant', log_y=True, points=False, "
        "x_title='step', y_title='total gradient norm (log)')"
    )
    nb.frame("stability_variants", "models")
    nb.frame("stability_training", "runs").frame("stability_summary", "summary")
    nb.download("normalization_stability")


# -------------------------------------------------------------------------------- cost
def cost_section() -> None:
    st.subheader("Cost: LayerNorm versus RMSNorm")
    size = p.select("input size (batch x tokens x d)", "t_size")
    b, t, d = (int(v) for v in size.split("x"))
    # The timing holds its input many times over (RMSNorm's backward most of all): it
    # has its own estimate, and is refused like a model that does not fit.
    t_refused = views.check_budget(N.norm_timing_cost(b, t, d), "Timing at this size")
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
            caption=f"Measured on {ctx.device} just now: 7 timed calls after one warm-up, median "
            "(min and max in the CSV). RMSNorm skips the mean, so it does less arithmetic; "
            "whether that makes it faster depends on the kernels PyTorch has for this device. "
            "Here RMSNorm took "
            + "; ".join(
                f"{rv.ratio_words(g.loc['RMSNorm', 'median_ms'], g.loc['LayerNorm', 'median_ms'])}"
                f" LayerNorm's time {direction}"
                for direction, g in (
                    (k, v.set_index("norm")) for k, v in tm.groupby("pass", sort=False)
                )
            )
            + ".",
        )
    if torch.cuda.is_available() and ctx.device.type != "cuda":
        st.caption("A GPU is available: pick it in the sidebar to time it there.")
    # A timing is measured anew on every run: the notebook's numbers are its own, not
    # the CSV's (tests/app/test_notebooks.py checks its columns only).
    nb = notebook(S.COST)
    nb.code(
        f"batch, tokens, d = {b}, {t}, {d}\n"
        f"{device_code()}\n"
        "timing = rv.norms.norm_timing(batch, tokens, d, repeats=7, device=device)\n"
        "display(timing)\n"
        "rv.charts.bars(timing, 'pass', 'median_ms', 'norm', y_title='median time (ms)', "
        "height=260)"
    )
    nb.download("normalization_cost")


SECTIONS = {
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
            if label in S.INPUT_SECTIONS:
                input_settings()
            SECTIONS[label]()
