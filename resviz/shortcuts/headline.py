"""The skip-connections page's headlines, one per section, from the per-seed outcomes
its full account words (:mod:`resviz.shortcuts.words`, :mod:`resviz.shortcuts.training_words`)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

import pandas as pd

from resviz.shortcuts.training_words import DEPTH_OUTCOMES
from resviz.words.headline import Figure, Headline, seeds_headline
from resviz.words.seeds import span
from resviz.words.sentences import order, trend_outcome

if TYPE_CHECKING:
    from resviz.core import Result

__all__ = ["degradation", "lesion", "paths", "signal", "stack"]


def stack(shortcuts: pd.DataFrame) -> Headline:
    """Stack: how many blocks got a shortcut, and of which kinds (the ``shortcuts``
    table, one row per block, its ``shortcut`` column)."""
    kinds = Counter(str(k) for k in shortcuts["shortcut"])
    n = len(shortcuts)
    have = n - kinds.get("none", 0)
    if not have:
        return Headline(f"None of the {n} blocks has a shortcut: every block outputs f(x) alone.")
    named = ", ".join(f"{k} {kind}" for kind, k in kinds.items() if kind != "none")
    return Headline(f"{have} of {n} blocks have a shortcut ({named}).")


def paths(blocks: int, with_shortcut: int) -> Headline:
    """Paths: the stack unrolled, from its ``blocks`` and how many of them have a
    shortcut: how many paths, and how many blocks a path passes through on average."""
    k, n = int(with_shortcut), int(blocks)
    mean = k / 2 + (n - k)
    count = f"{2**k:,}" if k <= 40 else f"2^{k}"
    figures = (Figure("paths through the stack", count), Figure("mean path length", f"{mean:g}"))
    if not k:
        return Headline(f"With no shortcut there is one path, through all {n} blocks.", figures)
    return Headline(
        f"{k} shortcut{'s unroll' if k > 1 else ' unrolls'} the {n} blocks into 2^{k} paths; on "
        f"average a path passes through {mean:g} of them.",
        figures,
    )


# A curve's direction (resviz.words.sentences.trend_outcome) as the headline says it.
_VERB = {
    "rises": "rises",
    "falls": "falls",
    "flat": "stays within a factor of 1.5",
    "returns": "ends where it starts",
    "not finite": "reaches a value that is not finite",
    "one value": "has one value",
    "none": "has no values",
}


def _who(variant: str, mode: str, it: str = "it") -> str:
    return "without a shortcut" if variant == "plain" or mode == "none" else f"with {it} ({mode})"


def _factor(first: float, last: float) -> float:
    if first * last > 0:
        return max(abs(first), abs(last)) / min(abs(first), abs(last))
    return math.nan


def signal(r: Result, mode: str) -> Headline:
    """Signal: how the mean norm changes from the first block to the last, for each
    stack the chart draws, in every seed (the directions
    :func:`resviz.shortcuts.words.trend_seeds` words); each stack's norm after its last
    block as the figures."""
    runs = r.per_seed
    seeds = r.seeds or tuple(range(len(runs)))
    variants = list(dict.fromkeys(r.signal["variant"]))
    curves = {
        v: [[float(x) for x in run.signal.loc[run.signal["variant"] == v, "norm"]] for run in runs]
        for v in variants
    }
    kinds = [" / ".join(trend_outcome(curves[v][i]) for v in variants) for i in range(len(runs))]
    last = int(r.signal["block"].max())
    says, short = {}, {}
    for kind in set(kinds):
        ix = [i for i, k in enumerate(kinds) if k == kind]
        parts = []
        for v, o in zip(variants, kind.split(" / "), strict=True):
            f = [_factor(curves[v][i][0], curves[v][i][-1]) for i in ix]
            f = [x for x in f if math.isfinite(x)]
            times = f" {span(f, 2)} times" if o in ("rises", "falls") and f else ""
            parts.append(f"{_VERB[o]}{times} {_who(v, mode)}")
        says[kind] = f"the mean norm over {last} blocks " + " and ".join(parts)
        short[kind] = ", ".join(
            f"{o} {_who(v, mode)}" for v, o in zip(variants, kind.split(" / "), strict=True)
        )
    line = seeds_headline(kinds, says, seeds, "where the norm goes", short)
    figures = tuple(
        Figure(
            f"mean norm after block {last}, {_who(v, mode, 'the shortcut')}",
            span([c[-1] for c in curves[v]]),
        )
        for v in variants
    )
    return Headline(line, figures)


# ------------------------------------------------------------------------ trained
_SHORT = {"worse": "worse", "better": "better", "same": "level"}
_SHORT.update({"not finite": "not finite", "pending": "not yet evaluated"})
_DEEPER = {
    "worse": "ends above",
    "better": "ends below",
    "same": "ends level with",
    "not finite": "cannot be compared with",
    "pending": "has no evaluation to compare with",
}


def degradation(
    curves_per_seed: Sequence[pd.DataFrame], shallow: int, deep: int, seeds: Sequence[int]
) -> Headline:
    """Degradation: in every seed, whether the deeper plain stack and the deeper residual
    stack end with a higher loss than their shallow twins (the outcomes
    :func:`resviz.shortcuts.training_words.degradation_seeds` words); the deep stacks' final losses
    as the figures."""
    lasts = [
        c.groupby(["kind", "depth"], sort=False).tail(1).set_index(["kind", "depth"])
        for c in curves_per_seed
    ]
    outcomes = []
    finals: dict[str, list[float]] = {"plain": [], "residual": []}
    for last in lasts:
        got = []
        for kind in ("plain", "residual"):
            if (kind, shallow) in last.index and (kind, deep) in last.index:
                d, s = (
                    float(last.loc[(kind, deep), "loss"]),
                    float(last.loc[(kind, shallow), "loss"]),
                )
                got.append(DEPTH_OUTCOMES[order(d, s)])
                finals[kind].append(d)
            else:
                got.append("pending")
        outcomes.append(" / ".join(got))
    says, short = {}, {}
    for o in set(outcomes):
        p, q = o.split(" / ")
        says[o] = (
            f"the {deep}-block plain stack {_DEEPER[p]} the {shallow}-block one"
            + (" (degradation)" if p == "worse" else "")
            + f"; the {deep}-block residual stack {_DEEPER[q]} its {shallow}-block twin"
        )
        short[o] = f"deeper plain {_SHORT[p]}, deeper residual {_SHORT[q]}"
    line = seeds_headline(outcomes, says, seeds, "what depth does", short)
    figures = tuple(
        Figure(f"final loss, {kind}, {deep} blocks", span(v)) for kind, v in finals.items() if v
    )
    return Headline(line, figures)


_VERDICT = {
    "barely changes": "barely notices any deleted block",
    "depends on the block": "minds some deleted blocks, not others",
    "suffers": "suffers from every deleted block",
    "did not learn": "did not learn the task",
}


def lesion(summaries: Sequence[pd.DataFrame], seeds: Sequence[int]) -> Headline:
    """Lesion: each stack's verdict on one block deleted at a time, in every seed (the
    verdicts :func:`resviz.shortcuts.training_words.lesion_seeds_caption` words); the accuracy a
    deletion costs on average as the figures."""
    # Read at call time, as resviz.shortcuts.training_words does (resviz.shortcuts imports the words).
    from resviz.shortcuts.lesions import lesion_verdict

    kinds = list(dict.fromkeys(k for s in summaries for k in s["kind"]))
    rows = {k: [s[s["kind"] == k].iloc[0] for s in summaries] for k in kinds}
    outcomes = [" / ".join(lesion_verdict(rows[k][i]) for k in kinds) for i in range(len(seeds))]
    says, short = {}, {}
    for o in set(outcomes):
        parts = [f"the {k} stack {_VERDICT[v]}" for k, v in zip(kinds, o.split(" / "), strict=True)]
        says[o] = " and ".join(parts)
        short[o] = ", ".join(f"{k} {v}" for k, v in zip(kinds, o.split(" / "), strict=True))
    line = seeds_headline(outcomes, says, seeds, "what a deletion costs", short)
    figures = tuple(
        Figure(
            f"accuracy points a deletion costs, {k} (mean)",
            span([100 * float(r["mean_drop"]) for r in rows[k]]),
        )
        for k in kinds
    )
    return Headline(line, figures)
