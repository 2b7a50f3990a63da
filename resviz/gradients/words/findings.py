"""The gradient-flow page's sentences: whether the measured gain at the input follows
the identity term λ^L of ``λ·x + f(x)`` (He et al. 2016, Identity Mappings, section
3) and why, which singular values of a block's Jacobian are zero, and (the
``*_over_seeds`` functions) every direction the page states, from every seed: only
where the seeds agree, with how many do (:mod:`resviz.words.seeds`), numbers as
ranges over the seeds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from resviz.gradients.layers import RESIDUAL
from resviz.words.numbers import format_log10, format_number, log_trend_words, ratio_words
from resviz.words.seeds import log_span, seeds_label, seeds_sentence_by, span
from resviz.words.sentences import order

# How close the measured gain must come to λ^L to be said to "agree" with it.
AGREE_RTOL = 0.05


def zero_sv_words(spec: pd.DataFrame) -> str:
    """How many of the residual stack's singular values of J are 0 to float64's
    rounding (below ``n · eps · largest``, numpy's rank tolerance), and whether I + J
    has any; empty if J has none."""
    k, n, tol, low = _zero_sv_counts(spec)
    if not k:
        return ""
    still = (
        "while every singular value of I + J is at least "
        f"{format_number(low)}, so I + J passes all of them"
        if low > tol
        else "and so are some of I + J's"
    )
    return (
        f" {k} of J's {n} singular values are 0 to float64's rounding (at most "
        f"{format_number(tol)}): J passes no gradient "
        f"along those directions, {still}."
    )


def _agrees(log_m: float, log_t: float) -> bool:
    """Whether ``|measured / identity_term - 1| <= AGREE_RTOL``, from their log10s."""
    diff = log_m - log_t
    return bool(math.isfinite(diff) and abs(10.0**diff - 1) <= AGREE_RTOL)


def scaled_shortcut_words(ratio: pd.DataFrame, l: float, norm: str, small: bool) -> str:  # noqa: E741
    """Why the measured gain of ``λ·x + f(x)`` at the input does or does not follow
    the identity term ``λ^L``, from :func:`resviz.identity_ratio`'s frame: a sentence
    that holds for the run it describes (:func:`why_over_seeds` for several)."""
    return _why_text(_why_kind(ratio, norm), [ratio], l, norm, small)


# ------------------------------------------------------------------ over several seeds
# Each function below takes one value (or frame) per seed and states a direction only
# as resviz.words.seeds allows: when the seeds agree, with how many do; otherwise the
# split. A group of seeds with the same outcome quotes its numbers as a range (lowest
# to highest); a group of one seed quotes that seed's numbers.


_TREND_KINDS = (
    ("has no values", "none"),
    ("is not finite", "nonfinite"),
    ("falls from", "to0"),
    ("grows from exactly 0", "from0"),
    ("is exactly 0 throughout", "zero"),
    ("starts and ends at exactly 0", "zero"),
    ("stays within", "stays"),
    ("ranges over", "ranges"),
    ("grows by", "grows"),
    ("falls by", "falls"),
    ("is ", "one"),
)
_TREND_SAYS = {
    "none": "has no values yet",
    "nonfinite": "is not finite",
    "to0": "falls to exactly 0",
    "from0": "grows from exactly 0",
    "zero": "is exactly 0 at both ends",
    "one": "has one value",
}


def trend_kind(logs: Sequence[float], within: float = 10.0) -> str:
    """Which way a curve of log10s goes, as :func:`log_trend_words` words it: ``"grows"``,
    ``"falls"`` (by more than ``within`` from first to last), ``"stays"`` (within a
    factor of ``within``), ``"ranges"`` (more than that, but ending within it), or one
    of ``"to0"``, ``"from0"``, ``"zero"``, ``"nonfinite"``, ``"one"``, ``"none"``."""
    text = log_trend_words(logs, within)
    return next(kind for prefix, kind in _TREND_KINDS if text.startswith(prefix))


def _factors(logs: Sequence[float]) -> tuple[float, float]:
    """log10 of |last / first| and of the largest over the smallest positive value."""
    kept = [float(v) for v in logs if not math.isnan(float(v)) and float(v) != math.inf]
    pos = [v for v in kept if v > -math.inf]
    return abs(kept[-1] - kept[0]), (max(pos) - min(pos)) if pos else math.nan


def trend_over_seeds(
    subject: str, per_seed: Sequence[Sequence[float]], seeds: Sequence[int], within: float = 10.0
) -> str:
    """How ``subject`` changes along each seed's curve of log10s (in the order given),
    worded over the seeds: ``"In 3 of 3 seeds the plain stack's ||dL/dW|| (from the last
    block back to the first) falls by a factor of 12–30."``; a group of one seed
    quotes that seed's :func:`log_trend_words` (its first and last values too)."""
    kinds = [trend_kind(c, within) for c in per_seed]

    def phrase(kind: str, ix: list[int]) -> str:
        if len(ix) == 1:
            return f"{subject} {log_trend_words(per_seed[ix[0]], within)}"
        ends, spreads = zip(*(_factors(per_seed[i]) for i in ix), strict=True)
        if kind in ("grows", "falls"):
            return f"{subject} {kind} by a factor of {log_span(ends, 2)}"
        if kind == "stays":
            return f"{subject} stays within a factor of {format_log10(max(spreads), 2)}"
        if kind == "ranges":
            return (
                f"{subject} ranges over a factor of {log_span(spreads, 2)} but ends within a "
                f"factor of {format_number(within)} of where it starts"
            )
        return f"{subject} {_TREND_SAYS[kind]}"

    return seeds_sentence_by(kinds, seeds, phrase)


def larger_gradient_over_seeds(
    plain: Sequence[float], residual: Sequence[float], seeds: Sequence[int]
) -> str:
    """Which stack passes the larger gradient back to its input relative to its output
    (``log10 ||dL/dx_0|| / ||dL/dx_L||`` per seed; an exact tie is the same, a NaN or
    Inf not comparable), with each group's gains."""
    which = {1: "plain", -1: "residual", 0: "same", None: "neither"}
    outcomes = [which[order(p, r, 0.0)] for p, r in zip(plain, residual, strict=True)]

    def phrase(kind: str, ix: list[int]) -> str:
        nums = (
            f" (||dL/dx_0|| / ||dL/dx_L||: {log_span([plain[i] for i in ix])} plain, "
            f"{log_span([residual[i] for i in ix])} residual)"
        )
        if kind in ("same", "neither"):
            how = "the same" if kind == "same" else "not comparable: one is not finite"
            return f"the two stacks' gradients back at their input are {how}{nums}"
        return f"the {kind} stack passes the larger gradient back to its input{nums}"

    return seeds_sentence_by(outcomes, seeds, phrase)


def _agreement_kind(log_m: float, log_t: float) -> str:
    if math.isnan(log_m) or math.isnan(log_t) or math.inf in (log_m, log_t):
        return "nan"
    if log_t == -math.inf:
        return "both0" if log_m == -math.inf else "ref0"
    return "agrees" if _agrees(log_m, log_t) else "differs"


def agreement_over_seeds(
    log_measured: Sequence[float], log_identity: float, seeds: Sequence[int], ref: str = "λ^L"
) -> str:
    """Whether the measured gain at x_0 follows the identity term (its log10, the same in
    every seed) within :data:`AGREE_RTOL`, seed by seed: ``"In 3 of 3 seeds the
    measurement at x_0 agrees with λ^L (9.31e-10) within 0.21%."``, the percentage the
    largest of those seeds'; a seed that does not is counted and quoted apart."""
    t = float(log_identity)
    kinds = [_agreement_kind(float(m), t) for m in log_measured]
    head = "the measurement at x_0"

    def phrase(kind: str, ix: list[int]) -> str:
        ms = [float(log_measured[i]) for i in ix]
        if kind == "agrees":
            worst = max(abs(10.0 ** (m - t) - 1) for m in ms)
            pct = format_number(max(worst * 100, 1e-3), 2)
            return f"{head} agrees with {ref} ({format_log10(t)}) within {pct}%"
        if kind == "differs":
            return f"{head} is {log_span([m - t for m in ms])} times {ref} ({format_log10(t)})"
        if kind == "ref0":
            return f"{head} is {log_span(ms)}, where {ref} is exactly 0"
        if kind == "both0":
            return f"{head} is exactly 0, as is {ref}"
        return f"{head} is {log_span(ms)}: not comparable with {ref} ({format_log10(t)})"

    return seeds_sentence_by(kinds, seeds, phrase)


def _why_kind(ratio: pd.DataFrame, norm: str) -> str:
    log_m = float(ratio["log10_measured"].iloc[0])
    log_t = float(ratio["log10_identity_term"].iloc[0])
    if log_t == -math.inf:
        return "plain"
    if _agrees(log_m, log_t):
        return "agrees"
    s0, s_last = float(ratio["stream_norm"].iloc[0]), float(ratio["stream_norm"].iloc[-1])
    return "norm" if norm != "none" and s_last < s0 else "large"


def _why_text(kind: str, ratios: Sequence[pd.DataFrame], l: float, norm: str, small: bool) -> str:  # noqa: E741
    branches = "these near-zero branches" if small else "these branches"
    if kind == "plain":
        return (
            "λ = 0 is a plain stack: the identity term is exactly 0, and what reaches the "
            "input comes from the terms made of the branches' Jacobians alone."
        )
    if kind == "agrees":
        return (
            f"With {branches} the terms made of the branches' Jacobians are small next "
            "to the identity term: it is nearly all that is left."
        )
    if kind == "norm":
        s0 = span([float(r["stream_norm"].iloc[0]) for r in ratios])
        s_last = span([float(r["stream_norm"].iloc[-1]) for r in ratios])
        return (
            f"A {norm} norm sits before every branch here. Its Jacobian scales as one over "
            f"the size of its input, and with λ = {l:g} the stream shrinks block by block "
            f"(its mean norm is {s0} at x_0 and {s_last} at x_L), so the branches' "
            "Jacobians are not small next to λ: the argument that leaves the identity "
            "term alone does not apply."
        )
    return (
        f"With {branches} the terms made of the branches' Jacobians are not small next to "
        f"the identity term λ^L: they change the gain by more than "
        f"{format_number(AGREE_RTOL * 100)}%."
    )


def why_over_seeds(
    ratios: Sequence[pd.DataFrame],
    seeds: Sequence[int],
    l: float,  # noqa: E741
    norm: str,
    small: bool,
) -> str:
    """:func:`scaled_shortcut_words` for several seeds' :func:`resviz.identity_ratio`
    frames: one reason when every seed has the same (its numbers as ranges), else each
    reason with the seeds it holds for."""
    kinds = [_why_kind(r, norm) for r in ratios]
    order = list(dict.fromkeys(kinds))
    if len(order) == 1:
        return _why_text(order[0], ratios, l, norm, small)
    parts = []
    for kind in order:
        ix = [i for i, k in enumerate(kinds) if k == kind]
        text = _why_text(kind, [ratios[i] for i in ix], l, norm, small)
        parts.append(f"{seeds_label([seeds[i] for i in ix]).capitalize()}: {text}")
    return " ".join(parts)


def _zero_sv_counts(spec: pd.DataFrame) -> tuple[int, int, float, float]:
    """The residual stack's J: how many singular values are 0 to float64's rounding,
    of how many, that tolerance, and the smallest singular value of I + J."""
    part = spec[spec["variant"] == RESIDUAL]
    j = part[part["matrix"] == "branch J"]["sigma"]
    block = part[part["matrix"] == "block"]["sigma"]
    tol = float(j.max()) * len(j) * np.finfo(np.float64).eps
    return int((j <= tol).sum()), len(j), tol, float(block.min())


def zero_sv_over_seeds(spectra: Sequence[pd.DataFrame], seeds: Sequence[int]) -> str:
    """:func:`zero_sv_words` over seeds: empty when no seed's J has a zero singular
    value; otherwise how many seeds' do, with the counts as ranges."""
    counts = [_zero_sv_counts(s) for s in spectra]
    kinds = ["none" if k == 0 else ("kept" if lo > tol else "lost") for k, _, tol, lo in counts]
    if set(kinds) == {"none"}:
        return ""
    n = counts[0][1]

    def phrase(kind: str, ix: list[int]) -> str:
        if kind == "none":
            return "none of J's singular values is 0 to float64's rounding"
        ks = span([counts[i][0] for i in ix])
        tol = format_number(max(counts[i][2] for i in ix))
        head = (
            f"{ks} of J's {n} singular values are 0 to float64's rounding (at most {tol}): "
            "J passes no gradient along those directions"
        )
        if kind == "kept":
            low = format_number(min(counts[i][3] for i in ix))
            return f"{head}, while every singular value of I + J is at least {low}, so I + J passes all of them"
        return f"{head}, and so are some of I + J's"

    return " " + seeds_sentence_by(kinds, seeds, phrase)


def _below_when(row: Any) -> str:
    if not row.defined:
        return "undefined (gradient constant or not finite)"
    if np.isfinite(row.first_lag_below):
        return f"lag {int(row.first_lag_below)}"
    return f"not by lag {row.max_lag}"


def below_half_over_seeds(belows: Sequence[pd.DataFrame], seeds: Sequence[int]) -> str:
    """Per net, the first lag whose autocorrelation is below 0.5 (the recipe's ``below``
    frame, one per seed): ``"plain depth 50: lag 1 (seeds 0-2); plain depth 2: lag 3
    (seeds 0, 2), lag 4 (seed 1)"``; one seed's words name no seed."""
    whens: dict[tuple[str, int], list[tuple[str, int]]] = {}
    for seed, below in zip(seeds, belows, strict=True):
        for row in below.itertuples():
            whens.setdefault((row.variant, int(row.depth)), []).append((_below_when(row), seed))
    out = []
    for (variant, depth), got in whens.items():
        if len(belows) == 1:
            out.append(f"{variant} depth {depth}: {got[0][0]}")
            continue
        by: dict[str, list[int]] = {}
        for when, seed in got:
            by.setdefault(when, []).append(seed)
        out.append(
            f"{variant} depth {depth}: "
            + ", ".join(f"{when} ({seeds_label(ss)})" for when, ss in by.items())
        )
    return "; ".join(out)


def _relation(ratio: float) -> str:
    if math.isnan(ratio):
        return "not comparable with"
    return "smaller than" if ratio < 1 else ("larger than" if ratio > 1 else "equal to")


def first_vs_last_over_seeds(layers: pd.DataFrame, seeds: Sequence[int]) -> str:
    """Per variant of a per-step block frame (``[seed,] variant, step, block,
    grad_norm``), whether the first block's gradient norm is below or above the last
    block's at the first step recorded and at the latest, worded over the seeds with
    the ratios as ranges: ``"plain: f(x): in 3 of 3 seeds the first block's gradient
    norm is smaller than the last block's at step 0 (0.01–0.02 times) and larger
    at step 199 (1.5–2 times)."`` Non-finite norms are left out; a variant no seed
    can word is not mentioned."""
    per = layers if "seed" in layers.columns else layers.assign(seed=seeds[0])
    out = []
    for name in dict.fromkeys(per["variant"]):
        outcomes, found = [], []
        for seed in seeds:
            g = per[(per["seed"] == seed) & (per["variant"] == name)]
            g = g[np.isfinite(g["grad_norm"])]
            said = []
            if len(g):
                first, last = g["block"].min(), g["block"].max()
                for step in sorted({int(g["step"].min()), int(g["step"].max())}):
                    at = g[g["step"] == step].set_index("block")["grad_norm"]
                    if first in at.index and last in at.index and first != last:
                        a, b = float(at[first]), float(at[last])
                        # a / b for norms (>= 0): inf where only b is 0, 1 where both are
                        said.append((a / b if b else 1.0 if a == 0 else math.inf, step, a, b))
            found.append(said)
            outcomes.append(" / ".join(_relation(x[0]) for x in said) or "none")
        if set(outcomes) == {"none"}:
            continue

        def phrase(kind: str, ix: list[int], found: list[Any] = found) -> str:
            if kind == "none":
                return "no step has a finite norm at both the first and the last block"
            parts = []
            for k, rel in enumerate(kind.split(" / ")):
                got = [found[i][k] for i in ix]
                fin = [x[0] for x in got if math.isfinite(x[0])]  # else over 0 or overflowed
                times = [f"{span(fin)} times"] if fin else []
                times += sorted({ratio_words(x[2], x[3]) for x in got if math.isinf(x[0])})
                steps = span([x[1] for x in got])
                what = f"{rel} the last block's" if k == 0 else rel.split()[0]
                parts.append(f"{what} at step {steps} ({'; '.join(times)})")
            return "the first block's gradient norm is " + " and ".join(parts)

        out.append(f"{name}: " + seeds_sentence_by(outcomes, seeds, phrase))
    return " ".join(out)


def _change(log_gain: float) -> str:
    if math.isnan(log_gain) or log_gain == math.inf:  # no size to compare: none is said
        return "cannot be measured" if math.isnan(log_gain) else "overflows float64"
    return "shrinks" if log_gain < 0 else ("grows" if log_gain > 0 else "keeps its size")


def _to(logs: list[float], what: str) -> str:
    ok = all(not math.isnan(v) and v != math.inf for v in logs)
    return f" (to {log_span(logs)} times{what})" if ok else ""


def stream_change_over_seeds(
    plain: Sequence[float], residual: Sequence[float], seeds: Sequence[int]
) -> str:
    """How each stack's gradient changes from the output back to the input (log10 of
    ``||dL/dx_0|| / ||dL/dx_L||`` per seed), worded over the seeds: ``"In 3 of 3 seeds the
    plain stack's gradient shrinks ... (to 0.0028–0.0035 times its size at the output)"``."""
    outcomes = [f"{_change(p)} / {_change(r)}" for p, r in zip(plain, residual, strict=True)]

    def phrase(kind: str, ix: list[int]) -> str:
        (cp, cr), gp = kind.split(" / "), _to([plain[i] for i in ix], " its size at the output")
        gr = _to([residual[i] for i in ix], "")
        return (
            f"the plain stack's gradient {cp} from the output back to the input{gp} and the "
            f"residual stack's {cr}{gr}"
        )

    return seeds_sentence_by(outcomes, seeds, phrase)
