"""The sinusoidal table itself (Vaswani et al. 2017, section 3.5), the formula alone.

``P(k, 2i) = sin(k / n**(2i/d))`` and ``P(k, 2i+1) = cos(k / n**(2i/d))``. The
encoder adds this table to its token embeddings (:mod:`resviz.models`), and the
sinusoidal page measures it (:mod:`resviz.positional.encodings`): the formula is
written once, here, on the library's ground floor (it imports nothing from resviz),
so the models sit below what is measured on them. :func:`resviz.sinusoidal_encoding` is the entry
point that checks its arguments first; the encoder's sizes are checked by
:class:`resviz.EncoderConfig`.
"""

from __future__ import annotations

import torch


def sinusoidal_table(
    n_positions: int,
    d_model: int,
    base: float = 10000.0,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """The ``[n_positions, d_model]`` sinusoidal table for checked sizes (even
    ``d_model``, ``base > 1``); column ``2i`` is ``sin(pos / base**(2i/d))`` and
    column ``2i+1`` is ``cos`` of the same angle. Computed in float64 and cast, so
    float32 tables are correctly rounded."""
    pos = torch.arange(n_positions, dtype=torch.float64)[:, None]  # (P, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (d/2,)
    angle = pos / base ** (two_i / d_model)  # (P, d/2)
    pe = torch.empty(n_positions, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle)
    return pe.to(dtype)


__all__ = ["sinusoidal_table"]
