"""What each replication card's verdict rests on: one statistic per card, computed from
per-position arrays of a traced model, with a bootstrap interval over those positions.

Each statistic is a function of the text's positions (tokens, or predicted tokens, or
attention queries): the point value uses them all, and :data:`BOOT` resamples of them
(drawn with replacement from :data:`BOOT_SEED`) give a 95% percentile interval. A
:class:`Band` is the region where the paper's finding holds; :func:`judge` says
"holds" when the whole interval lies inside it, "does not" when the whole interval lies
on one side of it, and "undecided" when the interval straddles an edge.

The interval covers which tokens the text happens to hold, not the weights: two random
initialisations of one configuration can differ by more than it. That is why a card
claims "training made it" only against a random twin that decidedly lacks the finding
(:func:`resviz.pretrained.replication.cards.outcome`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from resviz.words.numbers import format_number

BOOT = 400  # resamples of the positions
BOOT_SEED = 0  # fixed: the trained model's interval does not move with the page's seed
LEVEL = 0.95


@dataclass(frozen=True)
class Band:
    """Where a card's statistic must lie for the paper's finding to hold: ``low`` to
    ``high`` (either may be infinite); an ``open`` edge excludes its own value."""

    low: float
    high: float
    open_low: bool = False
    open_high: bool = False

    def side(self, x: float) -> int:
        """-1 below the band, 0 inside, +1 above (NaN: 0, which decides nothing)."""
        if x < self.low or (self.open_low and x == self.low):
            return -1
        if x > self.high or (self.open_high and x == self.high):
            return 1
        return 0


@dataclass(frozen=True)
class Evidence:
    """A card's statistic on the whole text (``value``), its bootstrap interval over
    positions (``low``, ``high``; equal to ``value`` when there is nothing to resample),
    ``n`` (how many positions it rests on) and ``basis`` (those positions in words)."""

    value: float
    low: float
    high: float
    n: int
    basis: str

    @property
    def finite(self) -> bool:
        """Whether there is a value (its interval may still be unbounded)."""
        return math.isfinite(self.value)


# Fewer positions than this decide nothing: 7 positions have 1,716 distinct resamples,
# and a text of one or two gives an interval of zero width around its value.
MIN_POSITIONS = 8


def judge(ev: Evidence | None, band: Band) -> bool | None:
    """True when the whole interval lies in ``band``, False when it lies wholly on one
    side of it, None when it straddles an edge, a value is not finite, or it rests on
    fewer than :data:`MIN_POSITIONS` positions."""
    if ev is None or not ev.finite or math.isnan(ev.low) or math.isnan(ev.high):
        return None
    if ev.n < MIN_POSITIONS:
        return None
    lo, hi = band.side(ev.low), band.side(ev.high)
    if lo == hi == 0 and band.side(ev.value) == 0:
        return True
    if lo == hi != 0:
        return False
    return None


def resamples(n: int, boot: int = BOOT, seed: int = BOOT_SEED) -> np.ndarray:
    """(boot, n) counts: how often each of ``n`` positions is drawn in each resample."""
    return block_resamples(n, 1, boot, seed)


COLLAPSE_BLOCK = 16  # tokens a block of the rank-collapse bootstrap keeps together


def block_resamples(n: int, block: int, boot: int = BOOT, seed: int = BOOT_SEED) -> np.ndarray:
    """(boot, n) counts of a moving-block bootstrap (Kunsch 1989): each resample joins
    ceil(n / block) runs of ``block`` neighbouring positions, each run starting at a
    position drawn uniformly from those where it fits, and keeps the first ``n``
    positions drawn. ``block`` 1 is :func:`resamples`' plain draw."""
    block = max(1, min(int(block), n))
    rng = np.random.default_rng(seed)
    runs = -(-n // block)
    starts = rng.integers(0, n - block + 1, size=(boot, runs))
    idx = (starts[:, :, None] + np.arange(block)).reshape(boot, -1)[:, :n]
    counts = np.zeros((boot, n))
    np.add.at(counts, (np.arange(boot)[:, None], idx), 1.0)
    return counts


def _interval(samples: np.ndarray) -> tuple[float, float]:
    """The central ``LEVEL`` of ``samples``. A resample with no value (NaN: the
    statistic undefined on it) counts at both ends, so enough of them leave the
    interval unbounded (-inf or inf), which no band holds."""
    if samples.size == 0:
        return float("nan"), float("nan")
    tail = 100 * (1 - LEVEL) / 2
    # The order statistics outside the central share (no interpolation between them,
    # which is undefined beside an infinite end).
    low = np.percentile(np.where(np.isnan(samples), -np.inf, samples), tail, method="lower")
    high = np.percentile(np.where(np.isnan(samples), np.inf, samples), 100 - tail, method="higher")
    return float(low), float(high)


def bootstrap(
    per_position: np.ndarray, stat: Callable[[np.ndarray], np.ndarray], basis: str
) -> Evidence:
    """``stat`` of the position means: ``per_position`` is (..., T); ``stat`` takes the
    weighted means (..., B) and returns (B,). The point value is ``stat`` of the plain
    means."""
    T = per_position.shape[-1]
    point = float(stat(per_position.mean(-1)[..., None])[0]) if T else float("nan")
    if T < 2:
        return Evidence(point, point, point, T, basis)
    w = resamples(T)  # (B, T)
    means = per_position @ w.T / T  # (..., B)
    lo, hi = _interval(np.asarray(stat(means), float))
    return Evidence(point, lo, hi, T, basis)


def _tokens(n: int) -> str:
    return f"{n} token{'s' if n != 1 else ''}"


# ----------------------------------------------------------------- the statistics
def lower_median(a: np.ndarray, axis: int = -1) -> np.ndarray:
    """The median as torch takes it: the lower of the two middle values."""
    n = a.shape[axis]
    return np.take(np.sort(a, axis=axis), (n - 1) // 2, axis=axis)


def _slope(y: np.ndarray) -> np.ndarray:
    """Least-squares slope of y (L, B) against 1..L, per column."""
    x = np.arange(1, y.shape[0] + 1, dtype=float)
    x = x - x.mean()
    return (x[:, None] * (y - y.mean(0))).sum(0) / (x**2).sum()


def norm_growth(stream: torch.Tensor) -> Evidence:
    """``exp`` of the slope of ``log median_t ||x_l[t]||`` over blocks 1..L (the
    frame's :func:`resviz.pretrained.norm_growth`), tokens resampled."""
    n = stream[1:].double().norm(dim=-1).numpy()  # (L, T)
    L, T = n.shape
    basis = _tokens(T)
    if L < 2:
        return Evidence(float("nan"), float("nan"), float("nan"), T, basis)
    point = float(math.exp(_slope(np.log(lower_median(n))[:, None])[0]))
    if T < 2:
        return Evidence(point, point, point, T, basis)
    idx = np.random.default_rng(BOOT_SEED).integers(0, T, size=(BOOT, T))
    med = lower_median(n[:, idx], axis=-1)  # (L, B)
    lo, hi = _interval(np.exp(_slope(np.log(med))))
    return Evidence(point, lo, hi, T, basis)


def _halves(n_blocks: int, last: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Which rows end in the first half (``last <= n/2``) and which in the deeper."""
    deep = last > n_blocks / 2
    return ~deep, deep


def _deep_minus(values: np.ndarray, first: np.ndarray, deep: np.ndarray) -> np.ndarray:
    """min over the first-half rows minus min over the deeper rows (> 0: the smallest
    value is in the deeper half), per column."""
    return values[first].min(0) - values[deep].min(0)


def deep_minimum(per_position: np.ndarray, last: np.ndarray, n_blocks: int, basis: str) -> Evidence:
    """For rows (spans or blocks) ending at ``last`` with per-position values (R, T):
    the smallest mean in the first half minus the smallest in the deeper half; > 0
    when the minimum lies in the deeper half (ties go to the first half)."""
    first, deep = _halves(n_blocks, last)
    if not first.any() or not deep.any():
        T = per_position.shape[-1]
        return Evidence(float("nan"), float("nan"), float("nan"), T, basis)
    return bootstrap(per_position, lambda m: _deep_minus(m, first, deep), basis)


def _cos(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.cosine_similarity(a.double(), b.double(), dim=-1, eps=1e-300)


def block_influence(stream: torch.Tensor) -> Evidence:
    """ShortGPT's Block Influence ``1 - cos(x_(l-1)[t], x_l[t])`` per block and token;
    the statistic: the lowest mean in the first half minus the lowest in the deeper."""
    infl = (1 - _cos(stream[:-1], stream[1:])).numpy()  # (L, T)
    L = infl.shape[0]
    return deep_minimum(infl, np.arange(1, L + 1), L, _tokens(infl.shape[1]))


def similarity_gap(n_layers: int) -> int:
    """The span n of Gromov et al.'s ``d(x_l, x_(l+n))`` the card reads: a quarter of
    the blocks, at least 1."""
    return max(1, n_layers // 4)


def angular(stream: torch.Tensor, gap: int) -> torch.Tensor:
    """Gromov et al.'s angular distance ``arccos(cos(x_l[t], x_(l+gap)[t])) / pi``
    for every span start l (0..L-gap) and position t: (L - gap + 1, T)."""
    c = _cos(stream[:-gap], stream[gap:]).clamp(-1, 1)
    return torch.arccos(c) / math.pi


def layer_similarity(stream: torch.Tensor) -> Evidence:
    """The angular distance over spans of :func:`similarity_gap` blocks; the
    statistic: the smallest mean over spans ending in the first half minus the
    smallest over spans ending in the deeper half (> 0: smallest in the deep)."""
    L = stream.shape[0] - 1
    gap = similarity_gap(L)
    ang = angular(stream, gap).numpy()
    return deep_minimum(ang, np.arange(gap, L + 1), L, _tokens(ang.shape[1]))


# Fewer right predictions than this leave accuracy kept's interval unbounded: a
# bootstrap of 4 right tokens, all kept, gives "100% to 100%".
MIN_RIGHT = 10


def accuracy_kept(correct: np.ndarray, n_layers: int) -> Evidence:
    """``correct`` (1 + blocks done, P): row 0 the full model's right predictions per
    position, row b with block b deleted. The statistic: the median over the middle
    blocks (2..L-1) of accuracy with the block deleted over the full model's
    (Lad et al.'s accuracy kept). Under :data:`MIN_RIGHT` right predictions the
    interval is unbounded."""
    P = correct.shape[1]
    right = int(correct[0].sum())
    basis = f"{P} predicted tokens, {right} of them right in the full model"
    rows = [b for b in range(2, n_layers) if b < correct.shape[0]]
    nan = float("nan")
    if not rows or right == 0:
        return Evidence(nan, nan, nan, P, basis)
    c = correct.astype(float)

    def stat(means: np.ndarray) -> np.ndarray:
        full = means[0]
        with np.errstate(divide="ignore", invalid="ignore"):
            kept = means[rows] / np.where(full > 0, full, np.nan)
        # The median of an even count as pandas takes it (the frame's): the mean of the two.
        return np.median(kept, axis=0)

    ev = bootstrap(c, stat, basis)
    if right < MIN_RIGHT:
        few = f"{basis} (under {MIN_RIGHT}: too few to bound)"
        return Evidence(ev.value, -math.inf, math.inf, P, few)
    return ev


def lens_agreement(tops: torch.Tensor) -> Evidence:
    """``tops`` (L+1, T): each state's decoded top token per position. The statistic:
    the share of positions whose top token after block L-1 equals the final one, minus
    that share after the embeddings (> 0: closer to the final with depth)."""
    agree = (tops == tops[-1]).double().numpy()  # (L + 1, T)
    L = agree.shape[0] - 1
    rows = np.array([0, L - 1])
    return bootstrap(agree[rows], lambda m: m[1] - m[0], _tokens(agree.shape[1]))


def _collapse_distance(X: np.ndarray, w: np.ndarray) -> np.ndarray:
    """||X - 1 mean^T||_F / ||X||_F for the rows of X (T, C) drawn ``w`` (B, T) times."""
    sq = (X**2).sum(-1)  # (T,)
    T = X.shape[0]
    total = w @ sq  # (B,)
    mean = w @ X / T  # (B, C)
    resid = np.clip(total - T * (mean**2).sum(-1), 0, None)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.sqrt(resid / total)


def collapse_ratio(
    with_s: torch.Tensor, without: torch.Tensor, floor: float, block: int = COLLAPSE_BLOCK
) -> Evidence:
    """The last block's token matrices with and without shortcuts (T, C). The
    statistic: the distance from rank one without over with (a distance under
    ``floor`` counts as ``floor``, its largest possible value); tokens resampled in
    runs of ``block`` neighbours (:func:`block_resamples`, at most a quarter of the
    text).

    Why runs: the distance is about how the tokens sit around their common mean, and
    attention has mixed each token with its neighbours, so tokens drawn one by one
    are not independent draws of what a text gives. Drawn singly, the interval on the
    Sonnets GPT-2 missed how the ratio moves from one 128-token window of held-out
    text to the next (0.006 to 0.46; single-token intervals as narrow as
    0.0057-0.0066 and 0.38-0.53, so "agrees" and "differs" both occurred); in runs of
    16, no two windows decide opposite ways (docs/pretrained.md)."""
    A, B = with_s.double().numpy(), without.double().numpy()
    T = A.shape[0]

    def ratio(w: np.ndarray) -> np.ndarray:
        a, b = _collapse_distance(A, w), _collapse_distance(B, w)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(a > 0, np.maximum(b, floor) / a, np.nan)

    point = float(ratio(np.ones((1, T)))[0])
    run = max(1, min(block, T // 4))
    basis = _tokens(T) + (f", drawn in runs of {run}" if run > 1 else "")
    if float(_collapse_distance(B, np.ones((1, T)))[0]) < floor:
        basis += f" (the distance without, under {format_number(floor)}, counted as {format_number(floor)}: an upper bound)"
    if T < 2 or not (np.isfinite(A).all() and np.isfinite(B).all()):
        return Evidence(point, point, point, T, basis)
    lo, hi = _interval(ratio(block_resamples(T, run)))
    return Evidence(point, lo, hi, T, basis)


SINK_SHARE = 0.5  # "most of their attention": more than half


def sink_heads(att: torch.Tensor, n_layers: int) -> Evidence:
    """``att`` (L, H, T, T). The statistic: the share of heads beyond blocks 1-2 (every
    block for a model of two or fewer) whose mean weight on position 0, over queries
    1..T-1, is over :data:`SINK_SHARE`; the queries resampled."""
    first = att[:, :, 1:, 0].double().numpy()  # (L, H, T - 1)
    if n_layers > 2:
        first = first[2:]
    Q = first.shape[-1]
    basis = f"{Q} query position{'s' if Q != 1 else ''}"
    if Q == 0:
        return Evidence(float("nan"), float("nan"), float("nan"), 0, basis)
    return bootstrap(first, lambda m: (m > SINK_SHARE).mean(axis=(0, 1)), basis)


def massive_orders(stream: torch.Tensor, boot: int = 100) -> Evidence:
    """log10 of the largest ``max |x_l| / median |x_l|`` over the stream states (the
    median as torch takes it), token rows resampled (``boot`` times: the weighted
    median of every state is a sort and a running sum per resample)."""
    x = stream.double().abs().numpy()  # (L + 1, T, C)
    L1, T, C = x.shape

    def orders(w: np.ndarray) -> np.ndarray:  # w (B, T) counts -> (B,)
        out = np.full((w.shape[0], L1), np.nan)
        for s in range(L1):
            flat = x[s].ravel()
            order = np.argsort(flat, kind="stable")
            rows = order // C
            vals = flat[order]
            rowmax = x[s].max(-1)  # (T,)
            k = (T * C - 1) // 2  # the lower median's place among T * C values
            for b in range(w.shape[0]):
                cum = np.cumsum(w[b, rows])
                med = vals[np.searchsorted(cum, k + 1)]
                mx = rowmax[w[b] > 0].max()
                out[b, s] = mx / max(med, 1e-300)
        return np.log10(out.max(1))

    point = float(orders(np.ones((1, T)))[0])
    if T < 2:
        return Evidence(point, point, point, T, _tokens(T))
    lo, hi = _interval(orders(resamples(T, boot)))
    return Evidence(point, lo, hi, T, _tokens(T))
