"""The skip-connections page's settings, each declared once (:mod:`resviz.settings`),
and the configs they become: the block every section builds (:class:`Block`), the
stack of the Stack, Signal and Paths sections (:class:`Stack`: the block and the
stack's shape, :meth:`Stack.config`), and the two trained sections' runs
(:class:`DegradationRun`, :class:`LesionRun`: ``.config(block)``). The recipes
(:mod:`resviz.shortcuts.recipes`) take these groups; the page draws its widgets from
them; a notebook builds them::

    rv.recipes.shortcuts.signal(rv.shortcuts.Stack(mode="scaled", alpha=0.5), seed=1)

A stack that cannot be built raises ``ValueError`` with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from resviz.config import StackConfig
from resviz.settings import Settings, choice, decimal, flag, whole
from resviz.shortcuts import degradation as G

# The stack presets, as the page's URL names them.
SEED_WIDTHS = (25, 25, 43, 43, 54, 54)
PRESETS = ("custom depth x width", "seed network 25,25,43,43,54,54")
# The width of every trained stack of the Degradation section.
DEGRADATION_WIDTH = 32

ACTIVATIONS = ("relu", "gelu", "tanh", "sigmoid")
INITS = ("default", "kaiming", "xavier", "small")
SHORTCUTS = ("none", "add", "scaled", "concat")
JOINS = ("after_act", "before_act")
MISMATCHES = ("skip", "project")
LEARNING_RATES = ("0.001", "0.003", "0.01", "0.03")


@dataclass(frozen=True)
class Block(Settings):
    """The block settings every section of the page shares: the activation, the init,
    the shortcut, where it joins, and the scale ``λ`` of the scaled shortcut."""

    act: str = choice("relu", ACTIVATIONS, label="Activation")
    init: str = choice(
        "default",
        INITS,
        label="Init",
        help="default: PyTorch's nn.Linear init. kaiming: normal with ReLU's gain, zero "
        "bias. xavier: normal, zero bias. small: each branch's last layer (weight and "
        "bias) scaled by 0.01.",
    )
    mode: str = choice(
        "add",
        SHORTCUTS,
        label="Shortcut",
        help="none: y = f(x). add: y = x + f(x). scaled: y = x + λ f(x). concat: "
        "y = [x, f(x)], or P [x, f(x)] projected back to the width.",
    )
    join: str = choice(
        "after_act",
        JOINS,
        label="Where the shortcut joins",
        help="after_act: y = x + act(Wx + b). before_act: y = act(x + Wx + b) "
        "(scaled: act(x + λ (Wx + b))), the original ResNet placement (add and scaled "
        "only).",
    )
    alpha: float = decimal(0.0, 0.0, 2.0, step=0.05, label="λ (scaled: y = x + λ f(x))")
    learnable: bool = flag(True, label="λ learnable (λ = 0, learnable: ReZero)")

    def block_fields(self) -> dict[str, Any]:
        """The block's settings as config fields (of a StackConfig or a trained
        section's config)."""
        return dict(
            activation=self.act,
            init=self.init,
            alpha=float(self.alpha),
            alpha_learnable=bool(self.learnable),
            join=self.join,
        )

    @property
    def trained_residual(self) -> str:
        """The shortcut of the trained residual stacks: ``mode``, or add where it is
        none (a plain stack has nothing to compare with)."""
        return self.mode if self.mode != "none" else "add"


@dataclass(frozen=True)
class Stack(Block):
    """The stack of the Stack, Signal and Paths sections: the block (:class:`Block`'s
    settings) and the stack's shape, either ``depth`` blocks of ``width`` or the
    preset of widths :data:`SEED_WIDTHS`."""

    preset: str = choice(PRESETS[0], PRESETS, label="Network")
    depth: int = whole(16, 1, 64, label="Depth (blocks)")
    width: int = whole(64, 2, 256, label="Width")
    mismatch: str = choice(
        "skip",
        MISMATCHES,
        label="Where widths differ",
        help="skip: no shortcut in that block. project: a bias-free linear shortcut "
        "P x (ResNet option B). Only the preset of widths "
        f"{', '.join(map(str, SEED_WIDTHS))} has such blocks.",
    )
    project: bool = flag(False, label="concat: project back to the width")

    def config(self, seed: int = 0) -> StackConfig:
        """The stack as a :class:`resviz.StackConfig`, weights from ``seed``. Raises
        ``ValueError`` with the reason for a stack that cannot be built."""
        if self.preset not in PRESETS:
            raise ValueError(f"preset must be one of {PRESETS}, got {self.preset!r}.")
        kw: dict[str, Any] = dict(
            self.block_fields(),
            residual=self.mode,
            mismatch=self.mismatch,
            concat_project=bool(self.project),
            seed=int(seed),
        )
        if self.preset == PRESETS[1]:
            return StackConfig(widths=SEED_WIDTHS, **kw)
        return StackConfig(depth=int(self.depth), width=int(self.width), **kw)


@dataclass(frozen=True)
class DegradationRun(Settings):
    """The Degradation section's run: the shallow and the deep stack's blocks, the
    training steps and Adam's learning rate."""

    shallow: int = whole(4, 1, 16, label="Shallow (blocks)")
    deep: int = whole(16, 2, 64, label="Deep (blocks)")
    steps: int = whole(400, 20, 2000, step=20, label="Steps")
    lr: str = choice("0.003", LEARNING_RATES, label="Learning rate")

    def config(self, block: Block = Block()) -> G.DegradationConfig:
        """The four stacks of the Degradation section (width 32) with ``block``'s
        settings."""
        return G.DegradationConfig(
            shallow=int(self.shallow),
            deep=int(self.deep),
            width=DEGRADATION_WIDTH,
            residual=block.trained_residual,  # type: ignore[arg-type]
            steps=int(self.steps),
            lr=float(self.lr),
            **block.block_fields(),
        )


@dataclass(frozen=True)
class LesionRun(Settings):
    """The Lesion section's run: the stacks' blocks and the training steps."""

    l_depth: int = whole(16, 4, 48, label="Blocks")
    l_steps: int = whole(400, 100, 2000, step=100, label="Steps")

    def config(self, block: Block = Block()) -> G.LesionConfig:
        """The plain and the residual stack of the Lesion section with ``block``'s
        settings."""
        return G.LesionConfig(
            depth=int(self.l_depth),
            residual=block.trained_residual,  # type: ignore[arg-type]
            steps=int(self.l_steps),
            **block.block_fields(),
        )


__all__ = [
    "ACTIVATIONS",
    "DEGRADATION_WIDTH",
    "INITS",
    "JOINS",
    "LEARNING_RATES",
    "MISMATCHES",
    "PRESETS",
    "SEED_WIDTHS",
    "SHORTCUTS",
    "Block",
    "DegradationRun",
    "LesionRun",
    "Stack",
]
