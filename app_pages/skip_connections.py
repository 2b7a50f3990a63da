"""Skip connections: build deep stacks with and without shortcuts and measure them."""

from typing import Any

import pandas as pd
import streamlit as st
import torch

import resviz as rv
from ui import charts, jobs, views
from ui import skip_configs as C
from ui.budget import budget
from ui.cache import POLICY
from ui.notebook import Notebook
from ui.params import PageParams
from ui.shell import page_setup
from ui.specs import skip_connections as S

TITLE = "Skip connections"
ctx = page_setup(
    TITLE,
    "A residual block outputs `x + f(x)`: the input passes through unchanged and the "
    "block only adds an update. Build a stack, read its code, and measure what the "
    "shortcut changes: the signal at every layer, the paths through the network, "
    "how well deep stacks train, and what happens when a block is deleted.",
)
p = PageParams("skip_connections")
tabs = p.sections()
device = str(ctx.device)


@st.cache_data(show_spinner="Running the stack...", **POLICY)
def compare_signal(cfg: rv.StackConfig, device: str) -> tuple[pd.DataFrame, str | None]:
    return rv.run_with_fallback(
        lambda d: rv.skip.compare_signal(cfg, seed=cfg.seed, device=d), torch.device(device)
    )


@st.cache_data(**POLICY)
def block_views(cfg: rv.StackConfig) -> tuple[pd.DataFrame, pd.DataFrame, str, str]:
    return (
        rv.shortcut_table(cfg),
        rv.path_lengths(cfg),
        rv.generate_code(cfg),
        rv.block_formula(cfg),
    )


@st.cache_data(**POLICY)
def task(dcfg: rv.DegradationConfig | rv.LesionConfig, seed: int) -> pd.DataFrame:
    return rv.skip.task_frame(dcfg, seed)


# ------------------------------------------------------------------ settings
# Every setting by its URL name, as the sections below drew them this run.
values: dict[str, Any] = {}


def settings(full: bool) -> None:
    """The stack's settings. ``full``: the whole stack (Stack, Signal, Paths); else the
    block settings the trained stacks take (Degradation, Lesion)."""
    if full:
        values["preset"] = p.select("Network", "preset")
    seed_net = values.get("preset") == S.PRESETS[1]
    c1, c2, c3 = st.columns(3)
    with c1:
        if full:
            values["depth"] = p.slider("Depth (blocks)", "depth", disabled=seed_net)
            values["width"] = p.slider("Width", "width", disabled=seed_net)
        values["act"] = p.select("Activation", "act")
        values["init"] = p.select(
            "Init",
            "init",
            help="default: PyTorch's nn.Linear init. kaiming / xavier: normal, zero bias. "
            "small: each branch's last layer scaled by 0.01.",
        )
    with c2:
        values["mode"] = p.select(
            "Shortcut",
            "mode",
            help="none: y = f(x). add: y = x + f(x). scaled: y = x + a f(x). concat: y = [x, f(x)].",
        )
        values["join"] = p.select(
            "Where the shortcut joins",
            "join",
            help="after_act: y = x + act(Wx + b). before_act: y = act(x + Wx + b), the original "
            "ResNet placement (add and scaled only).",
        )
        if full:
            values["mismatch"] = p.select(
                "Where widths differ",
                "mismatch",
                help="skip: no shortcut in that block. project: a bias-free linear shortcut "
                "P x (ResNet option B).",
            )
    with c3:
        values["alpha"] = p.float_slider("a (scaled: y = x + a f(x))", "alpha")
        values["learnable"] = p.toggle("a learnable (a = 0: ReZero)", "learnable")
        if full:
            values["project"] = p.toggle("concat: project back to the width", "project")


def stack() -> rv.StackConfig | None:
    """The stack the settings describe, or None (with the reason shown)."""
    try:
        return C.stack_config(values, ctx.seed)
    except ValueError as exc:
        st.warning(f"This stack cannot be built: {exc}", icon=":material/warning:")
        return None


def notebook(section: str) -> Notebook:
    return Notebook(TITLE, section, st.query_params.to_dict())


# ------------------------------------------------------------------ Stack
def stack_section() -> None:
    """The block's formula, which blocks got a shortcut, and the generated code."""
    st.subheader("The block")
    settings(full=True)
    cfg = stack()
    if cfg is None:
        return
    table, _, code, formula = block_views(cfg)
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
        f"network preset (widths {', '.join(map(str, S.SEED_WIDTHS))}) "
        f"{sum(a != b for a, b in zip(S.SEED_WIDTHS, S.SEED_WIDTHS[1:], strict=False))} "
        "blocks change the width: "
        "*Where widths differ* decides what they get.",
    )
    st.markdown(
        "The PyTorch code for exactly this stack. It needs only `torch`; `build_model()` "
        "creates the same weights as the page (same seed, same creation order)."
    )
    st.code(code, language="python")
    nb = notebook(S.STACK)
    nb.code(
        f"cfg = rv.{cfg!r}\n"
        "table = rv.shortcut_table(cfg)  # which blocks got a shortcut\n"
        "print(rv.block_formula(cfg))  # the block, as LaTeX\n"
        "table"
    )
    nb.code(
        "# The same stack as a torch-only script: build_model() gives rv.build(cfg)'s weights.\n"
        "print(rv.generate_code(cfg))"
    )
    nb.frame("shortcuts", "table").download("skip_stack")


# ------------------------------------------------------------------ Signal
def signal_section() -> None:
    """Per-layer norm, identity share and cosine at init."""
    st.subheader("Forward signal, layer by layer")
    settings(full=True)
    cfg = stack()
    if cfg is None or views.check_budget(rv.estimate(cfg, batch=256), "This stack"):
        return
    mode = cfg.residual
    signal, note = compare_signal(cfg, device)
    views.notice(note)
    views.chart(
        charts.line(signal, "block", "norm", "variant", log_y=True, y_title="mean ||x_l|| (log)"),
        signal,
        "forward_signal",
        caption="256 Gaussian inputs at init. "
        + rv.stack_norm_rule("none")
        + ("" if mode == "none" else " " + rv.stack_norm_rule(mode, cfg.join, cfg.concat_project))
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
    nb = notebook(S.SIGNAL)
    nb.code(
        f"seed = {ctx.seed}  # the Gaussian inputs; the weights come from cfg.seed\n"
        f"cfg = rv.{cfg!r}\n"
        "signal = rv.skip.compare_signal(cfg, seed=seed)  # plain and with the shortcut\n"
        "rv.charts.line(signal, 'block', 'norm', 'variant', log_y=True, "
        "y_title='mean ||x_l|| (log)')"
    )
    nb.frame("forward_signal", "signal")
    if mode != "none":
        terms = rv.skip.shortcut_terms(signal)
        views.chart(
            charts.line(
                rv.skip.share_long(terms), "block", "value", "measure", y_title="share / cosine"
            ),
            terms,
            "identity_share",
            caption="identity_share = ||s||^2 / (||s||^2 + ||u||^2) for y = s + u: how much "
            "of each output is the input passed on (1 for ReZero at init). cosine = "
            "cos(s, u): near 0 means each block adds a direction orthogonal to what the "
            "stream holds. Whether that holds is measured, at init here and after training "
            "in the Degradation section (no cosine where a block has no shortcut, or with "
            "concat, which places x and f(x) side by side instead of adding them). "
            + rv.value_range(
                terms["identity_share"],
                [f"block {b}" for b in terms["block"]],
                "here identity_share",
            )
            + " "
            + rv.value_range(terms["cosine"], [f"block {b}" for b in terms["block"]], "the cosine"),
        )
        nb.code(
            "terms = rv.skip.shortcut_terms(signal)\n"
            "rv.charts.line(rv.skip.share_long(terms), 'block', 'value', 'measure', "
            "y_title='share / cosine')"
        )
        nb.frame("identity_share", "terms")
    nb.download("skip_signal")


# ------------------------------------------------------------------ Paths
def paths_section() -> None:
    """The unrolled stack's path lengths."""
    st.subheader("Paths through the stack")
    settings(full=True)
    cfg = stack()
    if cfg is None:
        return
    table, paths, _, _ = block_views(cfg)
    k = int((table["shortcut"] != "none").sum())
    views.chart(
        charts.bars(
            rv.skip.path_bars(paths),
            "length",
            "paths",
            x_title="path length (branches passed through)",
            y_title="fraction of paths",
        ),
        rv.skip.path_table(paths),
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
            if cfg.join == "before_act" and cfg.residual in ("add", "scaled")
            else "."
        ),
    )
    nb = notebook(S.PATHS)
    nb.code(
        f"cfg = rv.{cfg!r}\n"
        "paths = rv.path_lengths(cfg)  # count, fraction and Binomial pmf per length\n"
        "table = rv.skip.path_table(paths)  # counts as exact text\n"
        "rv.charts.bars(rv.skip.path_bars(paths), 'length', 'paths', "
        "x_title='path length (branches passed through)', y_title='fraction of paths')"
    ).frame("path_lengths", "table").download("skip_paths")


# ------------------------------------------------------------------ training
def per_arm(turns: float) -> str:
    return f"{turns:g} turn{'' if turns == 1 else 's'} per arm"


def task_chart(dcfg: rv.DegradationConfig | rv.LesionConfig, name: str, turns: str) -> None:
    """The spirals the stacks learn (drawn before any training)."""
    points = task(dcfg, ctx.seed)
    views.chart(
        charts.scatter(points, "x1", "x2", "class", title=f"The task: {turns}", height=340),
        points,
        name,
    )


def task_code(turns: str) -> str:
    return (
        "task = rv.skip.task_frame(cfg, seed)  # the spirals it trains on\n"
        f"rv.charts.scatter(task, 'x1', 'x2', 'class', title={f'The task: {turns}'!r}, "
        "height=340)"
    )


def stopped_note(nb: Notebook, result: rv.DegradationResult) -> None:
    if result.attrs.get("stopped"):
        nb.md(
            "The run on screen was stopped early; this notebook trains every step, so its "
            "numbers go further than the page's."
        )


def degradation_section() -> None:
    """He et al.'s degradation experiment, trained in the background."""
    st.subheader("Degradation: does depth help?")
    settings(full=False)
    mode = values["mode"]
    d1, d2, d3, d4 = st.columns(4)
    with d1:
        values["shallow"] = p.slider("Shallow (blocks)", "shallow")
    with d2:
        values["deep"] = p.slider("Deep (blocks)", "deep")
    with d3:
        values["steps"] = p.slider("Steps", "steps")
    with d4:
        values["lr"] = p.select("Learning rate", "lr")
    try:
        dcfg = C.degradation_config(values)
    except ValueError as exc:
        st.warning(
            f"The experiment cannot run with these settings: {exc}", icon=":material/warning:"
        )
        return
    if mode == "none":
        st.caption("Shortcut is set to none; the residual stacks here use add.")
    text, picture = st.columns([3, 2])
    with text:
        st.markdown(
            "He et al. (2016, Fig. 1): a deeper plain network trains *worse* than a shallow "
            "one, not because it overfits but because it is harder to optimize. Here four "
            f"stacks learn to tell apart {dcfg.classes} interleaved spirals "
            f"({dcfg.n_points:,} points, built in, {per_arm(dcfg.turns)}): shallow and "
            "deep, plain and with the shortcut chosen above, from the same seed on the same "
            "batches (Adam). The first block maps the 2-d points to the width"
            + (
                " and, like every concat block here, is projected back to the width."
                if dcfg.residual == "concat"
                else " and has no shortcut (the widths differ)."
            )
        )
    with picture:
        task_chart(dcfg, "spirals", per_arm(dcfg.turns))
    nb = notebook(S.DEGRADATION)
    nb.code(f"seed = {ctx.seed}\ncfg = rv.{dcfg!r}\n" + task_code(per_arm(dcfg.turns)))
    nb.frame("spirals", "task")
    nb.code(
        "# Trains the four stacks from the same seed on the same batches.\n"
        "result = rv.train_degradation(cfg, seed=seed)\n"
        "curves = result.curves\n"
        "rv.charts.line(rv.skip.curves_long(curves, 'loss'), 'step', 'value', 'variant', "
        "points=False, log_y=True, y_title='training loss (log)', height=280)"
    )
    nb.code(
        "rv.charts.line(rv.skip.curves_long(curves, 'error'), 'step', 'value', 'variant', "
        "points=False, y_title='training error', height=280)"
    )
    nb.code("final = rv.skip.final_table(result)\nfinal")
    nb.code(
        "cos = rv.skip.cosine_stages(result)  # residual stacks, at init and trained\n"
        "rv.charts.line(cos, 'block', 'cosine', 'series', y_title='cos(shortcut, update)', "
        "height=260)"
    )

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
        views.chart(
            charts.line(
                rv.skip.curves_long(curves, "loss"),
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
                rv.skip.curves_long(curves, "error"),
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
        final = rv.skip.final_table(result)
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
        nb.frame("degradation_curves", "curves").frame("degradation_final", "final")
        stopped_note(nb, result)
        sig = rv.skip.cosine_stages(result)
        if sig["cosine"].notna().any():
            views.chart(
                charts.line(
                    sig, "block", "cosine", "series", y_title="cos(shortcut, update)", height=260
                ),
                sig,
                "cosine_init_vs_trained",
                caption="cos(shortcut, update) per block on the spiral points, at init and "
                "after training. Block 1 maps 2-d points to the width, so it has no cosine. "
                "Values near 0 would support the 'each block adds an orthogonal feature' "
                "reading"
                + (
                    "; with ReLU joined after the activation, stream and branch are both "
                    "non-negative at init, so the cosine cannot be negative there. "
                    if dcfg.activation == "relu" and dcfg.join == "after_act" and mode != "concat"
                    else ". "
                )
                + "Mean over the blocks, at init and trained: "
                + rv.stage_change(
                    sig, "cosine", "variant", "stage", "init", "trained", "the cosine"
                ),
            )
            nb.frame("cosine_init_vs_trained", "cos")
    nb.download("skip_degradation")


# ------------------------------------------------------------------ Lesion
def lesion_section() -> None:
    """Veit et al.'s lesion study, trained in the background."""
    st.subheader("Lesion study: delete one block")
    settings(full=False)
    l1, l2 = st.columns(2)
    with l1:
        values["l_depth"] = p.slider("Blocks", "l_depth")
    with l2:
        values["l_steps"] = p.slider("Steps", "l_steps")
    try:
        lcfg = C.lesion_config(values)
    except ValueError as exc:
        st.warning(
            f"The lesion study cannot run with these settings: {exc}", icon=":material/warning:"
        )
        return
    if values["mode"] == "none":
        st.caption("Shortcut is set to none; the residual stack here uses add.")
    text, picture = st.columns([3, 2])
    with text:
        st.markdown(
            "Veit et al. (2016) deleted single blocks from trained networks: a residual "
            "network barely noticed, a plain one broke. Here a plain and a residual stack of "
            f"the same depth (width {lcfg.width}, with the activation, init and shortcut chosen "
            f"above; Adam at {lcfg.lr:g}) learn spirals with {per_arm(lcfg.turns)}, "
            f"easier than the Degradation section's {per_arm(rv.DegradationConfig.turns)}, "
            "because a lesion only says something "
            "about a stack that learned its task. Then each block in turn is deleted "
            "(x_{l+1} = x_l) and the stack is scored again. The first block maps the 2-d "
            "points to the width and cannot be deleted."
        )
    with picture:
        task_chart(lcfg, "lesion_spirals", per_arm(lcfg.turns))
    nb = notebook(S.LESION)
    nb.code(f"seed = {ctx.seed}\ncfg = rv.{lcfg!r}\n" + task_code(per_arm(lcfg.turns)))
    nb.frame("lesion_spirals", "task")
    nb.code(
        "# Trains the plain and the residual stack, then deletes each block in turn.\n"
        "result = rv.train_lesion(cfg, seed=seed)\n"
        "lesion = result.lesion\n"
        "summary = rv.lesion_summary(lesion, cfg.classes)\n"
        "print(rv.lesion_caption(summary, cfg.classes))\n"
        "rv.charts.line(lesion, 'block', 'accuracy', 'variant', "
        "y_title='accuracy, block deleted', height=280)"
    )
    nb.code("summary")

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
        les = result.lesion
        summary = rv.lesion_summary(les, lcfg.classes)
        views.chart(
            charts.line(
                les,
                "block",
                "accuracy",
                "variant",
                y_title="accuracy, block deleted",
                height=280,
            ),
            les,
            "lesion",
            caption=rv.lesion_caption(summary, lcfg.classes),
        )
        views.table(summary, "lesion_summary")

    job = jobs.panel(
        "lesion",
        ("skip_connections:lesion", lcfg, ctx.seed, device),
        lesion_work,
        lcfg.steps,
        lesion_render,
        start_label="Lesion",
        blocked=l_refusal,
    )
    result = job.result if job is not None else None
    if isinstance(result, rv.DegradationResult):
        nb.frame("lesion", "lesion").frame("lesion_summary", "summary")
        stopped_note(nb, result)
    nb.download("skip_lesion")


for tab, section in zip(
    tabs,
    (stack_section, signal_section, paths_section, degradation_section, lesion_section),
    strict=True,
):
    if tab.open:
        with tab:
            section()
