"""Character-level token ids without downloads: kept for ``rv.char_tokenize``.

The tokenizer lives in :mod:`resviz.data` with the others.
"""

from .data import char_tokenize

__all__ = ["char_tokenize"]
