"""The normalization page's headlines, one per section, from the per-seed outcomes its
full account words (:mod:`resviz.norms.words`, :mod:`resviz.norms.training_words`)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from resviz.core import Result
from resviz.norms.training_words import GRAD_PART, _stability_outcome, _warmup_outcome
from resviz.norms.words import (
    GROWTH,
    SEED,
    deepest_ratios_seeds,
    post_ln_words,
    seeds_words,
    stream_outcomes,
    stream_seeds,
)
from resviz.words.headline import Figure, Headline, seeds_headline
from resviz.words.numbers import format_number
from resviz.words.seeds import band_words, span

__all__ = [
    "batch",
    "cost",
    "four_views",
    "invariances",
    "PREPOST_INTRO",
    "prepost",
    "prepost_raw_account",
    "prepost_ratios_account",
    "prepost_stream_account",
    "textbook",
    "textbook_figures",
    "warmup",
]


def _ratio(halves: pd.DataFrame, view: str) -> float:
    return float(halves.set_index("view").loc[view, "ratio"])


def four_views(halves: Sequence[pd.DataFrame], seeds: Sequence[int]) -> Headline:
    """Four views: whether BatchNorm brings sample 0's two halves together (within a
    factor of 1.5, the outcome :func:`resviz.norms.words.bn_halves_seeds` words), in
    every seed, beside what the per-token norms leave of their ratio; the raw ratio and
    BatchNorm's as the figures."""
    bn = [_ratio(h, "BatchNorm") for h in halves]
    outcomes = ["alike" if 1 / 1.5 <= r <= 1.5 else "differ" for r in bn]
    says = {
        "alike": "BatchNorm brings sample 0's two halves within a factor of 1.5",
        "differ": "BatchNorm leaves sample 0's two halves more than 1.5 times apart",
    }
    short = {"alike": "within 1.5", "differ": "further apart"}
    line = seeds_headline(outcomes, says, seeds, "BatchNorm", short)
    rms, ln = (span([_ratio(h, v) for h in halves]) for v in ("RMSNorm", "LayerNorm"))
    figures = (
        Figure("left half ÷ right half, raw", span([_ratio(h, "raw") for h in halves])),
        Figure("left half ÷ right half, BatchNorm", span(bn)),
    )
    return Headline(
        f"{line[:-1]}; after RMSNorm the ratio is {rms}, after LayerNorm {ln}.", figures
    )


def textbook(
    measured: Sequence[float],
    fit: Sequence[float],
    seeds: Sequence[int],
    figures: tuple[Figure, ...] = (),
) -> Headline:
    """Textbook: whether the hand-written LayerNorm differs from torch's by more than 10
    times the formulas' misfit (:func:`resviz.norms.words.textbook_seeds`)."""
    outcomes = ["differ" if m > 10 * f else "close" for m, f in zip(measured, fit, strict=True)]
    says = {}
    for o in set(outcomes):
        gap = span([m for m, x in zip(measured, outcomes, strict=True) if x == o])
        says[o] = (
            f"the largest gap between the two LayerNorms is {gap}, as the formulas predict: "
            "not the same function"
            if o == "differ"
            else f"the two LayerNorms differ by at most {gap}, too little to tell them apart"
        )
    short = {"differ": "they differ", "close": "too close to tell"}
    return Headline(seeds_headline(outcomes, says, seeds, "the gap", short), figures)


def textbook_figures(r: Result) -> tuple[Figure, ...]:
    """The Textbook headline's figures, each its range over the seeds of ``textbook``."""
    runs = r.per_seed
    return (
        Figure("measured max |textbook - torch|", span([x.measured_max for x in runs], 4)),
        Figure("predicted by the formulas", span([x.predicted_max for x in runs], 4)),
        Figure("first order: max|y| (1 - sqrt((n-1)/n))", span([x.approx_max for x in runs], 4)),
    )


def invariances(
    tables: Sequence[pd.DataFrame], norms: Sequence[str], seeds: Sequence[int]
) -> Headline:
    """Invariances: in how many of the rows each norm counts as invariant, in every seed
    (the rows :func:`resviz.norms.words.invariance_seeds` names)."""
    n = int((tables[0]["norm"] == norms[0]).sum())
    counts = [[int(t.loc[t["norm"] == m, "invariant"].sum()) for m in norms] for t in tables]
    outcomes = [", ".join(f"{m} {k}" for m, k in zip(norms, c, strict=True)) for c in counts]
    says = {}
    for o, c in zip(outcomes, counts, strict=True):
        rest = ", ".join(f"{m} in {k}" for m, k in zip(norms[1:], c[1:], strict=True))
        says[o] = f"{norms[0]} is invariant in {c[0]} of the {n} rows" + (
            f", {rest}" if rest else ""
        )
    short = {o: f"({o})" for o in outcomes}
    return Headline(seeds_headline(outcomes, says, seeds, "the counts of invariant rows", short))


def batch(summary: pd.DataFrame, seeds: Sequence[int]) -> Headline:
    """Batch dependence: whether other batch-mates move the token's BatchNorm output
    more in training mode than in eval mode, in every seed; the largest change in each
    mode (scenarios that cannot be normalized left out) as the figures."""
    per = summary if SEED in summary.columns else summary.assign(seed=seeds[0])
    others = per[per["scenario"] != "original batch"]
    top: dict[str, list[float]] = {"train": [], "eval": []}
    outcomes = []
    for s in seeds:
        mine = others[others[SEED] == s]
        got = {}
        for mode in top:
            v = mine.loc[mine["mode"] == mode, "max_abs_change"].astype(float)
            v = v[v.map(math.isfinite)]
            got[mode] = float(v.max()) if len(v) else math.nan
            top[mode].append(got[mode])
        a, b = got["train"], got["eval"]
        if math.isnan(a) or math.isnan(b):
            outcomes.append("nan")
        else:
            outcomes.append("train" if a > b else "eval" if b > a else "level")
    says = {
        "train": "the batch-mates move the token's output more in training mode than in eval mode",
        "eval": "the batch-mates move the token's output more in eval mode than in training mode",
        "level": "the batch-mates move the token's output as much in both modes",
        "nan": "a mode has no batch that can be normalized",
    }
    short = {"train": "training mode", "eval": "eval mode", "level": "level", "nan": "no batch"}
    line = seeds_headline(outcomes, says, seeds, "which mode moves more", short)
    figures = tuple(Figure(f"largest change, {mode} mode", span(v)) for mode, v in top.items() if v)
    return Headline(line, figures)


def prepost(streams: Sequence[pd.DataFrame], seeds: Sequence[int], layers: int) -> Headline:
    """Pre-LN vs Post-LN: how Pre-LN's ||x_l||²/d changes from the input to the last
    layer, in every seed (the outcomes :func:`resviz.norms.words.stream_seeds` words),
    beside Post-LN's; both after the last layer as the figures."""
    ends, ratios, outcomes = stream_outcomes(streams)  # as the account under it decides
    post = []
    for stream in streams:
        p = stream[stream["variant"] == "Post-LN"].sort_values("block")["sq_norm_per_dim"]
        post.append(float(p.iloc[-1]))
    over = f"over {layers} layer{'s' if layers != 1 else ''}"

    def times(o: str) -> str:
        qs = [q if o == "grows" else 1 / q for q, x in zip(ratios, outcomes, strict=True) if x == o]
        qs = [q for q in qs if math.isfinite(q) and q > 0]
        return f" {span(qs, 2)} times" if qs else ""

    says = {
        "grows": f"Pre-LN's ||x_l||²/d grows{times('grows')} {over}",
        "falls": f"Pre-LN's ||x_l||²/d falls{times('falls')} {over}",
        "level": f"Pre-LN's ||x_l||²/d ends within a factor of {GROWTH:g} of its start {over}",
        "not finite": f"Pre-LN's ||x_l||²/d is not finite at an end {over}",
    }
    short = {"grows": "grows", "falls": "falls", "level": "level", "not finite": "not finite"}
    line = seeds_headline(outcomes, says, seeds, "Pre-LN's stream", short)
    frame = pd.concat(list(streams))
    line = f"{line[:-1]}; Post-LN's {post_ln_words(frame)}."
    figures = (
        Figure(f"||x_L||²/d after layer {layers}, Pre-LN", span([b for _, b in ends])),
        Figure(f"||x_L||²/d after layer {layers}, Post-LN", span(post)),
    )
    return Headline(line, figures)


PREPOST_INTRO = (
    "An encoder with real attention and ReLU FFN sublayers (4 heads, FFN 4d) at init. "
    "**Input scale, on purpose:** token embeddings plus sinusoidal positions of random "
    "tokens, standardized to mean 0 and variance 1 per feature, so E||x₀||² = d as in "
    "Xiong et al.'s analysis."
)


# The section's accounts (its charts' folded text), worded beside its headline.
def prepost_raw_account(r: Result, layers: int) -> str:
    """The un-standardized input's ||x₀||²/d and how Pre-LN's stream grows from it."""
    runs = r.per_seed
    q = "variant == 'Pre-LN' and block == 0"
    raw0 = [float(x.raw_stream.query(q)["sq_norm_per_dim"].iloc[0]) for x in runs]
    return (
        "Without that standardization (the raw N(0, 1) embedding plus positions, about "
        f"1 + 1/2 per feature) the input's ||x₀||²/d is {span(raw0)} for this model "
        f"({seeds_words(r.seeds)}). "
        + stream_seeds(
            [x.raw_stream for x in runs],
            r.seeds,
            f"under PyTorch's default init the Pre-LN stream's ||x_l||²/d over {layers} layer(s)",
        )
    )


def prepost_stream_account(r: Result) -> str:
    """Post-LN's level stream against Pre-LN's growing one (Xiong et al., Lemma 1)."""
    return (
        "Post-LN ends every layer with a LayerNorm, so its ||x_l||²/d is 1 up to eps: "
        f"measured, in every seed it {post_ln_words(r.stream)}. In Pre-LN each sublayer adds "
        "its output to an un-normalized stream, and Xiong et al. (Lemma 1) show that its "
        "expected ||x_l||² grows linearly with l. "
        + stream_seeds([x.stream for x in r.per_seed], r.seeds, "Pre-LN's ||x_l||²/d")
        + " "
        + band_words(r.seeds)
    )


def prepost_ratios_account(r: Result) -> str:
    """The last layer's gradient against depth, and why Pre-LN's shrinks."""
    return (
        "Gradient norm of the last layer's second FFN weight (batch 4), divided by its value "
        "at the shallowest depth, per seed. "
        + deepest_ratios_seeds([x.grads for x in r.per_seed], r.seeds)
        + " Xiong et al.: Pre-LN's final LayerNorm divides by ||x_L||, which grows like "
        "sqrt(L), so its last-layer gradient shrinks like 1/sqrt(L) once that growth dominates "
        "the input, while Post-LN's does not shrink with L; hence Pre-LN can take a large "
        "learning rate from step 0. " + band_words(r.seeds)
    )


_SHORT = {
    "without": "lower without",
    "with": "lower with",
    "level": "level",
    "nonfinite": "not finite",
    "without diverged": "diverges without",
    "with diverged": "diverges with",
    "both diverged": "diverges both ways",
}
_WARMUP = {
    "without": "ends lower without warm-up",
    "with": "ends lower with warm-up",
    "level": "ends level with and without warm-up",
    "nonfinite": "has a loss that is not finite",
    "without diverged": "diverges without warm-up only",
    "with diverged": "diverges with warm-up only",
    "both diverged": "diverges with and without warm-up",
}


def _warmup_says(place: str, o: str) -> tuple[str, str]:
    """One placement's outcome (:func:`resviz.norms.training_words._warmup_outcome`'s
    key) in the headline's words, long and short."""
    key = o.removesuffix(" so far").removesuffix(" ends")
    long = f"{place} {_WARMUP[key]}"
    if o.endswith(" so far"):
        long = long.replace(" ends ", " is ", 1) + " so far"
    return long, f"{place} {_SHORT[key]}"


def warmup(history: pd.DataFrame, w_warm: int) -> Headline | None:
    """Warm-up: per placement, whether the run with warm-up ends lower than the one
    without, or which diverged (the outcomes :func:`resviz.norms.training_words.warmup_seeds`
    words), in every seed the frame holds both runs of; None before any seed has."""
    frame = history if SEED in history.columns else history.assign(seed=0)
    w = int(w_warm)
    outcomes, seeds, says, short = [], [], {}, {}
    for seed, g in frame.groupby(SEED, sort=True):
        got = []
        for place in ("Post-LN", "Pre-LN"):
            a, b = (
                g[g["variant"] == n].sort_values("step")
                for n in (f"{place}, no warm-up", f"{place}, warm-up {w}")
            )
            if len(a) and len(b):
                got.append(_warmup_says(place, _warmup_outcome(a, b)[0]))
        if got:
            o = " and ".join(x for x, _ in got)
            outcomes.append(o)
            says[o], short[o] = o, ", ".join(y for _, y in got)
            seeds.append(int(seed))
    if not outcomes:
        return None
    return Headline(seeds_headline(outcomes, says, seeds, "warm-up", short))


def cost(timing: pd.DataFrame, device: str) -> Headline:
    """Cost: RMSNorm's median time as a multiple of LayerNorm's, per pass (one timing,
    no seeds), as the figures."""
    ratios = {}
    for direction, g in timing.groupby("pass", sort=False):
        t = g.set_index("norm")["median_ms"].astype(float)
        lay = float(t["LayerNorm"])
        ratios[str(direction)] = float(t["RMSNorm"]) / lay if lay > 0 else math.nan

    def q_words(q: float) -> str:  # a LayerNorm time of 0 divides nothing
        return format_number(q) if math.isfinite(q) else "not timed (LayerNorm at 0 ms)"

    said = [
        f"{format_number(q)} times {d}" if math.isfinite(q) else f"an untimed multiple {d}"
        for d, q in ratios.items()
    ]
    if said:
        said[0] = said[0].replace(" times ", " times LayerNorm's time ", 1)
    line = f"Timed on {device} just now, RMSNorm takes " + " and ".join(said) + "."
    figures = tuple(Figure(f"RMSNorm ÷ LayerNorm, {d}", q_words(q)) for d, q in ratios.items())
    return Headline(line, figures)


def _stability_says(o: str, both: bool) -> tuple[str, str]:
    """One seed's Stability outcome (:func:`resviz.norms.training_words._stability_outcome`'s
    key) in the headline's words, long and short; ``both``: runs with and without a norm."""
    k = format_number(GRAD_PART)
    if o.startswith("diverged: "):
        names = o.removeprefix("diverged: ").split("|")
        hit = "only " + ", ".join(f'"{n}"' for n in names)
        hit += " diverges" if len(names) == 1 else " diverge"
        return hit, hit
    said = {
        "without diverged": ("the stacks without a norm diverge and those with one do not",
                             "only those without a norm diverge"),
        "all diverged": ("every stack diverges", "all diverge"),
        "larger without": (f"no stack diverges, and those without a norm draw gradients {k} "
                           "or more times larger", "larger gradients without a norm"),
        "larger with": (f"no stack diverges, and those with a norm draw gradients {k} or more "
                        "times larger", "larger gradients with a norm"),
        "alike": (f"no stack diverges, and their largest gradients are under {k} times apart"
                  if both else "no stack diverges", "none diverges, gradients alike"),
    }  # fmt: skip
    return said[o]


def stability(history: pd.DataFrame, no_norm: Sequence[str]) -> Headline | None:
    """Stability: whether exactly the stacks without a norm diverge (or all, or
    some), else whose gradients are the larger (the outcomes
    :func:`resviz.norms.training_words.stability_finding` words); None before a seed ran."""
    frame = history if SEED in history.columns else history.assign(seed=0)
    outcomes, seeds, says, short = [], [], {}, {}
    for seed, g in frame.groupby(SEED, sort=True):
        o = _stability_outcome(g, no_norm)[0]
        names = set(g["variant"])
        says[o], short[o] = _stability_says(
            o, bool(names & set(no_norm)) and bool(names - set(no_norm))
        )
        outcomes.append(o)
        seeds.append(int(seed))
    if not outcomes:
        return None
    return Headline(seeds_headline(outcomes, says, seeds, "which stacks diverge", short))
