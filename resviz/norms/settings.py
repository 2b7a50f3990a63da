"""The normalization page's settings, each declared once (:mod:`resviz.settings`): the
input batch the first three sections draw, the Invariances section's constants, the
Pre-LN vs Post-LN encoders, the two training runs and the Cost section's input size.
The recipes (:mod:`resviz.norms.recipes`) take these groups; the page draws its widgets
from them; a notebook builds them::

    rv.recipes.norms.four_views(rv.norms.Inputs(d="16"), seed=1)

A choice holds its option as the page's widget does, as text (``d="64"``); the
recipes convert it (a notebook may also pass ``d=64``).
"""

from __future__ import annotations

from dataclasses import dataclass

from resviz.settings import Settings, choice, decimal, flag, whole

# The weight inits of Xiong et al.'s encoders (:mod:`resviz.norms.prepost`): theirs,
# Xavier-normal, and PyTorch's default Linear init.
XIONG_INITS = ("xavier", "default")


@dataclass(frozen=True)
class Inputs(Settings):
    """The input batch of the Four views, Textbook and Invariances sections: Gaussian
    ``(batch, tokens, d)``, the first half of the features multiplied by ``big``, the
    second by ``small``."""

    batch: int = whole(8, 2, 16, label="batch size")
    tokens: int = whole(16, 2, 32, label="tokens per sample")
    d: str = choice("64", ("16", "32", "64", "128"), label="features d")
    big: str = choice("10", ("1", "10", "100"), label="first half x")
    small: str = choice("0.1", ("1", "0.1", "0.01"), label="second half x")

    def sizes(self) -> tuple[int, int, int]:
        """``(batch, tokens, d)`` as whole numbers."""
        return int(self.batch), int(self.tokens), int(self.d)

    def scales(self) -> tuple[float, float]:
        """``(big, small)``: the factors of the two halves of the features."""
        return float(self.big), float(self.small)


@dataclass(frozen=True)
class Transform(Settings):
    """The Invariances section's constants: what is added to, and multiplied into,
    ``h = x W^T``."""

    shift: float = decimal(5.0, 0.5, 20.0, step=0.5, label="shift constant")
    scale: float = decimal(3.0, 0.5, 10.0, step=0.5, label="scale constant")


@dataclass(frozen=True)
class PrePost(Settings):
    """The Post-LN and Pre-LN encoders at init (Xiong et al. 2020)."""

    layers: int = whole(8, 1, 24, label="layers")
    d_model: str = choice("64", ("32", "64", "128"), label="d_model")
    init: str = choice(
        "xavier",
        XIONG_INITS,
        label="weight init",
        help="xavier: Xiong et al.'s setting. default: PyTorch's Linear init, "
        "U(±1/sqrt(fan_in)), whose attention and FFN weights have a smaller std than "
        "Xavier's (1/sqrt(3 fan_in) against sqrt(2/(fan_in + fan_out))), so each sublayer "
        "adds less to the Pre-LN stream.",
    )


# Warm-up's defaults (issue 37: a default view within seconds): a quarter of the old 8
# layers x 150 steps (warm-up 50), with its finding at every seed 0 to 9: Post-LN
# without warm-up stays at chance (log 64) and ends above the run with it; Pre-LN
# learns the copy without warm-up and ends below the run with it.
@dataclass(frozen=True)
class Warmup(Settings):
    """The Warm-up section's run: the encoders' depth, Adam's peak rate, the steps and
    the warm-up's length."""

    w_layers: int = whole(6, 2, 12, label="layers")
    w_lr: str = choice("0.015", ("0.001", "0.005", "0.015", "0.03"), label="peak learning rate")
    w_steps: int = whole(50, 20, 300, step=10, label="steps")
    w_warm: int = whole(40, 5, 150, step=5, label="warm-up steps")


# Stability's defaults: the rate at which the stacks part (those without a norm blow
# up, those with one after each block train on); the tutorial notebook's own setting
# is TUTORIAL_STABILITY, a button away on the page.
@dataclass(frozen=True)
class Stability(Settings):
    """The Stability section's run: the norm, its place, Adam's rate, the steps, and
    whether the other norm types or the other placement train beside it."""

    s_norm: str = choice("layer", ("layer", "rms", "batch"), label="norm type")
    s_pos: str = choice("post", ("pre", "post"), label="placement", radio=True)
    s_lr: str = choice("0.1", ("0.0001", "0.001", "0.01", "0.1"), label="learning rate")
    s_steps: int = whole(60, 20, 300, step=10, label="Adam steps")
    s_norms: bool = flag(False, label="add residual + the other norm types")
    s_place: bool = flag(False, label="add residual + the other placement")


# The Stability section as the tutorial notebook on transformer components ran its 2x2
# (LayerNorm before each block, Adam at 0.001, 100 steps).
TUTORIAL_STABILITY = Stability(s_pos="pre", s_lr="0.001", s_steps=100)


@dataclass(frozen=True)
class Timing(Settings):
    """The Cost section's input size."""

    t_size: str = choice(
        "16x128x256",
        ("16x128x256", "16x128x512", "16x256x1024"),
        label="input size (batch x tokens x d)",
    )
