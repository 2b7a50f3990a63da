"""The seed-agreement part of a section's words, from the shared functions that word
it (resviz/words/seeds.py, resviz/words/headline.py; tested in test_seeds.py): a
topic's test states its own clause and seeds, and compares the whole sentence with
these, so the agreement phrase's wording is asserted in one place."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from resviz.words.headline import seeds_headline
from resviz.words.seeds import seeds_sentence

__all__ = ["headline", "lead", "sentence", "split"]

_IT, _OTHER = "it", "other"


def _outcomes(seeds: Sequence[int], not_in: Sequence[int]) -> list[str]:
    return [_OTHER if s in not_in else _IT for s in seeds]


def headline(clause: str, seeds: Sequence[int], not_in: Sequence[int] = ()) -> str:
    """A headline whose seeds (all but ``not_in``) agree on ``clause``."""
    return seeds_headline(_outcomes(seeds, not_in), {_IT: clause, _OTHER: ""}, seeds)


def sentence(clause: str, seeds: Sequence[int], not_in: Sequence[int] = ()) -> str:
    """A caption's sentence whose seeds (all but ``not_in``) agree on ``clause``."""
    return seeds_sentence(_outcomes(seeds, not_in), {_IT: clause, _OTHER: ""}, seeds)


def lead(seeds: Sequence[int]) -> str:
    """What comes before the clause the seeds agree on: ``"In 3 of 3 seeds "``, ``"In
    the one seed run (seed 0) "``."""
    return headline("", seeds)[:-1]


def split(topic: str, groups: Mapping[str, Sequence[int]]) -> str:
    """A headline whose seeds split: each outcome's short words and the seeds that give it."""
    by_seed = {s: words for words, seeds in groups.items() for s in seeds}
    seeds = sorted(by_seed)
    return seeds_headline([by_seed[s] for s in seeds], {w: w for w in groups}, seeds, topic)
