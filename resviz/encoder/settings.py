"""The encoder playground's settings made concrete: the text tokenized (a vocabulary
built from it) and the :class:`resviz.EncoderConfig` its model settings describe,
under the page's URL names. Every section of the playground starts from
:func:`setup`; the views are those of :mod:`resviz.encoder.views` and training is
:func:`resviz.encoder.masked.train_masked` (a BERT-style masked-token objective).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import torch

from resviz.config import EncoderConfig
from resviz.data import DEFAULT_TEXT, Tokens, Vocab, encode, tokenize
from resviz.encoder import masked as MT
from resviz.encoder import views as EI
from resviz.models import build

# Training windows per step.
BATCH = 8


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


def setup(
    *,
    text: str = DEFAULT_TEXT,
    level: str = "word",
    max_len: int = 32,
    vocab: int = 256,
    layers: int = 6,
    d_model: int = 128,
    heads: int = 8,
    d_ff: int = 512,
    act: str = "gelu",
    dropout: float = 0.0,
    norm: str = "layer",
    place: str = "pre",
    pos: str = "sinusoidal",
    residual: bool = True,
    ffn: bool = True,
    seed: int = 0,
) -> Setup:
    """Tokenize ``text`` (a vocabulary of at most ``vocab`` built from it; the views
    read its first ``max_len`` tokens, training up to ``TRAIN_MAX_TOKENS``) and
    configure the encoder. Raises ``ValueError`` where the model cannot be built
    (``heads`` not dividing ``d_model``); an empty text gives no tokens, which every
    recipe refuses (:func:`ready`)."""
    toks, voc = tokenize(text, level, int(max_len), int(vocab))  # type: ignore[arg-type]
    cfg = EncoderConfig(
        n_layers=int(layers),
        d_model=int(d_model),
        n_heads=int(heads),
        d_ff=int(d_ff),
        vocab_size=len(voc),
        max_len=int(max_len),
        residual=bool(residual),
        norm=norm,  # type: ignore[arg-type]
        norm_position=place,  # type: ignore[arg-type]
        positional=pos,  # type: ignore[arg-type]
        use_ffn=bool(ffn),
        dropout=float(dropout),
        activation=act,
        seed=int(seed),
    )
    return Setup(toks, voc, encode(text, voc, MT.TRAIN_MAX_TOKENS).ids, cfg)


def ready(s: Setup) -> Setup:
    """``s``, or a ``ValueError`` saying why no view can run on it."""
    if not s.toks.ids:
        raise ValueError(
            "There are no tokens to run: type some text (words for word-level tokens; "
            "whitespace, null bytes and control characters are dropped)."
        )
    return s


def views_of(s: Setup, device: str | torch.device) -> dict[str, object]:
    return EI.inspect(build(s.cfg, device), s.cfg, s.toks.ids)


def head_of(s: Setup, layer: int, head: int) -> tuple[int, int]:
    """The block and head to look at, counted from 1, clamped to this model."""
    return min(max(int(layer), 1), s.cfg.n_layers), min(max(int(head), 1), s.cfg.n_heads)


def training_batch(s: Setup, seed: int) -> pd.DataFrame:
    """The first batch :func:`training` draws, as text (before any training)."""
    return MT.batch_frame(s.train_ids, s.vocab, BATCH, s.T, seed)
