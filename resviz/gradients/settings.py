"""The gradient-flow page's settings, each declared once (:mod:`resviz.settings`): the
stack every section but the shattered gradients builds, the shortcut scale ``λ``, and
each section's own. The recipes (:mod:`resviz.gradients.recipes`) take these groups;
the page draws its widgets from them; a notebook builds them::

    rv.recipes.gradients.per_layer(rv.gradients.Stack(depth=30), seed=1)
"""

from __future__ import annotations

from dataclasses import dataclass

from resviz.config import StackConfig
from resviz.settings import Settings, choice, decimal, flag, whole

ACTIVATIONS = ("tanh", "relu", "gelu", "sigmoid")
INITS = ("default", "kaiming", "xavier", "small")
NORMS = ("none", "layer", "rms", "batch")
LEARNING_RATES = ("1e-4", "3e-4", "1e-3", "3e-3", "1e-2")


@dataclass(frozen=True)
class Stack(Settings):
    """A stack of MLP blocks (:class:`resviz.StackConfig`), as the page sets it."""

    depth: int = whole(10, 1, 100, label="Depth (blocks)")
    width: int = whole(64, 2, 512, label="Width")
    act: str = choice("tanh", ACTIVATIONS, label="Activation")
    init: str = choice("default", INITS, label="Init")
    norm: str = choice("none", NORMS, label="Norm (pre)")

    def config(self, seed: int, residual: str = "add") -> StackConfig:
        """The :class:`resviz.StackConfig` it describes, weights from ``seed``."""
        return StackConfig(
            depth=self.depth,
            width=self.width,
            activation=self.act,  # type: ignore[arg-type]
            init=self.init,  # type: ignore[arg-type]
            norm=self.norm,  # type: ignore[arg-type]
            residual=residual,  # type: ignore[arg-type]
            seed=seed,
        )


@dataclass(frozen=True)
class Scale(Settings):
    """The shortcut scale of He et al. 2016's ``λ·x + f(x)`` (URL name ``l``)."""

    l: float = decimal(0.5, 0.0, 1.5, step=0.05, label="λ (shortcut scale)")  # noqa: E741


@dataclass(frozen=True)
class Derivation(Settings):
    """The Derivation section's block to inspect and its scaled stack."""

    block: int = whole(1, 1, 100, label="Block to inspect (1 = input side)")
    L: int = whole(30, 1, 100, label="L (blocks) for this experiment")  # noqa: N815
    small: bool = flag(True, label="near-zero branches")


@dataclass(frozen=True)
class Training(Settings):
    """The Training section's run: steps, Adam's learning rate, and whether
    ``λ·x + f(x)`` trains beside the plain and residual stacks."""

    steps: int = whole(200, 20, 1000, step=10, label="Steps")
    lr: str = choice("1e-3", LEARNING_RATES, label="Learning rate")
    train_scaled: bool = flag(False, label="also train λ·x + f(x)")


@dataclass(frozen=True)
class Shattered(Settings):
    """The Shattered section's nets: with batch normalization or not."""

    bn: bool = flag(True, label="batch normalization (recommended)")
