"""The encoder playground's training words, over the seeds a run trained: which model
ends with the lower loss, how training moves your model's distance from rank one, and
the correct guesses at the masked positions (each frame as
``rv.recipes.encoder.training(...)`` returns it, under its ``seed`` column).

Directions are worded from each seed's own outcome by
:func:`resviz.words.seeds.seeds_sentence`; numbers are quoted over the seeds that show
them (:func:`resviz.words.seeds.span`)."""

from __future__ import annotations

import math

import pandas as pd

from resviz.words.numbers import FLOAT64_RESOLUTION, resolution_words
from resviz.words.seeds import _of, by_seed, seeds_sentence, span, span_floor
from resviz.words.sentences import crossing, order

__all__ = ["correct_words", "loss_race_words", "race", "trained_collapse_words"]


def race(
    parts: list[pd.DataFrame], a: str, b: str, window: int = 10
) -> tuple[list[str], list[float], list[float], list[int]]:
    """Each seed's race between ``a`` and ``b`` (``variant, step, loss``): its outcome
    (``a`` or ``b`` lower, ``same`` within 5%, ``inf`` where a mean is not finite,
    ``none`` without a step both have), both mean losses over the last ``window`` steps
    both have (NaN for ``none``; a NaN loss makes its mean NaN, never skipped), and how
    many steps each mean took."""
    outcomes, ma, mb, spans = [], [], [], []
    for p in parts:
        ca = p.loc[p["variant"] == a].set_index("step")["loss"].astype(float)
        cb = p.loc[p["variant"] == b].set_index("step")["loss"].astype(float)
        steps = ca.index.intersection(cb.index)
        if len(steps) == 0:
            outcomes.append("none")
            ma.append(math.nan)
            mb.append(math.nan)
            continue
        k = min(window, len(steps))
        x = float(ca.loc[steps].iloc[-k:].mean(skipna=False))
        y = float(cb.loc[steps].iloc[-k:].mean(skipna=False))
        spans.append(k)
        ma.append(x)
        mb.append(y)
        outcomes.append({-1: "a", 1: "b", 0: "same", None: "inf"}[order(x, y)])
    return outcomes, ma, mb, spans


def loss_race_words(curves: pd.DataFrame, a: str, b: str, window: int = 10) -> str:
    """Which of two models ends with the lower mean loss over the last ``window``
    steps both have (``variant, step, loss`` per seed; :func:`race`), worded from every
    seed; with one seed, also from which step on ``a``'s running mean stays below
    ``b``'s."""
    parts, seeds = by_seed(curves)
    outcomes, ma, mb, spans = race(parts, a, b, window)
    qa, qb = f'"{a}"', f'"{b}"'
    last = f"the last {window} steps both have" if spans else "no step"

    def nums(o: str) -> str:
        return f"({span(_of(seeds, outcomes, o, ma))} against {span(_of(seeds, outcomes, o, mb))})"

    says = {
        "a": f"{qa} ends with the lower mean loss over {last} {nums('a')}",
        "b": f"{qb} ends with the lower mean loss over {last} {nums('b')}",
        "same": f"{qa} and {qb} end with about the same mean loss over {last}, within 5% "
        f"{nums('same')}",
        "inf": f"the mean loss of {qa} or {qb} is not finite over {last} {nums('inf')}",
        "none": f"no step has a loss for both {qa} and {qb} yet",
    }
    text = seeds_sentence(outcomes, says, seeds)
    if len(parts) == 1 and outcomes[0] != "none":
        p = parts[0]
        ca = p.loc[p["variant"] == a].set_index("step")["loss"].astype(float)
        cb = p.loc[p["variant"] == b].set_index("step")["loss"].astype(float)
        steps = ca.index.intersection(cb.index)
        ra = ca.loc[steps].rolling(window, min_periods=1).mean()
        rb = cb.loc[steps].rolling(window, min_periods=1).mean()
        text += " " + crossing(
            list(steps), ra, rb, f"the {window}-step mean of {qa}", f"that of {qb}"
        )
    return text


def trained_collapse_words(collapse: pd.DataFrame, n_layers: int) -> str:
    """Per seed, how your model's distance from rank one after the last layer changes
    from init to trained (``variant, weights, block, residual``)."""
    parts, seeds = by_seed(collapse)
    before, after = [], []
    for p in parts:
        mine = p[p["variant"] == "your model"]
        before.append(float(mine.loc[mine["weights"] == "init", "residual"].iloc[-1]))
        after.append(float(mine.loc[mine["weights"] == "trained", "residual"].iloc[-1]))
    codes, fl = {1: "rises", -1: "falls", 0: "stays", None: "none"}, FLOAT64_RESOLUTION
    outcomes = ["under" if max(x, y) < fl else codes[order(max(y, fl), max(x, fl))]
                for x, y in zip(before, after, strict=True)]  # fmt: skip
    subject = f"after layer {n_layers}, your model's distance from rank one"

    def nums(o: str) -> str:
        b, a = (span_floor(_of(seeds, outcomes, o, v), fl) for v in (before, after))
        return f"at init {b}, trained {a}"

    says = {
        "rises": f"{subject} rises with training ({nums('rises')}): training pulls the tokens apart",
        "falls": f"{subject} falls with training ({nums('falls')})",
        "stays": f"{subject} stays about the same with training, within 5% ({nums('stays')})",
        "none": f"{subject} is not finite before or after training ({nums('none')})",
        "under": f"{subject} is {resolution_words(fl)} at init and trained",  # no direction
    }
    return seeds_sentence(outcomes, says, seeds)


def correct_words(predictions: pd.DataFrame) -> str:
    """Correct guesses at the masked positions, per model, each seed's count named."""
    parts, seeds = by_seed(predictions)
    variants = list(pd.unique(parts[0]["variant"]))
    out = []
    for v in variants:
        rows = [p[p["variant"] == v] for p in parts]
        each = [f"{int(r['correct'].sum())} of {len(r)}" for r in rows]
        if len(seeds) == 1:
            out.append(f"{v}: {each[0]}")
        else:
            out.append(
                f"{v}: " + ", ".join(f"{e} (seed {s})" for e, s in zip(each, seeds, strict=True))
            )
    return "Correct guesses at the masked positions: " + "; ".join(out) + "."
