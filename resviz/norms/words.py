"""Sentences of the normalization page, worded from its recipes' frames.

Each function takes what a recipe of ``resviz.norms.recipes`` returned and says
what it shows, for every setting the page allows. A result over several seeds
(``seeds=N``) is worded from every seed: a number is quoted as its range over the
seeds (``"11.4–12.2"``), and a direction (grows or not, which run ends lower,
which rows are invariant) is stated with how many seeds show it, or as a split
when they disagree (:func:`resviz.words.seeds.seeds_sentence`). Functions named
``..._seeds`` take one frame per seed and the seeds; the others take a frame
whose rows may hold several seeds (a ``seed`` column). Numbers go through
:func:`format_number`, which never prints 0 for a value that is not 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from resviz.words.numbers import format_number, ratio_words
from resviz.words.seeds import log_span, seeds_sentence, span

SEED = "seed"


# ------------------------------------------------------------------------ four views
def halves_words(halves: Sequence[pd.DataFrame], view: str) -> str:
    """The first half's mean |value| as a multiple of the second's in ``view`` (rows
    of ``four_views``'s ``halves``, one frame per seed): ``"9.6 times"`` or, over
    seeds, ``"9.1–9.8 times"``."""
    words = []
    ratios = []
    for h in halves:
        row = h.set_index("view").loc[view]
        a, b = float(row["first_half"]), float(row["second_half"])
        words.append(ratio_words(a, b))
        ratios.append(a / b if b else math.inf)
    if len(set(words)) == 1:
        return words[0]
    if all(w.endswith(" times") for w in words) and all(0 < r < math.inf for r in ratios):
        return f"{span(ratios)} times"
    return "; ".join(f"seed {k}: {w}" for k, w in enumerate(words))


def bn_halves_seeds(halves: Sequence[pd.DataFrame], seeds: Sequence[int]) -> str:
    """Whether BatchNorm leaves the halves of sample 0 alike (within a factor of 1.5),
    seed by seed: a sentence with how many seeds say so."""
    ratios = [float(h.set_index("view").loc["BatchNorm", "ratio"]) for h in halves]
    outcomes = ["nan" if r != r else "alike" if 1 / 1.5 <= r <= 1.5 else "differ" for r in ratios]

    def of(o: str) -> str:
        return span([r for r, x in zip(ratios, outcomes, strict=True) if x == o])

    says = {
        "alike": "the halves of sample 0 come out alike (within a factor of 1.5): "
        f"{of('alike') if 'alike' in outcomes else ''} times",
        "differ": f"the halves of sample 0 still differ: {of('differ') if 'differ' in outcomes else ''} "
        "times (each feature's std is 1 over the whole batch, not over sample 0 alone)",
        "nan": "the ratio of the halves of sample 0 is not a number",
    }
    return seeds_sentence(outcomes, says, seeds)


def abs_max_words(stats: pd.DataFrame) -> str:
    """The largest |value| after each norm (``stats``: a view per row and seed,
    ``abs_max``), as its range over the seeds."""
    return ", ".join(
        f"{v} {span(stats.loc[stats['view'] == v, 'abs_max'])}"
        for v in ("LayerNorm", "BatchNorm", "RMSNorm")
    )


# ------------------------------------------------------------------- textbook
def textbook_seeds(measured: Sequence[float], fit: Sequence[float], seeds: Sequence[int]) -> str:
    """Whether the hand-written LayerNorm differs from torch's by more than the
    formulas' misfit (10 times over), seed by seed: each seed's largest measured gap
    ``measured`` and largest |measured - predicted| ``fit``."""
    outcomes = [
        "nan" if m != m or f != f else "differ" if m > 10 * f else "close"
        for m, f in zip(measured, fit, strict=True)
    ]
    says = {
        "differ": "the gap is more than 10 times the formulas' misfit: the two LayerNorms "
        "are not the same function",
        "close": "the gap is within 10 times the formulas' misfit, too small here to tell "
        "the two LayerNorms apart",
        "nan": "the gap or the misfit is not a number, so the two cannot be compared",
    }
    return seeds_sentence(outcomes, says, seeds)


# ------------------------------------------------------------------------ invariances
def invariant_rows(table: pd.DataFrame, norm: str) -> str:
    """The rows of one seed's invariance table where ``norm`` counts as invariant, or
    the rows where it does not, whichever list is shorter."""
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


def invariance_seeds(
    tables: Sequence[pd.DataFrame], norms: Sequence[str], seeds: Sequence[int]
) -> str:
    """Where each norm counts as invariant, from each seed's table: one sentence when
    every seed gives the same rows for every norm, else a sentence per norm with how
    many seeds give which rows."""
    rows = {n: [invariant_rows(t, n) for t in tables] for n in norms}
    if all(len(set(v)) == 1 for v in rows.values()):
        said = "that holds for " + "; ".join(f"{n}: {v[0]}" for n, v in rows.items())
        return seeds_sentence(["same"] * len(tables), {"same": said}, seeds)
    return " ".join(
        seeds_sentence(v, {o: f"it holds for {n} in {o}" for o in v}, seeds)
        for n, v in rows.items()
    )


# ------------------------------------------------------------------ batch dependence
def batch_change_words(summary: pd.DataFrame, mode: str) -> str:
    """The largest change of the token's output per scenario, in ``mode``, as its
    range over the seeds the frame holds."""
    s = summary
    others = s[(s["scenario"] != "original batch") & (s["mode"] == mode)]
    parts = []
    for scenario, g in others.groupby("scenario", sort=False):
        v = g["max_abs_change"].astype(float)
        finite = v[v.map(math.isfinite)]
        if not len(finite):
            parts.append(f"{scenario}: cannot be normalized")
        else:
            parts.append(f"{scenario}: {span(finite)}")
    return "; ".join(parts)


# ------------------------------------------------------------------ Pre-LN vs Post-LN
def post_ln_words(stream: pd.DataFrame) -> str:
    """Post-LN's ||x_l||²/d after its layers (block 1 on), as measured (every seed
    the frame holds)."""
    post = stream[(stream["variant"] == "Post-LN") & (stream["block"] > 0)]
    lo, hi = float(post["sq_norm_per_dim"].min()), float(post["sq_norm_per_dim"].max())
    if format_number(lo, 4) == format_number(hi, 4):
        return f"is {format_number(lo, 4)} after every layer"
    return f"lies between {format_number(lo, 4)} and {format_number(hi, 4)} after its layers"


GROWTH = 1.25  # a stream whose last value is within this factor of its first is level


def stream_seeds(streams: Sequence[pd.DataFrame], seeds: Sequence[int], subject: str) -> str:
    """How ``subject`` (the Pre-LN stream's ||x_l||²/d) changes from the input to the
    last layer, seed by seed: grows (more than 1.25 times), falls (below 1/1.25) or
    ends level; the factor and end points quoted over the seeds that show it."""
    ends = []
    for stream in streams:
        pre = stream[stream["variant"] == "Pre-LN"].sort_values("block")["sq_norm_per_dim"]
        ends.append((float(pre.iloc[0]), float(pre.iloc[-1])))
    # end over start; 0 to 0 is level, from an exact 0 up is inf; a NaN or Inf end: NaN
    ratios = [
        math.nan if not math.isfinite(a + b) else b / a if a > 0 else 1.0 if b == 0 else math.inf
        for a, b in ends
    ]
    outcomes = [
        "not finite"
        if q != q
        else "grows"
        if q > GROWTH
        else "falls"
        if q < 1 / GROWTH
        else "level"
        for q in ratios
    ]

    def said(o: str) -> str:
        mine = [(e, q) for e, q, x in zip(ends, ratios, outcomes, strict=True) if x == o]
        if not mine:
            return ""
        first = span([e[0] for e, _ in mine])
        last = span([e[1] for e, _ in mine])
        if o in ("grows", "falls"):
            return f"{subject} {o}{_by_factor([e for e, _ in mine], o == 'grows')} from {first} to {last}"
        if o == "not finite":
            return f"{subject} is not finite at an end (from {first} to {last})"
        return (
            f"{subject} ends within a factor of {GROWTH:g} of where it starts (from {first} "
            f"to {last})"
        )

    return seeds_sentence(outcomes, {o: said(o) for o in set(outcomes)}, seeds)


def _by_factor(ends: Sequence[tuple[float, float]], up: bool) -> str:
    """``" by a factor of 2.3–9.8,"``: end over start (``up``) or start over end for
    (start, end) pairs; a pair with an exact 0 has no factor (``" by a factor of 3 where
    it ends above 0,"``; none: ``""``), and one beyond float64's range is worded from logs."""
    pairs = [(a, b) if up else (b, a) for a, b in ends if a > 0 and b > 0]
    if not pairs:
        return ""
    raw = [b / a for a, b in pairs]
    ok = all(0 < x < math.inf for x in raw)
    nums = span(raw, 2) if ok else log_span([math.log10(b) - math.log10(a) for a, b in pairs], 2)
    where = "" if len(pairs) == len(ends) else f" where it {'starts' if up else 'ends'} above 0"
    return f" by a factor of {nums}{where},"


def deepest_ratios_seeds(grads: Sequence[pd.DataFrame], seeds: Sequence[int]) -> str:
    """Each variant's gradient ratio at the deepest L (its range over the seeds),
    beside sqrt(L_min / L), and in how many seeds Pre-LN's is the smaller."""
    g0 = grads[0]
    lo, hi = int(g0["n_layers"].min()), int(g0["n_layers"].max())
    if lo == hi:
        return f"Only L = {lo} is measured at this setting, so every ratio is 1."
    at = [g[g["n_layers"] == hi].set_index("variant")["ratio_to_L1"] for g in grads]
    post, pre = [float(a["Post-LN"]) for a in at], [float(a["Pre-LN"]) for a in at]
    outcomes = [
        "nan"
        if a != a or b != b
        else "level"
        if format_number(a) == format_number(b)
        else "pre"
        if b < a
        else "post"
        for a, b in zip(post, pre, strict=True)
    ]
    says = {
        "pre": f"Pre-LN's is the smaller at L = {hi}",
        "post": f"Post-LN's is the smaller at L = {hi}",
        "level": f"the two are level at L = {hi}",
        "nan": f"the two cannot be compared at L = {hi}: a ratio is not a number",
    }
    return (
        f"At L = {hi} it is {span(post)} for Post-LN and {span(pre)} for Pre-LN; "
        f"sqrt({lo}/{hi}) = {format_number(math.sqrt(lo / hi))}. "
        + seeds_sentence(outcomes, says, seeds)
    )


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
    "bn_halves_seeds",
    "cost_words",
    "deepest_ratios_seeds",
    "halves_words",
    "invariance_seeds",
    "invariant_rows",
    "post_ln_words",
    "stream_seeds",
    "textbook_seeds",
]
