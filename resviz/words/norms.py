"""Sentences of the normalization page, worded from its recipes' frames.

Each function takes a frame (or the settings) a recipe of ``resviz.recipes.norms``
returned and says what it shows, for every setting the page allows: which way a
comparison came out, with the numbers (``tests/unit/recipes/test_norms.py`` words
both outcomes). Numbers go through :func:`format_number`, which never prints 0 for
a value that is not 0.
"""

from __future__ import annotations

import math

import pandas as pd

from resviz.words.numbers import format_number, lower_words, ratio_words, trend_words


def halves_words(halves: pd.DataFrame, view: str) -> str:
    """The first half's mean |value| as a multiple of the second's, in ``view`` (a row
    of ``resviz.recipes.norms.four_views``'s ``halves``)."""
    h = halves.set_index("view").loc[view]
    return ratio_words(float(h["first_half"]), float(h["second_half"]))


def bn_halves_words(halves: pd.DataFrame) -> str:
    """Whether BatchNorm leaves the halves of sample 0 alike (within a factor of 1.5)."""
    ratio = float(halves.set_index("view").loc["BatchNorm", "ratio"])
    if 1 / 1.5 <= ratio <= 1.5:
        return (
            "so in sample 0 the halves come out alike (within a factor of 1.5): "
            f"{format_number(ratio)} times"
        )
    return (
        f"yet in sample 0 the halves still differ: {format_number(ratio)} times (each "
        "feature's std is 1 over the whole batch, not over sample 0 alone)"
    )


def abs_max_words(stats: pd.DataFrame) -> str:
    """The largest |value| after each norm (``stats``: a view per row, ``abs_max``)."""
    m = stats.set_index("view")["abs_max"]
    return ", ".join(
        f"{v} {format_number(float(m[v]))}" for v in ("LayerNorm", "BatchNorm", "RMSNorm")
    )


def invariant_rows(table: pd.DataFrame, norm: str) -> str:
    """The rows of the invariance table where ``norm`` counts as invariant, or the rows
    where it does not, whichever list is shorter."""
    t = table
    label = t["transformation"] + t["measured_on"].map(
        lambda on: "" if on == "all samples" else f" (on {on})"
    )
    mine = t["norm"] == norm
    ok, not_ok = label[mine & t["invariant"]], label[mine & ~t["invariant"]]
    if not len(not_ok):
        return "every row"
    if not len(ok):
        return "no row"
    if len(ok) <= len(not_ok):
        return ", ".join(ok)
    return "every row but " + ", ".join(not_ok)


def batch_change_words(summary: pd.DataFrame, mode: str) -> str:
    """The largest change of the token's output per scenario, in ``mode``."""
    s = summary
    others = s[(s["scenario"] != "original batch") & (s["mode"] == mode)]
    return "; ".join(
        f"{row.scenario}: "
        + (
            format_number(row.max_abs_change)
            if math.isfinite(row.max_abs_change)
            else "cannot be normalized"
        )
        for row in others.itertuples()
    )


def post_ln_words(stream: pd.DataFrame) -> str:
    """Post-LN's ||x_l||²/d after its layers (block 1 on), as measured."""
    post = stream[(stream["variant"] == "Post-LN") & (stream["block"] > 0)]
    lo, hi = float(post["sq_norm_per_dim"].min()), float(post["sq_norm_per_dim"].max())
    if format_number(lo, 4) == format_number(hi, 4):
        return f"is {format_number(lo, 4)} after every layer"
    return f"lies between {format_number(lo, 4)} and {format_number(hi, 4)} after its layers"


def stream_words(stream: pd.DataFrame) -> str:
    """How the Pre-LN stream's ||x_l||²/d changes from the input to the last layer."""
    pre = stream[stream["variant"] == "Pre-LN"].sort_values("block")
    return trend_words(pre["sq_norm_per_dim"].tolist(), within=1.25)


def deepest_ratios(summary: pd.DataFrame) -> str:
    """Each variant's gradient ratio at the deepest L, beside sqrt(L_min / L)."""
    lo, hi = int(summary["n_layers"].min()), int(summary["n_layers"].max())
    if lo == hi:
        return f"Only L = {lo} is measured at this setting, so every ratio is 1."
    last = summary[summary["n_layers"] == hi].set_index("variant")
    return (
        f"At L = {hi} it is {format_number(last.loc['Post-LN', 'ratio_to_L1'])} for Post-LN "
        f"and {format_number(last.loc['Pre-LN', 'ratio_to_L1'])} for Pre-LN; "
        f"sqrt({lo}/{hi}) = {format_number(last.loc['Pre-LN', 'inv_sqrt_L'])}."
    )


def schedule_words(w_lr: float, w_steps: int, w_warm: int) -> str:
    """The warmed-up run's schedule, ``lr * min(1, (t + 1) / w_warm)`` at step t: where
    it reaches the peak, or the rate it ends at when the run is shorter."""
    w_lr, w_steps, w_warm = float(w_lr), int(w_steps), int(w_warm)
    if w_warm <= w_steps:
        return f"once warmed up linearly to it over its first {w_warm} steps"
    last = w_lr * w_steps / w_warm
    return (
        f"once with a linear warm-up planned over {w_warm} steps, which this {w_steps}-step "
        f"run ends before finishing: its rate reaches only {format_number(last)}"
    )


def warmup_words(runs: pd.DataFrame, w_warm: int) -> str:
    """Per placement, how the run without warm-up compares with the run with it: their
    final losses when both ran to the end, the step each diverged at, or, for runs
    still going, their losses at the last step both have reached."""
    w = int(w_warm)
    out = []
    for place in ("Post-LN", "Pre-LN"):
        names = (f"{place}, no warm-up", f"{place}, warm-up {w}")
        a, b = (runs[runs["variant"] == n].sort_values("step") for n in names)
        if not len(a) or not len(b):
            continue
        bad = {n: g for n, g in zip(names, (a, b), strict=True) if g["diverged"].any()}
        if bad:
            out.append(
                f"{place}: "
                + "; ".join(
                    f"{label} diverged at step {int(g.loc[g['diverged'], 'step'].iloc[0])}"
                    if n in bad
                    else f"{label} ends at {format_number(float(g['loss'].iloc[-1]))}"
                    for n, g, label in zip(
                        names, (a, b), ("without warm-up", "with warm-up"), strict=True
                    )
                )
            )
            continue
        sa, sb = int(a["step"].iloc[-1]), int(b["step"].iloc[-1])
        if sa == sb:
            la, lb = float(a["loss"].iloc[-1]), float(b["loss"].iloc[-1])
            out.append(f"{place}: " + lower_words("without warm-up", la, "with", lb))
        else:
            s = min(sa, sb)
            la = float(a.loc[a["step"] == s, "loss"].iloc[0])
            lb = float(b.loc[b["step"] == s, "loss"].iloc[0])
            out.append(
                f"{place} at step {s}, the last both runs have reached: without warm-up "
                f"{format_number(la)}, with {format_number(lb)}"
            )
    return ("; ".join(out) + ". ") if out else ""


def start_end_words(runs: pd.DataFrame) -> str:
    """Each run's first loss and its mean over its last ten steps (all its steps when
    it ran fewer), from the data."""
    parts = []
    for name, run in runs.groupby("variant", sort=False):
        loss = run.sort_values("step")["loss"]
        k = min(10, len(loss))
        tail = format_number(float(loss.tail(k).mean()))
        parts.append(
            f"{name} {format_number(float(loss.iloc[0]))} to {tail}"
            + ("" if k == 10 else f" (mean of its {k} steps)")
        )
    return "Loss at the first step, then its mean over the last 10 steps: " + "; ".join(parts) + "."


def cost_words(timing: pd.DataFrame) -> str:
    """RMSNorm's median time as a multiple of LayerNorm's, per pass."""
    return "; ".join(
        f"{ratio_words(g.loc['RMSNorm', 'median_ms'], g.loc['LayerNorm', 'median_ms'])} "
        f"LayerNorm's time {direction}"
        for direction, g in (
            (k, v.set_index("norm")) for k, v in timing.groupby("pass", sort=False)
        )
    )


__all__ = [
    "abs_max_words",
    "batch_change_words",
    "bn_halves_words",
    "cost_words",
    "deepest_ratios",
    "halves_words",
    "invariant_rows",
    "post_ln_words",
    "schedule_words",
    "start_end_words",
    "stream_words",
    "warmup_words",
]
