"""The skip-connections page's settings as configs: the one place where its URL
values (``mode``, ``learnable``, ``l_depth``, ...) become the :class:`StackConfig` of
the Stack, Signal and Paths sections and the configs of the two trained sections
(:class:`DegradationConfig`, :class:`LesionConfig`). A stack that cannot be built
raises ``ValueError`` with the reason.
"""

from __future__ import annotations

from typing import Any

from resviz.config import StackConfig
from resviz.shortcuts import degradation as G

# The stack presets, as the page's URL names them (ui/specs/skip_connections.py).
SEED_WIDTHS = (25, 25, 43, 43, 54, 54)
PRESETS = ("custom depth x width", "seed network 25,25,43,43,54,54")
# The width of every trained stack of the Degradation section.
DEGRADATION_WIDTH = 32


def _block(act: str, init: str, join: str, alpha: float, learnable: bool) -> dict[str, Any]:
    """The block settings every section of the page shares, as config fields."""
    return dict(
        activation=act,
        init=init,
        alpha=float(alpha),
        alpha_learnable=bool(learnable),
        join=join,
    )


def stack_config(
    *,
    preset: str = PRESETS[0],
    depth: int = 16,
    width: int = 64,
    act: str = "relu",
    init: str = "default",
    mode: str = "add",
    join: str = "after_act",
    mismatch: str = "skip",
    alpha: float = 0.0,
    learnable: bool = True,
    project: bool = False,
    seed: int = 0,
) -> StackConfig:
    """The stack of the Stack, Signal and Paths sections (weights from ``seed``).
    Raises ``ValueError`` with the reason for a stack that cannot be built."""
    if preset not in PRESETS:
        raise ValueError(f"preset must be one of {PRESETS}, got {preset!r}.")
    kw: dict[str, Any] = dict(
        _block(act, init, join, alpha, learnable),
        residual=mode,
        mismatch=mismatch,
        concat_project=bool(project),
        seed=int(seed),
    )
    if preset == PRESETS[1]:
        return StackConfig(widths=SEED_WIDTHS, **kw)
    return StackConfig(depth=int(depth), width=int(width), **kw)


def trained_residual(mode: str) -> str:
    """The shortcut of the trained residual stacks: ``mode``, or add where it is none
    (a plain stack has nothing to compare with)."""
    return mode if mode != "none" else "add"


def degradation_config(
    *,
    act: str = "relu",
    init: str = "default",
    mode: str = "add",
    join: str = "after_act",
    alpha: float = 0.0,
    learnable: bool = True,
    shallow: int = 4,
    deep: int = 16,
    steps: int = 400,
    lr: str | float = "0.003",
) -> G.DegradationConfig:
    """The four stacks of the Degradation section (width 32)."""
    return G.DegradationConfig(
        shallow=int(shallow),
        deep=int(deep),
        width=DEGRADATION_WIDTH,
        residual=trained_residual(mode),  # type: ignore[arg-type]
        steps=int(steps),
        lr=float(lr),
        **_block(act, init, join, alpha, learnable),
    )


def lesion_config(
    *,
    act: str = "relu",
    init: str = "default",
    mode: str = "add",
    join: str = "after_act",
    alpha: float = 0.0,
    learnable: bool = True,
    l_depth: int = 16,
    l_steps: int = 400,
) -> G.LesionConfig:
    """The plain and the residual stack of the Lesion section."""
    return G.LesionConfig(
        depth=int(l_depth),
        residual=trained_residual(mode),  # type: ignore[arg-type]
        steps=int(l_steps),
        **_block(act, init, join, alpha, learnable),
    )


__all__ = [
    "DEGRADATION_WIDTH",
    "PRESETS",
    "SEED_WIDTHS",
    "degradation_config",
    "lesion_config",
    "stack_config",
    "trained_residual",
]
