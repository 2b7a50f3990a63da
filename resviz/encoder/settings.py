"""The encoder playground's settings, each declared once, and what they make: the
text tokenized (a vocabulary built from it) and the :class:`resviz.EncoderConfig` its
model settings describe.

Every section of the playground takes the text (:class:`Text`) and the model
(:class:`Model`, whose defaults are the :data:`DEFAULT_PRESET` preset's) and starts
from :func:`setup`; Attention also takes which head to look at (:class:`Head`) and
Training its run (:class:`Training`). The views are those of
:mod:`resviz.encoder.views` and training is :func:`resviz.encoder.masked.train_masked`
(a BERT-style masked-token objective).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import torch

from resviz.config import ENCODER_PRESETS, EncoderConfig
from resviz.data import DEFAULT_TEXT, SPECIALS, Tokens, Vocab, encode, tokenize
from resviz.encoder import masked as MT
from resviz.encoder import views as EI
from resviz.models import build
from resviz.settings import Settings, choice, decimal, flag, grouped, whole
from resviz.settings import text as text_box

# Training windows per step.
BATCH = 8

# The preset the model settings' defaults are (a link naming another preset gets its
# values for the model settings it leaves out).
DEFAULT_PRESET = "Pre-LN"
_BASE = ENCODER_PRESETS[DEFAULT_PRESET]
HEAD_CHOICES = ("1", "2", "3", "4", "8", "16")


@dataclass(frozen=True)
class Text(Settings):
    """The text the encoder reads and how it is cut into tokens."""

    text: str = text_box(
        DEFAULT_TEXT, 100_000, label="Text (stays on this server, is never rendered as HTML)"
    )
    level: str = choice("word", ("word", "char"), label="Tokens", radio=True)
    max_len: int = whole(32, 4, 64, label="Max tokens shown and per training window")
    vocab: int = whole(
        256,
        8,
        512,
        label="Vocabulary: most frequent tokens kept",
        help=f"At most this many, the {len(SPECIALS)} special tokens {', '.join(SPECIALS)} "
        "included; the text's most frequent tokens fill the rest (fewer where the text has "
        "fewer distinct tokens).",
    )


@dataclass(frozen=True)
class Model(Settings):
    """The encoder's shape and switches (defaults: the :data:`DEFAULT_PRESET` preset's)."""

    layers: int = whole(_BASE.n_layers, 1, 12, label="Layers")
    d_model: str = choice(str(_BASE.d_model), ("32", "64", "128", "256"), label="d_model")
    heads: str = choice(str(_BASE.n_heads), HEAD_CHOICES, label="Heads", help="must divide d_model")
    d_ff: str = choice(
        str(_BASE.d_ff), ("64", "128", "256", "512", "1024"), label="d_ff (FFN hidden)"
    )
    act: str = choice(_BASE.activation, ("relu", "gelu", "tanh", "identity"), label="Activation")
    dropout: float = decimal(_BASE.dropout, 0.0, 0.5, step=0.05, label="Dropout (training only)")
    norm: str = choice(_BASE.norm, ("layer", "rms", "none"), label="Norm")
    place: str = choice(_BASE.norm_position, ("pre", "post"), label="Norm placement", radio=True)
    pos: str = choice(_BASE.positional, ("sinusoidal", "learned", "none"), label="Positions")
    residual: bool = flag(_BASE.residual, label="Residual connections")
    ffn: bool = flag(_BASE.use_ffn, label="FFN sublayer")

    @classmethod
    def of(cls, cfg: EncoderConfig) -> Model:
        """The settings that describe ``cfg``'s model (what choosing a preset sets)."""
        return cls(
            layers=cfg.n_layers,
            d_model=str(cfg.d_model),
            heads=str(cfg.n_heads),
            d_ff=str(cfg.d_ff),
            act=cfg.activation,
            dropout=cfg.dropout,
            norm=cfg.norm,
            place=cfg.norm_position,
            pos=cfg.positional,
            residual=cfg.residual,
            ffn=cfg.use_ffn,
        )

    def config(self, vocab_size: int, max_len: int, seed: int) -> EncoderConfig:
        """This model for a vocabulary of ``vocab_size`` and ``max_len`` positions, its
        weights seed ``seed``'s. Raises ``ValueError`` where it cannot be built
        (``heads`` not dividing ``d_model``)."""
        return EncoderConfig(
            n_layers=int(self.layers),
            d_model=int(self.d_model),
            n_heads=int(self.heads),
            d_ff=int(self.d_ff),
            vocab_size=int(vocab_size),
            max_len=int(max_len),
            residual=bool(self.residual),
            norm=self.norm,  # type: ignore[arg-type]
            norm_position=self.place,  # type: ignore[arg-type]
            positional=self.pos,  # type: ignore[arg-type]
            use_ffn=bool(self.ffn),
            dropout=float(self.dropout),
            activation=self.act,  # type: ignore[arg-type]
            seed=int(seed),
        )


@dataclass(frozen=True)
class Head(Settings):
    """Which head's attention map to look at, counted from 1 (clamped to the model)."""

    layer: int = whole(1, 1, 12, label="Layer")
    head: int = whole(1, 1, 16, label="Head")


@dataclass(frozen=True)
class Training(Settings):
    """The training run: the model trained beside yours, its length and step size."""

    against: str = choice(MT.FLIPPED, (MT.FLIPPED, *ENCODER_PRESETS), label="Train against")
    # 80 steps (issue 37: a default view within seconds): at the default model "your
    # model" ends with a lower loss than the same without residuals at every seed 0 to 9
    # (7-16% lower over the last 10 steps; after 100 steps 13-20%).
    steps: int = whole(80, 20, 400, step=10, label="Steps")
    lr: str = choice("1e-3", ("3e-4", "1e-3", "3e-3", "1e-2"), label="Learning rate")

    @property
    def rate(self) -> float:
        """The learning rate as a number."""
        return float(self.lr)


@dataclass(frozen=True)
class Setup:
    """The tokens the views read, the ids training reads, and the model."""

    toks: Tokens
    vocab: Vocab
    train_ids: tuple[int, ...]
    cfg: EncoderConfig

    @property
    def T(self) -> int:
        return len(self.toks)


@grouped
def setup(corpus: Text = Text(), encoder: Model = Model(), seed: int = 0) -> Setup:
    """Tokenize the text (a vocabulary of at most ``vocab`` built from it; the views
    read its first ``max_len`` tokens, training up to ``TRAIN_MAX_TOKENS``) and
    configure the encoder. Also called by the settings' names
    (``setup(text="the cat", layers=2)``). Raises ``ValueError`` where the model cannot
    be built (``heads`` not dividing ``d_model``); an empty text gives no tokens, which
    every recipe refuses (:func:`ready`)."""
    toks, voc = tokenize(corpus.text, corpus.level, int(corpus.max_len), int(corpus.vocab))  # type: ignore[arg-type]
    cfg = encoder.config(len(voc), int(corpus.max_len), seed)
    return Setup(toks, voc, encode(corpus.text, voc, MT.TRAIN_MAX_TOKENS).ids, cfg)


def ready(s: Setup) -> Setup:
    """``s``, or a ``ValueError`` saying why no view can run on it."""
    if not s.toks.ids:
        raise ValueError(
            "There are no tokens to run: type some text (words for word-level tokens; "
            "whitespace, null bytes and control characters are dropped)."
        )
    return s


def views_of(s: Setup, device: str | torch.device) -> EI.Views:
    return EI.inspect(build(s.cfg, device), s.cfg, s.toks.ids)


def head_of(s: Setup, shown: Head) -> tuple[int, int]:
    """The block and head to look at, counted from 1, clamped to this model."""
    block = min(max(int(shown.layer), 1), s.cfg.n_layers)
    return block, min(max(int(shown.head), 1), s.cfg.n_heads)


def training_batch(s: Setup, seed: int) -> pd.DataFrame:
    """The first batch :func:`training` draws, as text (before any training)."""
    return MT.batch_frame(s.train_ids, s.vocab, BATCH, s.T, seed)
