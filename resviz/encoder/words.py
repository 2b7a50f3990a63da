"""The encoder playground's sentences, worded from the measured frames of every seed.

Each function takes a section recipe's frame as the recipe returns it: the rows of one
or more seeds under a ``seed`` column (``rv.recipes.encoder.stream(...).share``). A
direction (rises or falls, which component is largest, which model ends lower) is
worded from each seed's own outcome by :func:`resviz.words.seeds.seeds_sentence`, with
its count when the seeds agree, as the split when they do not. Numbers are quoted
over the seeds that show them (:func:`resviz.words.seeds.span`). The Training section's
words are :mod:`resviz.encoder.words_training`'s."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from resviz.words.numbers import FLOAT64_RESOLUTION, format_number, resolution_words
from resviz.words.seeds import _of, by_seed, seeds_label, seeds_sentence, span, span_floor
from resviz.words.sentences import _cap, order, trend_outcome

__all__ = [
    "encoder_stream_rule",
    "attention_spread_words",
    "collapse_words",
    "cosine_words",
    "share_words",
    "stream_norm_words",
    "trend_over_seeds",
    "update_ratio_words",
]


# --------------------------------------------------------------- trends over seeds
# trend_outcome's labels as this page's sentences name them (one value ends where it starts)
_SAID_AS = {"flat": "stays", "returns": "ends", "one value": "ends"}


def trend_over_seeds(
    values: Sequence[Sequence[float]],
    labels: Sequence[str],
    subject: str,
    seeds: Sequence[int],
    flat: float = 1.5,
    floor: float = 0.0,
) -> str:
    """How a quantity changes from the first label to the last, worded from every seed.

    ``values`` holds one sequence per seed (one value per label). Each seed's outcome
    is the direction :func:`resviz.words.trend` would state (``rises``, ``falls``,
    ``stays`` within a factor of ``flat``, ``ends`` where it starts, ``not finite``);
    :func:`~resviz.words.seeds.seeds_sentence` words them, each with its numbers over
    the seeds that show it: ``"In 3 of 3 seeds the distance falls from the input
    (0.95) to block 6 (0.001–0.003), a factor of 317–950."``

    ``floor``: a seed whose values go under it (rounding, e.g.
    :data:`~resviz.words.numbers.FLOAT64_RESOLUTION`) is worded by where it first
    does, never by the value: ``"the distance falls from the input (0.84) below
    float64 resolution (< 1e-13) by block 3"``."""
    if len(values) != len(seeds):
        raise ValueError("one sequence of values per seed")
    if any(len(v) != len(labels) for v in values):
        raise ValueError("one label per value")
    under = [
        next((i for i, x in enumerate(v) if math.isfinite(float(x)) and abs(x) < floor), None)
        for v in values
    ]
    outcomes = [
        "under" if u is not None else _SAID_AS.get(o, o)
        for u, o in zip(under, (trend_outcome(v, flat) for v in values), strict=True)
    ]
    first = [float(v[0]) for v in values]
    last = [float(v[-1]) for v in values]
    factor = [max(abs(a), abs(b)) / min(abs(a), abs(b)) if a * b > 0 else math.nan
              for a, b in zip(first, last, strict=True)]  # fmt: skip
    spread = [max(map(float, v)) / min(map(float, v)) if min(map(float, v)) > 0 else math.nan
              for v in values]  # fmt: skip
    l0, ln = labels[0], labels[-1]
    says = {}
    for o in set(outcomes):
        f, la = _of(seeds, outcomes, o, first), _of(seeds, outcomes, o, last)
        if o == "under":
            at = sorted(
                {u for u, x in zip(under, outcomes, strict=True) if x == o and u is not None}
            )
            names = [labels[i] for i in at]
            where = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
            says[o] = f"{subject} falls from {l0} ({span(f)}) {resolution_words(floor)} by {where}"
        elif o in ("rises", "falls"):
            fac = _of(seeds, outcomes, o, factor)
            ok = [x for x in fac if math.isfinite(x)]
            tail = f", a factor of {span(ok)}" if ok else ""
            if ok and len(ok) < len(fac):  # never a range that hides a seed without one
                tail += f" in {len(ok)} of them (the others end at 0, change sign or overflow)"
            says[o] = f"{subject} {o} from {l0} ({span(f)}) to {ln} ({span(la)}){tail}"
        elif o == "stays":
            sp = _of(seeds, outcomes, o, spread)
            says[o] = f"{subject} stays within a factor of {span(sp)} from {l0} to {ln}"
        elif o == "ends":
            says[o] = f"{subject} ends where it starts, at {span(f)}, from {l0} to {ln}"
        else:
            says[o] = f"{subject} reaches a value that is not finite (NaN or Inf)"
    return seeds_sentence(outcomes, says, seeds)


def stream_norm_words(stream: pd.DataFrame) -> str:
    """The Residual stream chart's trend: the mean token norm from the input to after
    the last sublayer (``rv.recipes.encoder.stream(...).stream``), over every seed."""
    parts, seeds = by_seed(stream)
    values = [[float(p["input_norm"].iloc[0]), *map(float, p["stream_norm"])] for p in parts]
    p0 = parts[0]
    labels = ["the input", *(f"after L{x.block} {x.sublayer}" for x in p0.itertuples())]
    return trend_over_seeds(values, labels, "the mean token norm", seeds)


# ------------------------------------------------------------------- update ratios
def update_ratio_words(ratio: pd.DataFrame) -> str:
    """The update-ratio chart in words (``block, sublayer, update_ratio`` per seed):
    the range over every seed, whether every ratio is below 1 (every sublayer's
    output smaller than the stream it reads), and which sublayer's ratio is largest."""
    parts, seeds = by_seed(ratio)
    r = ratio["update_ratio"].astype(float)
    finite = r[r.map(math.isfinite)]
    over = seeds_label(seeds)
    if finite.empty:
        return f"No ratio is finite ({over})."
    head = (
        f"The ratio ranges from {format_number(finite.min())} to "
        f"{format_number(finite.max())} over {over}. "
    )
    ratios = [p["update_ratio"].astype(float) for p in parts]
    tops = [float(x.max()) for x in ratios]  # NaN skipped; an Inf is the largest
    below = [
        "not finite" if not x.map(math.isfinite).all() else "all below 1" if t < 1 else "not all"
        for x, t in zip(ratios, tops, strict=True)
    ]
    says = {
        "all below 1": "every sublayer's output is smaller than the stream it reads "
        f"(largest ratio {span(_of(seeds, below, 'all below 1', tops))})",
        "not all": "some sublayer's output is at least as large as the stream it reads "
        f"(largest ratio {span(_of(seeds, below, 'not all', tops))})",
        "not finite": "some sublayer's ratio is not finite (NaN or Inf)",
    }
    where = []
    for p, x in zip(parts, ratios, strict=True):
        row = None if x.isna().all() else p.loc[x.idxmax()]
        where.append("none" if row is None else f"L{row['block']} {row['sublayer']}")
    at = {w: f"the largest ratio is {w}'s" for w in where}
    at["none"] = "no ratio is a number"
    return head + seeds_sentence(below, says, seeds) + " " + seeds_sentence(where, at, seeds)


# ------------------------------------------------------------------- final share
HEAD = (
    "Each component's projection on the final stream x_L (the last block's output, "
    "before any final norm), as a fraction of ||x_L||^2. "
)


def _largest(parts: list[pd.DataFrame], seeds: Sequence[int], what: str) -> str:
    tops = [p.loc[p["share"].astype(float).idxmax()] for p in parts]
    names = [str(t["component"]) for t in tops]
    says = {}
    for n in set(names):
        vals = [float(t["share"]) for t, m in zip(tops, names, strict=True) if m == n]
        says[n] = f"the largest {what} is {n}'s ({span(vals)})"
    return seeds_sentence(names, says, seeds)


def share_words(share: pd.DataFrame) -> str:
    """What :func:`resviz.encoder.views.final_share`'s bars are, read from its
    ``part`` column (how this model makes x_L, the same in every seed), with the
    measured numbers of every seed (``rv.recipes.encoder.stream(...).share``)."""
    parts, seeds = by_seed(share)
    part = parts[0]["part"].astype(bool)
    sums = [float(p["share"].astype(float).sum()) for p in parts]
    if part.all():
        return (
            HEAD + "x_L is the sum of these components (residuals, and no norm on the stream "
            f"itself), so the bars sum to 1 (here {span(sums)}). " + _largest(parts, seeds, "share")
        )
    if part.sum() == 1:
        comp = str(parts[0].loc[part, "component"].iloc[0])
        lasts = [float(p.loc[p["part"].astype(bool), "share"].iloc[0]) for p in parts]
        others = pd.concat([p.loc[~p["part"].astype(bool), "share"] for p in parts]).astype(float)
        return (
            HEAD + f"Without residuals, x_L is the last sublayer's output itself, so its bar "
            f"({comp}) is {span(lasts)}; the other bars are projections of outputs that do "
            "not reach x_L, not parts of it (from "
            f"{format_number(float(others.min()))} to {format_number(float(others.max()))})."
        )
    return (
        HEAD + "Post-LN normalizes the stream after every sublayer, so x_L is no sum of these "
        f"components: each bar is only a projection, and the bars need not sum to 1 (here "
        f"{span(sums)}). " + _largest(parts, seeds, "projection")
    )


# ------------------------------------------------------------------ rank collapse
def _final(p: pd.DataFrame, variant: str, col: str = "residual") -> float:
    return float(p.loc[p["variant"] == variant, col].iloc[-1])


# The playground's rank collapse is measured in float64 (rank_collapse_compare).
FLOOR = FLOAT64_RESOLUTION


def collapse_words(collapse: pd.DataFrame) -> str:
    """The rank-collapse chart in words (``variant, shortcuts, block, residual`` per
    seed): each variant's distance from rank one from the input to the last block,
    then, for your model and for attention only, whether the variant with shortcuts
    ends further from rank one than the one without."""
    parts, seeds = by_seed(collapse)
    variants = list(pd.unique(parts[0]["variant"]))
    out = []
    for v in variants:
        rows = [p[p["variant"] == v] for p in parts]
        labels = ["the input" if n == 0 else f"block {n}" for n in rows[0]["block"]]
        values = [list(r["residual"].astype(float)) for r in rows]
        said = trend_over_seeds(values, labels, "the distance", seeds, floor=FLOOR)
        out.append(f"{_cap(v)}: {said[:1].lower()}{said[1:]}")
    first = parts[0].drop_duplicates("variant").set_index("variant")["shortcuts"]
    last_block = int(parts[0]["block"].max())
    pairs = [
        (variants[0], variants[1]) if bool(first[variants[0]]) else (variants[1], variants[0]),
        ("attention only, shortcuts", "attention only, no shortcuts"),
    ]
    for w, wo in pairs:
        with_, without = f'"{w}"', f'"{wo}"'
        a = [_final(p, w) for p in parts]
        b = [_final(p, wo) for p in parts]
        codes = {1: "apart", -1: "closer", 0: "same", None: "none"}
        # Under the floor a distance is rounding: compared as the floor (at most it).
        outcomes = [
            "unresolved"
            if max(abs(x), abs(y)) < FLOOR
            else codes[order(max(x, FLOOR) if x < FLOOR else x, max(y, FLOOR) if y < FLOOR else y)]
            for x, y in zip(a, b, strict=True)
        ]

        def nums(o: str, a: list[float] = a, b: list[float] = b, out: list[str] = outcomes) -> str:
            left, right = (
                span_floor(_of(seeds, out, o, a), FLOOR),
                span_floor(_of(seeds, out, o, b), FLOOR),
            )
            return f"({left} against {right})"

        ends = f"after block {last_block}"
        says = {
            "apart": f"{with_} ends further from rank one {ends} than {without} {nums('apart')}",
            "closer": f"{with_} ends closer to rank one {ends} than {without} {nums('closer')}",
            "same": f"{with_} and {without} end about as far from rank one {ends} {nums('same')}",
            "none": f"{with_} and {without} cannot be compared {ends} (a value is not finite)",
            "unresolved": f"{with_} and {without} both end {resolution_words(FLOOR)} {ends}: "
            "rounding cannot tell them apart",
        }
        out.append(seeds_sentence(outcomes, says, seeds))
    return " ".join(_cap(s) for s in out)


def cosine_words(cosine: pd.DataFrame) -> str:
    """The mean cosine between tokens after the last layer, per variant, every seed's."""
    parts, seeds = by_seed(cosine)
    variants = list(pd.unique(parts[0]["variant"]))
    items = "; ".join(f"{v}: {span([_final(p, v, 'cosine') for p in parts])}" for v in variants)
    return f"After the last layer ({seeds_label(seeds)}): {items}."


# ----------------------------------------------------------------------- attention
def attention_spread_words(attention: pd.DataFrame, shown: int, n_tokens: int) -> str:
    """How far the shown seed's attention weights spread around uniform (1/T), and
    the largest weight as a multiple of uniform in every seed."""
    parts, seeds = by_seed(attention)
    one = parts[seeds.index(shown)]["weight"].astype(float)
    lo, hi, u = float(one.min()), float(one.max()), 1 / n_tokens
    head = (
        f"In the map shown ({seeds_label([shown])}) the weights all equal {format_number(lo)}"
        if lo == hi
        else f"In the map shown ({seeds_label([shown])}) the weights lie between "
        f"{format_number(lo)} and {format_number(hi)}"
    )
    text = f"{head}; uniform attention (1/{n_tokens}) would give each {format_number(u)}"
    if hi > 0:
        text += f", and the largest is {format_number(hi / u)} times that"
    if len(seeds) > 1:
        tops = [float(p["weight"].max()) / u for p in parts]
        text += f" (over {seeds_label(seeds)}: {span(tops)} times)"
    return text + "."


def encoder_stream_rule(residual: bool, norm: str, position: str) -> str:
    """What the stream after a sublayer is, for this encoder (a fact of the config)."""
    normed = norm != "none"
    name = {"layer": "LayerNorm", "rms": "RMSNorm", "batch": "BatchNorm"}.get(norm, norm)
    if residual and (position == "pre" or not normed):
        how = "Pre-LN" if normed else "no norm"
        return (
            f"With residuals and {how}, each sublayer adds its output to the stream: after "
            "sublayer k the stream is the embedding plus the first k sublayer outputs."
        )
    if residual:
        return (
            f"With residuals and Post-LN, each sum x + f(x) passes through {name}, so every "
            "point is the mean norm of normalized tokens."
        )
    if normed and position == "post":
        return (
            f"Without residuals, the stream after a sublayer is that sublayer's output, "
            f"passed through {name}."
        )
    return "Without residuals, the stream after a sublayer is that sublayer's output."
