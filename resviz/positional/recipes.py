"""Recipes of the sinusoidal-encoding page (one per section; see ``resviz/core.py``).

``P(k, 2i) = sin(k w_i)`` and ``P(k, 2i+1) = cos(k w_i)`` with ``w_i = base**(-2i/d)``
(Vaswani et al. 2017, section 3.5). The settings come in the groups of
:mod:`resviz.positional.settings` (their fields are the page's URL names): the
:class:`Table` of the first section, the :class:`Encoding` (``positions``, ``d_model``,
``base``) every section after it shares, :class:`Waves` and :class:`Shift`. The
sinusoidal table has nothing random: only ``alternatives`` (a learned table, a RoPE
vector) and ``embeddings`` (token embeddings) read ``seed``, and they run several
seeds (``seeds``, 3 by default; frames stacked under a ``seed`` column). The others
are formulas: they take no ``seeds`` (tests check that two seeds give the same
frames), accept ``seed`` and ignore it, so that every recipe is called the same way.
"""

from __future__ import annotations

import math

import pandas as pd
import torch

from resviz import positional as P
from resviz.core import Answer, Result, measure, recipe
from resviz.positional.settings import Encoding, Shift, Table, Waves
from resviz.words.numbers import format_number

# The table tabulates at most this many words of the sentence.
MAX_WORDS = 64
# The side-by-side alternatives and the embeddings draw at most this many positions
# (four [P, P] maps, and a vocabulary of VOCAB token embeddings).
MAX_SIDE = 256
VOCAB = 1000
# PE(0)·PE(k) "rises" at k when it exceeds its value at k - 1 by more than this: the
# dot products are up to d/2 = 512 and computed in float64 (rounding about 1e-13).
RISE_TOL = 1e-9
# Offsets searched for the first rise when fewer positions are shown (the first rise
# is at offset 4 to 88 for every d_model and base the page allows).
RISE_SEARCH = 1024


def _square(m: torch.Tensor, row: str = "p", col: str = "q") -> pd.DataFrame:
    """A [P, P] matrix as a frame: a ``row`` column, then one column per ``col=<j>``."""
    df = pd.DataFrame(m.numpy(), columns=[f"{col}={j}" for j in range(m.shape[1])])
    df.insert(0, row, range(m.shape[0]))
    return df


@recipe(seeds=None)
def table(sentence: Table = Table(), *, seed: int = 0) -> Result:
    """Table: the sentence's words (split at whitespace, at most 64) and their encodings
    with ``d`` columns and base ``n``, rounded to ``dec`` decimals (``sentence``).

    Frames: ``table`` (token, k, P(k,0) ... P(k,d-1)) and ``formulas`` (one row per
    column j: fn, i, frequency, wavelength, label). Values: ``words``, ``truncated``
    (words were dropped), ``hidden`` (cells that round to 0 but are not 0) and
    ``smallest_hidden`` (the smallest of those in size; NaN if none)."""
    d, n, dec = sentence.d, float(sentence.n), sentence.dec
    tokens, truncated = P.tokenize_words(sentence.text, max_tokens=MAX_WORDS)
    exact = P.encoding_table(tokens, d, n)
    shown = exact.round(dec)
    cols = [c for c in exact.columns if c.startswith("P(k,")]
    hidden = (exact[cols] != 0) & (shown[cols] == 0)
    n_hidden = int(hidden.to_numpy().sum())
    smallest = float(exact[cols].abs()[hidden].min().min()) if n_hidden else math.nan
    return Result(
        {"table": shown, "formulas": P.column_formulas(d, n)},
        {
            "words": len(tokens),
            "truncated": truncated,
            "hidden": n_hidden,
            "smallest_hidden": smallest,
        },
    )


@recipe(seeds=None)
def matrix(encoding: Encoding = Encoding(), *, seed: int = 0) -> Result:
    """Matrix: the whole ``[positions, d_model]`` table (float32, as a model adds it).

    Frame ``matrix``: k, then P(k,0) ... P(k,d-1). Value ``last_angle``: the angle in
    radians the last pair reaches at the last position, ``(positions - 1) w_{d/2-1}``
    (float64)."""
    positions, d, b = encoding.positions, encoding.d, encoding.n
    return Result(
        {"matrix": P.encoding_frame(positions, d, b)},
        {"last_angle": (positions - 1) / b ** ((d - 2) / d)},
    )


@recipe(seeds=None)
def waves(encoding: Encoding = Encoding(), plot: Waves = Waves(), *, seed: int = 0) -> Result:
    """Waves: columns ``dims`` against position, and every pair's wavelength.

    Frames: ``waves`` (position, dim, value, dimension = "j=<dim>"; only the dims
    below ``d_model``) and ``wavelengths`` (i, dims, wavelength = 2π base^(2i/d)).
    Value ``beyond``: the dims asked for that ``d_model`` does not have."""
    positions, d, b = encoding.positions, encoding.d, encoding.n
    picked = sorted({int(j) for j in plot.dims if int(j) < d})
    beyond = sorted({int(j) for j in plot.dims if int(j) >= d})
    w = P.waves_long(positions, d, b, dims=picked) if picked else None
    if w is None:
        w = pd.DataFrame({"position": [], "dim": [], "value": []})
    w["dimension"] = "j=" + w["dim"].astype(int).astype(str)
    return Result({"waves": w, "wavelengths": P.wavelengths(d, b)}, {"beyond": beyond})


@recipe(seeds=None)
def relative(encoding: Encoding = Encoding(), shift: Shift = Shift(), *, seed: int = 0) -> Result:
    """Relative position: every dot product PE(p)·PE(q), PE(0)·PE(offset), and the
    shift by ``k`` as a rotation (float64).

    Frames: ``dot`` (p, then q=0 ... q=P-1) and ``by_offset`` (offset, dot, cosine).
    Values: ``offset_error`` = max |PE(p)·PE(q) - PE(0)·PE(|p-q|)|; ``k`` (the shift,
    at most positions - 1) and ``rotation_error`` = max |PE(p+k) - R_k PE(p)|;
    ``rises``: the offsets shown where PE(0)·PE(offset) rises (by more than
    ``RISE_TOL``); ``first_rise``: the first such offset at any offset up to
    ``RISE_SEARCH`` or the positions shown (None if none)."""
    positions, d, b = encoding.positions, encoding.d, encoding.n
    pe = P.sinusoidal_encoding(positions, d, b, dtype=torch.float64)
    dot = P.position_dots(pe)
    by_offset = P.similarity_by_offset(pe)
    if positions < RISE_SEARCH:
        far = P.sinusoidal_encoding(RISE_SEARCH, d, b, dtype=torch.float64)
        searched = P.similarity_by_offset(far)
    else:
        searched = by_offset
    all_rises = searched["offset"][searched["dot"].diff() > RISE_TOL].tolist()
    k = min(shift.k, positions - 1)
    return Result(
        {"dot": _square(dot), "by_offset": by_offset},
        {
            "offset_error": P.offset_dependence(pe),
            "k": k,
            "rotation_error": P.rotation_error(positions, d, b, k),
            "rises": [r for r in all_rises if r < positions],
            "first_rise": all_rises[0] if all_rises else None,
        },
    )


# The four schemes of the Alternatives section: frame name -> the name drawn.
SCHEMES = {
    "sinusoidal": "sinusoidal",
    "integer_index": "integer index",
    "learned": "learned (init)",
    "rope": "RoPE",
}


@recipe
def alternatives(encoding: Encoding = Encoding(), *, seed: int = 0) -> Result:
    """Alternatives: cosine similarity between every two of the first
    ``min(positions, 256)`` positions under four schemes, and their norms.

    Frames: one [P, P] cosine map per scheme (``sinusoidal``, ``integer_index`` (NaN
    in row and column 0, the zero vector), ``learned`` (a GPT-2 style N(0, 0.02²)
    table from ``seed``), ``rope`` (one random vector from ``seed``, rotated as query
    at p and key at q)), each with a ``p`` column; ``norms`` (position, scheme, norm).
    Values: ``shown`` (the positions drawn), ``learned_mean`` and ``learned_std`` of
    the learned map's off-diagonal cosines."""
    d, b = encoding.d, encoding.n
    n = min(encoding.positions, MAX_SIDE)
    mats = P.similarity_matrices(n, d, b, seed)
    learned = mats["learned (init)"]
    off = learned[~torch.eye(n, dtype=torch.bool)]
    norms = P.encoding_norms(
        {
            "sinusoidal": P.sinusoidal_encoding(n, d, b),
            "integer index": P.integer_index_encoding(n, d),
            "learned (init)": P.learned_encoding(n, d, seed=seed),
        }
    )
    frames = {key: _square(mats[name]) for key, name in SCHEMES.items()}
    return Result(
        {**frames, "norms": norms},
        {
            "shown": n,
            "learned_mean": float(off.mean()) if off.numel() else math.nan,
            "learned_std": float(off.std()) if off.numel() > 1 else math.nan,
        },
    )


@recipe
def embeddings(encoding: Encoding = Encoding(), *, seed: int = 0) -> Result:
    """Embeddings: token embeddings (N(0, 1), as nn.Embedding draws them, from a
    vocabulary of 1000 and ``seed``) beside the positional part, over the first
    ``min(positions, 256)`` positions.

    Frame ``parts`` (position, part = token / position / sum, norm). Value ``shown``."""
    n = min(encoding.positions, MAX_SIDE)
    parts = P.embedding_vs_position(VOCAB, encoding.d, n, seed=seed, base=encoding.n)
    return Result({"parts": parts}, {"shown": n})


# ------------------------------------------------------------------ lesson measures
@measure("similarity_monotone", of=relative, choices=("falls steadily", "rises again somewhere"))
def similarity_monotone(r: Result) -> Answer:
    """Over the offsets shown, does PE(0)·PE(k) fall at every step?"""
    by = r.by_offset
    last = len(by) - 1
    if r.rises:
        return Answer(
            "rises again somewhere",
            f"Over offsets 0 to {last}, PE(0)·PE(k) rises again at {len(r.rises)} offsets, "
            f"first at k = {r.rises[0]}.",
        )
    beyond = (
        f"; it first rises again at k = {r.first_rise}, beyond the positions on screen"
        if r.first_rise is not None
        else ""
    )
    return Answer(
        "falls steadily",
        f"Over offsets 0 to {last}, PE(0)·PE(k) falls at every step, from "
        f"{format_number(float(by['dot'].iloc[0]))} to {format_number(float(by['dot'].iloc[-1]))}"
        f"{beyond}.",
    )


@measure("offset_only", of=relative, choices=("only on p - q", "on p too"))
def offset_only(r: Result) -> Answer:
    """Does PE(p)·PE(q) depend on the offset alone, over the positions shown? Yes when
    it differs from PE(0)·PE(|p-q|) by at most 1e-9 of its largest value, d/2."""
    scale = float(r.by_offset["dot"].iloc[0])  # PE(0)·PE(0) = d/2
    err = r.offset_error
    return Answer(
        "only on p - q" if err <= 1e-9 * scale else "on p too",
        f"Largest gap between PE(p)·PE(q) and PE(0)·PE(|p-q|) over {len(r.by_offset)} "
        f"positions: {format_number(err)} (the dot product itself is up to "
        f"{format_number(scale)}).",
    )
