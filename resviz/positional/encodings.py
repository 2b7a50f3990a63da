"""Positional encodings (Vaswani et al. 2017, section 3.5).

``P(k, 2i) = sin(k / n**(2i/d))`` and ``P(k, 2i+1) = cos(k / n**(2i/d))`` for
position ``k``, dimension pair ``i`` and base ``n`` (10000 in the paper; the
lecture notes' small table uses ``n = 100``, ``d = 4``).

This module holds the encodings and their tables: the sinusoidal table with
its column formulas, wavelengths and waves (tidy DataFrames for the charts),
and the alternatives a page shows beside it: the raw integer index, a learned
table at init and rotary embeddings (RoPE, Su et al. 2021). Pair ``i`` turns
through ``k / n**(2i/d)`` radians at position ``k``, so its wavelength is
``2*pi * n**(2i/d)``. What is measured on them (similarity, offset dependence,
rotations, norms) is in :mod:`resviz.positional.measures`; ``rv.positional.<name>``
reaches those names too. Everything random is drawn from a ``torch.Generator``
seeded by the arguments, never the global RNG.
"""

from __future__ import annotations

import math

import pandas as pd
import torch

from resviz.config import MAX_POSITIONS, check_int
from resviz.data import tokenize_words as tokenize_words  # the sinusoidal page reads it here
from resviz.sinusoid import sinusoidal_table

MAX_D_MODEL = 8192
# A [P, P] float64 matrix at this cap is 32 MiB; beyond it a page should slice.
MAX_MATRIX_POSITIONS = 2048
# Long-form similarity is one Vega mark per cell: 128**2 = 16k rows stays
# interactive, while larger matrices belong in resviz.charts.raster as one image.
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

    Computed in float64 and cast, so float32 tables are correctly rounded (the
    formula is :func:`resviz.sinusoid.sinusoidal_table`'s). Odd ``d_model``,
    ``base <= 1`` and sizes out of range raise ``ValueError``.
    """
    check_encoding_args(n_positions, d_model, base)
    return sinusoidal_table(n_positions, d_model, base, dtype)


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


__all__ = [
    "MAX_D_MODEL",
    "MAX_LONG_POSITIONS",
    "MAX_MATRIX_POSITIONS",
    "MAX_TABLE_CELLS",
    "MAX_VOCAB_CELLS",
    "check_encoding_args",
    "column_formulas",
    "encoding_frame",
    "encoding_table",
    "integer_index_encoding",
    "learned_encoding",
    "rope_rotate",
    "sinusoidal_encoding",
    "tokenize_words",
    "wavelengths",
    "waves_long",
]
