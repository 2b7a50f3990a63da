"""The gradient-flow page's captions and accounts, section by section, from the
recipe's result (:mod:`resviz.gradients.recipes`) and the seeds it holds: what each
chart, table and metric under it says. The directions they state come from
:mod:`resviz.gradients.words.findings` (worded over every seed); this module puts them
in their section's sentences.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from resviz.charts.lines import seed_band
from resviz.core import Result
from resviz.gradients.layers import PLAIN, RESIDUAL
from resviz.gradients.words.findings import (
    agreement_over_seeds,
    below_half_over_seeds,
    first_vs_last_over_seeds,
    trend_over_seeds,
    why_over_seeds,
    zero_sv_over_seeds,
)
from resviz.words.headline import Figure
from resviz.words.numbers import format_log10, format_number
from resviz.words.seeds import band_words, seeds_label, span

__all__ = [
    "acf_account",
    "derivation_figures",
    "divergence_warnings",
    "flagged",
    "gradients_shown_caption",
    "heatmap_account",
    "input_gains",
    "lag1_caption",
    "measured_logs",
    "median_note",
    "norms_account",
    "ratio_account",
    "spectrum_account",
    "streams_account",
    "sweep_account",
    "sweep_caption",
    "sweep_words",
    "towards_input",
    "training_seeds_caption",
    "weights_account",
]


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


def median_note(n_seeds: int) -> str:
    """What a metric over ``n_seeds`` seeds shows: ``" (median of 3 seeds)"``; empty
    for one seed."""
    return f" (median of {n_seeds} seeds)" if n_seeds > 1 else ""


def input_gains(r: Result, variant: str, col: str = "log10_input_gain") -> list[float]:
    """Each seed's ``||dL/dx_0|| / ||dL/dx_L||`` (log10) of ``variant``, from the
    per-layer recipe's ``gains`` frames."""
    return [float(run.gains.set_index("variant").loc[variant, col]) for run in r.per_seed]


def towards_input(
    r: Result, frame: str, variant: str, y: str, subject: str, seeds: Sequence[int]
) -> str:
    """How ``y`` (a column of log10s) of ``variant`` changes from the output side back
    to the input side (``block`` descending), in every seed: one sentence."""
    curves = []
    for run in r.per_seed:
        df = run.frames[frame]
        part = df[df["variant"] == variant].sort_values("block", ascending=False)
        curves.append(part[y].tolist())
    return trend_over_seeds(subject, curves, seeds)


# ------------------------------------------------------------------------ per layer
def weights_account(r: Result, seeds: Sequence[int], norm: str) -> str:
    """The account under the per-layer weight-gradient chart (``norm``: the stack's
    norm layer, ``"none"`` for none)."""
    trends = " ".join(
        towards_input(
            r,
            "weights",
            v,
            "log10_grad_norm",
            f"the {name} stack's ||dL/dW|| (from the last block back to the first)",
            seeds,
        )
        for v, name in ((PLAIN, "plain"), (RESIDUAL, "residual"))
    )
    after = ", after the norm layer" if norm != "none" else ""
    return (
        "Weight gradients after one MSE backward pass on a Gaussian batch of 32, measured in "
        f"float64. {trends} A weight gradient is a sum of outer products of the gradient at "
        "the layer's output with the layer's input, so it scales with the size of that "
        f"input (the stream entering the block{after}) as well as with the gradient. "
        + band_words(seeds)
    )


def streams_account(r: Result, seeds: Sequence[int]) -> str:
    """The account under the per-layer stream-gradient chart (``dL/dx_l``)."""
    trends = " ".join(
        towards_input(
            r,
            "streams",
            v,
            "log10_act_grad",
            f"the {name} stack's ||dL/dx_l|| (from the output x_L back to the input x_0)",
            seeds,
        )
        for v, name in ((RESIDUAL, "residual"), (PLAIN, "plain"))
    )
    return (
        "The gradient with respect to the stream itself, dL/dx_l: the quantity the "
        f"Derivation section's formula multiplies block by block. {trends}"
        + flagged(r.streams, "log10_act_grad", "gradient", ("variant", "block"))
        + " "
        + band_words(seeds)
    )


# ----------------------------------------------------------------------- derivation
def measured_logs(r: Result) -> list[float]:
    """Each seed's measured ``log10 ||dL/dx_0|| / ||dL/dx_L||`` of ``λ·x + f(x)``."""
    return [float(run.values["log10_measured"]) for run in r.per_seed]


def derivation_figures(r: Result, l: float, depth: int) -> tuple[Figure, ...]:  # noqa: E741
    """The derivation's metrics: the measured gain (the median over the seeds), the
    identity term ``λ^L`` and their ratio (undefined where ``λ^L`` is 0)."""
    log_m = float(np.median(measured_logs(r)))
    note = median_note(len(r.per_seed))
    ratio = (
        format_log10(log_m - r.log10_identity_term, 4)
        if r.identity_term != 0
        else "undefined (λ^L = 0)"
    )
    return (
        Figure(f"measured ||dL/dx_0|| / ||dL/dx_L||{note}", format_log10(log_m, 4)),
        Figure(f"λ^L = {l:g}^{depth}", format_number(r.identity_term, 4)),
        Figure(f"measured / λ^L{note}", ratio),
    )


def _over(seeds: Sequence[int]) -> str:
    return f" (over {seeds_label(seeds)}, lowest to highest)" if len(seeds) > 1 else ""


def norms_account(r: Result, seeds: Sequence[int]) -> str:
    """The account beside the block-Jacobian norms table: ``||J||`` and ``||I + J||``
    of the residual stack and the plain stack's ``||J||``, as ranges over the seeds."""
    norms = r.norms

    def norm_of(variant: str, col: str) -> str:
        return span(norms.loc[norms["variant"] == variant, col].tolist())

    return (
        f"Spectral norms (largest singular value) of block {r.block}'s Jacobians for one "
        "sample, in float64. With the shortcut the block Jacobian is I + J, whose norm lies "
        f"between 1 - ||J|| and 1 + ||J||: here ||J|| = {norm_of(RESIDUAL, '||J|| (branch)')} "
        f"and ||I + J|| = {norm_of(RESIDUAL, '||block Jacobian||')}{_over(seeds)}. Without, "
        f"the block Jacobian is J itself (here {norm_of(PLAIN, '||block Jacobian||')})."
    )


def _sv_range(spec: pd.DataFrame, matrix: str) -> str:
    """The residual stack's singular values of ``matrix``, smallest to largest (over
    every seed in ``spec``)."""
    sv = spec[(spec["variant"] == RESIDUAL) & (spec["matrix"] == matrix)]["sigma"]
    return f"{format_number(sv.min())} to {format_number(sv.max())}"


def spectrum_account(r: Result, seeds: Sequence[int]) -> str:
    """The account under the block-Jacobian spectrum chart."""
    return (
        "All singular values. In the residual stack's block J's run from "
        f"{_sv_range(r.spectrum, 'branch J')} and those of I + J from "
        f"{_sv_range(r.spectrum, 'block')}{_over(seeds)}. Every singular value of I + J "
        "lies within ||J|| of 1 (Weyl's inequality), so while ||J|| < 1 none of them is 0 "
        "and no direction of the gradient is lost."
        + zero_sv_over_seeds([run.spectrum for run in r.per_seed], seeds)
        + " "
        + band_words(seeds)
    )


def ratio_account(r: Result, seeds: Sequence[int], l: float, norm: str, small: bool) -> str:  # noqa: E741
    """The account under the scaled shortcut's gain curve: whether the measurement
    follows ``λ^L`` in each seed, and why."""
    line = " On a log scale λ^(L-l) is a straight line." if r.identity_term != 0 else ""
    return (
        "One backward pass (in float64) gives the whole curve: the gain from the output "
        f"down to every x_l.{line} "
        + agreement_over_seeds(measured_logs(r), r.log10_identity_term, seeds)
        + " "
        + why_over_seeds([run.ratio for run in r.per_seed], seeds, l, norm, small)
        + flagged(r.ratio_curves, "log10_ratio", "value", ("curve", "blocks_above"))
        + " "
        + band_words(seeds)
    )


# ---------------------------------------------------------------------- depth sweep
def sweep_words(part: pd.DataFrame, ycol: str, seeds: Sequence[int]) -> str:
    """Under one activation's panel: how each variant's curve changes from the
    shallowest stack to the deepest, in every seed (a seed still running: its depths
    so far)."""
    out = []
    for v, g in part.groupby("variant", sort=True):
        if "seed" in g:
            curves = [g[g["seed"] == s].sort_values("depth")[ycol].tolist() for s in seeds]
            have = [i for i, c in enumerate(curves) if c]
        else:
            curves, have = [g.sort_values("depth")[ycol].tolist()], [0]
        subject = f"the {v} curve (depth {int(g['depth'].min())} to {int(g['depth'].max())})"
        out.append(trend_over_seeds(subject, [curves[i] for i in have], [seeds[i] for i in have]))
    return " ".join(out)


def sweep_account(df: pd.DataFrame, ycol: str, seeds: Sequence[int]) -> str:
    """The account under the depth sweep's panels: what a point is, and its points
    that are exactly 0 or not finite (``ycol``, log10s)."""
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
        marked = (
            f"the triangles at the bottom of their plots mark the {m} whose median over the "
            "seeds is."
            if m
            else "no median over the seeds is, so no triangle marks them."
        )
        note = (
            f" {len(zeros)} point(s) of the {len(seeds)} seeds are exactly 0 or not finite "
            f"(first at depth {int(zeros['depth'].min())}); {marked}"
        )
    point = (
        "Each point is a fresh stack of that depth"
        if len(seeds) == 1
        else f"Each point is the median of {len(seeds)} fresh stacks of that depth, one per seed"
    )
    return (
        f"{point} (width, init and norm as set above), one backward pass in float64 with the "
        "gradient's size kept in log space, so a gradient under float64's range is measured "
        "too. Under each plot: how its curves change from the shallowest stack to the "
        "deepest, in every seed. A curve that is a straight line on the log axis changes by "
        f"the same factor with every block.{note} " + band_words(seeds)
    )


def sweep_caption(n_stacks: int, depths: Sequence[int], width: int, n_seeds: int) -> str:
    """What the Sweep button builds: ``n_stacks`` stacks of ``depths`` per seed."""
    per_seed = f" for each of {n_seeds} seeds" if n_seeds > 1 else ""
    return (
        f"**Sweep** builds {n_stacks} stacks of {min(depths)} to {max(depths)} blocks at "
        f"width {width}{per_seed} (the wider, the longer it takes) and backpropagates once "
        "through each. Finished results are kept for a while, so a second visit with the "
        "same settings shows them at once."
    )


# ------------------------------------------------------------------------- training
def training_seeds_caption(first_seed: int, n_seeds: int) -> str:
    """How a training run over several seeds goes; empty for one seed."""
    if n_seeds <= 1:
        return ""
    return (
        f"{n_seeds} seeds train one after another "
        f"({seeds_label(range(first_seed, first_seed + n_seeds))}), each from its own "
        "weights and batches: the progress counts the steps of all of them."
    )


def divergence_warnings(r: Result, seeds: Sequence[int]) -> list[str]:
    """One warning per stack that diverged, in each seed (a banded chart, of several
    seeds, draws no divergence rule, so only one seed's points at it)."""
    dashed = " (dashed vertical line)" if len(seeds) == 1 else ""
    return [
        f"{name} (seed {seed}) diverged: {where}; its training stopped there{dashed}."
        for seed, run in zip(seeds, r.per_seed, strict=True)
        for name, where in run.values.get("divergence", {}).items()
    ]


def heatmap_account(r: Result, seeds: Sequence[int], zeros: int) -> str:
    """The account under the per-block heatmaps (which show the first seed's run;
    ``zeros``: how many of its cells are exactly 0)."""
    zero_note = ""
    if zeros:
        how = (
            ": every float32 gradient entry of that block was 0 at that step"
            if r.norms_in_float64
            else " as summed in float32 on this device, where a small enough norm underflows to 0"
        )
        zero_note = (
            f" {zeros} cell(s) have a gradient norm of exactly 0 (log10 = -inf){how}. "
            "They are drawn in the lowest colour."
        )
    which = (
        f"The heatmaps show seed {seeds[0]} (of {seeds_label(seeds)}); the sentence on the "
        "first and last block reads every seed. "
        if len(seeds) > 1
        else ""
    )
    return (
        "Rows are blocks (input side at the top), columns are steps; colour is log10 of the "
        "block's gradient norm, on one scale for all panels. Grey is not run (yet, or after "
        "a run diverged and stopped) or not finite. "
        + which
        + first_vs_last_over_seeds(r.layers, seeds)
        + " Adam divides each step by the gradient's running size, so a cold block is not "
        "necessarily a slow learner until its gradient's entries near Adam's eps (1e-8)."
        + zero_note
    )


# ------------------------------------------------------------------------ shattered
def gradients_shown_caption(seeds: Sequence[int]) -> str:
    """Which seed's nets the df/dx panels draw (the first)."""
    rest = (
        f" (the first of {seeds_label(seeds)}; the CSV has every seed's)."
        if len(seeds) > 1
        else "."
    )
    return f"df/dx of seed {seeds[0]}'s nets{rest}"


def lag1_caption(seeds: Sequence[int]) -> str:
    """The caption under the lag-1 autocorrelation table."""
    return (
        "Correlation of df/dx at neighbouring inputs: near 1 is smooth, near 0 is white "
        "noise. A NaN means the gradient was constant (or not finite) along the line."
        + (" One row per seed and depth." if len(seeds) > 1 else "")
    )


def acf_account(r: Result, seeds: Sequence[int]) -> str:
    """The account under the autocorrelation chart: each net's first lag below 0.5."""
    return (
        "The autocorrelation function of each gradient. The first lag at which it falls "
        "below 0.5 (the sooner, the rougher the gradient): "
        + below_half_over_seeds([run.below for run in r.per_seed], seeds)
        + ". "
        + band_words(seeds)
    )
