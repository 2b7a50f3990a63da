"""The skip-connections page's configurations, from its settings by URL name.

Kept only for the old ``ui/lesson_measures.py`` (to be deleted with it): the page, its
notebooks and its lesson measures build their configs with the builders of
``resviz.recipes.shortcuts``, which these functions call.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import resviz as rv
from resviz.recipes import shortcuts as R
from ui.specs import skip_connections as S

_BLOCK = ("act", "init", "mode", "join", "alpha", "learnable")


def defaults(settings: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The page's default settings, with ``settings`` (URL names) over them."""
    values = {p.name: p.default for p in S.SPEC.params}
    for name, value in (settings or {}).items():
        decl = S.SPEC.param(name)
        if decl is None:
            raise ValueError(f"skip_connections has no setting {name!r}")
        values[name] = decl.check(value)
    return values


def _pick(v: Mapping[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    return {n: v[n] for n in names}


def stack_config(v: Mapping[str, Any], seed: int) -> rv.StackConfig:
    """The stack of the Stack, Signal and Paths sections."""
    names = (*_BLOCK, "preset", "depth", "width", "mismatch", "project")
    return R.stack_config(**_pick(v, names), seed=seed)


def degradation_config(v: Mapping[str, Any]) -> rv.DegradationConfig:
    """The four stacks of the Degradation section (width 32)."""
    return R.degradation_config(**_pick(v, (*_BLOCK, "shallow", "deep", "steps", "lr")))


def lesion_config(v: Mapping[str, Any]) -> rv.LesionConfig:
    """The two stacks of the Lesion section."""
    return R.lesion_config(**_pick(v, (*_BLOCK, "l_depth", "l_steps")))
