"""What each page's URL may carry: its sections and its settings.

A setting is declared once, in the library: a field of a group of settings
(:mod:`resviz.settings`) that the section's recipe takes (``resviz/<topic>/settings.py``),
or, for what only the page uses (which column a chart shows), a group declared beside
the page's sections here. A page's spec (``ui/specs/<page>.py``: ``SPEC``) names its
sections, each section's recipe and those page groups; its settings are read from them
(:attr:`PageSpec.params`). The page's widgets, its deep links, the URL checks and the
workshop lessons all read these, so a value a lesson names is checked exactly as the
page's widget would check it from the URL.

A setting that recipes of several sections take (or a page group declared for no one
section) is shared by the page's sections; one only one section takes is that section's.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from resviz.settings import (
    Declared,
    Setting,
    Settings,
    choice,
    fmt,  # noqa: F401 - a value as the URL carries it
    whole,
)
from resviz.settings import InvalidSetting as InvalidParam  # noqa: F401 - the app's name


@dataclass(frozen=True)
class Param:
    """One of a page's settings as its URL and its lessons see it: the library's
    declaration (:class:`resviz.settings.Setting`), its default, and the section that
    draws it (None: every section that uses it)."""

    name: str
    setting: Setting
    default: Any
    section: str | None = None

    def __getattr__(self, name: str) -> Any:  # kind, lo, hi, step, options, limit, label
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.setting, name)

    def parse(self, raw: str) -> Any:
        """The value ``raw`` (URL text) stands for, or :class:`InvalidParam`."""
        return self.setting.parse(raw)

    def check(self, value: Any) -> Any:
        """A Python value (a lesson's TOML value) checked as its URL text would be."""
        return self.setting.check(value)


def _params(groups: Mapping[str | None, tuple[type[Settings], ...]]) -> tuple[Param, ...]:
    """Each field of the groups, in order, with its section (a field that two sections'
    groups hold, or a group under None, is shared: section None)."""
    where: dict[str, set[str | None]] = {}
    found: dict[str, Declared] = {}
    for section, classes in groups.items():
        for cls in classes:
            for d in cls.declared():
                if d.name in found and found[d.name] != d:
                    raise ValueError(f"{d.name} is declared twice, differently")
                found[d.name] = d
                where.setdefault(d.name, set()).add(section)
    return tuple(
        Param(n, d.setting, d.default, next(iter(where[n])) if len(where[n]) == 1 else None)
        for n, d in found.items()
    )


@dataclass(frozen=True)
class PageSpec:
    """A page's sections, each section's recipe and the page's own groups of settings.

    ``recipes`` maps a section to the dotted name of its recipe under
    ``resviz.recipes`` (``"gradients.per_layer"``); ``groups`` maps a section (None:
    the page) to groups only the page uses. The page's settings are the fields of the
    groups its recipes take and of those (``seed`` is the sidebar's), so a URL, a
    lesson step and a notebook call name a setting the same way."""

    sections: tuple[str, ...] = ()
    recipes: Mapping[str, str] = field(default_factory=dict)
    groups: Mapping[str | None, tuple[type[Settings], ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for section in (*self.recipes, *self.groups):
            if section is not None and section not in self.sections:
                raise ValueError(f"{section!r}: no such section")

    @functools.cached_property
    def params(self) -> tuple[Param, ...]:
        """Every setting of the page (read from the recipes once they are registered)."""
        from resviz.recipes import RECIPES

        by_section: dict[str | None, tuple[type[Settings], ...]] = {}
        for section in (*self.sections, None):
            name = self.recipes.get(section) if section is not None else None
            fn = RECIPES[name] if name is not None else None
            taken = tuple(type(g) for g in getattr(fn, "groups", {}).values())
            by_section[section] = (*taken, *self.groups.get(section, ()))
        return _params(by_section)

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)

    @property
    def names(self) -> frozenset[str]:
        return frozenset(p.name for p in self.params)


# The sidebar's settings, on every page. A section runs seeds seed, seed + 1, ...
# (``seeds``; "auto" is the section's own default: 3 where a seed takes under a
# second, 1 where a seed trains; see resviz.recipes).
SEEDS_AUTO = "auto"
SEEDS_OPTIONS = (SEEDS_AUTO, *(str(n) for n in range(1, 11)))


@dataclass(frozen=True)
class Sidebar(Settings):
    """The sidebar's settings, on every page."""

    device: str = choice(
        "auto",
        ("auto", "cpu", "cuda", "mps"),
        label="Device",
        help="auto picks CUDA, then Apple MPS, then CPU. Results match across devices "
        "within float tolerance.",
    )
    seed: int = whole(
        0,
        0,
        1_000_000,
        label="Seed",
        box=True,
        help="The first seed: it sets the weights and the data. Same seed, same numbers.",
    )
    seeds: str = choice(
        SEEDS_AUTO,
        SEEDS_OPTIONS,
        label="Seeds",
        help="How many seeds each section runs (seed, seed + 1, ...): lines show their "
        "median and bands their spread, and a sentence states a direction only when the "
        "seeds agree. auto: 3 where a seed takes under a second, 1 where each seed "
        "trains a model.",
    )


SHARED = PageSpec(groups={None: (Sidebar,)})


def seeds_count(choice: str, default: int) -> int:
    """The sidebar's ``seeds`` choice as a count: ``default`` (the section's) for auto."""
    return default if choice == SEEDS_AUTO else int(choice)
