"""Gradient flow: watch gradients vanish, explode, or flow through the shortcut."""

import dataclasses

import numpy as np
import pandas as pd
import streamlit as st

import resviz as rv
from resviz import gradients as G
from resviz.charts.lines import seed_band
from resviz.core import Result
from resviz.gradients import headline as H
from resviz.gradients import recipes as R
from resviz.gradients import settings as GS
from resviz.gradients import words as W
from resviz.words.headline import Figure
from resviz.words.numbers import format_log10
from resviz.words.seeds import band_words, seeds_label
from ui import charts, jobs, views
from ui.budget import budget
from ui.headline import account, headline, slot
from ui.params import PageParams
from ui.section import Section, chart_code, with_seeds
from ui.shell import page_setup
from ui.specs import gradient_flow as S

TITLE = "Gradient flow"
ctx = page_setup(
    TITLE,
    "Backpropagation through a block with a shortcut multiplies the gradient by "
    "`I + J` instead of `J`, so the identity term carries it past layers whose "
    "Jacobian `J` is small. Every number below is measured on a freshly built stack.",
)
p = PageParams("gradient_flow")
tabs = p.sections()
dev = str(ctx.device)
PLAIN, RESID = G.PLAIN, G.RESIDUAL


# The stack's settings, shared by the sections that build it: drawn at the top of
# each (the depth sweep sets depth and activation itself, so it draws the rest).
def stack_settings(only: tuple[str, ...] | None = None) -> GS.Stack:
    """Draw the stack's settings (those in ``only``; the others at their defaults)."""
    return p.draw(GS.Stack, only=only, columns=3)


def titled_chart_code(frame: str, title: str, kw: dict) -> str:
    """The notebook's ``rv.charts.line`` call for one panel of a loop: ``frame`` and
    ``title`` are code (the loop's variables), ``kw`` values."""
    args = "".join(f", {k}={v!r}" for k, v in kw.items())
    return f"rv.charts.line({frame}, title={title}{args})"


def flagged(df: pd.DataFrame, col: str, what: str, by: tuple[str, str]) -> str:
    """The sentence about the points of a column of log10s that a log scale cannot
    show (exactly 0, or not finite), drawn as triangles at the bottom; empty if none.
    Over several seeds the line is each (color, x) group's median (``by``): the
    triangles mark the medians that are such a value."""
    n = int((~np.isfinite(df[col])).sum())
    if not n:
        return ""
    k = df["seed"].nunique() if "seed" in df.columns else 1
    if k == 1:
        return f" {n} {what}(s) are exactly 0 or not finite: the triangles at the bottom mark them."
    medians = seed_band(df, list(by), col)[col]
    m = int((~np.isfinite(medians)).sum())
    marked = (
        f"the triangles at the bottom mark the {m} point(s) whose median over the seeds is"
        if m
        else "no median over the seeds is, so no triangle marks them"
    )
    return f" {n} {what}(s) of the {k} seeds are exactly 0 or not finite; {marked}."


def seeds_of(r: Result) -> tuple[int, ...]:
    """The seeds a result holds (a one-seed recipe's result: the sidebar seed)."""
    return r.seeds or (ctx.seed,)


def median_note(r: Result) -> str:
    """What a metric over several seeds shows."""
    n = len(r.per_seed)
    return f" (median of {n} seeds)" if n > 1 else ""


def towards_input(r: Result, frame: str, variant: str, y: str, subject: str) -> str:
    """How ``y`` (a column of log10s) of ``variant`` changes from the output side back
    to the input side (``block`` descending), in every seed: one sentence."""
    curves = []
    for run in r.per_seed:
        df = run.frames[frame]
        part = df[df["variant"] == variant].sort_values("block", ascending=False)
        curves.append(part[y].tolist())
    return W.trend_over_seeds(subject, curves, seeds_of(r))


def gains(r: Result, variant: str, col: str = "log10_input_gain") -> list[float]:
    """Each seed's ``||dL/dx_0|| / ||dL/dx_L||`` (log10) of ``variant``."""
    return [float(run.gains.set_index("variant").loc[variant, col]) for run in r.per_seed]


# ------------------------------------------------------------------------ per layer
WEIGHT_LINE = dict(
    x="block",
    y="log10_grad_norm",
    color="variant",
    log10_y=True,
    x_title="block (input side = 1)",
    y_title="||dL/dW|| (log scale)",
    height=280,
)
STREAM_LINE = dict(
    x="block",
    y="log10_act_grad",
    color="variant",
    log10_y=True,
    x_title="x_l (0 = the input, L = the output)",
    y_title="||dL/dx_l|| (log scale)",
    height=280,
)


def fits_in_float64(cfg: rv.StackConfig) -> bool:
    """The gradient measurements cast the stack to float64 (twice its float32 bytes):
    refuse, with the numbers, a stack whose float64 pass is over the server's budget."""
    est = rv.estimate(cfg, batch=32, bytes_per_value=8)
    # The backward pass holds a gradient beside each saved activation.
    est = dataclasses.replace(est, activation_bytes=2 * est.activation_bytes)
    return views.check_budget(est, "This stack's float64 gradient measurement") is None


def per_layer_section() -> None:
    """Weight and stream gradients of one plain and one residual stack at init."""
    st.subheader("Gradient norms per layer, at init")
    top = slot()
    stack = stack_settings()
    if not fits_in_float64(stack.config(ctx.seed)):
        return
    sec = Section(TITLE, S.PER_LAYER, dev)
    r = sec.run(rv.recipes.gradients.per_layer, stack, seed=ctx.seed)
    seeds = seeds_of(r)
    headline(
        H.per_layer(gains(r, PLAIN), gains(r, RESID), seeds, stack.depth, names=(PLAIN, RESID)),
        W.larger_gradient_over_seeds(gains(r, PLAIN), gains(r, RESID), seeds),
        at=top,
    )
    left, right = st.columns(2)
    with left:
        sec.chart(
            "line",
            r,
            "weights",
            "gradient_norms",
            account="Weight gradients after one MSE backward pass on a Gaussian batch of 32, "
            "measured in float64. "
            + " ".join(
                towards_input(
                    r,
                    "weights",
                    v,
                    "log10_grad_norm",
                    f"the {name} stack's ||dL/dW|| (from the last block back to the first)",
                )
                for v, name in ((PLAIN, "plain"), (RESID, "residual"))
            )
            + " A weight gradient is a sum of outer products of the gradient at the layer's "
            "output with the layer's input, so it scales with the size of that input (the "
            f"stream entering the block{', after the norm layer' if stack.norm != 'none' else ''}) "
            "as well as with the gradient. " + band_words(seeds),
            **WEIGHT_LINE,
        )
    with right:
        sec.chart(
            "line",
            r,
            "streams",
            "activation_gradients",
            account="The gradient with respect to the stream itself, dL/dx_l: the quantity the "
            "Derivation section's formula multiplies block by block. "
            + " ".join(
                towards_input(
                    r,
                    "streams",
                    v,
                    "log10_act_grad",
                    f"the {name} stack's ||dL/dx_l|| (from the output x_L back to the input x_0)",
                )
                for v, name in ((RESID, "residual"), (PLAIN, "plain"))
            )
            + flagged(r.streams, "log10_act_grad", "gradient", ("variant", "block"))
            + " "
            + band_words(seeds),
            **STREAM_LINE,
        )
    sec.download("gradient_flow_per_layer")


# ----------------------------------------------------------------------- derivation
SPECTRUM_LINE = dict(
    x="index",
    y="sigma",
    color="curve",
    log_y=True,
    points=False,
    x_title="singular value index (largest first)",
    y_title="singular value (log)",
    height=260,
)
RATIO_LINE = dict(
    x="blocks_above",
    y="log10_ratio",
    color="curve",
    log10_y=True,
    x_title="blocks from x_l to the output, L - l",
    y_title="gradient ratio (log scale)",
    height=260,
)


def sv_range(spec: pd.DataFrame, matrix: str) -> str:
    """The residual stack's singular values of ``matrix``, smallest to largest (over
    every seed in ``spec``)."""
    sv = spec[(spec["variant"] == RESID) & (spec["matrix"] == matrix)]["sigma"]
    return f"{rv.format_number(sv.min())} to {rv.format_number(sv.max())}"


def derivation_section() -> None:
    """The I + J Jacobian of one block, and the scaled shortcut's λ^L."""
    st.subheader("The derivation, checked live")
    top = slot()
    stack = stack_settings()
    if not fits_in_float64(stack.config(ctx.seed)):
        return
    st.latex(
        r"x_{l+1} = x_l + f(x_l)\;\Rightarrow\;"
        r"\frac{\partial L}{\partial x_l} = \frac{\partial L}{\partial x_{l+1}}"
        r"\left(I + \frac{\partial f(x_l)}{\partial x_l}\right),\qquad"
        r"\frac{\partial L}{\partial x_0} = \frac{\partial L}{\partial x_L}\prod_{l=0}^{L-1}(I + J_l)"
    )
    st.markdown(
        "Expand the product and one term is the identity: it carries the gradient at the "
        "output to the input unchanged, whatever the branches do. The other terms add to it, "
        "and they can be far larger than it. A plain stack has only the product of the J_l, "
        "whose norm is at most the product of their norms: it shrinks when those are below 1."
    )
    block = p.widget("block")
    st.markdown(
        "**Scaled shortcut: λ·x + f(x) carries λ^L.** He et al. 2016 (*Identity Mappings in "
        "Deep Residual Networks*, section 3) scale the shortcut instead of the branch: the "
        "identity term of the product becomes λ^L, which shrinks exponentially with L below "
        "λ = 1 and grows exponentially above it. With near-zero branches on, each block's last layer is "
        "multiplied by 0.01; whether that leaves the identity term nearly alone is measured "
        "below."
    )
    s1, s2, s3 = st.columns(3)
    with s1:
        scale = p.widget("l")
    with s2:
        depth_l = p.widget("L")
    with s3:
        small = p.widget("small")
    derive = GS.Derivation(block=block, L=depth_l, small=small)
    sec = Section(TITLE, S.DERIVATION, dev)
    r = sec.run(R.derivation, stack, derive, GS.Scale(l=scale), seed=ctx.seed)
    seeds = seeds_of(r)
    measured = [float(run.values["log10_measured"]) for run in r.per_seed]
    log_m = float(np.median(measured))
    figures = (
        Figure(f"measured ||dL/dx_0|| / ||dL/dx_L||{median_note(r)}", format_log10(log_m, 4)),
        Figure(f"λ^L = {scale:g}^{depth_l}", rv.format_number(r.identity_term, 4)),
        Figure(
            f"measured / λ^L{median_note(r)}",
            format_log10(log_m - r.log10_identity_term, 4)
            if r.identity_term != 0
            else "undefined (λ^L = 0)",
        ),
    )
    headline(H.derivation(measured, r.log10_identity_term, seeds, figures), at=top)
    norms = r.norms
    over = f" (over {seeds_label(seeds)}, lowest to highest)" if len(seeds) > 1 else ""

    def norm_of(variant: str, col: str) -> str:
        return W.span(norms.loc[norms["variant"] == variant, col].tolist())

    jc1, jc2 = st.columns([2, 3])
    with jc1:
        sec.table(
            r,
            "norms",
            "block_jacobian_norms",
            account=f"Spectral norms (largest singular value) of block {r.block}'s Jacobians for "
            "one sample, in float64. With the shortcut the block Jacobian is I + J, whose norm "
            "lies between 1 - ||J|| and 1 + ||J||: here ||J|| = "
            f"{norm_of(RESID, '||J|| (branch)')} and ||I + J|| = "
            f"{norm_of(RESID, '||block Jacobian||')}{over}. Without, the block "
            "Jacobian is J itself (here "
            f"{norm_of(PLAIN, '||block Jacobian||')}).",
        )
    with jc2:
        sec.chart(
            "line",
            r,
            "spectrum",
            "block_jacobian_spectrum",
            account="All singular values. In the residual stack's block J's run from "
            f"{sv_range(r.spectrum, 'branch J')} and those of I + J from "
            f"{sv_range(r.spectrum, 'block')}{over}. Every singular value of I + J lies within "
            "||J|| of 1 (Weyl's inequality), so while ||J|| < 1 none of them is 0 and no "
            "direction of the gradient is lost."
            + W.zero_sv_over_seeds([run.spectrum for run in r.per_seed], seeds)
            + " "
            + band_words(seeds),
            **SPECTRUM_LINE,
        )
    sec.chart(
        "line",
        r,
        "ratio_curves",
        "scaled_shortcut_ratio",
        account="One backward pass (in float64) gives the whole curve: the gain from the "
        "output down to every x_l."
        + (" On a log scale λ^(L-l) is a straight line." if r.identity_term != 0 else "")
        + " "
        + W.agreement_over_seeds(measured, r.log10_identity_term, seeds)
        + " "
        + W.why_over_seeds([run.ratio for run in r.per_seed], seeds, scale, stack.norm, small)
        + flagged(r.ratio_curves, "log10_ratio", "value", ("curve", "blocks_above"))
        + " "
        + band_words(seeds),
        **RATIO_LINE,
    )
    sec.download("gradient_flow_derivation")


# ---------------------------------------------------------------------- depth sweep
SWEEP_ORDER = ("tanh", "sigmoid", "relu", "gelu")


def sweep_words(part: pd.DataFrame, ycol: str, seeds: tuple[int, ...]) -> str:
    """Under one activation's panel: how each variant's curve changes from the
    shallowest stack to the deepest, in every seed (a seed still running: its depths
    so far)."""
    out = []
    for v, g in part.groupby("variant", sort=True):
        curves = [
            g[g["seed"] == s].sort_values("depth")[ycol].tolist() if "seed" in g else []
            for s in seeds
        ]
        have = [i for i, c in enumerate(curves) if c]
        if "seed" not in g:
            curves, have = [g.sort_values("depth")[ycol].tolist()], [0]
        subject = f"the {v} curve (depth {int(g['depth'].min())} to {int(g['depth'].max())})"
        out.append(W.trend_over_seeds(subject, [curves[i] for i in have], [seeds[i] for i in have]))
    return " ".join(out)


def seed_progress(job: jobs.Job, per_seed: int, n_seeds: int, unit: str) -> str:
    """Which seed a background run over several seeds is at, and how far into it."""
    k = min(job.step // max(per_seed, 1), n_seeds - 1)
    return (
        f"Seed {ctx.seed + k} ({k + 1} of {n_seeds}): {unit} {job.step - k * per_seed} "
        f"of {per_seed}."
    )


def sweep_section() -> None:
    """Fresh stacks of 1 to 100 blocks per activation, plain and residual (background)."""
    st.subheader("Depth sweep: what reaches the first layer")
    # Depth and activation are what the sweep varies: the stack's other settings.
    sweep_stack = stack_settings(("width", "init", "norm"))
    sweep_base = dataclasses.replace(sweep_stack.config(ctx.seed), depth=1)
    measure = p.widget("measure")
    ycol = "log10_gain" if measure.startswith("||dL/dx_0") else "log10_first_weight_grad"
    settings = with_seeds(
        R.depth_sweep,
        dict(width=sweep_stack.width, init=sweep_stack.init, norm=sweep_stack.norm, seed=ctx.seed),
    )
    n_seeds = int(settings["seeds"])
    depths = G.DEFAULT_DEPTHS
    sweep_line = dict(
        x="depth",
        y=ycol,
        color="variant",
        log10_y=True,
        x_title="depth (blocks)",
        y_title=f"{measure} (log)",
        height=280,
    )
    sec = Section(TITLE, S.SWEEP, dev)

    def sweep_render(job: jobs.Job) -> None:
        r = job.result if job.result is not None else job.frame
        if r is None or not len(r.sweep):
            return
        df = r.sweep
        seeds = seeds_of(r)
        if job.live and n_seeds > 1:
            st.caption(seed_progress(job, n_stacks, n_seeds, "stack"))
        found = H.sweep(df, ycol, measure, seeds, SWEEP_ORDER)
        if found is not None:
            headline(found)
        grid = st.columns(2) + st.columns(2)
        for col, activation in zip(grid, SWEEP_ORDER, strict=True):
            part = df[df["activation"] == activation]
            if not len(part):
                continue
            with col:
                st.markdown(f"**{activation}**")
                views.altair(charts.line(part, **sweep_line), width="stretch")
                account(sweep_words(part, ycol, seeds))
        zeros = df[~np.isfinite(df[ycol])]
        if not len(zeros):
            note = " No point is 0 or not finite."
        elif len(seeds) == 1:
            note = (
                f" {len(zeros)} point(s) are exactly 0 or not finite (the triangles at the "
                f"bottom of their plots, first at depth {int(zeros['depth'].min())})."
            )
        else:
            medians = seed_band(df, ["activation", "variant", "depth"], ycol)[ycol]
            m = int((~np.isfinite(medians)).sum())
            note = (
                f" {len(zeros)} point(s) of the {len(seeds)} seeds are exactly 0 or not "
                f"finite (first at depth {int(zeros['depth'].min())}); "
                + (
                    f"the triangles at the bottom of their plots mark the {m} whose median "
                    "over the seeds is."
                    if m
                    else "no median over the seeds is, so no triangle marks them."
                )
            )
        point = (
            "Each point is a fresh stack of that depth"
            if len(seeds) == 1
            else f"Each point is the median of {len(seeds)} fresh stacks of that depth, one per seed"
        )
        account(
            f"{point} (width, init and norm as set above), "
            "one backward pass in float64 with the gradient's size kept in log space, so a "
            "gradient under float64's range is measured too. Under each plot: how its curves "
            "change from the shallowest stack to the deepest, in every seed. A curve that is "
            "a straight line on the log axis changes by the same factor with every block."
            + note
            + " "
            + band_words(seeds)
        )
        views.csv_button(df, "depth_sweep")

    # One stack at a time, one backward pass each: the deepest one is the cost. The
    # panel below shows the refusal, if any.
    sweep_blocked = budget().check(
        rv.estimate(
            dataclasses.replace(sweep_base, depth=max(depths)), batch=32, bytes_per_value=8
        ),
        "This depth sweep",
    )
    n_stacks = len(depths) * 8
    per_seed = f" for each of {n_seeds} seeds" if n_seeds > 1 else ""
    st.caption(
        f"**Sweep** builds {n_stacks} stacks of {min(depths)} to {max(depths)} blocks at width "
        f"{sweep_base.width}{per_seed} (the wider, the longer it takes) and backpropagates once "
        "through each. Finished results are kept for a while, so a second visit with the same "
        "settings shows them at once."
    )
    sec.background(
        "gradflow_sweep",
        R.depth_sweep,
        settings,
        n_stacks * n_seeds,
        sweep_render,
        start_label="Sweep",
        blocked=sweep_blocked,
        unit="stack",
    )
    sec.code(
        "from IPython.display import display\n\n"
        f"for activation in {SWEEP_ORDER!r}:\n"
        "    part = r.sweep[r.sweep['activation'] == activation]\n"
        f"    display({titled_chart_code('part', 'activation', sweep_line)})"
    )
    sec.notebook.frame("depth_sweep", "r.sweep")
    sec.download("gradient_flow_depth_sweep")


# ------------------------------------------------------------------------- training
LOSS_LINE = dict(
    x="step",
    y="loss",
    color="variant",
    log_y=True,
    points=False,
    y_title="training loss (log)",
    height=260,
)
HEATMAP = dict(
    x_title="step",
    y_title="block - 1 (0 = input)",
    height=260,
    legend_title="log10 ||grad||",
)


def training_section() -> None:
    """Plain and residual (and λ·x + f(x)) trained side by side, gradients per block."""
    st.subheader("Training side by side")
    stack = stack_settings()
    base = stack.config(ctx.seed)
    st.markdown(
        "The stacks set above train with Adam from the same seed and init on the same "
        "batches (Gaussian inputs, targets from a fixed random tanh teacher). The heatmaps "
        "show every block's gradient norm at every step, filling in while the run goes on."
    )
    t1, t2, t3 = st.columns(3)
    with t1:
        steps = p.widget("steps")
    with t2:
        lr = p.widget("lr")
    with t3:
        with_scaled = p.widget("train_scaled")
        # The Derivation section's λ (URL name l), drawn here while it is used.
        scale = p.widget("l") if with_scaled else None
    settings = {**stack.values(), "steps": steps, "lr": lr, "train_scaled": with_scaled}
    if with_scaled:
        settings["l"] = scale
    settings["seed"] = ctx.seed
    settings = with_seeds(R.training, settings)
    n_seeds = int(settings["seeds"])
    train_variants = rv.gradients.training_variants(base, scale)
    # The variants train side by side and the seeds one after another (their steps add
    # up); the panel below shows the refusal, if any.
    blocked = budget().check(
        rv.budget.combine(
            rv.estimate(c, batch=R.BATCH, steps=steps * n_seeds) for c in train_variants.values()
        ),
        "This training run",
    )
    if n_seeds > 1:
        st.caption(
            f"{n_seeds} seeds train one after another ({seeds_label(range(ctx.seed, ctx.seed + n_seeds))}), "
            "each from its own weights and batches: the progress counts the steps of all of them."
        )
    sec = Section(TITLE, S.TRAINING, dev)

    def train_render(job: jobs.Job) -> None:
        r = job.result if job.result is not None else job.frame
        if r is None or not len(r.loss):
            return
        seeds = seeds_of(r)
        if job.live and n_seeds > 1:
            st.caption(seed_progress(job, steps, n_seeds, "step"))
        headline(H.loss_race(r.loss, seeds[0]), H.loss_race_words(r.loss, seeds[0], window=10))
        views.chart(
            charts.line(r.loss, **LOSS_LINE),
            r.loss,
            "training_loss",
            caption="Training loss. " + band_words(seeds),
        )
        for seed, run in zip(seeds, r.per_seed, strict=True):
            for name, where in run.values.get("divergence", {}).items():
                # A banded chart (several seeds) draws no divergence rules.
                dashed = " (dashed vertical line)" if len(seeds) == 1 else ""
                st.warning(
                    f"{name} (seed {seed}) diverged: {where}; its training stopped there{dashed}."
                )
        # A heatmap has no band: it shows the first seed's run.
        first = r.per_seed[0]
        maps = rv.gradients.layer_heatmaps(
            first.layers, first.values["steps"], r.loss["variant"].unique()
        )
        cols = st.columns(len(maps.matrices))
        for col, (name, m) in zip(cols, maps.matrices.items(), strict=True):
            with col:
                views.altair(
                    charts.image_heatmap(m, title=name, vmin=maps.vmin, vmax=maps.vmax, **HEATMAP),
                    width="stretch",
                )
        zero_note = (
            f" {maps.zeros} cell(s) have a gradient norm of exactly 0 (log10 = -inf)"
            + (
                ": every float32 gradient entry of that block was 0 at that step"
                if r.norms_in_float64
                else " as summed in float32 on this device, where a small enough norm "
                "underflows to 0"
            )
            + ". They are drawn in the lowest colour."
            if maps.zeros
            else ""
        )
        which = (
            f"The heatmaps show seed {seeds[0]} (of {seeds_label(seeds)}); the sentence on the "
            "first and last block reads every seed. "
            if len(seeds) > 1
            else ""
        )
        account(
            "Rows are blocks (input side at the top), columns are steps; colour is log10 of the "
            "block's gradient norm, on one scale for all panels. Grey is not run (yet, or after "
            "a run diverged and stopped) or not finite. "
            + which
            + W.first_vs_last_over_seeds(r.layers, seeds)
            + " Adam divides each step by the gradient's running size, so a cold block is not "
            "necessarily a slow learner until its gradient's entries near Adam's eps (1e-8)."
            + zero_note
        )
        views.csv_button(r.layers, "layer_gradients_per_step", "Download per-layer CSV")

    sec.background(
        "gradflow_train", R.training, settings, steps * n_seeds, train_render, blocked=blocked
    )
    sec.code(chart_code("line", "r.loss", LOSS_LINE))
    sec.code(
        "from IPython.display import display\n\n"
        "first = r.per_seed[0]  # a heatmap shows one seed's run\n"
        "maps = rv.gradients.layer_heatmaps(first.layers, first.steps, "
        "r.loss['variant'].unique())\n"
        "for name, m in maps.matrices.items():\n"
        "    display(rv.charts.image_heatmap(m, title=name, vmin=maps.vmin, "
        f"vmax=maps.vmax, **{HEATMAP!r}))"
    )
    sec.notebook.frame("training_loss", "r.loss")
    sec.notebook.frame("layer_gradients_per_step", "r.layers")
    sec.download("gradient_flow_training")


# ------------------------------------------------------------------------ shattered
SHATTER_LINE = dict(
    x="input",
    y="grad_scaled",
    color="variant",
    points=False,
    x_title="input x",
    y_title="df/dx (÷ its std)",
    height=280,
)
ACF_LINE = dict(
    x="lag",
    y="corr",
    color="curve",
    points=False,
    x_title="lag (grid steps of 4/255)",
    y_title="autocorrelation",
    height=260,
)


def shattered_section() -> None:
    """df/dx along a line of inputs, plain and residual, and its autocorrelation."""
    st.subheader("Shattered gradients")
    top = slot()
    st.markdown(
        "Balduzzi et al. 2017 (*The Shattered Gradients Problem*): feed a line of 256 inputs "
        "x in [-2, 2] through a deep ReLU network with one output and look at df/dx along the "
        "line. They found that in a deep plain network the gradient becomes like white noise, "
        "uncorrelated between neighbouring inputs, so it says little about a step in x, while "
        "with shortcuts it stays far smoother; the table and chart below measure it on these "
        f"nets (width {R.SHATTERED_WIDTH}). **Batch normalization is needed to see it here:** "
        "the nets start with zero biases, so without it every unit's input is a multiple of "
        "x, the net is linear on each side of x = 0 and df/dx takes just two values. Batch "
        "normalization subtracts each unit's mean over the line, which moves the kinks away "
        "from 0."
    )
    nets = p.draw(GS.Shattered)
    sec = Section(TITLE, S.SHATTERED, dev)
    r = sec.run(R.shattered, nets, seed=ctx.seed)
    seeds = seeds_of(r)
    headline(H.shattered(r.lag1, seeds), at=top)
    # The median of several nets' df/dx is no net's gradient (and smoother than each):
    # the gradients are drawn for one seed, the autocorrelations over all of them.
    shown = seeds[0]
    grads = r.gradients[r.gradients["seed"] == shown] if "seed" in r.gradients else r.gradients
    st.caption(
        f"df/dx of seed {shown}'s nets"
        + (
            f" (the first of {seeds_label(seeds)}; the CSV has every seed's)."
            if len(seeds) > 1
            else "."
        )
    )
    gcols = st.columns(len(R.SHATTERED_DEPTHS))
    for col, d in zip(gcols, R.SHATTERED_DEPTHS, strict=True):
        with col:
            st.markdown(f"**depth {d}**")
            views.altair(charts.line(grads[grads["depth"] == d], **SHATTER_LINE), width="stretch")
    views.csv_button(r.gradients, "shattered_gradients", "Download gradients CSV")
    panel = titled_chart_code("part", "f'depth {d}'", SHATTER_LINE)
    sec.code(
        "from IPython.display import display\n\n"
        f"g = r.gradients[r.gradients['seed'] == {shown}]  # one seed's nets\n"
        f"for d in {R.SHATTERED_DEPTHS!r}:\n"
        "    part = g[g['depth'] == d]\n"
        f"    display({panel})"
    )
    sec.notebook.frame("shattered_gradients", "r.gradients")
    a1, a2 = st.columns([2, 3])
    with a1:
        sec.table(
            r,
            "lag1",
            "shattered_lag1",
            caption="Correlation of df/dx at neighbouring inputs: near 1 is smooth, near 0 is "
            "white noise. A NaN means the gradient was constant (or not finite) along the line."
            + (" One row per seed and depth." if len(seeds) > 1 else ""),
        )
    with a2:
        sec.chart(
            "line",
            r,
            "acf",
            "shattered_autocorrelation",
            account="The autocorrelation function of each gradient. The first lag at which it "
            "falls below 0.5 (the sooner, the rougher the gradient): "
            + W.below_half_over_seeds([run.below for run in r.per_seed], seeds)
            + ". "
            + band_words(seeds),
            **ACF_LINE,
        )
    sec.download("gradient_flow_shattered")


for tab, section in zip(
    tabs,
    (per_layer_section, derivation_section, sweep_section, training_section, shattered_section),
    strict=True,
):
    if tab.open:
        with tab:
            section()
