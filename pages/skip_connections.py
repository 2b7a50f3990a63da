"""Skip connections: build deep stacks with and without shortcuts and measure them."""

import dataclasses

import pandas as pd
import streamlit as st
import torch

import resviz as rv
from ui import charts, jobs, views
from ui.cache import POLICY
from ui.params import PageParams
from ui.shell import budget, page_setup

SEED_WIDTHS = (25, 25, 43, 43, 54, 54)
PRESETS = ["custom depth x width", "seed network 25,25,43,43,54,54"]

ctx = page_setup(
    "Skip connections",
    "A residual block outputs `x + f(x)`: the input passes through unchanged and the "
    "block only adds an update. Build a stack, read its code, and measure what the "
    "shortcut changes: the signal at every layer, the paths through the network, "
    "how well deep stacks train, and what happens when a block is deleted.",
)
p = PageParams("skip_connections")


@st.cache_data(show_spinner="Running the stack...", **POLICY)
def forward_decomposition(cfg: rv.StackConfig, device: str) -> tuple[pd.DataFrame, str | None]:
    return rv.run_with_fallback(
        lambda d: rv.forward_decomposition(cfg, seed=cfg.seed, device=d), torch.device(device)
    )


@st.cache_data(**POLICY)
def block_views(cfg: rv.StackConfig) -> tuple[pd.DataFrame, pd.DataFrame, str, str]:
    return (
        rv.shortcut_table(cfg),
        rv.path_lengths(cfg),
        rv.generate_code(cfg),
        rv.block_formula(cfg),
    )


# ------------------------------------------------------------------ settings
preset = p.select("Network", "preset", PRESETS, PRESETS[0])
seed_net = preset == PRESETS[1]
c1, c2, c3 = st.columns(3)
with c1:
    depth = p.slider("Depth (blocks)", "depth", 1, 64, 16, disabled=seed_net)
    width = p.slider("Width", "width", 2, 256, 64, disabled=seed_net)
    act = p.select("Activation", "act", ["relu", "gelu", "tanh", "sigmoid"], "relu")
    init = p.select(
        "Init",
        "init",
        ["default", "kaiming", "xavier", "small"],
        "default",
        help="default: PyTorch's nn.Linear init. kaiming / xavier: normal, zero bias. "
        "small: each branch's last layer scaled by 0.01.",
    )
with c2:
    mode = p.select(
        "Shortcut",
        "mode",
        ["none", "add", "scaled", "concat"],
        "add",
        help="none: y = f(x). add: y = x + f(x). scaled: y = x + a f(x). concat: y = [x, f(x)].",
    )
    join = p.select(
        "Where the shortcut joins",
        "join",
        ["after_act", "before_act"],
        "after_act",
        help="after_act: y = x + act(Wx + b). before_act: y = act(x + Wx + b), the original "
        "ResNet placement (add and scaled only).",
    )
    mismatch = p.select(
        "Where widths differ",
        "mismatch",
        ["skip", "project"],
        "skip",
        help="skip: no shortcut in that block. project: a bias-free linear shortcut "
        "P x (ResNet option B).",
    )
with c3:
    alpha = p.float_slider("a (scaled: y = x + a f(x))", "alpha", 0.0, 2.0, 0.0, 0.05)
    learnable = p.toggle("a learnable (a = 0: ReZero)", "learnable", True)
    project = p.toggle("concat: project back to the width", "project", False)


device = str(ctx.device)
stack_kw = dict(
    activation=act,
    init=init,
    residual=mode,
    alpha=alpha,
    alpha_learnable=learnable,
    join=join,
    mismatch=mismatch,
    concat_project=project,
    seed=ctx.seed,
)
try:
    if seed_net:
        cfg = rv.StackConfig(widths=SEED_WIDTHS, **stack_kw)
    else:
        cfg = rv.StackConfig(depth=depth, width=width, **stack_kw)
except ValueError as exc:
    cfg = None
    st.warning(f"This stack cannot be built: {exc}", icon=":material/warning:")

# ------------------------------------------------------------------ 1. the block
if cfg is not None:
    blocked = views.check_budget(rv.estimate(cfg, batch=256), "This stack")
    table, paths, code, formula = block_views(cfg)
    st.header("1. The block")
    st.latex(formula)
    st.markdown(
        "Which blocks got a shortcut, read off the built model. Where a block changes the "
        "width, an identity shortcut cannot be added: it is either dropped (*skip*) or "
        "replaced by a projection `P x` with its own weights (*project*). Concat needs "
        "neither: it joins x and f(x) side by side, whatever their widths."
    )
    views.table(
        table,
        "shortcuts",
        caption=f"{(table['shortcut'] != 'none').sum()} of {len(table)} blocks have a shortcut; "
        f"{(table['shortcut'] == 'projection').sum()} of them are projections. In the seed "
        f"network preset (widths {', '.join(map(str, SEED_WIDTHS))}) "
        f"{sum(a != b for a, b in zip(SEED_WIDTHS, SEED_WIDTHS[1:], strict=False))} "
        "blocks change the width: "
        "*Where widths differ* decides what they get.",
    )
    st.markdown(
        "The PyTorch code for exactly this stack. It needs only `torch`; `build_model()` "
        "creates the same weights as the page (same seed, same creation order)."
    )
    st.code(code, language="python")

    # ----------------------------------------------------------- 2. forward signal
    st.header("2. Forward signal, layer by layer")
    if blocked is None:
        frames = []
        for label, c in (
            ("plain", dataclasses.replace(cfg, residual="none")),
            (f"shortcut: {mode}", cfg),
        ):
            if label == "plain" and mode == "none":
                continue
            df, note = forward_decomposition(c, device)
            views.notice(note)
            frames.append(df.assign(variant=label))
        signal = pd.concat(frames, ignore_index=True)
        signal["block"] = signal["layer"] + 1
        views.chart(
            charts.line(
                signal, "block", "norm", "variant", log_y=True, y_title="mean ||x_l|| (log)"
            ),
            signal.drop(columns="layer"),
            "forward_signal",
            caption="256 Gaussian inputs at init. "
            + rv.stack_norm_rule("none")
            + ("" if mode == "none" else " " + rv.stack_norm_rule(mode, join, project))
            + " "
            + " ".join(
                rv.trend(
                    g["norm"],
                    [f"block {b}" for b in g["block"]],
                    (
                        "here, without a shortcut"
                        if v == "plain" or mode == "none"
                        else f"with the shortcut ({mode})"
                    )
                    + ", the mean norm",
                )
                for v, g in signal.groupby("variant", sort=False)
            ),
        )
        res = signal[signal["variant"] != "plain"]
        if mode != "none":
            long = res.melt(
                id_vars=["block"],
                value_vars=["identity_share", "cosine"],
                var_name="measure",
                value_name="value",
            )
            views.chart(
                charts.line(long, "block", "value", "measure", y_title="share / cosine"),
                res[["block", "shortcut_norm", "update_norm", "identity_share", "cosine"]],
                "identity_share",
                caption="identity_share = ||s||^2 / (||s||^2 + ||u||^2) for y = s + u: how much "
                "of each output is the input passed on (1 for ReZero at init). cosine = "
                "cos(s, u): near 0 means each block adds a direction orthogonal to what the "
                "stream holds. Whether that holds is measured, at init here and after training "
                "in section 4 (no cosine where a block has no shortcut, or with concat, which "
                "places x and f(x) side by side instead of adding them). "
                + rv.value_range(
                    res["identity_share"],
                    [f"block {b}" for b in res["block"]],
                    "here identity_share",
                )
                + " "
                + rv.value_range(res["cosine"], [f"block {b}" for b in res["block"]], "the cosine"),
            )

    # ----------------------------------------------------------------- 3. paths
    st.header("3. Paths through the stack")
    k = int((table["shortcut"] != "none").sum())
    shown = paths[paths["count"] > 0] if len(paths) > 1 else paths
    views.chart(
        charts.bars(
            shown.assign(paths=shown["fraction"]),
            "length",
            "paths",
            x_title="path length (branches passed through)",
            y_title="fraction of paths",
        ),
        paths.assign(count=paths["count"].astype(str)),
        "path_lengths",
        caption=(
            f"Unroll every shortcut: each of the {k} blocks with one is either skipped or "
            f"passed through, so there are 2^{k} = {2**k:,} paths, and C({k}, j) of them pass "
            f"through j of those branches: Binomial({k}, 1/2), mean {k / 2:g}. Blocks without a "
            "shortcut must be passed through."
            if k
            else f"No block has a shortcut: there is one path, through all {len(table)} blocks."
        )
        + " This is Veit et al.'s unrolled view: a later branch receives the sum of the "
        "earlier paths, so the paths are not independent"
        + (
            "; joined before the activation, even the route that skips a branch passes "
            "through the activation."
            if join == "before_act" and mode in ("add", "scaled")
            else "."
        ),
    )

# ------------------------------------------------------------ 4. degradation
st.header("4. Degradation: does depth help?")
st.markdown(
    "He et al. (2016, Fig. 1): a deeper plain network trains *worse* than a shallow one, "
    "not because it overfits but because it is harder to optimize. Here four stacks learn to "
    f"tell apart {rv.DegradationConfig.classes} interleaved spirals "
    f"({rv.DegradationConfig.n_points:,} points, built in): shallow and deep, plain "
    "and with the shortcut chosen above, from the same seed on the same batches (Adam). "
    "The first block maps the 2-d points to the width"
    + (
        " and, like every concat block here, is projected back to the width."
        if mode == "concat"
        else " and has no shortcut (the widths differ)."
    )
)
d1, d2, d3, d4 = st.columns(4)
with d1:
    shallow = p.slider("Shallow (blocks)", "shallow", 1, 16, 4)
with d2:
    deep = p.slider("Deep (blocks)", "deep", 2, 64, 16)
with d3:
    steps = p.slider("Steps", "steps", 20, 2000, 400, step=20)
with d4:
    lr = p.select("Learning rate", "lr", ["0.001", "0.003", "0.01", "0.03"], "0.003")
dcfg = None
try:
    dcfg = rv.DegradationConfig(
        shallow=shallow,
        deep=deep,
        width=32,
        activation=act,
        init=init,
        residual=mode if mode != "none" else "add",
        alpha=alpha,
        alpha_learnable=learnable,
        join=join,
        steps=steps,
        lr=float(lr),
    )
except ValueError as exc:
    st.warning(f"The experiment cannot run with these settings: {exc}", icon=":material/warning:")
if mode == "none":
    st.caption("Shortcut is set to none above; the residual stacks here use add.")

if dcfg is not None:
    # The four stacks train side by side; the refusal, if any, is shown by the panel below.
    refusal = budget().check(
        rv.combine(
            rv.estimate(v, batch=dcfg.n_points, steps=dcfg.steps)
            for v in dcfg.variants(ctx.seed).values()
        ),
        "This experiment",
    )

    def work(report, should_stop):
        return rv.train_degradation(dcfg, ctx.seed, device, report, should_stop)

    def render(job: jobs.Job) -> None:
        result = job.result if isinstance(job.result, rv.DegradationResult) else None
        curves = result.curves if result is not None else job.frame
        if curves is None or len(curves) == 0:
            return
        long = curves.melt(
            id_vars=["variant", "step", "diverged", "divergence"],
            value_vars=["loss", "error"],
            var_name="measure",
        )
        views.chart(
            charts.line(
                long[long["measure"] == "loss"],
                "step",
                "value",
                "variant",
                points=False,
                log_y=True,
                y_title="training loss (log)",
                height=280,
            ),
            curves,
            "degradation_curves",
        )
        views.altair(
            charts.line(
                long[long["measure"] == "error"],
                "step",
                "value",
                "variant",
                points=False,
                y_title="training error",
                height=280,
            ),
            width="stretch",
        )
        st.caption(
            f"Cross-entropy and error on all {dcfg.n_points:,} training points, every "
            f"{dcfg.eval_every} steps; guessing one of {dcfg.classes} classes gives error "
            f"{dcfg.classes - 1}/{dcfg.classes}. He et al.'s degradation is a deeper plain stack "
            "ending higher than a shallower one. "
            + rv.degradation_summary(curves, dcfg.shallow, dcfg.deep)
        )
        for row in curves[curves["diverged"].astype(bool)].itertuples():
            st.warning(
                f"{row.variant} diverged at step {row.step} ({row.divergence}); training of "
                "that stack stopped there (dashed line).",
                icon=":material/warning:",
            )

    job = jobs.panel(
        "degradation",
        ("skip_connections:degradation", dcfg, ctx.seed, device),
        work,
        dcfg.steps,
        render,
        start_label="Train",
        blocked=refusal,
    )
    result = job.result if job is not None else None
    if isinstance(result, rv.DegradationResult):
        cols = ["variant", "kind", "depth", "step", "loss", "accuracy", "diverged", "divergence"]
        final = result.final[cols]
        views.table(
            final,
            "degradation_final",
            caption=f"After training ({result.seconds:.1f} s for all four stacks)."
            + (
                " Training was stopped early: the step column says where each stack ended."
                if result.attrs.get("stopped")
                else ""
            ),
        )
        sig = result.signal[result.signal["kind"] == "residual"].copy()
        if sig["cosine"].notna().any():
            sig["block"] = sig["layer"] + 1
            sig["series"] = sig["variant"] + ", " + sig["stage"]
            views.chart(
                charts.line(
                    sig, "block", "cosine", "series", y_title="cos(shortcut, update)", height=260
                ),
                sig.drop(columns=["series"]),
                "cosine_init_vs_trained",
                caption="cos(shortcut, update) per block on the spiral points, at init and "
                "after training. Block 1 maps 2-d points to the width, so it has no cosine. "
                "Values near 0 would support the 'each block adds an orthogonal feature' "
                "reading"
                + (
                    "; with ReLU joined after the activation, stream and branch are both "
                    "non-negative at init, so the cosine cannot be negative there. "
                    if act == "relu" and join == "after_act" and mode != "concat"
                    else ". "
                )
                + "Mean over the blocks, at init and trained: "
                + rv.stage_change(
                    sig, "cosine", "variant", "stage", "init", "trained", "the cosine"
                ),
            )

# ------------------------------------------------------------------ 5. lesion
st.header("5. Lesion study: delete one block")
st.markdown(
    "Veit et al. (2016) deleted single blocks from trained networks: a residual network "
    "barely noticed, a plain one broke. Here a plain and a residual stack of the same depth "
    "(width 32, with the activation, init and shortcut chosen above; Adam at 0.003) learn "
    "spirals with one turn per arm, easier than section 4's two, because a lesion only says "
    "something about a stack that learned its task. Then each block in turn is deleted "
    "(x_{l+1} = x_l) and the stack is scored again. The first block maps the 2-d points to "
    "the width and cannot be deleted."
)
l1, l2 = st.columns(2)
with l1:
    l_depth = p.slider("Blocks", "l_depth", 4, 48, 16)
with l2:
    l_steps = p.slider("Steps", "l_steps", 100, 2000, 400, step=100)
lcfg = None
try:
    lcfg = rv.LesionConfig(
        depth=l_depth,
        activation=act,
        init=init,
        residual=mode if mode != "none" else "add",
        alpha=alpha,
        alpha_learnable=learnable,
        join=join,
        steps=l_steps,
    )
except ValueError as exc:
    st.warning(f"The lesion study cannot run with these settings: {exc}", icon=":material/warning:")
if mode == "none":
    st.caption("Shortcut is set to none above; the residual stack here uses add.")

if lcfg is not None:
    # The panel shows the refusal itself (with Train disabled): check without showing.
    l_refusal = budget().check(
        rv.estimate(
            lcfg.variants(ctx.seed)[f"residual, {lcfg.depth} blocks"],
            batch=lcfg.n_points,
            steps=2 * lcfg.steps,
        ),
        "This lesion study",
    )

    def lesion_work(report, should_stop):
        return rv.train_lesion(lcfg, ctx.seed, device, report, should_stop)

    def lesion_render(job: jobs.Job) -> None:
        result = job.result if isinstance(job.result, rv.DegradationResult) else None
        if result is None:
            curves = job.frame
            if curves is not None and len(curves):
                views.altair(
                    charts.line(
                        curves,
                        "step",
                        "error",
                        "variant",
                        points=False,
                        y_title="training error",
                        height=240,
                    ),
                    width="stretch",
                )
            return
        les = result.lesion.copy()
        les["block"] = les["deleted"] + 1
        summary = rv.lesion_summary(result.lesion, lcfg.classes)
        views.chart(
            charts.line(
                les,
                "block",
                "accuracy",
                "variant",
                y_title="accuracy with the block deleted",
                height=280,
            ),
            les.drop(columns=["block"]),
            "lesion",
            caption=rv.lesion_caption(summary, lcfg.classes),
        )
        views.table(summary, "lesion_summary")

    jobs.panel(
        "lesion",
        ("skip_connections:lesion", lcfg, ctx.seed, device),
        lesion_work,
        lcfg.steps,
        lesion_render,
        start_label="Lesion",
        blocked=l_refusal,
    )
