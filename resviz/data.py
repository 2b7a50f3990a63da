"""The data every experiment draws: built-in tasks, batches and tokenizers.

Nothing is downloaded and nothing random comes from the global RNG: every draw
takes a ``torch.Generator`` seeded by the caller, so the same seed gives the
same data on any device.

* Tasks and batches: :func:`spirals` (the skip-connection page's classification
  task), :func:`make_batch` (Gaussian regression or token-copy batches for any
  config), :func:`teacher_batch` (a fixed random teacher a deep stack can
  learn), :func:`masked_batch` (BERT-style masked windows of a token stream).
* Tokenizers: one cleaning (:func:`clean_text`) and one splitter
  (:func:`split_tokens`, level ``word``, ``char`` or ``space``) under all of them.
  :func:`tokenize` builds a vocabulary from the text itself, with ``[PAD]``,
  ``[UNK]``, ``[MASK]`` (the encoder playground); :func:`tokenize_words` is the
  ``space`` level, no vocabulary (the sinusoidal page's table); :func:`char_tokenize`
  the ``char`` level as code points, no vocabulary; :func:`token_table` shows a
  tokenized text, :data:`DEFAULT_TEXT` is the playground's default paragraph.

Text is data: it is split and counted, never evaluated or rendered.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, get_args

import pandas as pd
import torch

from resviz.config import MAX_POSITIONS, EncoderConfig, StackConfig, check_int

Level = Literal["word", "char", "space"]
Task = Literal["regression", "copy"]
SPECIALS = ("[PAD]", "[UNK]", "[MASK]")
PAD, UNK, MASK = 0, 1, 2
_WORD = re.compile(r"\w+|[^\w\s]")
_SPACES = re.compile(r"\s+")


# ------------------------------------------------------------------ tasks and batches


def spirals(
    n_points: int = 1536, classes: int = 3, turns: float = 1.5, noise: float = 0.05, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Interleaved spirals in the plane, one arm per class: ``(X (n, 2), y (n,))``.

    Arm ``c`` is ``2 (r cos t, r sin t) + noise`` with ``r`` uniform in [0, 1] and
    ``t = 2 pi (turns * r + c / classes)``: ``turns`` windings per arm. No
    download; the same seed gives the same points.
    """
    check_int("classes", classes, 2, 10)
    if n_points < classes:
        raise ValueError("n_points must be at least the number of classes.")
    gen = torch.Generator().manual_seed(seed)
    per = n_points // classes
    xs, ys = [], []
    for c in range(classes):
        r = torch.rand(per, generator=gen)
        theta = 2 * math.pi * (turns * r + c / classes)
        pts = torch.stack([r * torch.cos(theta), r * torch.sin(theta)], dim=1)
        xs.append(2 * (pts + noise * torch.randn(per, 2, generator=gen)))
        ys.append(torch.full((per,), c, dtype=torch.long))
    return torch.cat(xs), torch.cat(ys)


def make_batch(
    cfg: StackConfig | EncoderConfig,
    batch_size: int,
    seq_len: int,
    gen: torch.Generator,
    task: Task = "regression",
) -> tuple[torch.Tensor, torch.Tensor]:
    """One ``(inputs, targets)`` batch on the CPU, drawn from ``gen``.

    Stacks: Gaussian inputs ``(B, in_dim)`` (``(B, T, in_dim)`` if ``seq_len > 1``)
    and Gaussian targets of the output's shape.
    Encoders: random token ids ``(B, T)``; ``"regression"`` targets are Gaussian
    hidden states, ``"copy"`` targets are the input ids themselves.
    """
    if isinstance(cfg, StackConfig):
        shape = (batch_size, seq_len) if seq_len > 1 else (batch_size,)
        x = torch.randn(*shape, cfg.in_dim, generator=gen)
        out_dim = cfg.out_dim or cfg.out_width
        y = torch.randn(*shape, out_dim, generator=gen)
        return x, y
    tokens = torch.randint(0, cfg.vocab_size, (batch_size, seq_len), generator=gen)
    if task == "copy":
        return tokens, tokens
    return tokens, torch.randn(batch_size, seq_len, cfg.d_model, generator=gen)


def teacher_batch(
    in_dim: int, out_dim: int, batch_size: int, gen: torch.Generator, teacher: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Gaussian inputs and the targets of a fixed random teacher ``tanh(x A) B``:
    a task a deep stack can learn, so loss curves go somewhere."""
    x = torch.randn(batch_size, in_dim, generator=gen)
    a, b = teacher[:, :in_dim].T, teacher[:, in_dim : in_dim + out_dim]
    return x, torch.tanh(x @ a) @ b


def masked_batch(
    stream: torch.Tensor,
    batch_size: int,
    seq_len: int,
    gen: torch.Generator,
    mask_rate: float = 0.15,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Random windows of the token stream with ``[MASK]`` at about ``mask_rate`` of
    the positions (at least one per window). Targets are -100 where not masked."""
    n = stream.numel()
    L = min(seq_len, n)
    starts = torch.randint(0, n - L + 1, (batch_size,), generator=gen)
    windows = stream[starts[:, None] + torch.arange(L)]  # (B, L)
    r = torch.rand(batch_size, L, generator=gen)
    masked = r < mask_rate
    masked[torch.arange(batch_size), r.argmin(dim=1)] = True
    inputs = torch.where(masked, torch.full_like(windows, MASK), windows)
    targets = torch.where(masked, windows, torch.full_like(windows, -100))
    return inputs, targets


# ------------------------------------------------------------------------ tokenizers


def clean_text(text: str) -> str:
    """The one cleaning every tokenizer level applies: lone surrogates become ``?``
    (they do not survive UTF-8 on the way to the browser), control characters that
    are not whitespace (the null byte among them) are dropped, and every run of
    whitespace (``\r`` and the other control whitespace included) becomes one space,
    none at either end. Everything else (emoji, right-to-left scripts, markup such as
    ``<b>``) is kept verbatim: escaping is the renderer's job."""
    text = text.encode("utf-8", "replace").decode("utf-8")
    kept = "".join(c for c in text if c.isspace() or unicodedata.category(c) != "Cc")
    return _SPACES.sub(" ", kept).strip()


def split_tokens(text: str, level: Level = "word") -> list[str]:
    """The one splitter, on :func:`clean_text`'s text.

    ``"word"``: lower-cased runs of letters/digits, each punctuation mark alone (the
    playground). ``"char"``: one token per code point (an emoji built from several code
    points, such as a flag, spans several tokens; :func:`char_tokenize`). ``"space"``:
    the words between whitespace, case and punctuation kept (``str.split``; the
    sinusoidal page's :func:`tokenize_words`)."""
    if level not in get_args(Level):
        raise ValueError(f"level={level!r} is not one of 'word', 'char', 'space'.")
    text = clean_text(text)
    if level == "word":
        return [w.lower() for w in _WORD.findall(text)]
    if level == "space":
        return text.split()
    return list(text)


@dataclass(frozen=True)
class Vocab:
    """Token strings by id: the three specials, then the text's most frequent tokens."""

    level: Level
    tokens: tuple[str, ...]
    _index: dict[str, int] = field(default_factory=dict, compare=False, hash=False, repr=False)

    def __post_init__(self) -> None:
        self._index.update({t: i for i, t in enumerate(self.tokens)})

    def __len__(self) -> int:
        return len(self.tokens)

    def id(self, token: str) -> int:
        return self._index.get(token, UNK)

    def token(self, i: int) -> str:
        return self.tokens[i] if 0 <= i < len(self.tokens) else SPECIALS[UNK]


def build_vocab(text: str, level: Level = "word", max_size: int = 256) -> Vocab:
    """The ``max_size - 3`` most frequent tokens of ``text`` (ties: first seen first)."""
    if isinstance(max_size, bool) or not isinstance(max_size, int) or max_size < 4:
        raise ValueError(f"max_size must be a whole number >= 4, got {max_size!r}.")
    counts = Counter(split_tokens(text, level))
    # Counter keeps first-seen order, and most_common's sort is stable.
    common = [t for t, _ in counts.most_common(max_size - len(SPECIALS))]
    return Vocab(level, SPECIALS + tuple(common))


@dataclass(frozen=True)
class Tokens:
    """A tokenized text: ids and strings of at most ``max_len`` tokens."""

    ids: tuple[int, ...]
    tokens: tuple[str, ...]
    truncated: bool
    n_total: int
    n_unknown: int

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def labels(self) -> list[str]:
        return axis_labels(self.tokens)


def encode(text: str, vocab: Vocab, max_len: int) -> Tokens:
    """Tokenize ``text`` with ``vocab``; keep the first ``max_len`` tokens."""
    if isinstance(max_len, bool) or not isinstance(max_len, int) or max_len < 1:
        raise ValueError(f"max_len must be a whole number >= 1, got {max_len!r}.")
    toks = split_tokens(text, vocab.level)
    kept = toks[:max_len]
    ids = tuple(vocab.id(t) for t in kept)
    return Tokens(
        ids=ids,
        tokens=tuple(kept),
        truncated=len(toks) > max_len,
        n_total=len(toks),
        n_unknown=sum(i == UNK for i in ids),
    )


def tokenize(
    text: str, level: Level = "word", max_len: int = 64, max_vocab: int = 256
) -> tuple[Tokens, Vocab]:
    """Build the vocabulary from ``text`` and encode its first ``max_len`` tokens."""
    vocab = build_vocab(text, level, max_vocab)
    return encode(text, vocab, max_len), vocab


def _visible(token: str) -> str:
    table = {" ": "␣", "\n": "⏎", "\t": "⇥"}
    return "".join(table.get(c, c if unicodedata.category(c) != "Cc" else "") for c in token)


def axis_labels(tokens: Sequence[str], width: int = 10) -> list[str]:
    """Unique, short axis labels: ``"3:the"``; whitespace made visible, long tokens cut."""
    out = []
    for i, t in enumerate(tokens):
        v = _visible(t)
        if len(v) > width:
            v = v[: width - 1] + "…"
        out.append(f"{i}:{v}")
    return out


# The encoder playground's default paragraph, written for this project.
DEFAULT_TEXT = (
    "A residual connection lets each layer add to a running sum instead of replacing it. "
    "The input travels along the stream unchanged, every sublayer writes a small update, "
    "and the gradient finds a short path back to the first layer. Take the stream away "
    "and attention alone blurs the tokens together until every position looks the same."
)


def token_table(tokens: Tokens) -> pd.DataFrame:
    """One row per token: ``position, token, id, unknown``."""
    return pd.DataFrame(
        {
            "position": range(len(tokens)),
            "token": list(tokens.tokens),
            "id": list(tokens.ids),
            "unknown": [i == UNK for i in tokens.ids],
        }
    )


def tokenize_words(text: str, max_tokens: int = 64) -> tuple[list[str], bool]:
    """``split_tokens(text, "space")``, at most ``max_tokens`` of them: ``(tokens,
    truncated)``, the sinusoidal page's tokens.

    Words between Unicode whitespace (``str.split``), case and punctuation kept;
    :func:`clean_text` drops null bytes and other invisible control characters and turns
    lone surrogates into ``?``. Emoji, right-to-left scripts and markup such as ``<b>``
    are returned verbatim as plain text. ``truncated`` says whether any were dropped;
    empty or blank text gives ``([], False)``.
    """
    if not isinstance(text, str):
        raise ValueError(f"text must be a string, got {type(text).__name__}.")
    check_int("max_tokens", max_tokens, 1, MAX_POSITIONS)
    words = split_tokens(text, "space")
    return words[:max_tokens], len(words) > max_tokens


def char_tokenize(text: str, vocab_size: int, max_len: int) -> tuple[list[int], list[str], bool]:
    """``split_tokens(text, "char")`` as ids without a vocabulary: ``(ids, tokens,
    truncated)`` for at most ``max_len`` characters. Each id is the code point, or
    ``vocab_size - 1`` (unknown) when it does not fit. The characters are
    :func:`clean_text`'s, as the playground's character level sees them."""
    if vocab_size < 2 or max_len < 1:
        raise ValueError("vocab_size must be >= 2 and max_len >= 1.")
    chars = split_tokens(text, "char")
    truncated = len(chars) > max_len
    chars = chars[:max_len]
    unk = vocab_size - 1
    ids = [ord(c) if ord(c) < unk else unk for c in chars]
    return ids, chars, truncated


__all__ = [
    "DEFAULT_TEXT",
    "MASK",
    "PAD",
    "SPECIALS",
    "UNK",
    "Tokens",
    "Vocab",
    "axis_labels",
    "build_vocab",
    "char_tokenize",
    "clean_text",
    "encode",
    "make_batch",
    "masked_batch",
    "spirals",
    "split_tokens",
    "teacher_batch",
    "token_table",
    "tokenize",
    "tokenize_words",
]
