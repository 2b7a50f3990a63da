"""Positional encodings (Vaswani et al. 2017, section 3.5).

``P(k, 2i) = sin(k / n**(2i/d))`` and ``P(k, 2i+1) = cos(k / n**(2i/d))`` for
position ``k``, dimension pair ``i`` and base ``n`` (10000 in the paper; the
lecture notes' small table uses ``n = 100``, ``d = 4``).

Besides the table itself this module holds the notebook functions behind the
"sinusoidal encoding" page: tidy DataFrames for its charts and tensors for its
heatmaps. Pair ``i`` turns through ``k / n**(2i/d)`` radians at position ``k``,
so its wavelength is ``2*pi * n**(2i/d)``; a shift by ``k`` positions is a
rotation of every pair, which is why ``<P(p), P(q)>`` depends on ``p - q`` only.
For comparison it also builds the alternatives a page shows beside it: the raw
integer index, a learned table at init and rotary embeddings (RoPE, Su et al.
2021). Everything random is drawn from a ``torch.Generator`` seeded by the
arguments, never the global RNG.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd
import torch

from .config import MAX_POSITIONS, check_int
from .data import tokenize_words as tokenize_words  # the sinusoidal page reads it here

MAX_D_MODEL = 8192
# A [P, P] float64 matrix at this cap is 32 MiB; beyond it a page should slice.
MAX_MATRIX_POSITIONS = 2048
# Long-form similarity is one Vega mark per cell: 128**2 = 16k rows stays
# interactive, while larger matrices belong in resviz.raster as one image.
MAX_LONG_POSITIONS = 128
# Bounds the rows of long-form and wide tables so a slider cannot ask pandas
# for gigabytes.
MAX_TABLE_CELLS = 1_000_000
MAX_VOCAB_CELLS = 1 << 24


def check_encoding_args(n_positions: int, d_model: int, base: float) -> None:
    """Raise ``ValueError`` with an actionable message for arguments that make no table."""
    check_int("n_positions", n_positions, 1, MAX_POSITIONS)
    check_int("d_model", d_model, 2, MAX_D_MODEL)
    if d_model % 2:
        raise ValueError(
            f"d_model={d_model} is odd: sinusoidal encodings come in (sin, cos) pairs, "
            "so use an even d_model."
        )
    if isinstance(base, bool) or not isinstance(base, int | float) or not math.isfinite(base):
        raise ValueError(f"base must be a finite number, got {base!r}.")
    if base <= 1:
        raise ValueError(
            f"base={base} must be greater than 1: with base <= 1 the wavelengths no longer "
            "grow with the dimension, and base = 1 makes every pair the same wave."
        )


def sinusoidal_encoding(
    n_positions: int,
    d_model: int,
    base: float = 10000.0,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """The ``[n_positions, d_model]`` sinusoidal table; column ``2i`` is
    ``sin(pos / base**(2i/d))`` and column ``2i+1`` is ``cos`` of the same angle.

    Computed in float64 and cast, so float32 tables are correctly rounded.
    Odd ``d_model``, ``base <= 1`` and sizes out of range raise ``ValueError``.
    """
    check_encoding_args(n_positions, d_model, base)
    pos = torch.arange(n_positions, dtype=torch.float64)[:, None]  # (P, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (d/2,)
    angle = pos / base ** (two_i / d_model)  # (P, d/2)
    pe = torch.empty(n_positions, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle)
    return pe.to(dtype)


# --- argument checks shared by the page functions ---------------------------


def _check_seed(seed: object) -> int:
    # torch.Generator.manual_seed wants a 64-bit integer; anything else would
    # surface as a RuntimeError deep inside torch.
    return check_int("seed", seed, 0, 2**63 - 1)


def _check_matrix_positions(n_positions: int, what: str) -> None:
    if n_positions > MAX_MATRIX_POSITIONS:
        raise ValueError(
            f"{what} has {n_positions} positions, but [P, P] matrices are capped at "
            f"{MAX_MATRIX_POSITIONS}: slice to the first {MAX_MATRIX_POSITIONS} positions."
        )


def _as_float64_table(pe: object, name: str = "pe") -> torch.Tensor:
    """``pe`` as a float64 ``[P, d]`` tensor, or ``ValueError`` saying what is wrong."""
    if not isinstance(pe, torch.Tensor):
        raise ValueError(
            f"{name} must be a torch.Tensor of shape [positions, d_model], got {type(pe).__name__}."
        )
    if pe.dim() != 2 or pe.shape[0] < 1 or pe.shape[1] < 1:
        raise ValueError(
            f"{name} must have shape [positions, d_model] with both >= 1, got {tuple(pe.shape)}."
        )
    if pe.is_complex():
        raise ValueError(f"{name} must be real, got dtype {pe.dtype}.")
    # float64 so identities such as ||P(k)||^2 = d/2 hold to 1e-9, not to float32's 1e-7.
    out = pe.detach().to("cpu", torch.float64)
    if not torch.isfinite(out).all():
        raise ValueError(
            f"{name} contains NaN or infinite entries; similarities would be meaningless."
        )
    return out


def _format_base(base: float) -> str:
    # "100" rather than "100.0" so the labels read like the lecture notes.
    return str(int(base)) if float(base).is_integer() and abs(base) < 1e15 else f"{base:g}"


# --- the table and its formulas ------------------------------------------------


def column_formulas(d_model: int, base: float = 10000.0) -> pd.DataFrame:
    """One row per encoding dimension ``j``, saying which wave it holds.

    Columns: ``j``; ``fn`` (``"sin"`` for even ``j``, ``"cos"`` for odd);
    ``i = j // 2`` (the pair); ``frequency = 1 / base**(2i/d)`` (radians per
    position); ``wavelength = 2*pi * base**(2i/d)`` (positions per cycle) and
    ``label``, e.g. ``"sin(k/100^(0/4))"``.
    """
    check_encoding_args(1, d_model, base)
    rows = []
    for j in range(d_model):
        i = j // 2
        scale = float(base) ** (2 * i / d_model)
        fn = "sin" if j % 2 == 0 else "cos"
        rows.append(
            {
                "j": j,
                "fn": fn,
                "i": i,
                "frequency": 1.0 / scale,
                "wavelength": 2 * math.pi * scale,
                "label": f"{fn}(k/{_format_base(base)}^({2 * i}/{d_model}))",
            }
        )
    return pd.DataFrame(rows)


def encoding_frame(n_positions: int, d_model: int, base: float = 10000.0) -> pd.DataFrame:
    """The whole ``[n_positions, d_model]`` table as a frame: a ``k`` column, then
    ``P(k,j)`` for every column j (float32, as :func:`sinusoidal_encoding` gives it)."""
    pe = sinusoidal_encoding(n_positions, d_model, base).numpy()
    df = pd.DataFrame(pe, columns=[f"P(k,{j})" for j in range(d_model)])
    df.insert(0, "k", range(n_positions))
    return df


def encoding_table(tokens: list[str], d_model: int, base: float = 10000.0) -> pd.DataFrame:
    """The lecture-notes table: one row per token with its position encoding.

    Columns: ``token``, ``k`` (its index in ``tokens``), then ``P(k,0)`` ...
    ``P(k,d-1)`` with ``P(k,2i) = sin(k/base**(2i/d))`` and
    ``P(k,2i+1) = cos(k/base**(2i/d))``. Values are float64. No tokens give an
    empty table with the same columns, so a page can render an empty input.
    """
    if not isinstance(tokens, list | tuple) or not all(isinstance(t, str) for t in tokens):
        raise ValueError("tokens must be a list of strings; use tokenize_words(text) to make one.")
    check_encoding_args(max(len(tokens), 1), d_model, base)
    if len(tokens) * d_model > MAX_TABLE_CELLS:
        raise ValueError(
            f"{len(tokens)} tokens x d_model={d_model} is more than {MAX_TABLE_CELLS} cells: "
            "use fewer tokens or a smaller d_model."
        )
    columns = [f"P(k,{j})" for j in range(d_model)]
    if not tokens:
        values = torch.empty(0, d_model, dtype=torch.float64)
    else:
        values = sinusoidal_encoding(len(tokens), d_model, base, dtype=torch.float64)
    df = pd.DataFrame(values.numpy(), columns=columns)
    df.insert(0, "k", range(len(tokens)))
    df.insert(0, "token", pd.Series(list(tokens), dtype=object))
    return df


def wavelengths(d_model: int, base: float = 10000.0) -> pd.DataFrame:
    """Wavelength of each (sin, cos) pair: ``2*pi * base**(2i/d)`` positions.

    Columns: ``i`` (pair), ``dims`` (e.g. ``"2/3"`` for ``i = 1``) and
    ``wavelength``; it grows geometrically from ``2*pi`` towards ``2*pi*base``.
    """
    check_encoding_args(1, d_model, base)
    i = torch.arange(d_model // 2, dtype=torch.float64)
    wl = 2 * math.pi * float(base) ** (2 * i / d_model)
    return pd.DataFrame(
        {
            "i": range(d_model // 2),
            "dims": [f"{2 * k}/{2 * k + 1}" for k in range(d_model // 2)],
            "wavelength": wl.numpy(),
        }
    )


def waves_long(
    n_positions: int, d_model: int, base: float = 10000.0, dims: list[int] | None = None
) -> pd.DataFrame:
    """Long form of selected columns of the table, for a line chart of the waves.

    Columns: ``position`` (``k``), ``dim`` (``j``) and ``value = P(k, j)``;
    ``dims`` defaults to the first pair ``[0, 1]``. Repeated dims are kept once.
    """
    check_encoding_args(n_positions, d_model, base)
    if dims is None:
        dims = [0, 1]
    if not isinstance(dims, list | tuple):
        raise ValueError(f"dims must be a list of dimension indices, got {type(dims).__name__}.")
    picked: list[int] = []
    for j in dims:
        check_int("each of dims", j, 0, d_model - 1)
        if j not in picked:
            picked.append(j)
    if n_positions * len(picked) > MAX_TABLE_CELLS:
        raise ValueError(
            f"{n_positions} positions x {len(picked)} dims is more than {MAX_TABLE_CELLS} rows: "
            "pick fewer positions or dims."
        )
    pe = sinusoidal_encoding(n_positions, d_model, base, dtype=torch.float64)
    sel = pe[:, picked]  # (P, len(picked))
    return pd.DataFrame(
        {
            "position": torch.arange(n_positions).repeat_interleave(len(picked)).numpy(),
            "dim": torch.tensor(picked, dtype=torch.int64).repeat(n_positions).numpy(),
            "value": sel.reshape(-1).numpy(),
        }
    )


# --- similarity between positions ---------------------------------------------


def _cosine_from_gram(gram: torch.Tensor) -> torch.Tensor:
    norms = gram.diagonal().clamp_min(0).sqrt()
    denom = norms[:, None] * norms[None, :]
    # A zero vector (the integer index at k = 0) has no direction: NaN says so
    # honestly, and resviz.raster draws it grey.
    return torch.where(denom > 0, gram / denom, torch.full_like(gram, math.nan))


def position_similarity(pe: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Dot products ``<P(p), P(q)>`` and cosines between all positions, float64 ``[P, P]``.

    For the sinusoidal table ``<P(p), P(q)> = sum_i cos((p - q) / base**(2i/d))``
    and the diagonal is ``d/2``. Cosines involving a zero vector are NaN. At most
    ``MAX_MATRIX_POSITIONS`` positions.
    """
    x = _as_float64_table(pe)
    _check_matrix_positions(x.shape[0], "pe")
    dot = x @ x.T
    return dot, _cosine_from_gram(dot)


def offset_dependence(pe: torch.Tensor) -> float:
    """``max_{p,q} |<P(p), P(q)> - <P(0), P(|p-q|)>|`` in float64.

    Zero (to rounding) exactly when the dot product depends only on the offset
    ``|p - q|``, as it does for the sinusoidal table; a learned table at init
    gives a value of the order of its entries' squared norm.
    """
    dot, _ = position_similarity(pe)
    n = dot.shape[0]
    idx = torch.arange(n)
    offsets = (idx[:, None] - idx[None, :]).abs()
    return float((dot - dot[0][offsets]).abs().max())


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
    moved = pe[: n_positions - k] @ r.T  # row p is R_k P(p)
    return float((pe[k:] - moved).abs().max())


# --- alternatives a page shows side by side ----------------------------------------


def integer_index_encoding(
    n_positions: int, d_model: int, dtype: torch.dtype = torch.float32
) -> torch.Tensor:
    """The naive ``[P, d]`` encoding ``P(k, j) = k``: the index copied into every dim.

    Its norm ``k * sqrt(d)`` grows without bound, so at position 100 it dwarfs a
    token embedding of norm about ``sqrt(d)``; and every row points the same way,
    so the cosine between any two positions ``> 0`` is 1 (position 0 is the zero
    vector, with no direction at all).
    """
    check_int("n_positions", n_positions, 1, MAX_POSITIONS)
    check_int("d_model", d_model, 1, MAX_D_MODEL)
    return torch.arange(n_positions, dtype=dtype)[:, None].expand(n_positions, d_model).clone()


def learned_encoding(
    n_positions: int, d_model: int, seed: int = 0, std: float = 0.02
) -> torch.Tensor:
    """A learned ``[P, d]`` position table at init: i.i.d. ``N(0, std**2)``, ``std = 0.02``
    as in GPT-2, drawn from a ``torch.Generator`` seeded by ``seed``.

    Before training the rows are nearly orthogonal random vectors: no notion of
    distance at all, which only training can put there.
    """
    check_int("n_positions", n_positions, 1, MAX_POSITIONS)
    check_int("d_model", d_model, 1, MAX_D_MODEL)
    _check_seed(seed)
    if (
        isinstance(std, bool)
        or not isinstance(std, int | float)
        or not (math.isfinite(std) and std > 0)
    ):
        raise ValueError(f"std must be a positive finite number, got {std!r}.")
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(n_positions, d_model, generator=gen) * std


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


def rope_rotate(
    x: torch.Tensor, base: float = 10000.0, positions: torch.Tensor | None = None
) -> torch.Tensor:
    """Rotary position embedding (RoPE, Su et al. 2021) of the rows of ``x`` ``[P, d]``.

    Row ``p`` (or ``positions[p]``) has each pair ``(x_2i, x_2i+1)`` rotated
    counter-clockwise by ``theta = p * base**(-2i/d)``::

        x'_2i   = x_2i cos(theta) - x_2i+1 sin(theta)
        x'_2i+1 = x_2i sin(theta) + x_2i+1 cos(theta)

    Rotations keep norms, and ``<R_p q, R_s k> = <q, R_{s-p} k>`` depends on
    ``s - p`` only. Computed in float64 and returned in ``x``'s dtype.
    """
    if not isinstance(x, torch.Tensor) or x.dim() != 2:
        raise ValueError("x must be a torch.Tensor of shape [positions, d_model].")
    if x.is_complex() or not (x.is_floating_point() or x.dtype in (torch.int32, torch.int64)):
        raise ValueError(f"x must be a real tensor, got dtype {x.dtype}.")
    n, d = x.shape
    check_encoding_args(n, d, base)
    if positions is None:
        pos = torch.arange(n, dtype=torch.float64)
    else:
        if not isinstance(positions, torch.Tensor) or positions.shape != (n,):
            raise ValueError(f"positions must be a tensor of shape ({n},), one per row of x.")
        pos = positions.detach().to("cpu", torch.float64)
    xd = x.detach().to("cpu", torch.float64)
    theta = pos[:, None] * float(base) ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    c, s = torch.cos(theta), torch.sin(theta)
    ev, od = xd[:, 0::2], xd[:, 1::2]
    out = torch.empty_like(xd)
    out[:, 0::2] = ev * c - od * s
    out[:, 1::2] = ev * s + od * c
    out_dtype = x.dtype if x.is_floating_point() else torch.float64
    return out.to(device=x.device, dtype=out_dtype)


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
    rows); draw larger matrices with :func:`resviz.raster.to_png`. NaN cells are
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
            "cells: slice it, or draw it as an image with resviz.raster.to_png."
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
