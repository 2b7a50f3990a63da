"""Measures on positional encodings: how alike two positions are, and why.

For the sinusoidal table (Vaswani et al. 2017, section 3.5) a shift by ``k``
positions is a rotation of every dimension pair (:func:`rotation_matrix`), so
``<P(p), P(q)>`` depends on ``p - q`` only (:func:`offset_dependence` is zero to
rounding). Beside it: the raw integer index, a learned table at init and rotary
embeddings (RoPE, Su et al. 2021), compared by norm and by similarity matrix,
and a table's norms against a word embedding's (:func:`embedding_vs_position`).
The encodings themselves are in :mod:`resviz.positional`, which also re-exports
every name here (``rv.positional.<name>``). Everything random is drawn from a
``torch.Generator`` seeded by the arguments, never the global RNG.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd
import torch

from resviz.config import MAX_POSITIONS, check_int
from resviz.positional.encodings import (
    MAX_LONG_POSITIONS,
    MAX_VOCAB_CELLS,
    _as_float64_table,
    _check_matrix_positions,
    _check_seed,
    check_encoding_args,
    integer_index_encoding,
    learned_encoding,
    rope_rotate,
    sinusoidal_encoding,
)

# --- similarity between positions ---------------------------------------------

# Rows of the dot-product matrix compared at a time in :func:`offset_dependence`.
_ROWS = 64


def _cosine_from_gram(gram: torch.Tensor) -> torch.Tensor:
    norms = gram.diagonal().clamp_min(0).sqrt()
    denom = norms[:, None] * norms[None, :]
    # A zero vector (the integer index at k = 0) has no direction: NaN says so
    # honestly, and resviz.charts.raster draws it grey.
    return torch.where(denom > 0, gram / denom, torch.full_like(gram, math.nan))


def position_dots(pe: torch.Tensor) -> torch.Tensor:
    """Dot products ``<P(p), P(q)>`` between all positions, float64 ``[P, P]``: the
    first half of :func:`position_similarity`, for a caller that needs no cosines.
    At most ``MAX_MATRIX_POSITIONS`` positions."""
    x = _as_float64_table(pe)
    _check_matrix_positions(x.shape[0], "pe")
    return x @ x.T


def position_similarity(pe: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Dot products ``<P(p), P(q)>`` and cosines between all positions, float64 ``[P, P]``.

    For the sinusoidal table ``<P(p), P(q)> = sum_i cos((p - q) / base**(2i/d))``
    and the diagonal is ``d/2``. Cosines involving a zero vector are NaN. At most
    ``MAX_MATRIX_POSITIONS`` positions.
    """
    dot = position_dots(pe)
    return dot, _cosine_from_gram(dot)


def offset_dependence(pe: torch.Tensor) -> float:
    """``max_{p,q} |<P(p), P(q)> - <P(0), P(|p-q|)>|`` in float64.

    Zero (to rounding) exactly when the dot product depends only on the offset
    ``|p - q|``, as it does for the sinusoidal table; a learned table at init
    gives a value of the order of its entries' squared norm.
    """
    x = _as_float64_table(pe)
    _check_matrix_positions(x.shape[0], "pe")
    # Row by row against row 0 read at |p - q|: the [P, P] matrix is never held, so
    # the check costs one row of memory, not the four matrices of an indexed compare.
    first = x @ x[0]
    n = x.shape[0]
    idx = torch.arange(n)
    worst = 0.0
    for start in range(0, n, _ROWS):
        rows = idx[start : start + _ROWS]
        block = x[rows] @ x.T
        gap = (block - first[(rows[:, None] - idx[None, :]).abs()]).abs().max()
        worst = max(worst, float(gap))
    return worst


def similarity_by_offset(pe: torch.Tensor) -> pd.DataFrame:
    """Similarity of position 0 to position ``offset``, for ``offset = 0 .. P-1``.

    Columns: ``offset``, ``dot = <P(0), P(offset)>`` and ``cosine``. For the
    sinusoidal table ``dot = sum_i cos(offset / base**(2i/d))``: it falls from
    ``d/2`` but with ripples, so it is not monotone in distance.
    """
    x = _as_float64_table(pe)
    dot = x @ x[0]
    norms = x.norm(dim=1)
    denom = norms * norms[0]
    cos = torch.where(denom > 0, dot / denom, torch.full_like(dot, math.nan))
    return pd.DataFrame({"offset": range(x.shape[0]), "dot": dot.numpy(), "cosine": cos.numpy()})


# --- shifts are rotations -------------------------------------------------------


def rotation_matrix(d_model: int, base: float, k: int) -> torch.Tensor:
    """Block-diagonal float64 ``[d, d]`` matrix ``R_k`` with ``P(p+k) = R_k P(p)`` for every ``p``.

    With ``w_i = base**(-2i/d)`` and the table's column order ``(sin, cos)``,
    the angle-addition formulas give for each pair::

        [sin((p+k) w)]   [ cos(k w)  sin(k w)] [sin(p w)]
        [cos((p+k) w)] = [-sin(k w)  cos(k w)] [cos(p w)]

    i.e. the transpose of the usual counter-clockwise rotation, because sin
    comes first. ``R_k`` does not depend on ``p``, which is the paper's claim
    that ``P(p+k)`` is a linear function of ``P(p)``. ``k`` may be negative.
    """
    check_encoding_args(1, d_model, base)
    check_int("k", k, -MAX_POSITIONS, MAX_POSITIONS)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    angle = k / float(base) ** (two_i / d_model)  # (d/2,)
    c, s = torch.cos(angle), torch.sin(angle)
    r = torch.zeros(d_model, d_model, dtype=torch.float64)
    ev, od = torch.arange(0, d_model, 2), torch.arange(1, d_model, 2)
    r[ev, ev] = c
    r[ev, od] = s
    r[od, ev] = -s
    r[od, od] = c
    return r


def rotation_error(n_positions: int, d_model: int, base: float, k: int) -> float:
    """``max |P(p+k) - R_k P(p)|`` over ``p`` in ``[0, n_positions - k)``, in float64.

    Rounding-level (about 1e-12 for the paper's sizes) when
    :func:`rotation_matrix` has the right sign convention.
    """
    check_encoding_args(n_positions, d_model, base)
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k < n_positions:
        raise ValueError(
            f"k={k!r} must be a whole number with 0 <= k < n_positions={n_positions}, "
            "so that some p has p + k inside the table."
        )
    pe = sinusoidal_encoding(n_positions, d_model, base, dtype=torch.float64)
    r = rotation_matrix(d_model, base, k)
    # Row p of ``pe[:n-k] @ r.T`` is R_k P(p). R_k is block-diagonal, so each 2x2 block
    # is applied to its own (sin, cos) pair: the same products, without a [d, d] matmul
    # or its temporaries.
    ev, od = slice(0, d_model, 2), slice(1, d_model, 2)
    c, s = r.diagonal()[ev], r.diagonal(1)[ev]
    src, dst = pe[: n_positions - k], pe[k:]
    worst = (dst[:, ev] - (src[:, ev] * c + src[:, od] * s)).abs().max()
    worst = torch.maximum(worst, (dst[:, od] - (src[:, od] * c - src[:, ev] * s)).abs().max())
    return float(worst)


# --- the alternatives side by side ---------------------------------------------------


def encoding_norms(encodings: Mapping[str, torch.Tensor]) -> pd.DataFrame:
    """Per-position L2 norms of several ``[P, d]`` encodings, long form.

    Columns: ``position``, ``scheme`` (the mapping's key) and ``norm`` (float64).
    The sinusoidal norm is flat at ``sqrt(d/2)``; the integer index grows as
    ``k * sqrt(d)``; a learned table at init sits near ``0.02 * sqrt(d)``.
    """
    if not isinstance(encodings, Mapping) or not encodings:
        raise ValueError("encodings must be a non-empty mapping from scheme name to [P, d] tensor.")
    frames = []
    for name, pe in encodings.items():
        x = _as_float64_table(pe, name=f"encodings[{name!r}]")
        frames.append(
            pd.DataFrame(
                {"position": range(x.shape[0]), "scheme": str(name), "norm": x.norm(dim=1).numpy()}
            )
        )
    return pd.concat(frames, ignore_index=True)


def rope_similarity(
    n_positions: int,
    d_model: int,
    base: float = 10000.0,
    seed: int = 0,
    normalize: bool = True,
    same_content: bool = True,
) -> torch.Tensor:
    """Attention score of one query and one key placed at every pair of positions, ``[P, P]``.

    A fixed random query ``q`` and key ``k`` (``N(0, 1)`` from a generator
    seeded by ``seed``, the same content at every position; ``k = q`` with
    ``same_content=True``, the default, so the diagonal is 1 as for the
    other schemes' self-similarity) give
    ``score(p_q, p_k) = <RoPE(q, p_q), RoPE(k, p_k)>``, which depends only on
    ``p_q - p_k``. With ``normalize`` (the default) the score is divided by
    ``|q| |k|``, making it the cosine, comparable with the other schemes' cosines
    (rotations keep norms, so this is a constant factor). Float64.
    """
    check_encoding_args(n_positions, d_model, base)
    _check_matrix_positions(n_positions, "rope_similarity")
    _check_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(d_model, generator=gen, dtype=torch.float64)
    k = q.clone() if same_content else torch.randn(d_model, generator=gen, dtype=torch.float64)
    qs = rope_rotate(q.expand(n_positions, d_model), base)
    ks = rope_rotate(k.expand(n_positions, d_model), base)
    score = qs @ ks.T
    return score / (q.norm() * k.norm()) if normalize else score


def similarity_matrices(
    n_positions: int, d_model: int, base: float = 10000.0, seed: int = 0
) -> dict[str, torch.Tensor]:
    """The four schemes' ``[P, P]`` float64 cosine matrices, for side-by-side heatmaps.

    Keys: ``"sinusoidal"``, ``"integer index"`` (NaN in row and column 0, the
    zero vector), ``"learned (init)"`` and ``"RoPE"`` (see :func:`rope_similarity`).
    """
    check_encoding_args(n_positions, d_model, base)
    _check_matrix_positions(n_positions, "similarity_matrices")
    tables = {
        "sinusoidal": sinusoidal_encoding(n_positions, d_model, base, dtype=torch.float64),
        "integer index": integer_index_encoding(n_positions, d_model, dtype=torch.float64),
        "learned (init)": learned_encoding(n_positions, d_model, seed),
    }
    out = {name: position_similarity(pe)[1] for name, pe in tables.items()}
    out["RoPE"] = rope_similarity(n_positions, d_model, base, seed)
    return out


def embedding_vs_position(
    vocab_size: int, d_model: int, n_positions: int, seed: int = 0, base: float = 10000.0
) -> pd.DataFrame:
    """How big the token part of the input is next to the positional part.

    Token embeddings are ``N(0, 1)`` (``nn.Embedding``'s default init, drawn
    here from a generator seeded by ``seed``: the ``[vocab, d]`` table first,
    then one uniform token id per position), so their norm is about
    ``sqrt(d)``; the sinusoidal part has norm exactly ``sqrt(d/2)``
    (``sin^2 + cos^2 = 1`` per pair). Long form: ``position``, ``part``
    (``"token"``, ``"position"``, ``"sum"``) and ``norm`` of ``E[t_p]``,
    ``P(p)`` and ``E[t_p] + P(p)``.
    """
    check_encoding_args(n_positions, d_model, base)
    check_int("vocab_size", vocab_size, 1, MAX_VOCAB_CELLS)
    _check_seed(seed)
    if vocab_size * d_model > MAX_VOCAB_CELLS:
        raise ValueError(
            f"vocab_size={vocab_size} x d_model={d_model} is more than {MAX_VOCAB_CELLS} "
            "embedding entries: use a smaller vocabulary or d_model."
        )
    gen = torch.Generator().manual_seed(seed)
    table = torch.randn(vocab_size, d_model, generator=gen)
    ids = torch.randint(0, vocab_size, (n_positions,), generator=gen)
    tok = table[ids].to(torch.float64)
    pe = sinusoidal_encoding(n_positions, d_model, base, dtype=torch.float64)
    parts = {"token": tok, "position": pe, "sum": tok + pe}
    return pd.DataFrame(
        {
            "position": list(range(n_positions)) * len(parts),
            "part": [name for name in parts for _ in range(n_positions)],
            "norm": torch.cat([v.norm(dim=1) for v in parts.values()]).numpy(),
        }
    )


def similarity_long(matrix: torch.Tensor, name: str) -> pd.DataFrame:
    """Long form of a square ``[P, P]`` matrix for a Vega heatmap.

    Columns ``p``, ``q``, ``value`` and ``scheme`` (= ``name``). One row per cell, so only for ``P <= MAX_LONG_POSITIONS`` (128, i.e. 16k
    rows); draw larger matrices with :func:`resviz.charts.raster.to_png`. NaN cells are
    kept as NaN.
    """
    if (
        not isinstance(matrix, torch.Tensor)
        or matrix.dim() != 2
        or matrix.shape[0] != matrix.shape[1]
    ):
        raise ValueError("matrix must be a square [P, P] torch.Tensor.")
    n = matrix.shape[0]
    if not 1 <= n <= MAX_LONG_POSITIONS:
        raise ValueError(
            f"matrix is {n}x{n}; long form is capped at {MAX_LONG_POSITIONS}x{MAX_LONG_POSITIONS} "
            "cells: slice it, or draw it as an image with resviz.charts.raster.to_png."
        )
    if matrix.is_complex():
        raise ValueError(f"matrix must be real, got dtype {matrix.dtype}.")
    idx = torch.arange(n)
    return pd.DataFrame(
        {
            "p": idx.repeat_interleave(n).numpy(),
            "q": idx.repeat(n).numpy(),
            "value": matrix.detach().to("cpu", torch.float64).reshape(-1).numpy(),
            "scheme": str(name),
        }
    )


__all__ = [
    "embedding_vs_position",
    "encoding_norms",
    "offset_dependence",
    "position_dots",
    "position_similarity",
    "rope_similarity",
    "rotation_error",
    "rotation_matrix",
    "similarity_by_offset",
    "similarity_long",
    "similarity_matrices",
]
