"""Gradient flow: watch gradients vanish, explode, or flow through the shortcut."""

import dataclasses

import streamlit as st

import resviz as rv
from resviz import gradients as G
from resviz.core import Result
from resviz.gradients import headline as H
from resviz.gradients import recipes as R
from resviz.gradients import settings as GS
from resviz.gradients import words as W
from resviz.words.seeds import band_words
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


def seeds_of(r: Result) -> tuple[int, ...]:
    """The seeds a result holds (a one-seed recipe's result: the sidebar seed)."""
    return r.seeds or (ctx.seed,)


# ------------------------------------------------------------------------ per layer
WEIGHT_LINE = dict(x="block", y="log10_grad_norm", color="variant", log10_y=True,
                   x_title="block (input side = 1)", y_title="||dL/dW|| (log scale)",
                   height=280)  # fmt: skip
STREAM_LINE = dict(x="block", y="log10_act_grad", color="variant", log10_y=True,
                   x_title="x_l (0 = the input, L = the output)",
                   y_title="||dL/dx_l|| (log scale)", height=280)  # fmt: skip


def float64_stack() -> GS.Stack | None:
    """Draw the stack's settings. The gradient measurements cast the stack to float64
    (twice its float32 bytes): refuse, with the numbers, a stack whose float64 pass is
    over the server's budget (None)."""
    stack = stack_settings()
    est = rv.estimate(stack.config(ctx.seed), batch=32, bytes_per_value=8)
    # The backward pass holds a gradient beside each saved activation.
    est = dataclasses.replace(est, activation_bytes=2 * est.activation_bytes)
    refused = views.check_budget(est, "This stack's float64 gradient measurement")
    return None if refused else stack


def per_layer_section() -> None:
    """Weight and stream gradients of one plain and one residual stack at init."""
    st.subheader("Gradient norms per layer, at init")
    top = slot()
    stack = float64_stack()
    if stack is None:
        return
    sec = Section(TITLE, S.PER_LAYER, dev)
    r = sec.run(rv.recipes.gradients.per_layer, stack, seed=ctx.seed)
    seeds = seeds_of(r)
    plain, resid = W.input_gains(r, PLAIN), W.input_gains(r, RESID)
    headline(
        H.per_layer(plain, resid, seeds, stack.depth, names=(PLAIN, RESID)),
        W.larger_gradient_over_seeds(plain, resid, seeds),
        at=top,
    )
    left, right = st.columns(2)
    with left:
        text = W.weights_account(r, seeds, stack.norm)
        sec.chart("line", r, "weights", "gradient_norms", account=text, **WEIGHT_LINE)
    with right:
        text = W.streams_account(r, seeds)
        sec.chart("line", r, "streams", "activation_gradients", account=text, **STREAM_LINE)
    sec.download("gradient_flow_per_layer")


# ----------------------------------------------------------------------- derivation
SPECTRUM_LINE = dict(x="index", y="sigma", color="curve", log_y=True, points=False,
                     x_title="singular value index (largest first)",
                     y_title="singular value (log)", height=260)  # fmt: skip
RATIO_LINE = dict(x="blocks_above", y="log10_ratio", color="curve", log10_y=True,
                  x_title="blocks from x_l to the output, L - l",
                  y_title="gradient ratio (log scale)", height=260)  # fmt: skip


def derivation_section() -> None:
    """The I + J Jacobian of one block, and the scaled shortcut's λ^L."""
    st.subheader("The derivation, checked live")
    top = slot()
    stack = float64_stack()
    if stack is None:
        return
    st.latex(
        r"x_{l+1} = x_l + f(x_l)\;\Rightarrow\;"
        r"\frac{\partial L}{\partial x_l} = \frac{\partial L}{\partial x_{l+1}}"
        r"\left(I + \frac{\partial f(x_l)}{\partial x_l}\right),\qquad"
        r"\frac{\partial L}{\partial x_0} = \frac{\partial L}{\partial x_L}\prod_{l=0}^{L-1}(I + J_l)"
    )
    st.markdown(W.IDENTITY_TERM)
    block = p.widget("block")
    st.markdown(W.SCALED_SHORTCUT)
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
    figures = W.derivation_figures(r, scale, depth_l)
    headline(H.derivation(W.measured_logs(r), r.log10_identity_term, seeds, figures), at=top)
    jc1, jc2 = st.columns([2, 3])
    with jc1:
        sec.table(r, "norms", "block_jacobian_norms", account=W.norms_account(r, seeds))
    with jc2:
        text = W.spectrum_account(r, seeds)
        sec.chart("line", r, "spectrum", "block_jacobian_spectrum", account=text, **SPECTRUM_LINE)
    text = W.ratio_account(r, seeds, scale, stack.norm, small)
    sec.chart("line", r, "ratio_curves", "scaled_shortcut_ratio", account=text, **RATIO_LINE)
    sec.download("gradient_flow_derivation")


# ---------------------------------------------------------------------- depth sweep
SWEEP_ORDER = ("tanh", "sigmoid", "relu", "gelu")


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
    sweep_line = dict(x="depth", y=ycol, color="variant", log10_y=True,
                      x_title="depth (blocks)", y_title=f"{measure} (log)", height=280)  # fmt: skip
    sec = Section(TITLE, S.SWEEP, dev)

    def sweep_render(job: jobs.Job) -> None:
        r = job.result if job.result is not None else job.frame
        if r is None or not len(r.sweep):
            return
        df = r.sweep
        seeds = seeds_of(r)
        if job.live and n_seeds > 1:
            st.caption(W.seed_progress(job.step, n_stacks, n_seeds, ctx.seed, "stack"))
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
                account(W.sweep_words(part, ycol, seeds))
        account(W.sweep_account(df, ycol, seeds))
        views.csv_button(df, "depth_sweep")

    # One stack at a time, one backward pass each: the deepest one is the cost. The
    # panel below shows the refusal, if any.
    sweep_blocked = budget().check(
        rv.estimate(
            dataclasses.replace(sweep_base, depth=max(depths)), batch=32, bytes_per_value=8
        ),
        "This depth sweep",
    )
    n_stacks = len(depths) * 2 * len(SWEEP_ORDER)  # plain and residual, per activation
    st.caption(W.sweep_caption(n_stacks, depths, sweep_base.width, n_seeds))
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
LOSS_LINE = dict(x="step", y="loss", color="variant", log_y=True, points=False,
                 y_title="training loss (log)", height=260)  # fmt: skip
HEATMAP = dict(x_title="step", y_title="block - 1 (0 = input)", height=260,
               legend_title="log10 ||grad||")  # fmt: skip


def training_section() -> None:
    """Plain and residual (and λ·x + f(x)) trained side by side, gradients per block."""
    st.subheader("Training side by side")
    stack = stack_settings()
    base = stack.config(ctx.seed)
    st.markdown(W.TRAINING)
    t1, t2, t3 = st.columns(3)
    with t1:
        steps = p.widget("steps")
    with t2:
        lr = p.widget("lr")
    with t3:
        with_scaled = p.widget("train_scaled")
        # The Derivation section's λ (URL name l), drawn here while it is used.
        scale = p.widget("l") if with_scaled else None
    run = GS.Training(steps=steps, lr=lr, train_scaled=with_scaled).values()
    scaled = {"l": scale} if with_scaled else {}
    settings = with_seeds(R.training, {**stack.values(), **run, **scaled, "seed": ctx.seed})
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
        st.caption(W.training_seeds_caption(ctx.seed, n_seeds))
    sec = Section(TITLE, S.TRAINING, dev)

    def train_render(job: jobs.Job) -> None:
        r = job.result if job.result is not None else job.frame
        if r is None or not len(r.loss):
            return
        seeds = seeds_of(r)
        if job.live and n_seeds > 1:
            st.caption(W.seed_progress(job.step, steps, n_seeds, ctx.seed, "step"))
        headline(H.loss_race(r.loss, seeds[0]), H.loss_race_words(r.loss, seeds[0], window=10))
        views.chart(
            charts.line(r.loss, **LOSS_LINE),
            r.loss,
            "training_loss",
            caption="Training loss. " + band_words(seeds),
        )
        for warning in W.divergence_warnings(r, seeds):
            st.warning(warning)
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
        account(W.heatmap_account(r, seeds, maps.zeros))
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
SHATTER_LINE = dict(x="input", y="grad_scaled", color="variant", points=False,
                    x_title="input x", y_title="df/dx (÷ its std)", height=280)  # fmt: skip
ACF_LINE = dict(x="lag", y="corr", color="curve", points=False,
                x_title="lag (grid steps of 4/255)", y_title="autocorrelation",
                height=260)  # fmt: skip


def shattered_section() -> None:
    """df/dx along a line of inputs, plain and residual, and its autocorrelation."""
    st.subheader("Shattered gradients")
    top = slot()
    st.markdown(W.shattered_intro(R.SHATTERED_WIDTH))
    nets = p.draw(GS.Shattered)
    sec = Section(TITLE, S.SHATTERED, dev)
    r = sec.run(R.shattered, nets, seed=ctx.seed)
    seeds = seeds_of(r)
    headline(H.shattered(r.lag1, seeds), at=top)
    # The median of several nets' df/dx is no net's gradient (and smoother than each):
    # the gradients are drawn for one seed, the autocorrelations over all of them.
    shown = seeds[0]
    grads = r.gradients[r.gradients["seed"] == shown] if "seed" in r.gradients else r.gradients
    st.caption(W.gradients_shown_caption(seeds))
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
        sec.table(r, "lag1", "shattered_lag1", caption=W.lag1_caption(seeds))
    with a2:
        text = W.acf_account(r, seeds)
        sec.chart("line", r, "acf", "shattered_autocorrelation", account=text, **ACF_LINE)
    sec.download("gradient_flow_shattered")


for tab, section in zip(
    tabs,
    (per_layer_section, derivation_section, sweep_section, training_section, shattered_section),
    strict=True,
):
    if tab.open:
        with tab:
            section()
