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

from resviz.core import Result
from resviz.norms.settings import Inputs
from resviz.words.numbers import format_number, ratio_words
from resviz.words.seeds import band_words, log_span, seeds_label, seeds_sentence, span

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


def stream_outcomes(
    streams: Sequence[pd.DataFrame],
) -> tuple[list[tuple[float, float]], list[float], list[str]]:
    """Pre-LN's ||x_l||²/d per seed, decided once for the headline and the account: the
    (input, last layer) values, their ratio (0 to 0: 1; from 0 up: inf; a NaN or Inf end:
    NaN), the outcome (grows past 1.25 times, falls below 1/1.25, level, not finite)."""
    ends = []
    for stream in streams:
        pre = stream[stream["variant"] == "Pre-LN"].sort_values("block")["sq_norm_per_dim"]
        ends.append((float(pre.iloc[0]), float(pre.iloc[-1])))
    ratios = [
        math.nan if not math.isfinite(a + b) else b / a if a > 0 else 1.0 if b == 0 else math.inf
        for a, b in ends
    ]
    out = ["grows" if q > GROWTH else "falls" if q < 1 / GROWTH else "level" for q in ratios]
    return ends, ratios, ["not finite" if q != q else o for q, o in zip(ratios, out, strict=True)]


def stream_seeds(streams: Sequence[pd.DataFrame], seeds: Sequence[int], subject: str) -> str:
    """How ``subject`` (Pre-LN's ||x_l||²/d) changes over the layers, seed by seed
    (:func:`stream_outcomes`), with the factor and end points of the seeds that show it."""
    ends, ratios, outcomes = stream_outcomes(streams)

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


# ---------------------------------------------------------------- whole accounts
def seeds_words(seeds: Sequence[int]) -> str:
    """What a quoted range is: ``"seed 0"`` or ``"lowest to highest over seeds 0-2"``."""
    if len(seeds) <= 1:
        return f"seed {seeds[0]}"
    return f"lowest to highest over {seeds_label(seeds)}"


def four_views_intro(inputs: Inputs, first: int) -> str:
    """The batch the first three sections normalize, and the seed its heatmaps show."""
    (batch, tokens, d), (big, small) = inputs.sizes(), inputs.scales()
    return (
        f"Gaussian input of {batch} samples x {tokens} tokens x {d} features; features 0 to "
        f"{d // 2 - 1} multiplied by {big:g}, the rest by {small:g}. The heatmaps show sample "
        f"0 of seed {first}'s batch (rows: tokens, columns: features), each with its own "
        "colour scale."
    )


def four_views_account(halves: Sequence[pd.DataFrame], seeds: Sequence[int]) -> str:
    """The halves' ratio in sample 0 under each view, and whether BatchNorm evens it."""
    return (
        "Mean |value| of the left half of the features as a multiple of the right half's, in "
        f"sample 0 ({seeds_words(seeds)}): raw {halves_words(halves, 'raw')}. RMSNorm divides "
        "each row (token) by one positive number, which keeps the halves' ratio inside every "
        f"row; over the sample's rows: {halves_words(halves, 'RMSNorm')}. LayerNorm first "
        "subtracts the row's mean, which moves every feature of the row by the same amount: "
        f"{halves_words(halves, 'LayerNorm')}. BatchNorm rescales each column (feature) to std "
        "1 over the batch and its tokens. " + bn_halves_seeds(halves, seeds)
    )


def histograms_account(stats: pd.DataFrame, inputs: Inputs, seeds: Sequence[int]) -> str:
    """What the histograms of the first seed's values show, with each norm's largest
    |value| over the seeds."""
    big, small = inputs.scales()
    scales = (
        f"Raw values mix two scales, x{big:g} and x{small:g}. "
        if big != small
        else f"Raw values share one scale, x{big:g}. "
    )
    return (
        f"All values of seed {seeds[0]}'s batch. {scales}Each norm sets a mean square of 1 (up "
        "to eps): LayerNorm and RMSNorm per token, BatchNorm per feature. The largest |value| "
        f"after each ({seeds_words(seeds)}): {abs_max_words(stats)}."
    )


STATS_CAPTION = (
    "Per token: mean and std over its features; per feature: over the batch and tokens "
    "(population std); abs_max: the largest |value|. LayerNorm sets every token's mean to 0 "
    "and std to 1, BatchNorm every feature's, RMSNorm every token's root mean square to 1 (its "
    "mean is not set to 0); all up to eps. A row per view and seed."
)


def textbook_account(r: Result) -> str:
    """Why the textbook LayerNorm differs from torch's, and by how much (``textbook``)."""
    runs = r.per_seed
    measured, fit = [x.measured_max for x in runs], [x.fit for x in runs]
    return (
        f"The hand-written version divides by the unbiased std (n - 1 = {r.n - 1}), so its "
        f"outputs are smaller by the factor sqrt((n-1)/n) = {r.factor:.5f}, apart from eps: "
        "1e-6 added to the std there, 1e-5 to the variance in torch, which change a token's "
        "outputs by relative amounts of at most 1e-6/s and 1e-5/(2σ²). For the smallest token "
        f"std here, σ = {format_number(min(x.sigma_min for x in runs))}, that is at most "
        f"{format_number(max(x.eps_bound for x in runs))}. The measured and predicted curves "
        f"differ by at most {format_number(max(fit))}, against a gap of up to "
        f"{format_number(max(measured))}. "
        + textbook_seeds(measured, fit, r.seeds)
        + " "
        + band_words(r.seeds)
    )


def invariances_account(
    tables: Sequence[pd.DataFrame], norms: Sequence[str], seeds: Sequence[int]
) -> str:
    """What the invariance table measures and which rows are invariant, per norm."""
    return (
        "max |output change| of each norm, on h = x W^T (x the batch above, W a random d x d "
        "matrix), in float64, a row per seed. Below 1e-4 counts as invariant. "
        + invariance_seeds(tables, norms, seeds)
        + " In exact arithmetic LayerNorm ignores a shift or a scale of a token (so also a "
        "re-scaled or re-centred W) and RMSNorm a scale; eps under the square root makes the "
        "scale invariance approximate. BatchNorm in training mode normalizes each feature over "
        "the batch and its tokens, so sample 0's output depends on the other samples; in eval "
        "mode it is a fixed affine map of each token."
    )


def batch_account(r: Result) -> str:
    """How much the same token's BatchNorm output moves with its batch-mates."""
    return (
        "The same token, normalized with different batch-mates (batch "
        f"{r.batch_size} x {r.seq_len} tokens x {r.d_model} features, halves x{r.big:g} / "
        f"x{r.small:g}; the charts show seed {r.seeds[0]}, the table a row per scenario, mode "
        "and seed). Largest change of its output in training mode "
        f"({seeds_words(r.seeds)}): {batch_change_words(r.summary, 'train')}. In eval mode, "
        f"with the running statistics of the original batch: "
        f"{batch_change_words(r.summary, 'eval')}."
    )


def cost_account(timing: pd.DataFrame, device: str) -> str:
    """How the timing was measured and RMSNorm's time as a multiple of LayerNorm's."""
    return (
        f"Measured on {device} just now: {int(timing['repeats'].iloc[0])} timed calls after "
        "one warm-up, median (min and max in the CSV). RMSNorm skips the mean, so it does "
        "less arithmetic; whether that makes it faster depends on the kernels PyTorch has for "
        f"this device. Here RMSNorm took {cost_words(timing)}. One timing: the sidebar's Seeds "
        "does not apply here, because the seed draws only the input's values, which do not "
        "change the work either norm does; what varies between two timings is the machine "
        "(the CSV's min and max over the calls show it)."
    )


__all__ = [
    "STATS_CAPTION",
    "abs_max_words",
    "batch_account",
    "batch_change_words",
    "bn_halves_seeds",
    "cost_account",
    "cost_words",
    "deepest_ratios_seeds",
    "four_views_account",
    "four_views_intro",
    "halves_words",
    "histograms_account",
    "invariance_seeds",
    "invariances_account",
    "invariant_rows",
    "post_ln_words",
    "seeds_words",
    "stream_seeds",
    "textbook_account",
    "textbook_seeds",
]
