"""Sentences of the sinusoidal-encoding page, worded from its recipes' numbers.

Each function takes numbers a recipe of ``resviz.positional.recipes`` returned and
says what they show, for every setting the page allows (the tests word both
outcomes). Numbers go through :func:`format_number`, which never prints 0 for a
value that is not 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from resviz.words.numbers import format_number
from resviz.words.seeds import seeds_label, span


def last_pair_words(positions: int, d_model: int, last_angle: float) -> str:
    """How far the first and the last (sin, cos) pair turn over positions 0..n-1:
    the first through ``n - 1`` rad, the last through ``last_angle`` rad."""
    span = positions - 1
    first = (
        f"over these {positions} positions the first pair (columns 0, 1) turns through "
        f"{span} rad ({format_number(span / (2 * math.pi))} turns)"
    )
    last = f"the last pair (columns {d_model - 2}, {d_model - 1}) through {format_number(last_angle)} rad"
    if last_angle <= math.pi / 2:
        return (
            f"{first}, {last} only: its sine rises from 0 to only "
            f"{format_number(math.sin(last_angle))} and its cosine falls from 1 by only "
            f"{format_number(1 - math.cos(last_angle))}."
        )
    return f"{first}, {last} ({format_number(last_angle / (2 * math.pi))} turns)."


def monotone_words(n_offsets: int, rises: Sequence[int], first_rise: int | None) -> str:
    """Whether PE(0)·PE(k) falls at every step over offsets 0..n_offsets-1: ``rises``
    are the offsets shown where it rises, ``first_rise`` the first one at any offset
    searched (None: none found)."""
    if rises:
        return (
            f"It is not monotone in distance: over these {n_offsets} offsets it rises again "
            f"at {len(rises)} of them (first at {rises[0]}), so a farther position can look "
            "more similar than a nearer one."
        )
    beyond = (
        f"it first rises again at offset {first_rise}, beyond the positions shown"
        if first_rise is not None
        else "no rise was found at the offsets searched"
    )
    return f"Over these {n_offsets} offsets it falls at every step; {beyond}."


def pythagoras_words(parts: pd.DataFrame) -> str:
    """Mean and largest relative gap between ||e + p|| and sqrt(||e||² + ||p||²), in %,
    from the long frame of :func:`resviz.positional.embedding_vs_position`."""
    wide = parts.pivot(index="position", columns="part", values="norm")
    pyth = (wide["token"] ** 2 + wide["position"] ** 2) ** 0.5
    rel = ((wide["sum"] - pyth).abs() / pyth) * 100
    return f"{format_number(rel.mean(), 2)}% on average and at most {format_number(rel.max(), 2)}%"


def rounding_words(dec: int, hidden: int, smallest: float) -> str:
    """The table is rounded to ``dec`` decimals; ``hidden`` cells round to 0 without
    being 0 (the smallest of them ``smallest`` in absolute value)."""
    places = "decimal" if dec == 1 else "decimals"
    if not hidden:
        return f"Values rounded to {dec} {places}."
    cells = "cell" if hidden == 1 else "cells"
    return (
        f"Values rounded to {dec} {places}: {hidden} {cells} shown as 0 "
        f"{'is' if hidden == 1 else 'are'} not 0 (the smallest in size is "
        f"{format_number(smallest)}); more decimals show {'it' if hidden == 1 else 'them'}."
    )


def spread_words(mean: float, std: float, d_model: int) -> str:
    """The learned table's off-diagonal cosines: their ``mean`` and ``std``."""
    return (
        "Random at init (N(0, 0.02²) per entry): off the diagonal the cosines have mean "
        f"{format_number(mean)} and standard deviation {format_number(std)} (1/sqrt(d) = "
        f"{format_number(d_model**-0.5)} for independent random directions); only training "
        "can give them a pattern by distance."
    )


def learned_spread_words(
    means: Sequence[float], stds: Sequence[float], d_model: int, seeds: Sequence[int]
) -> str:
    """:func:`spread_words` from every seed's learned table: one seed's mean and
    standard deviation, named; several seeds' as their lowest to highest."""
    ref = (
        f"(1/sqrt(d) = {format_number(d_model**-0.5)} for independent random directions); "
        "only training can give them a pattern by distance."
    )
    if len(means) == 1:
        return (
            f"Random at init (N(0, 0.02²) per entry): in {seeds_label(seeds)}'s table, off the "
            f"diagonal the cosines have mean {format_number(means[0])} and standard deviation "
            f"{format_number(stds[0])} {ref}"
        )
    return (
        f"Random at init (N(0, 0.02²) per entry), drawn here from seed {seeds[0]}: over "
        f"{seeds_label(seeds)}, off the diagonal the cosines have mean {span(means)} and "
        f"standard deviation {span(stds)} (lowest to highest seed) {ref}"
    )


def pythagoras_seeds_words(parts: Sequence[pd.DataFrame], seeds: Sequence[int]) -> str:
    """:func:`pythagoras_words` from every seed's frame: one seed's figures, or the
    seeds' mean gap as lowest to highest and the largest gap of any seed."""
    if len(parts) == 1:
        return f"{pythagoras_words(parts[0])} ({seeds_label(seeds)})"
    gaps = []
    for p in parts:
        wide = p.pivot(index="position", columns="part", values="norm")
        pyth = (wide["token"] ** 2 + wide["position"] ** 2) ** 0.5
        gaps.append(((wide["sum"] - pyth).abs() / pyth) * 100)
    means = [float(g.mean()) for g in gaps]
    worst = max(range(len(gaps)), key=lambda i: float(gaps[i].max()))
    return (
        f"{span(means, 2)}% on average (lowest to highest of "
        f"{seeds_label(seeds)}) and at most {format_number(float(gaps[worst].max()), 2)}% "
        f"(seed {seeds[worst]})"
    )
