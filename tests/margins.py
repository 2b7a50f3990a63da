"""Margins: no test depends on how one CPU rounds.

The outcome of a short training run (and, far less, of a measurement at init)
depends on how the CPU rounds: float32 summation order and the MKL/oneDNN kernels
differ between AMD and Intel, and a short run moved a lesion's worst deletion from
4.6 to 5.21 points across two machines. So every assertion on the outcome of
training, and every threshold applied to a measured value, is made at a setting
whose value sits well away from the threshold, and the test checks that margin
with :func:`assert_clear` before it asserts the outcome: a setting drifting toward
the edge then fails loudly here, on every machine, rather than silently on some.

The margins the tests use (each test states its measured values next to them):

- accuracy after training: 2 points (``ACCURACY_MARGIN``; runs were seen to move 0.6),
  1 point for a mean over 15 deletions; :func:`assert_lesion_clear` and
  :func:`assert_worst_clear` check a lesion verdict and its worst block that way;
- losses after training: 10-50% relative (``kind="rel"``), about half the measured
  distance or less; gradient-norm ratios after training: 10%;
- ratios spanning orders of magnitude: a factor (``kind="factor"``), 1.5 to 1,000 (a
  diverged run: :func:`assert_far_past_divergence`);
- quantities measured at init (no training to amplify rounding, which moves them
  by about 1e-6 relative between CPUs): 5% (``AT_INIT``), 10^4 times that.

Scripted inputs (hand-made losses, closed forms) need none: they do not round.

Two tolerances that are formulas, each defined here once:

- a number read off a page or a sentence is the value printed to 3 significant figures
  (``rv.format_number``): :func:`printed` (``PRINTED``, half a unit of the third figure,
  5e-3 relative);
- a singular value is 0 to float64's rounding below ``n · eps · largest`` (numpy's rank
  tolerance, ``np.linalg.matrix_rank``): :func:`rank_tolerance`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest

__all__ = [
    "ACCURACY_MARGIN",
    "AT_INIT",
    "KINDS",
    "PRINTED",
    "printed",
    "rank_tolerance",
    "assert_clear",
    "assert_far_past_divergence",
    "assert_far_from_divergence",
    "assert_lesion_clear",
    "assert_worst_clear",
]

KINDS = ("abs", "rel", "factor")

# A quantity measured at init, as a factor: 5% clear.
AT_INIT = 1.05

# A number printed to 3 significant figures is within half a unit of its third figure:
# 5e-3 of its value at most (1.005 prints as 1 or 1.01).
PRINTED = 5e-3


def printed(value: float | Sequence[float], digits: int = 3) -> object:
    """``value`` as a page prints it to ``digits`` significant figures, to compare with
    the number read back: ``float(m[1]) == printed(999 * freq)``."""
    return pytest.approx(value, rel=PRINTED * 10.0 ** (3 - digits))


def rank_tolerance(sigma: Sequence[float]) -> float:
    """The size under which a singular value of ``sigma`` (all of one matrix's) is 0 to
    float64's rounding: ``n · eps · largest``, numpy's rank tolerance."""
    values = np.asarray(sigma, dtype=np.float64)
    return float(values.max()) * len(values) * float(np.finfo(np.float64).eps)


def _g(x: float) -> str:
    return f"{x:.4g}"


def assert_clear(
    value: float,
    threshold: float,
    *,
    side: str,
    margin: float,
    kind: str = "abs",
    what: str = "the measured value",
) -> float:
    """Assert that ``value`` is ``side`` ("above" or "below") ``threshold`` by at
    least ``margin``, and return how far it is, in the margin's unit.

    ``kind`` is how the distance is measured:

    - ``"abs"``: ``value - threshold`` (above) or ``threshold - value`` (below), in
      the value's own unit (accuracy as a fraction: 0.02 is 2 points);
    - ``"rel"``: that difference over ``|threshold|`` (0.2 is 20%);
    - ``"factor"``: ``value / threshold`` (above) or ``threshold / value`` (below),
      both positive; ``margin`` is a factor of at least 1 (2 is a factor of 2).

    A NaN or an infinite value, or one on the wrong side or inside the margin,
    fails with a message naming the value, the threshold and the margin.
    """
    if side not in ("above", "below"):
        raise ValueError(f"side must be 'above' or 'below', not {side!r}")
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")
    if not (math.isfinite(margin) and margin >= (1.0 if kind == "factor" else 0.0)):
        raise ValueError(f"margin={margin!r} is not a margin for kind={kind!r}")
    value, threshold = float(value), float(threshold)
    if not math.isfinite(threshold) or (kind == "rel" and threshold == 0):
        raise ValueError(f"threshold={threshold!r} cannot carry a {kind} margin")
    if kind == "factor" and threshold <= 0:
        raise ValueError(f"a factor margin needs a positive threshold, not {threshold!r}")
    unit = {"abs": "", "rel": " (relative)", "factor": "x"}[kind]
    head = f"{what}: {_g(value)} should be {side} {_g(threshold)} by at least {_g(margin)}{unit}"
    assert math.isfinite(value), f"{head}, but it is not finite"
    if kind == "factor":
        assert value > 0, f"{head}, but it is not positive"
        distance = value / threshold if side == "above" else threshold / value
    else:
        distance = value - threshold if side == "above" else threshold - value
        if kind == "rel":
            distance /= abs(threshold)
    assert distance >= margin, (
        f"{head}; it is {_g(distance)}{unit} {side} it. The setting sits too near the "
        "threshold for its outcome not to depend on how this CPU rounds (tests/margins.py): "
        "move the setting, not the margin."
    )
    return distance


# ------------------------------------------------------------------ the lesion study
# Accuracy after training moves by up to 0.6 points between CPUs (a worst deletion of
# 4.6 here, 5.21 on a Xeon): every side of a lesion verdict is checked 2 points clear.
ACCURACY_MARGIN = 0.02


def assert_lesion_clear(
    intact: float,
    deleted: Sequence[float],
    *,
    classes: int = 3,
    margin: float = ACCURACY_MARGIN,
    what: str = "the stack",
) -> str:
    """The verdict :func:`resviz.lesion_verdict` gives a trained stack whose accuracy
    is ``intact`` and, with each block deleted in turn, ``deleted``; each comparison
    the verdict rests on is first checked ``margin`` clear (:func:`assert_clear`): the
    intact accuracy against the learned line, and the smallest and largest drop (the
    ones that decide) against ``LESION_SMALL_DROP``."""
    from resviz.shortcuts.lesions import LESION_SMALL_DROP, learned_accuracy

    need = learned_accuracy(classes)
    if intact < need:
        assert_clear(intact, need, side="below", margin=margin, what=f"{what}: intact accuracy")
        return "did not learn"
    assert_clear(intact, need, side="above", margin=margin, what=f"{what}: intact accuracy")
    drops = [float(intact) - float(a) for a in deleted]
    lo, hi = min(drops), max(drops)
    small = LESION_SMALL_DROP
    if hi <= small:
        assert_clear(hi, small, side="below", margin=margin, what=f"{what}: largest drop")
        return "barely changes"
    if lo > small:
        assert_clear(lo, small, side="above", margin=margin, what=f"{what}: smallest drop")
        return "suffers"
    assert_clear(lo, small, side="below", margin=margin, what=f"{what}: smallest drop")
    assert_clear(hi, small, side="above", margin=margin, what=f"{what}: largest drop")
    return "depends on the block"


def assert_worst_clear(
    blocks: Sequence[int],
    deleted: Sequence[float],
    *,
    margin: float = ACCURACY_MARGIN,
    what: str = "the stack",
) -> int:
    """The block whose deletion leaves the lowest accuracy (``deleted``, one per block
    of ``blocks``), checked ``margin`` clear of the runner-up: returns that block."""
    ranked = sorted(zip(deleted, blocks, strict=True))
    (worst, block), (second, other) = ranked[0], ranked[1]
    assert_clear(
        second,
        worst,
        side="above",
        margin=margin,
        what=f"{what}: accuracy without block {other} (runner-up) over block {block} (worst)",
    )
    return int(block)


# ------------------------------------------------------------------- a blown-up run
def assert_far_past_divergence(found: object, *, margin: float = 1e3) -> None:
    """A run the tests expect diverged (``found``, a :class:`resviz.train.Divergence`)
    went far past the line on any CPU: NaN or Inf, or a loss at least ``margin`` times
    ``DIVERGENCE_FACTOR`` x its start."""
    from resviz.train import DIVERGENCE_FACTOR

    assert found is not None, "the run did not diverge"
    value, start = float(found.value), float(found.start)  # type: ignore[attr-defined]
    if math.isfinite(value):
        assert_clear(
            value / start,
            DIVERGENCE_FACTOR,
            side="above",
            margin=margin,
            kind="factor",
            what="loss at divergence over its start",
        )


def assert_far_from_divergence(curves: object, by: str = "variant", *, margin: float = 1e3) -> None:
    """Every run of a long-form loss frame (``by``, ``loss`` columns, in step order) stays
    far under the divergence line on any CPU: its largest loss is at least ``margin``
    times under ``DIVERGENCE_FACTOR`` x its first."""
    from resviz.train import DIVERGENCE_FACTOR

    for name, run in curves.groupby(by):  # type: ignore[attr-defined]
        assert_clear(
            run["loss"].max() / run["loss"].iloc[0],
            DIVERGENCE_FACTOR,
            side="below",
            margin=margin,
            kind="factor",
            what=f"{name}: loss over its first",
        )
