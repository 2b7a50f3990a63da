"""Normalization: what LayerNorm, BatchNorm and RMSNorm do, and where the norm sits.

Each section is one recipe of ``resviz.norms.recipes``: the page draws what it
returns and words it with ``resviz.norms.words``."""

import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pandas as pd
import streamlit as st
import torch

import resviz as rv
from resviz import norms as N
from resviz import words as W
from resviz.core import Recipe, Result, recipe_name
from resviz.norms import headline as H
from resviz.norms import recipes as R
from resviz.norms import training_words as NT
from resviz.norms import words as NW
from resviz.norms.settings import Inputs, PrePost, Stability, Timing, Transform, Warmup
from resviz.words.headline import Figure
from resviz.words.seeds import band_words, seeds_label
from ui import charts, jobs, views
from ui.budget import budget
from ui.cache import POLICY
from ui.headline import account, headline, slot
from ui.params import PageParams
from ui.section import Section, chart_code, with_seeds
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
    """Draw ``ui.charts.<kind>(r.<frame>, **kw)`` without a CSV of its own (the frame's
    CSV is offered once, by :func:`csv`); the notebook draws it the same way."""
    views.altair(getattr(charts, kind)(r[frame], **kw), width="stretch")
    sec.code(chart_code(kind, f"r.{frame}", kw))


def csv(sec: Section, r: Result, frame: str, name: str) -> None:
    """``r.<frame>`` as ``name``.csv; the notebook holds the same frame."""
    views.csv_button(r[frame], name)
    sec.notebook.frame(name, f"r.{frame}")


def significant(df: pd.DataFrame) -> dict[str, Any]:
    """Column formats showing 4 significant digits in every float column: a table's
    default of 4 decimals would print 0 for a loss of 3e-5."""
    return {
        c: st.column_config.NumberColumn(c, format="%.4g")
        for c in df.columns
        if pd.api.types.is_float_dtype(df[c])
    }


def one_seed(sec: Section, r: Result) -> tuple[Result, int]:
    """The first seed's own result, for the charts that cannot show a spread
    (heatmaps, histograms, one token's values); the notebook names it ``r0``."""
    first = r.seeds[0] if r.seeds else ctx.seed
    sec.code(f"r0 = r.per_seed[0]  # seed {first}: the charts drawn from one seed")
    return r.per_seed[0], first


def seeds_words(seeds: tuple[int, ...]) -> str:
    """``"seed 0"`` or ``"lowest to highest over seeds 0-2"``: what a quoted range is."""
    if len(seeds) <= 1:
        return f"seed {seeds[0] if seeds else ctx.seed}"
    return f"lowest to highest over {seeds_label(seeds)}"


# The input batch, shared by the first three sections: drawn at the top of each (under
# its title and finding), it keeps its values (and its place in the URL) while another
# section is open.
def input_settings() -> Inputs:
    c1, c2, c3, c4 = st.columns(4)
    with c1:
        batch = p.widget("batch")
    with c2:
        tokens = p.widget("tokens")
    with c3:
        d = p.widget("d")
    with c4:
        big = p.widget("big")
        small = p.widget("small")
    return Inputs(batch=batch, tokens=tokens, d=d, big=big, small=small)


# ------------------------------------------------------------------------ four views
def four_views_section(batch_settings: Callable[[], Inputs]) -> None:
    st.subheader("Same input, four views")
    top = slot()
    inputs = batch_settings()
    (batch, tokens, d), (big, small) = inputs.sizes(), inputs.scales()
    sec = Section(TITLE, S.FOUR_VIEWS, dev)
    r = sec.run(R.four_views, inputs, seed=ctx.seed)
    r0, first = one_seed(sec, r)
    headline(H.four_views([x.halves for x in r.per_seed], r.seeds or (ctx.seed,)), at=top)
    st.markdown(
        f"Gaussian input of {batch} samples x {tokens} tokens x {d} features; "
        f"features 0 to {d // 2 - 1} multiplied by {big:g}, the rest by "
        f"{small:g}. The heatmaps show sample 0 of seed {first}'s batch (rows: tokens, "
        "columns: features), each with its own colour scale."
    )
    cols = st.columns(2) + st.columns(2)
    for col, view in zip(cols, N.VIEWS, strict=True):
        with col:
            views.altair(
                charts.grid_heatmap(
                    r0.views[r0.views["view"] == view],
                    "feature",
                    "token",
                    "value",
                    title=N.VIEW_TITLES[view],
                    height=220,
                ),
                width="stretch",
            )
    sec.code(
        "for view in rv.norms.VIEWS:\n"
        "    display(rv.charts.grid_heatmap(r0.views[r0.views['view'] == view], 'feature', "
        "'token', 'value', title=rv.norms.VIEW_TITLES[view], height=220))"
    )
    csv(sec, r, "views", "norm_views")
    halves = [x.halves for x in r.per_seed]
    account(
        "Mean |value| of the left half of the features as a multiple of the right half's, in "
        f"sample 0 ({seeds_words(r.seeds)}): raw {NW.halves_words(halves, 'raw')}. RMSNorm "
        "divides each row (token) by one positive number, which keeps the halves' ratio inside "
        f"every row; over the sample's rows: {NW.halves_words(halves, 'RMSNorm')}. LayerNorm "
        "first subtracts the row's mean, which moves every feature of the row by the same "
        f"amount: {NW.halves_words(halves, 'LayerNorm')}. BatchNorm rescales each column "
        "(feature) to std 1 over the batch and its tokens. " + NW.bn_halves_seeds(halves, r.seeds)
    )
    sec.chart(
        "histograms",
        r0,
        "histograms",
        "norm_histograms",
        account=f"All values of seed {first}'s batch. "
        + (
            f"Raw values mix two scales, x{big:g} and x{small:g}. "
            if big != small
            else f"Raw values share one scale, x{big:g}. "
        )
        + "Each norm sets a mean square of 1 (up to eps): LayerNorm and RMSNorm per token, "
        f"BatchNorm per feature. The largest |value| after each ({seeds_words(r.seeds)}): "
        f"{NW.abs_max_words(r.stats)}.",
        var="r0",
        facet="view",
        sort=list(N.VIEWS),
        # One panel a row, 260 px: a facet keeps its pixel width, and two of 380 px
        # ran past a phone's column (926 px in 358).
        columns=1,
        width=260,
    )
    sec.table(
        r,
        "stats",
        "norm_stats",
        caption="Per token: mean and std over its features; per feature: over the batch and "
        "tokens (population std); abs_max: the largest |value|. LayerNorm sets every token's "
        "mean to 0 and std to 1, BatchNorm every feature's, RMSNorm every token's root mean "
        "square to 1 (its mean is not set to 0); all up to eps. A row per view and seed.",
        column_config=significant(r.stats),
    )
    sec.download("normalization_four_views")


# --------------------------------------------------------------- textbook versus torch
def textbook_section(batch_settings: Callable[[], Inputs]) -> None:
    st.subheader("Textbook versus library LayerNorm")
    top = slot()
    inputs = batch_settings()
    st.latex(
        r"\text{textbook: } \frac{x-\mu}{s_{n-1}+10^{-6}} \qquad "
        r"\text{torch: } \frac{x-\mu}{\sqrt{\sigma^2+10^{-5}}},\quad "
        r"s_{n-1}=\sigma\sqrt{\tfrac{n}{n-1}}"
    )
    sec = Section(TITLE, S.TEXTBOOK, dev)
    r = sec.run(R.textbook, inputs, seed=ctx.seed)
    runs = r.per_seed
    measured = [x.measured_max for x in runs]
    fit = [x.fit for x in runs]
    figures = (
        Figure("measured max |textbook - torch|", W.span(measured, 4)),
        Figure("predicted by the formulas", W.span([x.predicted_max for x in runs], 4)),
        Figure("first order: max|y| (1 - sqrt((n-1)/n))", W.span([x.approx_max for x in runs], 4)),
    )
    headline(H.textbook(measured, fit, r.seeds or (ctx.seed,), figures), at=top)
    with top:
        st.caption(f"Each number: {seeds_words(r.seeds)}.")
    sec.chart(
        "line",
        r,
        "gap",
        "layernorm_gap",
        account=f"The hand-written version divides by the unbiased std (n - 1 = {r.n - 1}), "
        f"so its outputs are smaller by the factor sqrt((n-1)/n) = {r.factor:.5f}, apart "
        "from eps: 1e-6 added to the std there, 1e-5 to the variance in torch, which change a "
        "token's outputs by relative amounts of at most 1e-6/s and 1e-5/(2σ²). For the "
        f"smallest token std here, σ = {rv.format_number(min(x.sigma_min for x in runs))}, "
        f"that is at most {rv.format_number(max(x.eps_bound for x in runs))}. The measured "
        f"and predicted curves differ by at most {rv.format_number(max(fit))}, against a gap "
        f"of up to {rv.format_number(max(measured))}. "
        + NW.textbook_seeds(measured, fit, r.seeds)
        + " "
        + band_words(r.seeds),
        x="token",
        y="gap",
        color="what",
        x_title="token (flat index)",
        y_title="max |diff|",
    )
    sec.download("normalization_textbook_layernorm")


# ------------------------------------------------------------------------ invariances
def invariances_section(batch_settings: Callable[[], Inputs]) -> None:
    st.subheader("Invariances, measured")
    top = slot()
    inputs = batch_settings()
    transform = p.draw(Transform, columns=2)
    sec = Section(TITLE, S.INVARIANCES, dev)
    r = sec.run(R.invariances, inputs, transform, seed=ctx.seed)
    tables = [x.table for x in r.per_seed]
    headline(H.invariances(tables, N.INVARIANCE_NORMS, r.seeds or (ctx.seed,)), at=top)
    sec.table(
        r,
        "wide",
        "invariances",
        account="max |output change| of each norm, on h = x W^T (x the batch above, W a random "
        "d x d matrix), in float64, a row per seed. Below 1e-4 counts as invariant. "
        + NW.invariance_seeds([x.table for x in r.per_seed], N.INVARIANCE_NORMS, r.seeds)
        + " In exact arithmetic LayerNorm ignores a shift or a scale of a token (so also a "
        "re-scaled or re-centred W) and RMSNorm a scale; eps under the square root makes the "
        "scale invariance approximate. BatchNorm in training mode normalizes each feature over "
        "the batch and its tokens, so sample 0's output depends on the other samples; in eval "
        "mode it is a fixed affine map of each token.",
        column_config={
            n: st.column_config.NumberColumn(n, format="%.2e") for n in N.INVARIANCE_NORMS
        },
    )
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
    headline(H.batch(r.summary, r.seeds or (ctx.seed,)))
    c1, c2 = st.columns(2)
    for col, mode in ((c1, "train"), (c2, "eval")):
        with col:
            sec.chart(
                "line",
                r0,
                mode,
                f"batchnorm_{mode}_values",
                var="r0",
                title=f"{mode} mode: sample 0, token 0 (seed {first})",
                **BATCH_LINE,
            )
    sec.table(
        r,
        "summary",
        "batchnorm_batch_dependence",
        account="The same token, normalized with different batch-mates (batch "
        f"{r.batch_size} x {r.seq_len} tokens x {r.d_model} features, halves "
        f"x{r.big:g} / x{r.small:g}; the charts show seed {first}, the table a row per "
        f"scenario, mode and seed). Largest change of its output in training mode "
        f"({seeds_words(r.seeds)}): {NW.batch_change_words(r.summary, 'train')}. In eval mode, "
        "with the running statistics of the original batch: "
        f"{NW.batch_change_words(r.summary, 'eval')}.",
        column_config=significant(r.summary),
    )
    sec.download("normalization_batch_dependence")


# ------------------------------------------------------------------ Pre-LN vs Post-LN
def prepost_section() -> None:
    st.subheader("Post-LN versus Pre-LN at init")
    top = slot()
    encoders = p.draw(PrePost, columns=3)
    layers = encoders.layers
    st.markdown(
        "An encoder with real attention and ReLU FFN sublayers (4 heads, FFN 4d) at init. "
        "**Input scale, on purpose:** token embeddings plus sinusoidal positions of random "
        "tokens, standardized to mean 0 and variance 1 per feature, so E||x₀||² = d as in "
        "Xiong et al.'s analysis."
    )
    sec = Section(TITLE, S.PREPOST, dev)
    r = sec.run(R.prepost_ln, encoders, seed=ctx.seed)
    runs = r.per_seed
    headline(H.prepost([x.stream for x in runs], r.seeds or (ctx.seed,), layers), at=top)
    raw0 = [
        float(x.raw_stream.query("variant == 'Pre-LN' and block == 0")["sq_norm_per_dim"].iloc[0])
        for x in runs
    ]
    account(
        "Without that standardization (the raw N(0, 1) embedding plus positions, about "
        "1 + 1/2 per feature) the input's ||x₀||²/d is "
        f"{W.span(raw0)} for this model ({seeds_words(r.seeds)}). "
        + NW.stream_seeds(
            [x.raw_stream for x in runs],
            r.seeds,
            f"under PyTorch's default init the Pre-LN stream's ||x_l||²/d over {layers} layer(s)",
        )
    )
    sec.chart(
        "line",
        r,
        "stream",
        "prepost_stream",
        account="Post-LN ends every layer with a LayerNorm, so its ||x_l||²/d is 1 up to eps: "
        f"measured, in every seed it {NW.post_ln_words(r.stream)}. In Pre-LN each sublayer adds "
        "its output to an un-normalized stream, and Xiong et al. (Lemma 1) show that its "
        "expected ||x_l||² grows linearly with l. "
        + NW.stream_seeds([x.stream for x in runs], r.seeds, "Pre-LN's ||x_l||²/d")
        + " "
        + band_words(r.seeds),
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
        account="Gradient norm of the last layer's second FFN weight (batch 4), divided by "
        "its value at the shallowest depth, per seed. "
        + NW.deepest_ratios_seeds([x.grads for x in runs], r.seeds)
        + " Xiong et al.: Pre-LN's final LayerNorm divides by ||x_L||, which grows like "
        "sqrt(L), so its last-layer gradient shrinks like 1/sqrt(L) once that growth dominates "
        "the input, while Post-LN's does not shrink with L; hence Pre-LN can take a large "
        "learning rate from step 0. " + band_words(r.seeds),
        x="n_layers",
        y="ratio_to_L1",
        color="variant",
        log_x=True,
        x_title="number of layers L (log)",
        y_title="||dL/dW2|| ÷ shallowest's",
    )
    sec.table(
        r,
        "grads",
        "last_layer_grad",
        caption="A row per variant, depth and seed.",
        column_config=significant(r.grads),
    )
    sec.download("normalization_prepost")


# ------------------------------------------------------------------ training sections
def training_panel(
    name: str,
    sec: Section,
    fn: Recipe,
    settings: dict[str, Any],
    total: int,
    draw: Callable[[Result], None],
    blocked: str | None = None,
) -> None:
    """The recipe ``fn`` at ``settings`` as a background run with progress and Stop
    (``ui/jobs.py``): ``draw`` shows its result so far; the finished result is
    recorded (:meth:`Section.shown`) and offered as a notebook."""

    settings = with_seeds(fn, settings)
    n_seeds = int(settings.get("seeds", 1))

    def work(report, should_stop):  # noqa: ANN001, ANN202
        return fn(**settings, device=ctx.device, progress=report, should_stop=should_stop)

    def render(job: jobs.Job) -> None:
        r = job.result if job.result is not None else job.frame
        if not isinstance(r, Result) or not len(r.runs):
            return
        final = job.state == "done" and job.result is not None
        if final:
            sec.shown(fn, r, **settings)
        elif job.live and n_seeds > 1:
            st.caption(
                f"Training seed {r.seeds[-1]} ({len(r.seeds)} of {n_seeds}); the curves hold "
                f"{seeds_label(r.seeds)} so far."
            )
        draw(r)
        if final:
            sec.download(f"normalization_{name}")
        elif job.state == "stopped":
            if len(r.seeds) < n_seeds:
                st.caption(
                    f"Stopped with {seeds_label(r.seeds)} of the {n_seeds} seeds asked for: "
                    "the sentences above count only those."
                )
            st.caption(
                "The notebook of this section reproduces a finished run: run it to the end to "
                "download it."
            )

    jobs.panel(
        name,
        (recipe_name(fn), tuple(settings.items()), dev),
        work,
        total * n_seeds,
        render,
        start_label="Train",
        blocked=blocked,
    )


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
    w_layers, w_steps, w_warm = training.w_layers, training.w_steps, training.w_warm
    w_lr = float(training.w_lr)
    variants = N.warmup_models(w_layers)
    # Both variants train side by side, twice (with and without warm-up): one refusal,
    # shown by the panel below.
    blocked = budget().check(
        rv.budget.combine(
            rv.estimate(c, batch=16, seq_len=16, steps=2 * w_steps) for c in variants.values()
        ),
        "This training run",
    )
    cfg = variants["Post-LN"]
    st.markdown(
        f"Post-LN and Pre-LN encoders ({w_layers} layers, d = {cfg.d_model}, {cfg.n_heads} "
        f"heads) are trained to copy their input tokens (vocabulary {cfg.vocab_size}, batch "
        f"16 x 16) with Adam at a peak rate of {w_lr:g}, once at that rate from step 0 and "
        f"{NT.schedule_words(w_lr, w_steps, w_warm)}. In each seed both models are built from that "
        "seed, and each is trained twice, without and with warm-up, on the same batches; more "
        "Seeds (sidebar) train all four runs again per seed."
    )
    sec = Section(TITLE, S.WARMUP, dev)
    views.table(
        N.variant_table(variants),
        "warmup_variants",
        caption="The two models, the same in every seed.",
    )

    def draw(r: Result) -> None:
        found = H.warmup(r.history, r.w_warm)
        if found is not None:
            headline(found)
        sec.chart(
            "line",
            r,
            "history",
            "warmup_training",
            account=f"Guessing uniformly costs log {r.vocab_size} = "
            f"{math.log(r.vocab_size):.2f}. "
            + NT.warmup_seeds(r.history, r.w_warm)
            + "Xiong et al. explain why Post-LN needs warm-up at large learning rates: at init "
            "its gradients near the output are large, so full-size early steps can throw it "
            "off, while Pre-LN's are not. "
            + NT.divergence_words(r.history)
            + " "
            + band_words(r.seeds),
            **log_lines("loss", "cross-entropy (log)"),
        )
        sec.table(r, "summary", "warmup_summary", column_config=significant(r.summary))
        sec.notebook.code(MODELS).frame("warmup_variants", MODELS)

    settings = {**training.values(), "seed": ctx.seed}
    training_panel("warmup", sec, R.warmup, settings, 2 * w_steps, draw, blocked)


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
        st.session_state[f"normalization:{name}"] = value


def stability_section() -> None:
    st.subheader("Training stability: residual x norm")
    run = p.draw(Stability, only=("s_norm", "s_pos", "s_lr", "s_steps"), columns=4)
    more = p.draw(Stability, only=("s_norms", "s_place"), columns=2)
    training = replace(run, s_norms=more.s_norms, s_place=more.s_place)
    now = training.values()
    for col, (key, (label, values)) in zip(st.columns(2), STABILITY_SETTINGS.items(), strict=True):
        col.button(
            label,
            key=key,
            on_click=use_settings,
            args=(values,),
            disabled=now == values,
            width="stretch",
        )
    d, t = S.DEFAULT_STABILITY, S.TUTORIAL_STABILITY
    st.caption(
        f"**Where they part**: LayerNorm after each block (Post-LN), learning rate {d['s_lr']}, "
        f"{d['s_steps']} steps. At every seed we ran (0 to 9) the two stacks without a norm "
        "blow up within 2 steps; the two with one settle near the loss floor of 1. **As in "
        "the tutorial notebook** this experiment comes from (a tutorial on transformer "
        f"components): LayerNorm before each block (Pre-LN), learning rate {t['s_lr']}, "
        f"{t['s_steps']} steps. At that gentle rate all four losses end near the floor, "
        "within 0.03 of it at every seed we ran (0 to 4)."
    )
    st.markdown(
        "The experiment, from a tutorial notebook on transformer components: 4 FFN blocks "
        "`W2 gelu(W1 x)` of width 128, regression of random targets from random inputs "
        "(batch 16 x 32), Adam, every variant from the same seed on the same batches."
    )
    sec = Section(TITLE, S.STABILITY, dev)
    t = training
    models = N.variant_table(N.stability_models(t.s_norm, t.s_pos, t.s_norms, t.s_place))
    views.table(models, "stability_variants")

    def draw(r: Result) -> None:
        sec.notebook.code(MODELS).frame("stability_variants", MODELS)
        c1, c2 = st.columns(2)
        with c1:
            chart_only(sec, "line", r, "history", **log_lines("loss", "MSE loss (log)"))
        with c2:
            chart_only(
                sec, "line", r, "history", **log_lines("grad_norm", "total gradient norm (log)")
            )
        no_norm = [
            n
            for n, norm in zip(models["variant"], models["norm"], strict=True)
            if norm == N.NORM_LABELS["none"]
        ]
        found = H.stability(r.history, no_norm)
        if found is not None:
            headline(found)
        st.caption(
            NT.stability_finding(r.history, no_norm)
            + " The targets are fresh random numbers each step, independent of the inputs, so the "
            "best a run can do is a loss of 1 in expectation (predict 0; one batch can dip a "
            "little below it); the curves show where each run's loss goes against that floor and "
            "how large its gradients grow. "
            + band_words(r.seeds)
            + " "
            + NT.start_end_words(r.history)
            + f" At learning rate {float(t.s_lr):g}: "
            + NT.divergence_words(r.history)
        )
        csv(sec, r, "history", "stability_training")
        sec.table(r, "summary", "stability_summary", column_config=significant(r.summary))

    settings = {**now, "seed": ctx.seed}
    training_panel("stability", sec, R.stability, settings, t.s_steps, draw)


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
    if st.button(
        "Measure again",
        key="normalization:remeasure",
        icon=":material/timer:",
        disabled=bool(refused),
    ):
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
    t = r.timing
    headline(H.cost(t, r.device), at=top)
    views.chart(
        charts.bars(t, "pass", "median_ms", "norm", y_title="median time (ms)", height=260),
        t,
        "norm_timing",
        account=f"Measured on {r.device} just now: {int(t['repeats'].iloc[0])} timed calls "
        "after one warm-up, median (min and max in the CSV). RMSNorm skips the mean, so it "
        "does less arithmetic; whether that makes it faster depends on the kernels PyTorch "
        f"has for this device. Here RMSNorm took {NW.cost_words(r.timing)}. One timing: the "
        "sidebar's Seeds does not apply here, because the seed draws only the input's values, "
        "which do not change the work either norm does; what varies between two timings is "
        "the machine (the CSV's min and max over the calls show it).",
    )
    sec.code(
        chart_code(
            "bars",
            "r.timing",
            dict(x="pass", y="median_ms", color="norm", y_title="median time (ms)", height=260),
        )
    )
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
            if label in S.INPUT_SECTIONS:
                SECTIONS[label](input_settings)
            else:
                SECTIONS[label]()
