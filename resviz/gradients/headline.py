"""The gradient-flow page's headlines, one per section, from the per-seed outcomes its
full account words (:mod:`resviz.gradients.words`)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from resviz.gradients.words.findings import _agreement_kind, _agrees, _change
from resviz.words.headline import Figure, Headline, seeds_headline
from resviz.words.numbers import format_log10, format_number
from resviz.words.seeds import log_span, seeds_sentence, span
from resviz.words.sentences import order

__all__ = ["derivation", "loss_race", "loss_race_words", "per_layer", "shattered", "sweep"]

# A change of a gradient (its log10 gain) as the headline says it.
_MOVES = {
    "shrinks": "shrinks",
    "grows": "grows",
    "keeps its size": "keeps its size",
    "cannot be measured": "cannot be measured",
    "overflows float64": "overflows float64",
}


def _times(logs: Sequence[float]) -> str:
    """How many times a gradient shrinks or grows over the seeds, from their log10
    gains (``" 290–360 times"``); empty where none is finite and non-zero."""
    factors = [abs(float(g)) for g in logs if math.isfinite(float(g)) and float(g) != 0]
    return f" {log_span(factors, 2)} times" if factors else ""


def per_layer(
    plain: Sequence[float],
    residual: Sequence[float],
    seeds: Sequence[int],
    depth: int,
    names: tuple[str, str] = ("plain", "residual"),
) -> Headline:
    """Per layer: how each stack's gradient changes from the output back to the input
    over ``depth`` blocks (``log10 ||dL/dx_0|| / ||dL/dx_L||`` per seed), with the two
    gains (their median over the seeds; labelled with ``names``) as the figures."""
    kinds = [f"{_change(p)} / {_change(r)}" for p, r in zip(plain, residual, strict=True)]
    says, short = {}, {}
    blocks = f"{depth} block{'s' if depth != 1 else ''}"
    for kind in set(kinds):
        cp, cr = (_MOVES[k] for k in kind.split(" / "))
        ix = [i for i, k in enumerate(kinds) if k == kind]
        says[kind] = (
            f"the plain stack's gradient {cp}{_times([plain[i] for i in ix])} on its way back "
            f"through {blocks}; the residual stack's {cr}{_times([residual[i] for i in ix])}"
        )
        short[kind] = f"plain {cp}, residual {cr}"
    line = seeds_headline(kinds, says, seeds, "how the two gradients change", short)
    n = len(plain)
    med = f" (median of {n} seeds)" if n > 1 else ""

    def big(g: Sequence[float]) -> str:  # a NaN or an overflow has no median to show
        bad = any(math.isnan(float(x)) or float(x) == math.inf for x in g)
        return "not finite" if bad else format_log10(float(np.median(g)))

    figures = tuple(
        Figure(f"||dL/dx_0|| / ||dL/dx_L||, {name}{med}", big(g))
        for name, g in zip(names, (plain, residual), strict=True)
    )
    return Headline(line, figures)


def derivation(
    log_measured: Sequence[float],
    log_identity: float,
    seeds: Sequence[int],
    figures: tuple[Figure, ...] = (),
) -> Headline:
    """Derivation: whether the measured gain at x_0 follows λ^L in every seed (the
    outcomes :func:`resviz.gradients.words.agreement_over_seeds` words)."""
    t = float(log_identity)
    kinds = [_agreement_kind(float(m), t) for m in log_measured]
    says = {}
    for kind in set(kinds):
        ms = [float(m) for m, k in zip(log_measured, kinds, strict=True) if k == kind]
        if kind == "agrees":
            worst = max(abs(10.0 ** (m - t) - 1) for m in ms)
            pct = format_number(max(worst * 100, 1e-3), 2)
            says[kind] = f"the measured gain at x_0 matches λ^L within {pct}%"
        elif kind == "differs":
            says[kind] = f"the measured gain at x_0 is {log_span([m - t for m in ms], 2)} times λ^L"
        elif kind == "ref0":
            says[kind] = "λ^L is exactly 0, but the measured gain at x_0 is not"
        elif kind == "both0":
            says[kind] = "the measured gain at x_0 is exactly 0, as is λ^L"
        else:
            says[kind] = "the measured gain at x_0 is not finite: no comparison with λ^L"
    short = {
        "agrees": "matches",
        "differs": "differs",
        "ref0": "λ^L is 0, the gain not",
        "both0": "both 0",
        "nan": "not finite",
    }
    line = seeds_headline(kinds, says, seeds, "whether the gain follows λ^L", short)
    return Headline(line, figures)


# ------------------------------------------------------------------------- depth sweep
def _deepest(part: pd.DataFrame, ycol: str) -> tuple[int, float, float] | None:
    """One seed's activation panel at the deepest depth both variants have: the depth
    and the plain and residual values (log10s; NaN kept: a measurement that is not
    finite); None when they share no depth."""
    plain, resid = (
        part[part["variant"] == v].drop_duplicates("depth").set_index("depth")[ycol]
        for v in ("plain", "residual")
    )
    common = plain.index.intersection(resid.index)
    if not len(common):
        return None
    d = int(common.max())
    return d, float(plain.loc[d]), float(resid.loc[d])


def sweep(
    df: pd.DataFrame, ycol: str, measure: str, seeds: Sequence[int], activations: Sequence[str]
) -> Headline | None:
    """Depth sweep: in each seed, which stack keeps the larger ``measure`` (a column
    of log10s, ``ycol``) at the deepest depth swept, under every activation; the two
    stacks' values there (over activations and seeds) as the figures. None before any
    depth has both stacks."""
    per = df if "seed" in df.columns else df.assign(seed=seeds[0])
    seeds = [int(s) for s in pd.unique(per["seed"])]  # a live run: the seeds so far
    outcomes, used, plain, resid = [], [], [], []
    depths: set[int] = set()
    for s in seeds:
        got = []
        for act in activations:
            part = per[(per["seed"] == s) & (per["activation"] == act)]
            found = _deepest(part, ycol)
            if found is not None:
                got.append((act, *found))
        if not got:
            continue
        used.append(s)
        depths.update(d for _, d, _, _ in got)
        plain += [p for _, _, p, _ in got]
        resid += [r for _, _, _, r in got]
        wins = {_winner(p, r) for _, _, p, r in got}
        outcomes.append("nan" if "nan" in wins else wins.pop() if len(wins) == 1 else "mixed")
    if not used:
        return None
    at = f"depth {max(depths)}" if len(depths) == 1 else f"depth {span(sorted(depths))}"
    n_act = len({a for a in activations if a in set(per["activation"])})
    under = {1: "under its activation", 2: "under both activations"}.get(
        n_act, f"under all {n_act} activations"
    )
    says = {
        "residual": f"the residual stack keeps the larger {measure} at {at}, {under}",
        "plain": f"the plain stack keeps the larger {measure} at {at}, {under}",
        "level": f"the two stacks keep about the same {measure} at {at}, {under}",
        "nan": f"a {measure} at {at} is not finite, so the stacks cannot be compared there",
        "mixed": f"which stack keeps the larger {measure} at {at} depends on the activation",
    }
    short = {
        "residual": "residual larger",
        "plain": "plain larger",
        "level": "level",
        "nan": "not finite",
        "mixed": "depends on the activation",
    }
    line = seeds_headline(outcomes, says, used, "which stack keeps more", short)
    figures = (
        Figure(f"plain, {at}", log_span(plain, 2)),
        Figure(f"residual, {at}", log_span(resid, 2)),
    )
    return Headline(line, figures)


def _winner(log_plain: float, log_resid: float) -> str:
    """Which stack's value (log10s; ``-inf`` is 0) is larger, or ``level`` within 5%."""
    p, r = float(log_plain), float(log_resid)
    if math.isnan(p) or math.isnan(r) or math.inf in (p, r):
        return "nan"
    if p == r or (math.isfinite(p - r) and _agrees(p, r)):
        return "level"
    return "residual" if r > p else "plain"


# ---------------------------------------------------------------------------- training
def _race(curves: pd.DataFrame, window: int) -> tuple[str, dict[str, float], int]:
    """One seed's training curves (``variant, step, loss, diverged``): which variant
    ends lowest (its mean loss over its last ``window`` steps), ``level`` when the two
    lowest are within 5% of each other, ``diverged`` when every run diverged, ``nan``
    when a mean that would decide is not finite; the means; the steps of the longest."""
    means, last = {}, 0
    for name, g in curves.groupby("variant", sort=False):
        if bool(g["diverged"].astype(bool).any()):
            continue
        tail = g.sort_values("step")["loss"].astype(float).iloc[-window:]
        means[str(name)] = float(tail.mean())
        last = max(last, int(g["step"].max()))
    if not means:
        return "diverged", means, last
    ranked = sorted(means.items(), key=lambda kv: (math.isnan(kv[1]), kv[1]))
    if not math.isfinite(ranked[0][1]):
        return "nan", means, last
    if len(ranked) > 1:
        o = order(ranked[0][1], ranked[1][1])
        if o is None and math.isfinite(ranked[1][1]):
            return "nan", means, last
        if o == 0:
            return "level", means, last
    return ranked[0][0], means, last


def _race_says(outcomes: list[str], means: list[dict[str, float]], full: bool) -> dict[str, str]:
    says = {}
    for o in set(outcomes):
        mine = [m for m, x in zip(means, outcomes, strict=True) if x == o]
        if o == "diverged":
            says[o] = "every run diverged"
        elif o == "nan":
            says[o] = "a final loss is not finite, so the runs cannot be ranked"
        elif o == "level":
            says[o] = "the two lowest runs end level, within 5%"
        elif full:
            names = list(dict.fromkeys(n for m in mine for n in m))
            nums = "; ".join(f"{n}: {span([m[n] for m in mine if n in m])}" for n in names)
            says[o] = f'"{o}" has the lowest loss ({nums})'
        else:
            says[o] = f'"{o}" has the lowest loss over its last steps'
    return says


def _races(
    curves: pd.DataFrame, seed: int, window: int
) -> tuple[list[tuple[str, dict[str, float], int]], list[int]]:
    """:func:`_race` of every seed the curves hold (``seed``: a frame without a seed
    column's), and those seeds."""
    per = curves if "seed" in curves.columns else curves.assign(seed=seed)
    seeds = [int(s) for s in pd.unique(per["seed"])]
    return [_race(per[per["seed"] == s], window) for s in seeds], seeds


def loss_race(curves: pd.DataFrame, seed: int = 0, window: int = 10) -> Headline:
    """Training: which stack ends with the lowest training loss (mean of its last
    ``window`` steps; a run that diverged is out of the race), in every seed the
    curves (``[seed,] variant, step, loss, diverged``) hold so far."""
    got, seeds = _races(curves, seed, window)
    outcomes = [o for o, _, _ in got]
    says = _race_says(outcomes, [m for _, m, _ in got], False)
    return Headline(seeds_headline(outcomes, says, seeds, "which run ends lowest"))


def loss_race_words(curves: pd.DataFrame, seed: int = 0, window: int = 10) -> str:
    """:func:`loss_race` in full: the sentence with every run's mean loss over its last
    ``window`` steps, as ranges over the seeds that give each outcome."""
    got, seeds = _races(curves, seed, window)
    outcomes = [o for o, _, _ in got]
    says = _race_says(outcomes, [m for _, m, _ in got], True)
    return f"Mean loss over each run's last {window} steps: " + seeds_sentence(
        outcomes, says, seeds
    )


# --------------------------------------------------------------------------- shattered
def shattered(lag1: pd.DataFrame, seeds: Sequence[int]) -> Headline:
    """Shattered: at the deepest nets, whose df/dx is smoother (the larger lag-1
    autocorrelation, the ``lag1`` frame: depth and each variant's column), in every
    seed; both correlations there as the figures."""
    per = lag1 if "seed" in lag1.columns else lag1.assign(seed=seeds[0])
    depth = int(per["depth"].max())
    deep = per[per["depth"] == depth].set_index("seed")
    pc, rc = "plain lag-1 autocorrelation", "residual lag-1 autocorrelation"
    plain = [float(deep.loc[s, pc]) for s in seeds]
    resid = [float(deep.loc[s, rc]) for s in seeds]
    codes = {1: "residual", -1: "plain", 0: "level", None: "nan"}
    outcomes = [codes[order(r, p)] for p, r in zip(plain, resid, strict=True)]
    says = {
        "residual": f"at depth {depth} the residual net's df/dx is the smoother one",
        "plain": f"at depth {depth} the plain net's df/dx is the smoother one",
        "level": f"at depth {depth} the two nets' df/dx are about as smooth, within 5%",
        "nan": f"at depth {depth} a correlation is undefined (a constant gradient)",
    }
    short = {"residual": "residual smoother", "plain": "plain smoother", "level": "level"}
    short["nan"] = "undefined"
    line = seeds_headline(outcomes, says, seeds, "which net is smoother", short)
    figures = (
        Figure(f"lag-1 correlation, plain, depth {depth}", span(plain)),
        Figure(f"lag-1 correlation, residual, depth {depth}", span(resid)),
    )
    return Headline(line, figures)
