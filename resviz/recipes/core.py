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

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd


@dataclass(frozen=True)
class Result:
    """A section's data: ``frames`` by name and ``values`` (scalars, short tables).

    Both read as attributes: ``r.weights`` is ``r.frames["weights"]``."""

    frames: Mapping[str, pd.DataFrame]
    values: Mapping[str, Any] = field(default_factory=dict)

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
        raise AttributeError(
            f"no frame or value {name!r}; frames: {sorted(d['frames'])}, "
            f"values: {sorted(d.get('values', {}))}"
        )

    def __getitem__(self, name: str) -> Any:
        return getattr(self, name)


@dataclass(frozen=True)
class Answer:
    """A lesson question answered from a recipe's result: ``answer`` is one of the
    question's choices; ``sentence`` states the measured numbers behind it."""

    answer: str
    sentence: str


Recipe = Callable[..., Result]

# Every recipe by its dotted name under resviz.recipes ("gradients.per_layer"): the
# only way the app turns a name into a function (a name never comes from a user).
RECIPES: dict[str, Recipe] = {}


def recipe(fn: Recipe) -> Recipe:
    """Register a section recipe under ``<module>.<function>``."""
    RECIPES[recipe_name(fn)] = fn
    return fn


def recipe_name(fn: Recipe) -> str:
    return f"{fn.__module__.removeprefix('resviz.recipes.')}.{fn.__name__}"


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
        """The answer at ``settings`` (the recipe's names; others ignored)."""
        known = settings_of(self.recipe)
        return self.read(
            self.recipe(**{k: v for k, v in settings.items() if k in known}, seed=seed)
        )


MEASURES: dict[str, Measure] = {}


def measure(name: str, of: Recipe, choices: tuple[str, ...]) -> Callable:
    """Register ``read`` as the lesson measure ``name`` on the recipe ``of``."""

    def register(read: Callable[[Result], Answer]) -> Callable[[Result], Answer]:
        MEASURES[name] = Measure(name, of, read, choices)
        return read

    return register
