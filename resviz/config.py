"""Frozen, validated configurations for the two model families resviz builds.

A config is the whole recipe for a model: the same config (seed included) gives
the same weights and the same numbers. Configs are frozen dataclasses so they
hash cleanly as cache keys, and variants come from ``dataclasses.replace``.
Invalid combinations raise ``ValueError`` with a message that says what to
change, the x-transformers / timm habit of failing fast.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Literal, get_args

Activation = Literal["relu", "gelu", "tanh", "sigmoid", "identity"]
NormType = Literal["none", "layer", "rms", "batch"]
NormPosition = Literal["pre", "post"]
Residual = Literal["none", "add", "scaled", "concat"]
Join = Literal["after_act", "before_act"]
Mismatch = Literal["skip", "project"]
Init = Literal["default", "kaiming", "xavier", "small"]
EncoderInit = Literal["default", "xavier"]
BlockKind = Literal["linear", "ffn"]
Positional = Literal["sinusoidal", "learned", "none"]

# Hard ceilings that keep one request from exhausting a shared server. The
# pages apply tighter, configurable budgets on top of these.
MAX_DEPTH = 256
MAX_WIDTH = 4096
MAX_LAYERS = 48
MAX_VOCAB = 100_000
MAX_LEN = 8192
# Positions of a sinusoidal table, words of a sentence.
MAX_POSITIONS = 100_000


# --- validators: the one place that says what a whole number, a number, a choice
# and a flag are, with a message a user can act on. Configs, experiments and the
# page functions all call these.


def check_int(name: str, value: object, lo: int, hi: int) -> int:
    """``value`` if it is a whole number (not a bool) in ``[lo, hi]``, else ``ValueError``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be a whole number, got {value!r}.")
    if not lo <= value <= hi:
        raise ValueError(f"{name}={value} is out of range: choose {lo} to {hi}.")
    return value


def check_float(name: str, value: object, lo: float, hi: float) -> float:
    """``float(value)`` if it is a real number (not a bool) in ``[lo, hi]``; NaN is refused."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} must be a number, got {value!r}.")
    if not (lo <= float(value) <= hi):  # also rejects NaN
        raise ValueError(f"{name}={value} is out of range: choose {lo} to {hi}.")
    return float(value)


def check_positive(name: str, value: object) -> float:
    """``float(value)`` if it is a positive finite number (a learning rate, a scale)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
        raise ValueError(f"{name} must be a positive finite number, got {value!r}.")
    return float(value)


def check_choice(name: str, value: object, kind: object) -> object:
    """``value`` if it is one of the ``Literal`` type ``kind``'s options."""
    allowed = get_args(kind)
    if value not in allowed:
        raise ValueError(f"{name}={value!r} is not one of {', '.join(map(repr, allowed))}.")
    return value


def check_bool(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False, got {value!r}.")
    return value


# The config classes validate their own fields by name.
def _check_int(obj: object, name: str, lo: int, hi: int) -> None:
    check_int(name, getattr(obj, name), lo, hi)


def _check_float(obj: object, name: str, lo: float, hi: float) -> None:
    check_float(name, getattr(obj, name), lo, hi)


def _check_choice(obj: object, name: str, kind: object) -> None:
    check_choice(name, getattr(obj, name), kind)


def _check_bool(obj: object, name: str) -> None:
    check_bool(name, getattr(obj, name))


@dataclass(frozen=True)
class StackConfig:
    """A deep stack of fully connected blocks, with or without shortcuts.

    Block ``l`` maps ``x_l`` (width ``w_l``) to ``x_{l+1}`` (width ``w_{l+1}``):

    * ``block="linear"``: the branch is ``f(x) = act(W x + b)``.
    * ``block="ffn"``: the transformer feed-forward branch
      ``f(x) = W2 act(W1 x + b1) + b2`` with hidden width ``ffn_mult * w``.

    and the shortcut joins it as chosen by ``residual``:

    * ``"none"``: ``y = f(x)`` (a plain network);
    * ``"add"``: ``y = identity_scale * x + f(x)`` (``identity_scale=1`` is the
      ResNet/transformer shortcut; ``l * x + f(x)`` is He et al. 2016's scaled
      shortcut whose gradient carries ``l**L``);
    * ``"scaled"``: ``y = x + alpha * f(x)`` (``alpha=0`` and
      ``alpha_learnable=True`` is ReZero: exactly the identity at init);
    * ``"concat"``: ``y = [x, f(x)]`` (width grows by ``w_{l+1}`` each block) or,
      with ``concat_project=True``, ``y = P [x, f(x)]`` back to ``w_{l+1}``.

    ``join="before_act"`` (linear blocks only) moves the shortcut inside the
    non-linearity, ``y = act(x + W x + b)``, the original ResNet placement.
    Where widths differ, ``mismatch="skip"`` drops the shortcut in that block and
    ``mismatch="project"`` uses a bias-free linear projection (ResNet option B).
    ``norm`` sits before the branch (``"pre"``) or after the sum (``"post"``).
    """

    depth: int = 10
    width: int = 64
    # Explicit layer sizes (input first); overrides depth and width when given.
    widths: tuple[int, ...] | None = None
    block: BlockKind = "linear"
    ffn_mult: int = 4
    activation: Activation = "tanh"
    residual: Residual = "add"
    alpha: float = 1.0
    alpha_learnable: bool = False
    identity_scale: float = 1.0
    join: Join = "after_act"
    concat_project: bool = False
    mismatch: Mismatch = "skip"
    norm: NormType = "none"
    norm_position: NormPosition = "pre"
    # "small" scales each branch's last layer by 0.01: near-zero branches.
    init: Init = "default"
    out_dim: int | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if self.widths is not None:
            if not isinstance(self.widths, tuple) or len(self.widths) < 2:
                raise ValueError("widths must be a tuple of at least two layer sizes, input first.")
            for w in self.widths:
                if isinstance(w, bool) or not isinstance(w, int) or not 1 <= w <= MAX_WIDTH:
                    raise ValueError(
                        f"every width must be a whole number from 1 to {MAX_WIDTH}, got {w!r}."
                    )
            if len(self.widths) - 1 > MAX_DEPTH:
                raise ValueError(
                    f"at most {MAX_DEPTH} blocks: give at most {MAX_DEPTH + 1} widths."
                )
        _check_int(self, "depth", 1, MAX_DEPTH)
        _check_int(self, "width", 1, MAX_WIDTH)
        _check_int(self, "ffn_mult", 1, 16)
        for name, kind in (
            ("block", BlockKind),
            ("activation", Activation),
            ("residual", Residual),
            ("join", Join),
            ("mismatch", Mismatch),
            ("norm", NormType),
            ("norm_position", NormPosition),
            ("init", Init),
        ):
            _check_choice(self, name, kind)
        _check_float(self, "alpha", -100.0, 100.0)
        _check_float(self, "identity_scale", -100.0, 100.0)
        _check_bool(self, "alpha_learnable")
        _check_bool(self, "concat_project")
        _check_int(self, "seed", 0, 2**31 - 1)
        if self.out_dim is not None:
            _check_int(self, "out_dim", 1, MAX_WIDTH)
        if self.join == "before_act" and self.block != "linear":
            raise ValueError(
                "join='before_act' needs block='linear': an FFN branch has no output "
                "non-linearity for the shortcut to go under."
            )
        if self.join == "before_act" and self.residual == "concat":
            raise ValueError("join='before_act' cannot be combined with residual='concat'.")
        if self.residual == "concat" and not self.concat_project:
            final = self.layer_widths[0] + sum(self.layer_widths[1:])
            if final > 4 * MAX_WIDTH:
                raise ValueError(
                    f"concat without projection grows the width to {final}: "
                    "use fewer or narrower blocks, or concat_project=True."
                )

    @property
    def layer_widths(self) -> tuple[int, ...]:
        """The nominal width after each block, input first (length depth + 1)."""
        if self.widths is not None:
            return self.widths
        return (self.width,) * (self.depth + 1)

    @property
    def out_width(self) -> int:
        """Width of the last block's output (concat without projection accumulates)."""
        w = self.layer_widths
        if self.residual == "concat" and not self.concat_project:
            return sum(w)
        return w[-1]

    @property
    def n_blocks(self) -> int:
        return len(self.layer_widths) - 1

    @property
    def in_dim(self) -> int:
        return self.layer_widths[0]


@dataclass(frozen=True)
class EncoderConfig:
    """A transformer encoder: token embedding, positions, ``n_layers`` blocks, an LM head.

    Pre-LN block (``norm_position="pre"``, Xiong et al. 2020)::

        x = x + attn(norm1(x))      # resid_mid
        x = x + ffn(norm2(x))       # resid_post

    Post-LN block (the original Transformer, Vaswani et al. 2017)::

        x = norm1(x + attn(x))
        x = norm2(x + ffn(x))

    ``residual=False`` drops the ``x +`` terms; ``use_ffn=False`` drops the FFN
    sublayer (an attention-only stack, Dong et al. 2021). Pre-LN stacks end with
    a final norm, as GPT-2 and nanoGPT do.

    ``init="default"`` keeps PyTorch's initialisation (``nn.Linear``: weights
    U(+-1/sqrt(fan_in))). ``init="xavier"`` is the setting of Xiong et al.
    (2020): every linear weight Xavier-normal, ``std = sqrt(2 / (fan_in +
    fan_out))``, with zero biases, and the fused q/k/v projection initialised as
    the three ``d x d`` matrices W_Q, W_K, W_V it holds (``std = sqrt(1/d)``
    each), not as one ``d x 3d`` matrix (``sqrt(1/(2d))``). Embeddings and
    learned positions keep their own initialisation either way.
    """

    n_layers: int = 4
    d_model: int = 64
    n_heads: int = 4
    d_ff: int = 256
    vocab_size: int = 1000
    max_len: int = 128
    residual: bool = True
    norm: NormType = "layer"
    norm_position: NormPosition = "pre"
    positional: Positional = "sinusoidal"
    use_ffn: bool = True
    dropout: float = 0.0
    activation: Activation = "gelu"
    init: EncoderInit = "default"
    seed: int = 0

    def __post_init__(self) -> None:
        _check_int(self, "n_layers", 1, MAX_LAYERS)
        _check_int(self, "d_model", 1, MAX_WIDTH)
        _check_int(self, "n_heads", 1, MAX_WIDTH)
        _check_int(self, "d_ff", 1, 4 * MAX_WIDTH)
        _check_int(self, "vocab_size", 2, MAX_VOCAB)
        _check_int(self, "max_len", 1, MAX_LEN)
        _check_float(self, "dropout", 0.0, 0.9)
        _check_int(self, "seed", 0, 2**31 - 1)
        for name in ("residual", "use_ffn"):
            _check_bool(self, name)
        for name, kind in (
            ("norm", NormType),
            ("norm_position", NormPosition),
            ("positional", Positional),
            ("activation", Activation),
            ("init", EncoderInit),
        ):
            _check_choice(self, name, kind)
        if self.d_model % self.n_heads:
            divisors = [h for h in range(1, min(self.d_model, 64) + 1) if self.d_model % h == 0]
            raise ValueError(
                f"n_heads={self.n_heads} does not divide d_model={self.d_model}: "
                f"pick n_heads from {divisors} or change d_model."
            )
        if self.positional == "sinusoidal" and self.d_model % 2:
            raise ValueError(
                f"sinusoidal positions need an even d_model (sin/cos pairs), got {self.d_model}."
            )

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads


ENCODER_PRESETS: dict[str, EncoderConfig] = {
    # The first seed's TransformerModel: 6 Post-LN layers, d=128, 8 heads, FFN
    # hidden 128 with ReLU, learned positions for 100 tokens, vocab 1000.
    "Classic Post-LN": EncoderConfig(
        n_layers=6,
        d_model=128,
        n_heads=8,
        d_ff=128,
        max_len=100,
        norm_position="post",
        positional="learned",
        activation="relu",
    ),
    "Pre-LN": EncoderConfig(n_layers=6, d_model=128, n_heads=8, d_ff=512, norm_position="pre"),
    "No residuals": EncoderConfig(
        n_layers=6, d_model=128, n_heads=8, d_ff=512, norm_position="pre", residual=False
    ),
    "Attention only": EncoderConfig(
        n_layers=6, d_model=128, n_heads=8, d_ff=512, norm="none", use_ffn=False
    ),
}


def config_fields(cfg: StackConfig | EncoderConfig) -> dict[str, object]:
    """The config as a flat dict (field name -> value), e.g. for a table or URL."""
    return {f.name: getattr(cfg, f.name) for f in fields(cfg)}
