"""The sinusoidal-encoding page's headlines, one per section, from the numbers its
full account words (:mod:`resviz.positional.words`). The encodings are formulas, the
same in every seed; only the learned table and the token embeddings are drawn from
a seed, and their numbers are quoted over the seeds."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from resviz.words.headline import Figure, Headline
from resviz.words.numbers import format_number
from resviz.words.seeds import seeds_label, span

__all__ = ["alternatives", "embeddings", "matrix", "relative", "table", "waves"]


def table(n_words: int, formulas: pd.DataFrame) -> Headline:
    """Your sentence: how many tokens and columns, and how fast the first and the last
    (sin, cos) pair turn (the ``formulas`` frame: ``i`` and ``frequency`` per column)."""
    d = len(formulas)
    first = float(formulas["frequency"].iloc[0])
    last = float(formulas["frequency"].iloc[-1])
    words = f"{n_words} token{'s' if n_words != 1 else ''}"
    if int(formulas["i"].nunique()) == 1:
        return Headline(
            f"{words}, {d} columns: one (sin, cos) pair, turning {format_number(first)} rad per "
            "position."
        )
    return Headline(
        f"{words}, {d} columns: the first pair turns {format_number(first)} rad per position, "
        f"the last {format_number(last)} rad."
    )


def matrix(positions: int, last_angle: float) -> Headline:
    """The whole matrix: how far the first and the last pair turn over the positions
    (:func:`resviz.positional.words.last_pair_words`), as figures too."""
    first = positions - 1
    figures = (
        Figure("first pair turns (rad)", format_number(first)),
        Figure("last pair turns (rad)", format_number(last_angle)),
    )
    slower = last_angle / first if first else math.nan
    tail = f", {format_number(1 / slower)} times less" if first and last_angle > 0 else ""
    return Headline(
        f"Over {positions} positions the first pair turns through {format_number(first)} rad, "
        f"the last through {format_number(last_angle)} rad{tail}: the waves slow from left to "
        "right.",
        figures,
    )


def waves(wavelengths: pd.DataFrame) -> Headline:
    """The waves: the wavelengths of the pairs, from the first to the last."""
    wl = wavelengths["wavelength"].astype(float)
    pairs = len(wl)
    if pairs == 1:
        return Headline(f"One pair, of wavelength {format_number(wl.iloc[0])}.")
    return Headline(
        f"The wavelengths grow by the same factor from pair to pair: from "
        f"{format_number(wl.iloc[0])} to {format_number(wl.iloc[-1])} over {pairs} pairs.",
        (Figure(f"longest wavelength (pair {pairs - 1})", format_number(wl.iloc[-1])),),
    )


def relative(
    offset_error: float,
    rises: Sequence[int],
    n_offsets: int,
    figures: tuple[Figure, ...] = (),
) -> Headline:
    """Relative position: the dot product depends on the offset alone, to within the
    measured ``offset_error``, and whether it falls at every offset shown
    (:func:`resviz.positional.words.monotone_words`)."""
    head = f"PE(p)·PE(q) depends on p - q alone, to within {format_number(offset_error)}"
    if rises:
        tail = f"but it rises again at {len(rises)} of {n_offsets} offsets (first at {rises[0]})"
    else:
        tail = f"and it falls at every step over these {n_offsets} offsets"
    return Headline(f"{head}, {tail}.", figures)


def alternatives(norms: pd.DataFrame, d_model: int) -> Headline:
    """Alternatives: the encodings' norms at the last position drawn, the sinusoidal
    beside the integer index (``norms``: ``[seed,] position, scheme, norm``; both
    formulas, the same in every seed)."""
    last = int(norms["position"].max())
    at = norms[norms["position"] == last]

    def of(scheme: str) -> list[float]:
        return [float(x) for x in at.loc[at["scheme"] == scheme, "norm"]]

    sin, idx = span(of("sinusoidal")), span(of("integer index"))
    figures = (
        Figure(f"norm at position {last}, sinusoidal", sin),
        Figure(f"norm at position {last}, integer index", idx),
    )
    return Headline(
        f"The sinusoidal encoding's norm is sqrt(d/2) = {format_number(math.sqrt(d_model / 2))} "
        f"at every position; the integer index's grows as k·sqrt(d), to {idx} at position {last}.",
        figures,
    )


def _gaps(parts: pd.DataFrame) -> pd.Series:
    wide = parts.pivot(index="position", columns="part", values="norm")
    pyth = (wide["token"] ** 2 + wide["position"] ** 2) ** 0.5
    return ((wide["sum"] - pyth).abs() / pyth) * 100


def embeddings(parts: Sequence[pd.DataFrame], seeds: Sequence[int]) -> Headline:
    """Adding it to the word embeddings: how far the sum's norm is from sqrt(||e||² +
    ||p||²), on average and at most, over every seed's frame (the numbers
    :func:`resviz.positional.words.pythagoras_seeds_words` quotes)."""
    gaps = [_gaps(p) for p in parts]
    mean = span([float(g.mean()) for g in gaps], 2)
    most = format_number(max(float(g.max()) for g in gaps), 2)
    over = f" ({seeds_label(seeds)})" if len(seeds) == 1 else f" (over {seeds_label(seeds)})"
    figures = (Figure("mean gap", f"{mean}%"), Figure("largest gap", f"{most}%"))
    return Headline(
        f"Added, not concatenated: the sum's norm is within {mean}% of sqrt(||e||² + ||p||²) on "
        f"average, at most {most}%{over}.",
        figures,
    )
