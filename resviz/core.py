"""What a section recipe is: settings and a seed in, named tidy frames out.

Every section of every page is one function in ``resviz.recipes``. It takes the
section's settings under the names its URL uses, and ``seed``; it returns a
:class:`Result`: named ``pandas`` frames (what the charts and CSVs show) and the few
scalars its sentences need. The page draws what the recipe returns, the section's
notebook calls the recipe (the same call, recorded), and a lesson question is a
:class:`Measure`: that recipe's result read by a few lines of code. One computation,
three readers, so they cannot drift apart.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ParamSpec, Protocol, TypeVar, overload

import numpy as np
import pandas as pd

from resviz.settings import grouped
from resviz.words.seeds import seeds_answer


@dataclass(frozen=True)
class Result:
    """A section's data: ``frames`` by name and ``values`` (scalars, short tables).

    Both read as attributes: ``r.weights`` is ``r.frames["weights"]``.

    A recipe run over several seeds (``seeds=3``) returns one Result whose frames
    stack every seed's rows under a ``seed`` column, whose ``runs`` are the
    seeds' own Results (in seed order, ``seeds`` their seeds) and whose values are
    only those every seed gives alike (settings, sizes): a value that differs
    between seeds is read per seed, from ``runs``, never from one seed silently."""

    frames: Mapping[str, pd.DataFrame]
    values: Mapping[str, Any] = field(default_factory=dict)
    runs: tuple[Result, ...] = ()
    seeds: tuple[int, ...] = ()

    def __getattr__(self, name: str) -> Any:
        # Only called for names that are not fields (and during unpickling, before
        # the fields exist: never recurse then).
        d = self.__dict__
        if name.startswith("__") or "frames" not in d:
            raise AttributeError(name)
        if name in d["frames"]:
            return d["frames"][name]
        if name in d.get("values", {}):
            return d["values"][name]
        runs = d.get("runs", ())
        if runs and name in runs[0].values:
            raise AttributeError(
                f"{name!r} differs between the seeds {list(d['seeds'])}: read it from "
                "each of r.runs (resviz.words.seeds words what they agree on)"
            )
        raise AttributeError(
            f"no frame or value {name!r}; frames: {sorted(d['frames'])}, "
            f"values: {sorted(d.get('values', {}))}"
        )

    def __getitem__(self, name: str) -> Any:
        return getattr(self, name)

    @property
    def per_seed(self) -> tuple[Result, ...]:
        """Each seed's own Result (this one alone for a single-seed run)."""
        return self.runs or (self,)


def _same(a: Any, b: Any) -> bool:
    """Whether two values are alike (NaN alike NaN; frames and arrays by content)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, pd.DataFrame | pd.Series) or isinstance(b, pd.DataFrame | pd.Series):
        return type(a) is type(b) and a.equals(b)
    try:
        return bool(a == b)
    except (TypeError, ValueError):  # arrays: ambiguous truth
        try:
            return bool((a == b).all())
        except Exception:  # noqa: BLE001 - not comparable: treat as different
            return False


def combine(runs: Sequence[Result], seeds: Sequence[int]) -> Result:
    """One Result from the seeds' Results: each frame's rows stacked under a ``seed``
    column (first), the values every seed gives alike, and the runs themselves."""
    if len(runs) != len(seeds):
        raise ValueError("one seed per run")
    names = [n for n in runs[0].frames if all(n in r.frames for r in runs)]
    names += [n for r in runs for n in r.frames if n not in names]
    frames = {}
    for name in names:
        have = [(s, r.frames[name]) for s, r in zip(seeds, runs, strict=True) if name in r.frames]
        if any("seed" in df.columns for _, df in have):
            raise ValueError(f"frame {name!r} has a seed column of its own")
        # One concatenation and one new column: a copy per seed of a wide frame (a
        # 100-column matrix) costs more than the section's own computation.
        out = pd.concat([df for _, df in have], ignore_index=True)
        out.insert(0, "seed", np.repeat([int(s) for s, _ in have], [len(df) for _, df in have]))
        frames[name] = out
    first = runs[0].values
    values = {
        k: v for k, v in first.items() if all(k in r.values and _same(v, r.values[k]) for r in runs)
    }
    return Result(frames, values, tuple(runs), tuple(int(s) for s in seeds))


@dataclass(frozen=True)
class Answer:
    """A lesson question answered from a recipe's result: ``answer`` is one of the
    question's choices; ``sentence`` states the measured numbers behind it."""

    answer: str
    sentence: str


def split_seeds(frames: Mapping[str, pd.DataFrame], seeds: Sequence[int]) -> Result:
    """The Result over ``seeds`` of frames that hold every seed's rows under a
    ``seed`` column (first): what :func:`combine` gives from the seeds' own Results,
    which are these rows seed by seed."""
    rows = {k: df["seed"].to_numpy() for k, df in frames.items()}
    if any(list(df.columns[:1]) != ["seed"] for df in frames.values()):
        raise ValueError("every frame's first column must be its seed")
    runs = [
        Result(
            {
                k: df.iloc[np.flatnonzero(rows[k] == s), 1:].reset_index(drop=True)
                for k, df in frames.items()
            }
        )
        for s in seeds
    ]
    return Result(dict(frames), {}, tuple(runs), tuple(int(s) for s in seeds))


Recipe = Callable[..., Result]

P = ParamSpec("P")
R = TypeVar("R", bound=Result)

# Every recipe by its dotted name under resviz.recipes ("gradients.per_layer"): the
# only way the app turns a name into a function (a name never comes from a user).
RECIPES: dict[str, Recipe] = {}

MAX_SEEDS = 10
# How many seeds a section runs by default: 3 where one seed takes under a second on
# a 2-core CPU (the spread costs little), 1 where a seed trains (a run per seed).
SEEDS_AT_INIT = 3
SEEDS_TRAINING = 1


class _SeededRecipe(Protocol[P]):
    """What a type checker sees of a recipe over seeds (``@recipe``, ``@recipe(seeds=N)``):
    the one-seed function's parameters, ``seeds=N`` besides them, ``.one`` and
    ``.batched``.

    A ParamSpec cannot gain a keyword parameter (PEP 612: ``Concatenate`` adds
    positional ones only), so ``seeds`` is typed by a second overload: a call without
    ``seeds`` is checked against the function's own parameters; a call with
    ``seeds=N`` is checked for ``seeds`` only (its other keywords are not checked)."""

    one: Callable[P, Result]
    batched: Callable[..., Result | None] | None

    @overload
    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> Result: ...
    @overload
    def __call__(self, *args: Any, seeds: int, **kwargs: Any) -> Result: ...


@overload
def recipe(fn: Callable[P, Result], /, *, seeds: int = ...) -> _SeededRecipe[P]: ...
@overload
def recipe(fn: Callable[P, R], /, *, seeds: None) -> Callable[P, R]: ...
@overload
def recipe(fn: None = ..., /, *, seeds: None) -> Callable[[Callable[P, R]], Callable[P, R]]: ...
@overload
def recipe(
    fn: None = ..., /, *, seeds: int = ...
) -> Callable[[Callable[P, Result]], _SeededRecipe[P]]: ...
def recipe(
    fn: Recipe | None = None,
    /,
    *,
    seeds: int | None = SEEDS_AT_INIT,
) -> Any:
    """Register a section recipe under ``<module>.<function>``.

    ``fn`` is written for one seed (its ``seed``). With ``seeds`` (the default
    count) the registered recipe also takes ``seeds=N`` and runs seeds ``seed`` to
    ``seed + N - 1`` (:func:`combine`; ``recipe.one`` is the one-seed function).
    ``seeds=None``: the section's numbers do not depend on the seed (a formula,
    a fixed model's weights): no ``seeds`` setting, and a test checks that two
    seeds give the same frames.

    A group of settings (``stack: Stack = Stack()``) is taken whole or by its fields'
    names: ``f(Stack(depth=30))`` is ``f(depth=30)`` (:func:`resviz.settings.grouped`).

    A recipe may set ``.batched``: ``batched(seeds, **settings)`` computes the seeds
    together and returns what :func:`combine` would (:func:`split_seeds` makes it
    from frames over the seeds), or None where it cannot; it must give the same
    numbers as one run per seed. Several seeds without a progress callback use it.

    Typed by the overloads above: the decorated function keeps its parameters and
    its return type (``_SeededRecipe`` over seeds)."""

    def register(fn: Recipe) -> Recipe:
        fn = grouped(fn)
        out = fn if seeds is None else _over_seeds(fn, seeds)
        RECIPES[recipe_name(out)] = out
        return out

    return register if fn is None else register(fn)


def _over_seeds(one: Recipe, default: int) -> Recipe:
    sig = inspect.signature(one)
    if "seed" not in sig.parameters:
        raise TypeError(f"{one.__name__}: a recipe over seeds takes seed")
    takes = set(sig.parameters)
    params = []
    for p in sig.parameters.values():
        if p.name == "seed":
            params.append(
                inspect.Parameter("seeds", p.KEYWORD_ONLY, default=default, annotation="int")
            )
        params.append(p)

    normalize = getattr(one, "normalize", _by_name)

    @functools.wraps(one)
    def run(*args: Any, seeds: int = default, seed: int = 0, **kw: Any) -> Result:
        n = check_seeds(seeds)
        kw = normalize(args, kw)  # the groups built once, for batched and each seed
        progress = kw.pop("progress", None)
        should_stop = kw.pop("should_stop", None)
        batched = run.batched  # type: ignore[attr-defined]
        if n > 1 and batched is not None and progress is None:
            together = batched(list(range(seed, seed + n)), **kw)
            if together is not None:
                return together
        done: list[Result] = []
        for k in range(n):
            extra: dict[str, Any] = {}
            if "progress" in takes and progress is not None:
                extra["progress"] = _seed_progress(progress, done, seed, k, n)
            if "should_stop" in takes and should_stop is not None:
                extra["should_stop"] = should_stop
            done.append(one(**kw, seed=seed + k, **extra))
            if should_stop is not None and k < n - 1 and should_stop():
                break
        return combine(done, range(seed, seed + len(done)))

    run.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
    run.one = one  # type: ignore[attr-defined]
    run.batched = None  # type: ignore[attr-defined]
    return run


def _by_name(args: tuple[Any, ...], kw: dict[str, Any]) -> dict[str, Any]:
    if args:
        raise TypeError("a recipe without groups of settings takes its settings by name")
    return kw


def check_seeds(seeds: Any) -> int:
    """``seeds`` as a count from 1 to :data:`MAX_SEEDS`, or a ValueError saying so."""
    if isinstance(seeds, bool) or not isinstance(seeds, int) or not 1 <= seeds <= MAX_SEEDS:
        raise ValueError(f"seeds must be a whole number from 1 to {MAX_SEEDS}, not {seeds!r}")
    return seeds


def _seed_progress(
    progress: Callable[..., None], done: list[Result], seed: int, k: int, n: int
) -> Callable[..., None]:
    """Seed ``k`` of ``n``'s progress as the whole run's: its partial result beside
    the finished seeds' (a partial frame gets its ``seed`` column), its steps
    counted after theirs."""

    def report(partial: Any, step: int, total: int) -> None:
        if isinstance(partial, Result):
            partial = combine([*done, partial], range(seed, seed + len(done) + 1))
        elif isinstance(partial, pd.DataFrame) and n > 1:
            partial = partial.assign(seed=seed + k)
        progress(partial, k * total + step, n * total)

    return report


def recipe_name(fn: Recipe) -> str:
    """``<topic>.<function>``: a recipe of ``resviz/<topic>/recipes.py`` goes by its
    topic, as ``rv.recipes.<topic>`` names it (a recipe defined elsewhere, in a test
    or a notebook, by its whole module)."""
    module = fn.__module__
    if module.startswith("resviz.") and module.endswith(".recipes"):
        module = module.removeprefix("resviz.").removesuffix(".recipes")
    return f"{module}.{fn.__name__}"


def settings_of(fn: Recipe) -> dict[str, Any]:
    """A recipe's settings and their defaults (keyword parameters, ``device`` and
    callbacks left out)."""
    return {
        name: p.default
        for name, p in inspect.signature(fn).parameters.items()
        if p.kind is p.KEYWORD_ONLY and name not in NOT_SETTINGS
    }


# Keyword parameters a recipe may take that are not settings: where it runs, and
# the callbacks of a long run. A notebook's call leaves them out.
NOT_SETTINGS = frozenset({"device", "progress", "should_stop"})


@dataclass(frozen=True)
class Measure:
    """A lesson question's measurement: ``recipe`` run at the step's settings, then
    ``read`` (a few lines) turns its result into one of ``choices``."""

    name: str
    recipe: Recipe
    read: Callable[[Result], Answer]
    choices: tuple[str, ...]

    def at(self, settings: Mapping[str, Any], seed: int = 0) -> Answer:
        """The answer at ``settings`` (the recipe's names, ``seeds`` included;
        others ignored), from seed ``seed`` on."""
        known = settings_of(self.recipe)
        return self.over(
            self.recipe(**{k: v for k, v in settings.items() if k in known}, seed=seed)
        )

    def over(self, result: Result) -> Answer:
        """The answer from a result over one or more seeds, by the rule every caption
        uses (:attr:`resviz.words.seeds.Agreement.agreed`: all seeds up to 3, all but
        one beyond): the seeds' answer with how many give it ("In 4 of 5 seeds: plain
        (not in seed 2)") and the numbers of the first seed that gives it; where they
        do not agree, :data:`resviz.words.seeds.SEEDS_DISAGREE` (no choice), how they split, and the
        first seed's numbers. One seed's answer says it is one run; a recipe without
        seeds answers as its reading says."""
        if not result.seeds:  # a recipe without seeds: its numbers depend on none
            return self.read(result)
        answers = [self.read(r) for r in result.per_seed]
        return Answer(
            *seeds_answer([a.answer for a in answers], [a.sentence for a in answers], result.seeds)
        )


MEASURES: dict[str, Measure] = {}


def measure(
    name: str, of: Recipe, choices: tuple[str, ...]
) -> Callable[[Callable[[Result], Answer]], Callable[[Result], Answer]]:
    """Register ``read`` as the lesson measure ``name`` on the recipe ``of``."""

    def register(read: Callable[[Result], Answer]) -> Callable[[Result], Answer]:
        MEASURES[name] = Measure(name, of, read, choices)
        return read

    return register
