"""Gradient flow: watch gradients vanish, explode, or flow through the shortcut."""

import dataclasses
import math

import numpy as np
import pandas as pd
import streamlit as st

import resviz as rv
from resviz import gradflow as G
from ui import charts, jobs, views
from ui import gradflow_cache as cache
from ui.params import PageParams
from ui.shell import budget, page_setup

ctx = page_setup(
    "Gradient flow",
    "Backpropagation through a block with a shortcut multiplies the gradient by "
    "`I + J` instead of `J`, so the identity term carries it past layers whose "
    "Jacobian `J` is small. Every number below is measured on a freshly built stack.",
)
p = PageParams("gradient_flow")
dev = str(ctx.device)
PLAIN, RESID = "plain: f(x)", "residual: x + f(x)"


def towards_input(df: pd.DataFrame, x: str, y: str) -> str:
    """How ``y`` changes from the output side back to the input side (``x`` descending)."""
    return rv.trend_words(df.sort_values(x, ascending=False)[y].tolist())


# --------------------------------------------------------------- 1. per layer at init
st.header("1. Gradient norms per layer, at init")
c1, c2, c3 = st.columns(3)
with c1:
    depth = p.slider("Depth (blocks)", "depth", 1, 100, 10)
    width = p.slider("Width", "width", 2, 512, 64)
with c2:
    act = p.select("Activation", "act", ["tanh", "relu", "gelu", "sigmoid"], "tanh")
    init = p.select("Init", "init", ["default", "kaiming", "xavier", "small"], "default")
with c3:
    norm = p.select("Norm (pre)", "norm", ["none", "layer", "rms", "batch"], "none")

base = rv.StackConfig(depth=depth, width=width, activation=act, init=init, norm=norm, seed=ctx.seed)
variants = {PLAIN: dataclasses.replace(base, residual="none"), RESID: base}
per_layer = {}
for label, cfg in variants.items():
    df, note = cache.layer_gradients(cfg, ctx.seed, dev)
    views.notice(note)
    per_layer[label] = df

weights = pd.concat(
    [
        df[df["layer"] < depth].assign(
            variant=label,
            param=lambda d: "blocks." + d["layer"].astype(str) + ".fc.weight",
            layer=lambda d: d["layer"] + 1,
        )
        for label, df in per_layer.items()
    ],
    ignore_index=True,
).rename(columns={"weight_grad": "grad_norm"})[["variant", "layer", "param", "grad_norm"]]
acts = pd.concat([df.assign(variant=label) for label, df in per_layer.items()], ignore_index=True)[
    ["variant", "layer", "act_grad", "gain", "stream_norm"]
]

left, right = st.columns(2)
with left:
    views.chart(
        charts.line(
            weights,
            "layer",
            "grad_norm",
            "variant",
            log_y=True,
            x_title="block (input side = 1)",
            y_title="||dL/dW|| (log)",
            height=280,
        ),
        weights,
        "gradient_norms",
        caption="Weight gradients after one MSE backward pass on a Gaussian batch of 32. From "
        "the last block back to the first, the plain stack's ||dL/dW|| "
        f"{towards_input(weights[weights['variant'] == PLAIN], 'layer', 'grad_norm')}; the "
        "residual stack's "
        f"{towards_input(weights[weights['variant'] == RESID], 'layer', 'grad_norm')}. A weight "
        "gradient is an outer product with the block's input, so where the stream grows (in a "
        "residual sigmoid stack every block adds a positive mean) the weight gradients grow "
        "with it even where dL/dx does not.",
    )
with right:
    views.chart(
        charts.line(
            acts,
            "layer",
            "act_grad",
            "variant",
            log_y=True,
            x_title="stream position l (0 = input, L = output)",
            y_title="||dL/dx_l|| (log)",
            height=280,
        ),
        acts,
        "activation_gradients",
        caption="The gradient with respect to the stream itself, dL/dx_l: the quantity the "
        "formula below multiplies block by block. From the output x_L back to the input x_0 "
        f"it {towards_input(acts[acts['variant'] == RESID], 'layer', 'act_grad')} with "
        f"shortcuts and {towards_input(acts[acts['variant'] == PLAIN], 'layer', 'act_grad')} "
        "without. Triangles at the bottom mark gradients that are exactly 0 or not finite (a "
        "log axis cannot show them).",
    )
cols = st.columns(2)
for col, (label, df) in zip(cols, per_layer.items(), strict=True):
    first, last = float(df["act_grad"].iloc[0]), float(df["act_grad"].iloc[-1])
    ratio = first / last if last > 0 else math.nan
    col.metric(f"||dL/dx_0|| / ||dL/dx_L||, {label}", f"{ratio:.3g}")

# ------------------------------------------------------------------ 2. the derivation
st.header("2. The derivation, checked live")
st.latex(
    r"x_{l+1} = x_l + f(x_l)\;\Rightarrow\;"
    r"\frac{\partial L}{\partial x_l} = \frac{\partial L}{\partial x_{l+1}}"
    r"\left(I + \frac{\partial f(x_l)}{\partial x_l}\right),\qquad"
    r"\frac{\partial L}{\partial x_0} = \frac{\partial L}{\partial x_L}\prod_{l=0}^{L-1}(I + J_l)"
)
st.markdown(
    "Expand the product and one term is the identity: it carries the gradient at the output "
    "to the input unchanged, whatever the branches do. The other terms add to it, and they "
    "can be far larger than it. A plain stack has only "
    "the product of the J_l, whose norm is at most the product of their norms: it shrinks "
    "when those are below 1."
)
layer = p.slider("Block to inspect (1 = input side)", "block", 1, 100, 1)
layer = min(layer, depth)
jac_rows = []
spectra = []
for label, cfg in variants.items():
    (sv, block_norm, branch_norm), note = cache.block_jacobian(cfg, layer - 1, ctx.seed, dev)
    views.notice(note)
    spectra.append(sv.assign(variant=label))
    jac_rows.append(
        {
            "variant": label,
            "||J|| (branch)": branch_norm,
            "||block Jacobian||": block_norm,
            "||dL/dx_0|| / ||dL/dx_L||": float(per_layer[label]["gain"].iloc[0]),
        }
    )
jac = {r["variant"]: r for r in jac_rows}
jc1, jc2 = st.columns([2, 3])
with jc1:
    views.table(
        pd.DataFrame(jac_rows),
        "block_jacobian_norms",
        caption=f"Spectral norms (largest singular value) of block {layer}'s Jacobians for one "
        "sample. With the shortcut the block Jacobian is I + J, whose norm lies between "
        f"1 - ||J|| and 1 + ||J||: here ||J|| = {rv.format_number(jac[RESID]['||J|| (branch)'])} "
        f"and ||I + J|| = {rv.format_number(jac[RESID]['||block Jacobian||'])}. Without, the "
        "block Jacobian is J itself (here "
        f"{rv.format_number(jac[PLAIN]['||block Jacobian||'])}).",
    )
with jc2:
    spec = pd.concat(spectra, ignore_index=True)

    def sv_range(matrix: str) -> str:
        sv = spec[(spec["variant"] == RESID) & (spec["matrix"] == matrix)]["sigma"]
        return f"{rv.format_number(sv.min())} to {rv.format_number(sv.max())}"

    spec = spec[~((spec["variant"] == PLAIN) & (spec["matrix"] == "block"))]
    spec["curve"] = spec["variant"].str.split(":").str[0] + ", " + spec["matrix"]
    spec.loc[spec["matrix"] == "block", "curve"] = "residual, I + J"
    views.chart(
        charts.line(
            spec,
            "index",
            "sigma",
            "curve",
            log_y=True,
            points=False,
            x_title="singular value index (largest first)",
            y_title="singular value (log)",
            height=260,
        ),
        spec[["variant", "matrix", "index", "sigma"]],
        "block_jacobian_spectrum",
        caption="All singular values. In the residual stack's block J's run from "
        f"{sv_range('branch J')} and those of I + J from {sv_range('block')}. Every "
        "singular value of I + J lies within ||J|| of 1 (Weyl's inequality), so while "
        "||J|| < 1 none of them is 0 and no direction of the gradient is lost. Exact zeros "
        "(for example dead ReLU units) are marked at the bottom.",
    )

st.subheader("Scaled shortcut: l·x + f(x) carries l^L")
st.markdown(
    "He et al. 2016 (*Identity Mappings in Deep Residual Networks*, section 3) scale the "
    "shortcut instead of the branch: the identity term of the product becomes l^L. Below l = 1 "
    "it vanishes exponentially, above it explodes. With near-zero branches on, each block's "
    "last layer is multiplied by 0.01, so the branch Jacobians are small and the identity "
    "term is nearly all that is left."
)
s1, s2, s3 = st.columns(3)
with s1:
    scale = p.float_slider("l (shortcut scale)", "l", 0.0, 1.5, 0.5, 0.05)
with s2:
    depth_l = p.slider("L (blocks) for this experiment", "L", 1, 100, 30)
with s3:
    small = p.toggle("near-zero branches", "small", True)
scaled_cfg = dataclasses.replace(
    base, depth=depth_l, identity_scale=scale, init="small" if small else init
)
ratio_df, note = cache.identity_ratio(scaled_cfg, ctx.seed, dev)
views.notice(note)
measured = float(ratio_df["measured"].iloc[0])
theory = float(ratio_df["identity_term"].iloc[0])
m1, m2, m3 = st.columns(3)
m1.metric("measured ||dL/dx_0|| / ||dL/dx_L||", f"{measured:.4g}")
m2.metric(f"l^L = {scale:g}^{depth_l}", f"{theory:.4g}")
rel = measured / theory - 1 if theory > 0 and math.isfinite(measured) else math.nan
m3.metric("relative difference", f"{rel:+.2%}" if math.isfinite(rel) else "undefined")
long = pd.concat(
    [
        ratio_df[["blocks_above", "measured"]]
        .rename(columns={"measured": "ratio"})
        .assign(curve="measured ||dL/dx_l|| / ||dL/dx_L||"),
        ratio_df[["blocks_above", "identity_term"]]
        .rename(columns={"identity_term": "ratio"})
        .assign(curve="identity term l^(L-l)"),
    ],
    ignore_index=True,
)
views.chart(
    charts.line(
        long,
        "blocks_above",
        "ratio",
        "curve",
        log_y=True,
        x_title="blocks between x_l and the output (L - l)",
        y_title="gradient ratio (log)",
        height=260,
    ),
    ratio_df,
    "scaled_shortcut_ratio",
    caption="One backward pass gives the whole curve: the gain from the output down to every "
    "x_l. On a log axis l^(L-l) is a straight line; the measurement follows it to the extent "
    "that the branch Jacobians are small: "
    + (
        f"at x_0 it differs from l^L by {rv.format_number(abs(rel) * 100)}% here"
        if math.isfinite(rel)
        else "here l^L is 0 (or the measurement is not finite), so there is no ratio"
    )
    + ". l = 0 is a plain stack: the identity term is exactly 0, marked with triangles at the "
    "bottom, as are measured gradients that underflow float32.",
)

# ------------------------------------------------------------------- 3. depth sweep
st.header("3. Depth sweep: what reaches the first layer")
measure = p.radio(
    "Measure",
    "measure",
    ["||dL/dx_0|| / ||dL/dx_L||", "||dL/dW_1||"],
    "||dL/dx_0|| / ||dL/dx_L||",
)
ycol = "gain" if measure.startswith("||dL/dx_0") else "first_weight_grad"
sweep_base = dataclasses.replace(base, depth=1)
sweep_key = ("gradflow:sweep", sweep_base, G.DEFAULT_DEPTHS, ctx.seed, dev)


def sweep_work(report, should_stop):  # noqa: ANN001, ANN202 - jobs.Work
    out, _ = rv.run_with_fallback(
        lambda d: G.depth_sweep(
            sweep_base,
            G.DEFAULT_DEPTHS,
            seed=ctx.seed,
            device=d,
            callback=report,
            should_stop=should_stop,
        ),
        ctx.device,
    )
    return out


def sweep_render(job: jobs.Job) -> None:
    df = job.result if job.result is not None else job.frame
    if df is None or not len(df):
        return
    df = df.assign(variant=np.where(df["residual"] == "none", "plain", "residual"))
    grid = st.columns(2) + st.columns(2)
    for col, activation in zip(grid, ("tanh", "sigmoid", "relu", "gelu"), strict=True):
        part = df[df["activation"] == activation]
        if not len(part):
            continue
        with col:
            st.markdown(f"**{activation}**")
            views.altair(
                charts.line(
                    part,
                    "depth",
                    ycol,
                    "variant",
                    log_y=True,
                    x_title="depth (blocks)",
                    y_title=f"{measure} (log)",
                    height=280,
                ),
                width="stretch",
            )
            st.caption(
                "; ".join(
                    f"{v} (depth {int(g['depth'].min())} to {int(g['depth'].max())}): "
                    + rv.trend_words(g.sort_values("depth")[ycol].tolist())
                    for v, g in part.groupby("variant")
                )
                + "."
            )
    zeros = df[(df[ycol] == 0) | ~np.isfinite(df[ycol])]
    note = (
        f" {len(zeros)} point(s) underflowed float32 to exactly 0 (or are not finite): they "
        "are the triangles at the bottom of their plots, first at depth "
        f"{int(zeros['depth'].min())}."
        if len(zeros)
        else ""
    )
    st.caption(
        "Each point is a fresh stack of that depth (width, init and norm from section 1), one "
        "backward pass. Under each plot: how its curves change from the shallowest stack to "
        "the deepest. A curve that is a straight line on the log axis changes by the same "
        "factor with every block." + note
    )
    views.csv_button(df, "depth_sweep")


# One stack at a time, one backward pass each: the deepest one is the cost. The
# panel below shows the refusal, if any.
sweep_blocked = budget().check(
    rv.estimate(dataclasses.replace(sweep_base, depth=max(G.DEFAULT_DEPTHS)), batch=32),
    "This depth sweep",
)
n_stacks = len(G.DEFAULT_DEPTHS) * 8
st.caption(
    f"**Sweep** builds {n_stacks} stacks of {min(G.DEFAULT_DEPTHS)} to {max(G.DEFAULT_DEPTHS)} "
    f"blocks at width {width} (the wider, the longer it takes) and backpropagates once through "
    "each. Finished results are kept for a while, so a second visit with the same settings "
    "shows them at once."
)
jobs.panel(
    "gradflow_sweep",
    sweep_key,
    sweep_work,
    n_stacks,
    sweep_render,
    start_label="Sweep",
    blocked=sweep_blocked,
    unit="stack",
)

# ----------------------------------------------------------------- 4. live training
st.header("4. Training side by side")
st.markdown(
    "The same stacks as section 1 train with Adam from the same seed and init on the same "
    "batches (Gaussian inputs, targets from a fixed random tanh teacher). The heatmaps show "
    "every block's gradient norm at every step, filling in while the run goes on."
)
t1, t2, t3 = st.columns(3)
with t1:
    steps = p.slider("Steps", "steps", 20, 1000, 200, step=10)
with t2:
    lr_text = p.select("Learning rate", "lr", ["1e-4", "3e-4", "1e-3", "3e-3", "1e-2"], "1e-3")
with t3:
    with_scaled = p.toggle("also train l·x + f(x) (l from section 2)", "train_scaled", False)
lr = float(lr_text)
train_variants = dict(variants)
if with_scaled:
    train_variants[f"scaled: {scale:g}·x + f(x)"] = dataclasses.replace(base, identity_scale=scale)
BATCH = 64
# The variants train side by side; the panel below shows the refusal, if any.
blocked = budget().check(
    rv.combine(rv.estimate(c, batch=BATCH, steps=steps) for c in train_variants.values()),
    "This training run",
)
train_key = ("gradflow:train", tuple(train_variants.items()), steps, lr, ctx.seed, dev)


def train_work(report, should_stop):  # noqa: ANN001, ANN202 - jobs.Work
    out, _ = rv.run_with_fallback(
        lambda d: G.train_layer_grads(
            train_variants,
            steps=steps,
            seed=ctx.seed,
            lr=lr,
            batch_size=BATCH,
            device=d,
            callback=report,
            should_stop=should_stop,
        ),
        ctx.device,
    )
    return out


def first_vs_last(layers: pd.DataFrame) -> str:
    """The first block's gradient norm as a multiple of the last block's, at the first and
    the latest step recorded, per variant."""
    parts = []
    for name, g in layers.groupby("variant", sort=False):
        g = g[np.isfinite(g["grad_norm"])]
        if not len(g):
            continue
        first_layer, last_layer = g["layer"].min(), g["layer"].max()
        said = []
        for step in sorted({int(g["step"].min()), int(g["step"].max())}):
            at = g[g["step"] == step].set_index("layer")["grad_norm"]
            if first_layer in at.index and last_layer in at.index:
                said.append((rv.ratio_words(at[first_layer], at[last_layer]), step))
        if said:
            (r0, s0), rest = said[0], said[1:]
            parts.append(
                f"{r0} the last block's at step {s0}"
                + "".join(f" and {r} at step {s}" for r, s in rest)
                + f" in {name}"
            )
    return ("The first block's gradient norm is " + "; ".join(parts) + ".") if parts else ""


def train_render(job: jobs.Job) -> None:
    trace: G.GradTrace = job.result if job.result is not None else job.frame
    if trace is None or not len(trace.loss):
        return
    views.chart(
        charts.line(
            trace.loss,
            "step",
            "loss",
            "variant",
            log_y=True,
            points=False,
            y_title="training loss (log)",
            height=260,
        ),
        trace.loss,
        "training_loss",
    )
    for name, found in trace.attrs.get("divergence", {}).items():
        st.warning(
            f"{name} diverged: {found.describe()}; its training stopped there (dashed line)."
        )
    mats = {v: trace.heatmap(v) for v in train_variants if v in set(trace.loss["variant"])}
    finite = np.concatenate([m[np.isfinite(m)] for m in mats.values()])
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (-1.0, 0.0)
    hi = hi if hi > lo else lo + 1.0
    cols = st.columns(len(mats))
    n_zero = 0
    for col, (name, m) in zip(cols, mats.items(), strict=True):
        n_zero += int(np.isneginf(m).sum())
        shown = np.where(np.isneginf(m), lo, m)
        with col:
            views.altair(
                charts.image_heatmap(
                    shown,
                    title=name,
                    x_title="step",
                    y_title="block (0 = input side)",
                    vmin=lo,
                    vmax=hi,
                    height=240,
                    legend_title="log10 ||grad||",
                ),
                width="stretch",
            )
    zero_note = (
        f" {n_zero} cell(s) were exactly 0 (log10 = -inf); they are drawn in the lowest colour."
        if n_zero
        else ""
    )
    st.caption(
        "Rows are blocks (input side at the top), columns are steps; colour is log10 of the "
        "block's gradient norm, on one scale for all panels. Grey is not run (yet, or after a run diverged and stopped) or not finite. "
        + first_vs_last(trace.layers)
        + " Adam divides each step by the gradient's running size, so a cold block is not "
        "necessarily a slow learner until its gradient nears Adam's eps (1e-8)." + zero_note
    )
    views.csv_button(trace.layers, "layer_gradients_per_step", "Download per-layer CSV")


jobs.panel(
    "gradflow_train",
    train_key,
    train_work,
    steps,
    train_render,
    start_label="Train",
    blocked=blocked,
)

# ---------------------------------------------------------------- 5. shattered
st.header("5. Shattered gradients")
st.markdown(
    "Balduzzi et al. 2017 (*The Shattered Gradients Problem*): feed a line of 256 inputs "
    "x in [-2, 2] through a deep ReLU network with one output and look at df/dx along the "
    "line. They found that in a deep plain network the gradient becomes like white noise, "
    "uncorrelated between neighbouring inputs, so it says little about a step in x, while "
    "with shortcuts it stays far smoother; the table and chart below measure it on these "
    "nets. **Batch normalization is needed to see it here:** the nets start with zero biases, "
    "so without it every unit's input is a multiple of x, the net is linear on each side of "
    "x = 0 and df/dx takes just two values. Batch normalization subtracts each unit's mean "
    "over the line, which moves the kinks away from 0."
)
bn = p.toggle("batch normalization (recommended)", "bn", True)
SH_DEPTHS = (2, 10, 50)
(sh_grads, sh_acf), note = cache.shattered(SH_DEPTHS, 64, "batch" if bn else "none", ctx.seed, dev)
views.notice(note)
sh_grads = sh_grads.assign(variant=np.where(sh_grads["residual"] == "none", "plain", "residual"))
sh_acf = sh_acf.assign(variant=np.where(sh_acf["residual"] == "none", "plain", "residual"))
gcols = st.columns(len(SH_DEPTHS))
for col, d in zip(gcols, SH_DEPTHS, strict=True):
    with col:
        st.markdown(f"**depth {d}**")
        views.altair(
            charts.line(
                sh_grads[sh_grads["depth"] == d].rename(columns={"x": "input"}),
                "input",
                "grad_scaled",
                "variant",
                points=False,
                x_title="input x",
                y_title="df/dx (÷ its std)",
                height=280,
            ),
            width="stretch",
        )
views.csv_button(sh_grads, "shattered_gradients", "Download gradients CSV")
lag1 = (
    sh_acf[sh_acf["lag"] == 1]
    .pivot(index="depth", columns="variant", values="corr")
    .reset_index()
    .rename(
        columns={
            "plain": "plain lag-1 autocorrelation",
            "residual": "residual lag-1 autocorrelation",
        }
    )
)


def below_half(acf: pd.DataFrame) -> str:
    """Per net, the first lag whose autocorrelation is below 0.5 (or that it never is)."""
    out = []
    for (variant, d), g in acf.groupby(["variant", "depth"]):
        low = g[(g["lag"] > 0) & (g["corr"] < 0.5)]["lag"]
        max_lag = int(g["lag"].max())
        if g["corr"].isna().any():
            when = "undefined (gradient constant or not finite)"
        else:
            when = f"lag {int(low.min())}" if len(low) else f"not by lag {max_lag}"
        out.append(f"{variant} depth {d}: {when}")
    return "; ".join(out)


a1, a2 = st.columns([2, 3])
with a1:
    views.table(
        lag1,
        "shattered_lag1",
        caption="Correlation of df/dx at neighbouring inputs: near 1 is smooth, near 0 is "
        "white noise. A NaN means the gradient was constant (or not finite) along the line.",
    )
with a2:
    sh_acf["curve"] = sh_acf["variant"] + ", depth " + sh_acf["depth"].astype(str)
    views.chart(
        charts.line(
            sh_acf,
            "lag",
            "corr",
            "curve",
            points=False,
            x_title="lag (grid steps of 4/255)",
            y_title="autocorrelation",
            height=260,
        ),
        sh_acf[["residual", "depth", "lag", "corr"]],
        "shattered_autocorrelation",
        caption="The autocorrelation function of each gradient. The first lag at which it "
        "falls below 0.5 (the sooner, the rougher the gradient): " + below_half(sh_acf) + ".",
    )
