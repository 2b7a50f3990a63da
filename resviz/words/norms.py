"""Sentences of the normalization page, worded from its recipes' frames.

Each function takes what a recipe of ``resviz.recipes.norms`` returned and says
what it shows, for every setting the page allows. A result over several seeds
(``seeds=N``) is worded from every seed: a number is quoted as its range over the
seeds (``"11.4-12.2"``), and a direction (grows or not, which run ends lower,
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

from resviz.words.numbers import format_number, lower_words, ratio_words
from resviz.words.seeds import seeds_label, seeds_sentence

SEED = "seed"


def span(values: Sequence[float], digits: int = 3) -> str:
    """The values' range as the page prints it: ``"0.5"`` when every value reads
    the same at ``digits`` significant figures, else ``"0.41-0.52"`` (lowest to
    highest; ``"-0.5 to 0.2"`` where a value is negative; NaN and Inf left out of
    the range and named after it)."""
    vals = [float(v) for v in values]
    if not vals:
        raise ValueError("no values")
    finite = [v for v in vals if math.isfinite(v)]
    odd = sorted({format_number(v) for v in vals if not math.isfinite(v)})
    if not finite:
        return " or ".join(odd)
    lo, hi = format_number(min(finite), digits), format_number(max(finite), digits)
    sep = "-" if min(finite) >= 0 else " to "
    out = lo if lo == hi else f"{lo}{sep}{hi}"
    return out + (f" (and {', '.join(odd)})" if odd else "")


def _per_seed(frame: pd.DataFrame) -> list[pd.DataFrame]:
    """A frame's rows per seed (the whole frame when it has no ``seed`` column)."""
    if SEED not in frame.columns:
        return [frame]
    return [g.drop(columns=SEED) for _, g in frame.groupby(SEED, sort=True)]


# ------------------------------------------------------------------------ four views
def halves_words(halves: Sequence[pd.DataFrame], view: str) -> str:
    """The first half's mean |value| as a multiple of the second's in ``view`` (rows
    of ``four_views``'s ``halves``, one frame per seed): ``"9.6 times"`` or, over
    seeds, ``"9.1-9.8 times"``."""
    words = []
    ratios = []
    for h in halves:
        row = h.set_index("view").loc[view]
        a, b = float(row["first_half"]), float(row["second_half"])
        words.append(ratio_words(a, b))
        ratios.append(a / b if b else math.inf)
    if len(set(words)) == 1:
        return words[0]
    if all(w.endswith(" times") for w in words):
        return f"{span(ratios)} times"
    return "; ".join(f"seed {k}: {w}" for k, w in enumerate(words))


def bn_halves_seeds(halves: Sequence[pd.DataFrame], seeds: Sequence[int]) -> str:
    """Whether BatchNorm leaves the halves of sample 0 alike (within a factor of 1.5),
    seed by seed: a sentence with how many seeds say so."""
    ratios = [float(h.set_index("view").loc["BatchNorm", "ratio"]) for h in halves]
    outcomes = ["alike" if 1 / 1.5 <= r <= 1.5 else "differ" for r in ratios]

    def of(o: str) -> str:
        return span([r for r, x in zip(ratios, outcomes, strict=True) if x == o])

    says = {
        "alike": "the halves of sample 0 come out alike (within a factor of 1.5): "
        f"{of('alike') if 'alike' in outcomes else ''} times",
        "differ": f"the halves of sample 0 still differ: {of('differ') if 'differ' in outcomes else ''} "
        "times (each feature's std is 1 over the whole batch, not over sample 0 alone)",
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
    outcomes = ["differ" if m > 10 * f else "close" for m, f in zip(measured, fit, strict=True)]
    says = {
        "differ": "the gap is more than 10 times the formulas' misfit: the two LayerNorms "
        "are not the same function",
        "close": "the gap is within 10 times the formulas' misfit, too small here to tell "
        "the two LayerNorms apart",
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
    ratios = [b / a if a > 0 else math.inf for a, b in ends]
    outcomes = ["grows" if q > GROWTH else "falls" if q < 1 / GROWTH else "level" for q in ratios]

    def said(o: str) -> str:
        mine = [(e, q) for e, q, x in zip(ends, ratios, outcomes, strict=True) if x == o]
        if not mine:
            return ""
        first = span([e[0] for e, _ in mine])
        last = span([e[1] for e, _ in mine])
        q = [x for _, x in mine]
        if o == "grows":
            return f"{subject} grows by a factor of {span(q, 2)}, from {first} to {last}"
        if o == "falls":
            return f"{subject} falls by a factor of {span([1 / x for x in q], 2)}, from {first} to {last}"
        return (
            f"{subject} ends within a factor of {GROWTH:g} of where it starts (from {first} "
            f"to {last})"
        )

    return seeds_sentence(outcomes, {o: said(o) for o in set(outcomes)}, seeds)


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
        "level" if format_number(a) == format_number(b) else "pre" if b < a else "post"
        for a, b in zip(post, pre, strict=True)
    ]
    says = {
        "pre": f"Pre-LN's is the smaller at L = {hi}",
        "post": f"Post-LN's is the smaller at L = {hi}",
        "level": f"the two are level at L = {hi}",
    }
    return (
        f"At L = {hi} it is {span(post)} for Post-LN and {span(pre)} for Pre-LN; "
        f"sqrt({lo}/{hi}) = {format_number(math.sqrt(lo / hi))}. "
        + seeds_sentence(outcomes, says, seeds)
    )


# ------------------------------------------------------------------------- training
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


def _warmup_outcome(a: pd.DataFrame, b: pd.DataFrame) -> tuple[str, dict[str, float]]:
    """One seed's comparison of the runs without (``a``) and with (``b``) warm-up:
    an outcome key and the numbers its sentence quotes."""
    da, db = bool(a["diverged"].any()), bool(b["diverged"].any())
    if da or db:
        key = "both diverged" if da and db else "without diverged" if da else "with diverged"
        nums = {}
        if da:
            nums["step_a"] = int(a.loc[a["diverged"], "step"].iloc[0])
        if db:
            nums["step_b"] = int(b.loc[b["diverged"], "step"].iloc[0])
        return key, nums
    sa, sb = int(a["step"].iloc[-1]), int(b["step"].iloc[-1])
    s = min(sa, sb)
    la = float(a.loc[a["step"] == s, "loss"].iloc[0])
    lb = float(b.loc[b["step"] == s, "loss"].iloc[0])
    when = "ends" if sa == sb else "so far"
    words = lower_words("without", la, "with", lb)
    low = (
        "level"
        if " end level " in words
        else "without"
        if words.startswith("without ends lower")
        else "with"
        if words.startswith("with ends lower")
        else "nonfinite"
    )
    return f"{low} {when}", {"la": la, "lb": lb, "step": s}


def _warmup_sentence(
    place: str, outcomes: list[str], nums: list[dict[str, float]], seeds: list[int]
) -> str:
    """One placement's :func:`warmup_seeds` sentence from each seed's outcome."""

    def of(o: str, k: str) -> list[float]:
        return [x[k] for x, y in zip(nums, outcomes, strict=True) if y == o]

    says = {}
    for o in set(outcomes):
        if o.endswith("diverged"):
            parts = []
            if o in ("without diverged", "both diverged"):
                parts.append(f"{place} without warm-up diverged (at step {span(of(o, 'step_a'))})")
            if o in ("with diverged", "both diverged"):
                parts.append(f"{place} with warm-up diverged (at step {span(of(o, 'step_b'))})")
            if o == "without diverged":
                parts.append("with warm-up did not")
            if o == "with diverged":
                parts.append("without warm-up did not")
            says[o] = ", ".join(parts)
            continue
        low, when = o.split(" ", 1)
        la, lb = span(of(o, "la")), span(of(o, "lb"))
        head = (
            f"{place} "
            if when == "ends"
            else f"at step {span(of(o, 'step'))}, the last both runs have reached, {place} "
        )
        verb = "ends" if when == "ends" else "is"
        if low == "level":
            verb = "end" if when == "ends" else "are"
            says[o] = f"{head}without and with warm-up {verb} level ({la} and {lb})"
        elif low == "nonfinite":
            says[o] = f"{head}has losses that are not both finite ({la} without, {lb} with)"
        else:
            lower = "without warm-up" if low == "without" else "with warm-up"
            says[o] = f"{head}{lower} {verb} lower ({la} without, {lb} with)"
    return seeds_sentence(outcomes, says, seeds)


def warmup_seeds(history: pd.DataFrame, w_warm: int) -> str:
    """Per placement, how the run without warm-up compares with the run with it, in
    every seed the frame holds: which ends lower (their final losses), which
    diverged and at which step, or, for runs still going, which is lower at the
    last step both have reached; with how many seeds show each."""
    w = int(w_warm)
    out = []
    frame = history if SEED in history.columns else history.assign(seed=0)
    for place in ("Post-LN", "Pre-LN"):
        names = (f"{place}, no warm-up", f"{place}, warm-up {w}")
        outcomes, nums, seeds = [], [], []
        for seed, g in frame.groupby(SEED, sort=True):
            a, b = (g[g["variant"] == n].sort_values("step") for n in names)
            if not len(a) or not len(b):
                continue
            o, x = _warmup_outcome(a, b)
            outcomes.append(o)
            nums.append(x)
            seeds.append(int(seed))
        if not outcomes:
            continue
        out.append(_warmup_sentence(place, outcomes, nums, seeds))
    return (" ".join(out) + " ") if out else ""


def start_end_words(history: pd.DataFrame) -> str:
    """Each run's first loss and its mean over its last ten steps (all its steps when
    it ran fewer), from the data; over several seeds, each as its range."""
    frame = history if SEED in history.columns else history.assign(seed=0)
    n_seeds = frame[SEED].nunique()
    parts = []
    for name, run in frame.groupby("variant", sort=False):
        firsts, tails, short = [], [], []
        for seed, g in run.groupby(SEED, sort=True):
            loss = g.sort_values("step")["loss"]
            k = min(10, len(loss))
            firsts.append(float(loss.iloc[0]))
            tails.append(float(loss.tail(k).mean()))
            if k < 10:
                short.append((int(seed), k))
        note = ""
        if short and n_seeds == 1:
            note = f" (mean of its {short[0][1]} steps)"
        elif short and len(short) == n_seeds and len({k for _, k in short}) == 1:
            note = f" (mean of its {short[0][1]} steps in each seed)"
        elif short:
            note = " (" + ", ".join(f"seed {s}: mean of its {k} steps" for s, k in short) + ")"
        parts.append(f"{name} {span(firsts)} to {span(tails)}{note}")
    return "Loss at the first step, then its mean over the last 10 steps: " + "; ".join(parts) + "."


def divergence_words(history: pd.DataFrame) -> str:
    """Which runs diverged, at which step and why: one seed's frame as
    :func:`resviz.train.divergence.divergence_note` says it; several seeds' with how
    many seeds each run diverged in, and where."""
    # Imported here: resviz.words is imported by resviz.train's own modules.
    from resviz.train.divergence import definition, divergence_note

    if SEED not in history.columns or history[SEED].nunique() == 1:
        return divergence_note(history.drop(columns=SEED, errors="ignore"))
    if not len(history) or "diverged" not in history:
        return ""
    n = history[SEED].nunique()
    hit = history[history["diverged"].fillna(False).astype(bool)]
    names = list(dict.fromkeys(history["variant"]))
    if not len(hit):
        return f"No run diverged in any of the {n} seeds ({definition()})."
    parts = []
    for v in names:
        mine = hit[hit["variant"] == v].drop_duplicates(subset=[SEED]).sort_values(SEED)
        if not len(mine):
            continue
        why = mine["divergence"] if "divergence" in mine else pd.Series("", index=mine.index)
        at = [
            f"at step {int(t)}" + (f" ({w})" if w else "")
            for t, w in zip(mine["step"], why.fillna(""), strict=True)
        ]
        where = ", ".join(
            f"{a} in {seeds_label([int(x) for x, b in zip(mine[SEED], at, strict=True) if b == a])}"
            for a in dict.fromkeys(at)
        )
        parts.append(f"{v} in {len(mine)} of {n} seeds ({where})")
    ok = [v for v in names if v not in set(hit["variant"])]
    out = f"Diverged ({definition()}): " + "; ".join(parts) + "."
    if ok:
        out += f" Did not diverge in any of the {n} seeds: " + ", ".join(ok) + "."
    return out


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
    "divergence_words",
    "halves_words",
    "invariance_seeds",
    "invariant_rows",
    "post_ln_words",
    "schedule_words",
    "span",
    "start_end_words",
    "stream_seeds",
    "textbook_seeds",
    "warmup_seeds",
]
