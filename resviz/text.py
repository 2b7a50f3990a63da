"""Turning user text into token ids without downloads.

Character level: each character is one token whose id is its code point, or
``unk_id`` (the last id) when the code point does not fit the vocabulary.
Null bytes are dropped; everything else, emoji and right-to-left text included,
is kept as it is. Text is data here: nothing is ever evaluated or rendered.
"""

from __future__ import annotations


def char_tokenize(text: str, vocab_size: int, max_len: int) -> tuple[list[int], list[str], bool]:
    """Return ``(ids, tokens, truncated)`` for at most ``max_len`` characters."""
    if vocab_size < 2 or max_len < 1:
        raise ValueError("vocab_size must be >= 2 and max_len >= 1.")
    chars = [c for c in text if c != "\x00"]
    truncated = len(chars) > max_len
    chars = chars[:max_len]
    unk = vocab_size - 1
    ids = [ord(c) if ord(c) < unk else unk for c in chars]
    return ids, chars, truncated
