"""The skip-connections page's configurations, from its settings by URL name.

The page (from its widgets) and the workshop measures (from a lesson's settings
over the page's defaults) build their configs here, so both measure the same
stacks. Each builder raises ``ValueError`` with the config's message for a
combination it refuses (e.g. concat joined before the activation).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import resviz as rv
from ui.specs import skip_connections as S


def defaults(settings: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The page's default settings, with ``settings`` (URL names) over them."""
    values = {p.name: p.default for p in S.SPEC.params}
    for name, value in (settings or {}).items():
        decl = S.SPEC.param(name)
        if decl is None:
            raise ValueError(f"skip_connections has no setting {name!r}")
        values[name] = decl.check(value)
    return values


def _block(v: Mapping[str, Any]) -> dict[str, Any]:
    """The block settings every experiment on the page shares."""
    return dict(
        activation=v["act"],
        init=v["init"],
        alpha=float(v["alpha"]),
        alpha_learnable=bool(v["learnable"]),
        join=v["join"],
    )


def stack_config(v: Mapping[str, Any], seed: int) -> rv.StackConfig:
    """The stack of the Stack, Signal and Paths sections."""
    kw = dict(
        _block(v),
        residual=v["mode"],
        mismatch=v["mismatch"],
        concat_project=bool(v["project"]),
        seed=seed,
    )
    if v["preset"] == S.PRESETS[1]:
        return rv.StackConfig(widths=S.SEED_WIDTHS, **kw)
    return rv.StackConfig(depth=int(v["depth"]), width=int(v["width"]), **kw)


def trained_residual(v: Mapping[str, Any]) -> str:
    """The shortcut of the trained residual stacks: the page's, or add where it is none."""
    return v["mode"] if v["mode"] != "none" else "add"


def degradation_config(v: Mapping[str, Any]) -> rv.DegradationConfig:
    """The four stacks of the Degradation section (width 32)."""
    return rv.DegradationConfig(
        shallow=int(v["shallow"]),
        deep=int(v["deep"]),
        width=32,
        residual=trained_residual(v),
        steps=int(v["steps"]),
        lr=float(v["lr"]),
        **_block(v),
    )


def lesion_config(v: Mapping[str, Any]) -> rv.LesionConfig:
    """The two stacks of the Lesion section."""
    return rv.LesionConfig(
        depth=int(v["l_depth"]), residual=trained_residual(v), steps=int(v["l_steps"]), **_block(v)
    )
