"""A section's headline: one short line stating its finding, the seeds' agreement
included, with the measured figure(s) it rests on.

The full account (the captions of :mod:`resviz.words`) says every seed's numbers;
the headline says what they add up to, from the same per-seed outcomes: where the
seeds agree (:attr:`resviz.words.seeds.Agreement.agreed`), the direction and how many
seeds show it (``"In 3 of 3 seeds the plain stack's gradient shrinks ..."``); where
they do not, that they disagree and how they split, in short words (``"The seeds
disagree on whether the plain stack's gradient shrinks: stays level in 4 of 10,
ranges wider in 3, falls in 3."``). Plain text; no Streamlit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from resviz.words.seeds import agreement, seeds_label

__all__ = ["Figure", "Headline", "seeds_headline"]


@dataclass(frozen=True)
class Figure:
    """One big measured figure: what it is (``label``) and its value as text."""

    label: str
    value: str


@dataclass(frozen=True)
class Headline:
    """A section's finding: one short ``line`` and the ``figures`` it rests on (none,
    one, or a few to set side by side)."""

    line: str
    figures: tuple[Figure, ...] = ()


def seeds_headline(
    outcomes: Sequence[str],
    says: Mapping[str, str],
    seeds: Sequence[int] | None = None,
    topic: str = "the outcome",
    short: Mapping[str, str] | None = None,
) -> str:
    """One short sentence on what the seeds show, from each seed's outcome.

    ``says[outcome]`` completes "In 3 of 3 seeds ..." (as for
    :func:`resviz.words.seeds.seeds_sentence`, in fewer words); ``short[outcome]``
    (default ``says``) names an outcome in the split, and ``topic`` what the seeds
    disagree on. Agreed: ``"In 3 of 3 seeds the residual stack passes more back."``
    (``" (not in seed 4)"`` where one of several does not); one seed: ``"In the one
    seed run (seed 0) ..."``; otherwise ``"The seeds disagree on <topic>: A in 4 of
    10; B in 3; C in 3."`` (``"split evenly"`` where the largest groups tie)."""
    a = agreement(outcomes, seeds)
    if a.n == 1:
        return f"In the one seed run ({seeds_label(a.seeds)}) {says[a.top]}."
    if a.agreed:
        rest = "" if a.top_count == a.n else f" (not in {seeds_label(a.seeds_of_other())})"
        return f"In {a.top_count} of {a.n} seeds {says[a.top]}{rest}."
    names = short or says
    parts = [
        f"{names[o]} in {k} of {a.n}" if i == 0 else f"{names[o]} in {k}"
        for i, (o, k) in enumerate(a.counts)
    ]
    head = "The seeds split evenly" if a.tie else "The seeds disagree"
    return f"{head} on {topic}: " + "; ".join(parts) + "."
