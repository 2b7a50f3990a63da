"""Findings over several seeds: a direction is stated only when the seeds agree.

One run at one seed can point either way: at the skip page's defaults the lesioned
block that hurts most is block 3 in seed 0 and block 2 in seeds 1-2, and the Pre-LN
stream grows by 8.8 to 12.4 times over 12 layers across seeds 0-4. So every sentence that states a direction is worded from
each seed's outcome: it states the direction when all seeds show it (up to 3 seeds)
or all but one do (more than 3), says how many ("in 5 of 5 seeds ..."), and
otherwise says that the seeds disagree and how they split.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from resviz.words.numbers import format_log10, format_number

__all__ = [
    "by_seed",
    "span_floor",
    "Agreement",
    "agreement",
    "band_words",
    "log_span",
    "seeds_label",
    "seeds_sentence",
    "seeds_sentence_by",
    "seeds_answer",
    "seed_progress",
    "SEEDS_DISAGREE",
    "span",
]


def _span(
    values: Sequence[float],
    fmt: Callable[[float, int], str],
    digits: int,
    ok: Callable[[float], bool] = math.isfinite,
) -> str:
    vals = [float(v) for v in values]
    if not vals:
        return "none"  # no seed has it: the words for an outcome no seed shows
    finite = [v for v in vals if ok(v)]
    odd = sorted({fmt(v, digits) for v in vals if not ok(v)})
    if not finite:
        return " or ".join(odd)
    lo, hi = fmt(min(finite), digits), fmt(max(finite), digits)
    # An en dash between two numbers of one sign reads as a range inside "from .. to ..";
    # with a negative end, where the dash would read as a minus, "to".
    sep = " to " if lo.startswith("-") or hi.startswith("-") else "–"
    out = lo if lo == hi else f"{lo}{sep}{hi}"
    return out + (f" (and {', '.join(odd)})" if odd else "")


def span(values: Sequence[float], digits: int = 3) -> str:
    """Several seeds' values of one number, lowest to highest: ``"0.41"`` when they
    print alike at ``digits`` significant figures, else ``"0.38–0.43"`` (an en dash;
    ``"-0.5 to 0.2"`` where an end is negative). A value that is not finite is named
    after the range (``"0.38–0.43 (and NaN)"``); only such values: ``"NaN"``,
    ``"Inf or NaN"``. No values: ``"none"``."""
    return _span(values, format_number, digits)


def log_span(logs: Sequence[float], digits: int = 3) -> str:
    """:func:`span` of numbers given as log10s (``-inf``, exactly 0, is the lowest
    value): ``"1.5e-26–3e-25"``, for values beyond float64's range too."""
    return _span(logs, format_log10, digits, lambda v: not math.isnan(v) and v != math.inf)


def seeds_label(seeds: Sequence[int]) -> str:
    """``"seed 4"``, ``"seeds 0-4"`` (a run of consecutive seeds) or ``"seeds 1, 3"``."""
    s = sorted(int(x) for x in seeds)
    if len(s) == 1:
        return f"seed {s[0]}"
    if s == list(range(s[0], s[-1] + 1)):
        return f"seeds {s[0]}-{s[-1]}"
    return "seeds " + ", ".join(map(str, s))


@dataclass(frozen=True)
class Agreement:
    """Each seed's outcome (in seed order) and what they agree on."""

    outcomes: tuple[str, ...]
    seeds: tuple[int, ...]

    @property
    def n(self) -> int:
        return len(self.outcomes)

    @property
    def counts(self) -> list[tuple[str, int]]:
        """Outcomes by how many seeds give them (most first; ties in seed order)."""
        c = Counter(self.outcomes)
        order = list(dict.fromkeys(self.outcomes))
        return sorted(c.items(), key=lambda kv: (-kv[1], order.index(kv[0])))

    @property
    def top(self) -> str:
        """The outcome most seeds give (the earliest seed's among equals)."""
        return self.counts[0][0]

    @property
    def top_count(self) -> int:
        return self.counts[0][1]

    @property
    def agreed(self) -> bool:
        """All seeds give the top outcome (up to 3 seeds), or all but one (more)."""
        need = self.n if self.n <= 3 else self.n - 1
        return self.top_count >= need

    @property
    def tie(self) -> bool:
        """Two or more outcomes share the largest count."""
        c = self.counts
        return len(c) > 1 and c[0][1] == c[1][1]

    def seeds_of(self, outcome: str) -> tuple[int, ...]:
        return tuple(s for s, o in zip(self.seeds, self.outcomes, strict=True) if o == outcome)

    def seeds_of_other(self) -> tuple[int, ...]:
        """The seeds whose outcome is not the top one."""
        return tuple(s for s, o in zip(self.seeds, self.outcomes, strict=True) if o != self.top)


def agreement(outcomes: Sequence[str], seeds: Sequence[int] | None = None) -> Agreement:
    """The :class:`Agreement` of ``outcomes`` (one per seed; ``seeds`` default 0..n-1)."""
    if not outcomes:
        raise ValueError("no seeds")
    ss = tuple(range(len(outcomes))) if seeds is None else tuple(int(s) for s in seeds)
    if len(ss) != len(outcomes):
        raise ValueError("one seed per outcome")
    return Agreement(tuple(str(o) for o in outcomes), ss)


def seeds_sentence(
    outcomes: Sequence[str], says: Mapping[str, str], seeds: Sequence[int] | None = None
) -> str:
    """One sentence on what the seeds show, from each seed's outcome.

    ``says[outcome]`` completes "in 5 of 5 seeds ...", e.g. ``{"residual": "the
    residual stack passes the larger gradient back"}``. Agreed (see
    :attr:`Agreement.agreed`): ``"In 5 of 5 seeds the residual stack passes ..."``;
    a single seed: ``"In the one seed run (seed 0) ..."``, with a reminder that one
    seed cannot show a spread; otherwise the split, every outcome with its count and
    seeds: ``"The seeds disagree: in 3 of 5 (seeds 0, 2, 4) ..., in 2 of 5 ..."``."""
    a = agreement(outcomes, seeds)
    if a.n == 1:
        return (
            f"In the one seed run ({seeds_label(a.seeds)}) {says[a.top]}; "
            "run more seeds to see whether it holds."
        )
    if a.agreed:
        rest = "" if a.top_count == a.n else f" (not in {seeds_label(a.seeds_of_other())})"
        return f"In {a.top_count} of {a.n} seeds {says[a.top]}{rest}."
    parts = [f"in {k} of {a.n} ({seeds_label(a.seeds_of(o))}) {says[o]}" for o, k in a.counts]
    head = "The seeds split evenly" if a.tie else "The seeds disagree"
    return f"{head}: " + "; ".join(parts) + "."


# What a lesson question's measurement answers when its seeds do not agree: none of
# the question's choices, so no prediction counts as measured right.
SEEDS_DISAGREE = "the seeds disagree"


def seeds_answer(
    answers: Sequence[str], sentences: Sequence[str], seeds: Sequence[int]
) -> tuple[str, str]:
    """A lesson question's answer over seeds (one answer and its sentence per seed) by
    the rule :func:`seeds_sentence` follows: ``("plain", "In 4 of 5 seeds: plain (not in
    seed 2). Seed 0: <seed 0's sentence>")``; where the seeds do not agree,
    :data:`SEEDS_DISAGREE` with how they split and the first seed's sentence; one seed:
    its answer, said to be one run."""
    a = agreement(answers, seeds)
    if a.n == 1:
        return a.top, (
            f"In the one seed run ({seeds_label(a.seeds)}): {a.top}; run more seeds to "
            f"see whether it holds. {sentences[0]}"
        )
    if a.agreed:
        first = a.seeds_of(a.top)[0]
        rest = "" if a.top_count == a.n else f" (not in {seeds_label(a.seeds_of_other())})"
        said = sentences[a.seeds.index(first)]
        return a.top, f"In {a.top_count} of {a.n} seeds: {a.top}{rest}. Seed {first}: {said}"
    split = "; ".join(f"{k} of {a.n} ({seeds_label(a.seeds_of(o))}) say {o}" for o, k in a.counts)
    head = "The seeds split evenly" if a.tie else "The seeds disagree"
    return SEEDS_DISAGREE, f"{head}: {split}. Seed {a.seeds[0]}: {sentences[0]}"


def seeds_sentence_by(
    outcomes: Sequence[str],
    seeds: Sequence[int],
    phrase: Callable[[str, list[int]], str],
) -> str:
    """:func:`seeds_sentence` where each outcome's words are made by ``phrase(outcome,
    indices)`` from the positions (into ``outcomes``) of the seeds that give it, so
    they can quote those seeds' numbers."""
    groups: dict[str, list[int]] = {}
    for i, o in enumerate(outcomes):
        groups.setdefault(o, []).append(i)
    return seeds_sentence(outcomes, {o: phrase(o, ix) for o, ix in groups.items()}, seeds)


def seed_progress(
    step: int, per_seed: int, n_seeds: int, first_seed: int, unit: str = "step"
) -> str:
    """Which seed a background run over ``n_seeds`` seeds (from ``first_seed``, each
    ``per_seed`` units, at least 1) is at after ``step`` units, and how far into it.
    The end of the run is the last seed's last unit."""
    per, done = max(per_seed, 1), max(step, 0)
    k = min(done // per, n_seeds - 1)
    into = min(done - k * per, per)
    return f"Seed {first_seed + k} ({k + 1} of {n_seeds}): {unit} {into} of {per}."


def band_words(seeds: Sequence[int]) -> str:
    """What a chart's line and band are: ``"Lines: the median of 3 seeds (0-2); bands:
    their lowest to highest."`` or, for one seed, that it is one run."""
    if len(seeds) == 1:
        return f"One run ({seeds_label(seeds)}): raise Seeds in the sidebar to see the spread."
    label = seeds_label(seeds).removeprefix("seeds ")
    return f"Lines: the median of {len(seeds)} seeds ({label}); bands: their lowest to highest."


def by_seed(df: pd.DataFrame) -> tuple[list[pd.DataFrame], tuple[int, ...]]:
    """A recipe's frame split by its ``seed`` column: each seed's rows, and the seeds
    (in order)."""
    if "seed" not in df.columns:
        raise ValueError("the frame has no seed column: pass the recipe's frame")
    seeds = tuple(int(s) for s in pd.unique(df["seed"]))
    return [df[df["seed"] == s].drop(columns="seed") for s in seeds], seeds


def _of(
    seeds: Sequence[int], outcomes: Sequence[str], want: str, values: Sequence[float]
) -> list[float]:
    return [x for s, o, x in zip(seeds, outcomes, values, strict=True) if o == want]


def span_floor(values: Sequence[float], floor: float) -> str:
    """:func:`span` of the values at or above ``floor`` (a resolution, e.g.
    :data:`resviz.words.numbers.FLOAT64_RESOLUTION`); those under it are named as
    such, never as numbers: ``"< 1e-13"``, or ``"0.41–0.45, or < 1e-13"``."""
    above = [v for v in values if not abs(v) < floor]
    if len(above) == len(values):
        return span(above)
    if not above:
        return "< " + format_number(floor)
    return f"{span(above)}, or < {format_number(floor)}"
