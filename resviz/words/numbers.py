"""Fragments of a finding, worded from the numbers, and the one number format.

:func:`format_number` writes every figure in resviz's captions (three significant
digits, ``0.0123``, ``35.2``, ``1.2e9``; NaN and Inf spelled out), so a test can
read a figure back from a caption. The fragments here have no trailing full stop;
a page builds its own sentence around them, worded for whichever way the
measurement came out:

* :func:`trend_words`: how a sequence of positive quantities (gradient norms over
  layers, a gain over depth) changes, by orders of magnitude, with exact zeros
  (float underflow) and NaN/Inf counted;
* :func:`ratio_words`: one value as a multiple of another;
* :func:`crossing_words`: the step where one curve first drops below another;
* :func:`lower_words`: which of two runs ends lower, with both figures.

The gradient-flow page words its per-layer and per-depth captions with
:func:`trend_words` and :func:`ratio_words`. Whole sentences about a named subject are :mod:`resviz.words.sentences` (which also
exports every name here). No Streamlit, no HTML: plain text only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = [
    "FLOAT32_RESOLUTION",
    "FLOAT64_RESOLUTION",
    "agreement_words",
    "crossing_words",
    "format_log10",
    "format_number",
    "log_trend_words",
    "lower_words",
    "ratio_words",
    "resolution_words",
    "trend_words",
]

# A relative distance (a rank-collapse distance ||X - 1 x^T|| / ||X||, a ratio near 0)
# computed through a network in float32 or float64 is rounding below about this: some
# hundred units of the format's last place (2**-24, 2**-53), above the floors measured
# (float32: 2e-7 in the playground's encoder, 4.5e-7 in MiniLM; float64: 2e-16 to 5e-16).
# Below it a value is shown as "below float32 resolution (< 1e-05)", never as a number.
FLOAT32_RESOLUTION = 1e-5
FLOAT64_RESOLUTION = 1e-13


def resolution_words(floor: float) -> str:
    """``"below float64 resolution (< 1e-13)"``: what is said of a value under ``floor``
    (:data:`FLOAT32_RESOLUTION` or :data:`FLOAT64_RESOLUTION`) instead of the value."""
    kind = "float32" if floor == FLOAT32_RESOLUTION else "float64"
    if floor not in (FLOAT32_RESOLUTION, FLOAT64_RESOLUTION):
        raise ValueError(f"floor must be FLOAT32_RESOLUTION or FLOAT64_RESOLUTION, not {floor!r}")
    return f"below {kind} resolution (< {format_number(floor)})"


def format_number(x: float, digits: int = 3) -> str:
    """``x`` to ``digits`` significant figures, as a person writes it.

    Plain notation between 0.001 and 10,000 (``0.0123``, ``35.2``), otherwise
    ``1.2e9`` / ``4.5e-31`` (no ``+`` and no leading zero in the exponent);
    ``0``, ``NaN``, ``Inf`` and ``-Inf`` are spelled out. ``float(...)`` of the
    result gives back the rounded value, which is what tests compare with.
    """
    x = float(x)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Inf" if x > 0 else "-Inf"
    if x == 0:
        return "0"
    e = math.floor(math.log10(abs(x)))
    if -3 <= e < 4:
        places = max(digits - 1 - e, 0)
        text = f"{round(x, digits - 1 - e):.{places}f}"
        return text.rstrip("0").rstrip(".") if "." in text else text
    mantissa, exp = f"{x:.{digits - 1}e}".split("e")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}e{int(exp)}"


def _step(s: float) -> str:
    return str(int(s)) if float(s).is_integer() else format_number(s)


def _factor(r: float) -> str:
    return format_number(r, 2)


def trend_words(values: Sequence[float], within: float = 10.0) -> str:
    """How a sequence of positive quantities (gradient norms over layers, a gain
    over depth) changes from its first value to its last.

    - every value within a factor of ``within`` of every other:
      ``"stays within a factor of 2.3 (from 1.1 to 2.5)"``;
    - otherwise, by the end points: ``"grows by a factor of 3.5e9, from 1.2 to
      4.2e9"`` or ``"falls by a factor of 1e30, from 0.5 to 5e-31"``; a sequence
      that spreads widely but ends near where it started ``"ranges over a factor
      of 80 (from 1 to 80) and ends at 1.5, from 1.2"``;
    - a last value of exactly 0 (float underflow) after a positive start:
      ``"falls from 0.5 to exactly 0"``; a first value of 0: ``"grows from exactly
      0 to 3"``;
    - NaN or Inf values are left out of the comparison and counted:
      ``"...; 2 of 13 values are not finite"``; none finite: ``"is not finite"``.

    Negative values have no factor: the fragment then gives the end points only.
    """
    vals = [float(v) for v in values]
    if not vals:
        return "has no values yet"
    finite = [v for v in vals if math.isfinite(v)]
    n_bad = len(vals) - len(finite)
    bad = f"; {n_bad} of {len(vals)} values are not finite" if n_bad else ""
    if not finite:
        return "is not finite"
    first, last = finite[0], finite[-1]
    a, b = format_number(first), format_number(last)
    if len(finite) == 1:
        return f"is {a} (one value)" + bad
    if min(finite) < 0:
        return f"goes from {a} to {b}" + bad
    if first > 0 and last == 0:
        return f"falls from {a} to exactly 0" + bad
    if first == 0 and last > 0:
        return f"grows from exactly 0 to {b}" + bad
    if first == 0 and last == 0:
        peak = max(finite)
        if peak == 0:
            return "is exactly 0 throughout" + bad
        return f"starts and ends at exactly 0 (peak {format_number(peak)})" + bad
    positive = [v for v in finite if v > 0]
    lo, hi = min(positive), max(positive)
    spread, end_ratio = hi / lo, last / first
    if math.isinf(spread) or end_ratio == 0 or math.isinf(end_ratio):  # beyond float64
        logs = [math.log10(v) if v > 0 else -math.inf if v == 0 else math.nan for v in vals]
        return log_trend_words(logs, within)
    if spread - 1 < FLOAT64_RESOLUTION:  # alike up to rounding: no spread to quote
        return f"stays at {a}, level to float64 resolution" + bad
    if spread < 1.1 and 0 not in finite:
        pct = format_number((spread - 1) * 100, 2)
        return f"stays within {pct}% (from {a} to {b})" + bad
    if spread <= within and 0 not in finite:
        return f"stays within a factor of {_factor(spread)} (from {a} to {b})" + bad
    if max(end_ratio, 1 / end_ratio) <= within:
        return (
            f"ranges over a factor of {_factor(spread)} (from {format_number(lo)} to "
            f"{format_number(hi)}) and ends at {b}, from {a}" + bad
        )
    if end_ratio > 1:
        return f"grows by a factor of {_factor(end_ratio)}, from {a} to {b}" + bad
    return f"falls by a factor of {_factor(1 / end_ratio)}, from {a} to {b}" + bad


def ratio_words(value: float, reference: float) -> str:
    """``value`` as a multiple of ``reference``, to fill "A is ... B":
    ``"3.2e9 times"``, ``"0.41 times"``, ``"exactly"`` (equal), ``"infinitely many
    times"`` (reference 0; ``"not a multiple of"`` for a negative value) or ``"not
    comparable with"`` (NaN or Inf involved). A quotient beyond float64's range is
    written from logs (``"1e616 times"``), never as ``Inf`` or ``0``."""
    v, r = float(value), float(reference)
    if not (math.isfinite(v) and math.isfinite(r)):
        return "not comparable with"
    if v == r:
        return "exactly"
    if r == 0:
        return "infinitely many times" if v > 0 else "not a multiple of"
    q = v / r
    if math.isinf(q) or (q == 0 and v != 0):
        sign = "-" if (v < 0) != (r < 0) else ""
        return f"{sign}{format_log10(math.log10(abs(v)) - math.log10(abs(r)))} times"
    return f"{format_number(q)} times"


def crossing_words(
    steps: Sequence[float],
    a: Sequence[float],
    b: Sequence[float],
    name_a: str,
    name_b: str,
) -> str:
    """Where curve ``a`` first drops below curve ``b`` (for example two losses).

    ``"A drops below B at step 40"``, ``"A is below B from the first step"`` or
    ``"A stays at or above B throughout"``; steps where either value is NaN are
    skipped. All three sequences must have the same length.
    """
    if not len(steps) == len(a) == len(b):
        raise ValueError("steps, a and b must have the same length.")
    pairs = [
        (s, float(x), float(y))
        for s, x, y in zip(steps, a, b, strict=True)
        if not (math.isnan(float(x)) or math.isnan(float(y)))
    ]
    if not pairs:
        return f"{name_a} and {name_b} have no common steps to compare"
    if pairs[0][1] < pairs[0][2]:
        return f"{name_a} is below {name_b} from the first step"
    for s, x, y in pairs:
        if x < y:
            return f"{name_a} drops below {name_b} at step {_step(s)}"
    return f"{name_a} stays at or above {name_b} throughout"


def lower_words(name_a: str, value_a: float, name_b: str, value_b: float, digits: int = 3) -> str:
    """Which of two runs ends lower: ``"A ends lower (0.036 against 0.51 for B)"``.

    Values equal at ``digits`` significant figures are ``"A and B end level
    (0.5)"``; a NaN or Inf is not lower than anything: ``"B ends lower (0.2; A
    ended at NaN)"``, or ``"neither A nor B ends at a finite value"``.
    """
    va, vb = float(value_a), float(value_b)
    fa, fb = math.isfinite(va), math.isfinite(vb)
    if not fa and not fb:
        return f"neither {name_a} nor {name_b} ends at a finite value"
    if not fb:
        return f"{name_a} ends lower ({format_number(va, digits)}; {name_b} ended at " + (
            f"{format_number(vb)})"
        )
    if not fa:
        return f"{name_b} ends lower ({format_number(vb, digits)}; {name_a} ended at " + (
            f"{format_number(va)})"
        )
    ta, tb = format_number(va, digits), format_number(vb, digits)
    if ta == tb:
        return f"{name_a} and {name_b} end level ({ta})"
    if va < vb:
        return f"{name_a} ends lower ({ta} against {tb} for {name_b})"
    return f"{name_b} ends lower ({tb} against {ta} for {name_a})"


def format_log10(lg: float, digits: int = 3) -> str:
    """The number whose log10 is ``lg``, written as :func:`format_number` writes it,
    also where no float holds it: ``format_log10(-419.43)`` is ``"3.72e-420"``.
    ``-inf`` is ``"0"``; ``inf`` is ``"Inf"``; NaN is ``"NaN"``."""
    lg = float(lg)
    if math.isnan(lg):
        return "NaN"
    if math.isinf(lg):
        return "Inf" if lg > 0 else "0"
    if -300 < lg < 300:
        return format_number(10.0**lg, digits)
    e = math.floor(lg)
    m = round(10.0 ** (lg - e), digits - 1)
    if m >= 10:
        m, e = m / 10, e + 1
    mantissa = f"{m:.{digits - 1}f}".rstrip("0").rstrip(".")
    return f"{mantissa}e{e}"


def log_trend_words(logs: Sequence[float], within: float = 10.0) -> str:
    """:func:`trend_words` for positive quantities given as their log10s (``-inf`` is
    exactly 0), so a gradient norm of 1e-420 is worded as one, not as 0."""
    vals = [float(v) for v in logs]
    if not vals:
        return "has no values yet"
    kept = [v for v in vals if not math.isnan(v) and v != math.inf]
    n_bad = len(vals) - len(kept)
    bad = f"; {n_bad} of {len(vals)} values are not finite" if n_bad else ""
    if not kept:
        return "is not finite"
    first, last = kept[0], kept[-1]
    a, b = format_log10(first), format_log10(last)
    zero = -math.inf
    if len(kept) == 1:
        return f"is {a} (one value)" + bad
    if first > zero and last == zero:
        return f"falls from {a} to exactly 0" + bad
    if first == zero and last > zero:
        return f"grows from exactly 0 to {b}" + bad
    if first == zero and last == zero:
        peak = max(kept)
        if peak == zero:
            return "is exactly 0 throughout" + bad
        return f"starts and ends at exactly 0 (peak {format_log10(peak)})" + bad
    positive = [v for v in kept if v > zero]
    lo, hi = min(positive), max(positive)
    spread = hi - lo
    has_zero = zero in kept
    if spread < math.log10(1.1) and not has_zero:
        pct = format_number((10.0**spread - 1) * 100, 2)
        return f"stays within {pct}% (from {a} to {b})" + bad
    if spread <= math.log10(within) and not has_zero:
        return f"stays within a factor of {format_log10(spread, 2)} (from {a} to {b})" + bad
    end = last - first
    if abs(end) <= math.log10(within):
        return (
            f"ranges over a factor of {format_log10(spread, 2)} (from {format_log10(lo)} to "
            f"{format_log10(hi)}) and ends at {b}, from {a}" + bad
        )
    if end > 0:
        return f"grows by a factor of {format_log10(end, 2)}, from {a} to {b}" + bad
    return f"falls by a factor of {format_log10(-end, 2)}, from {a} to {b}" + bad


def agreement_words(
    log10_measured: float, log10_reference: float, ref_name: str, rtol: float = 0.05
) -> str:
    """How a measurement compares with a prediction, both given as log10s (``-inf`` is
    exactly 0), to fill "the measurement ...": ``"agrees with λ^L (9.31e-10) within
    0.17%"`` when ``|measured / reference - 1|`` is at most ``rtol``; otherwise
    ``"is 5.15e6 times λ^L (9.31e-10)"``. A reference of exactly 0: ``"is 3e-40,
    where λ^L is exactly 0"`` (or ``"is exactly 0, as is λ^L"``); NaN or Inf
    involved: ``"is NaN: not comparable with λ^L (1)"``."""
    m, r = float(log10_measured), float(log10_reference)
    zero = -math.inf
    if math.isnan(m) or math.isnan(r) or math.inf in (m, r):
        return f"is {format_log10(m)}: not comparable with {ref_name} ({format_log10(r)})"
    if r == zero:
        return (
            f"is exactly 0, as is {ref_name}"
            if m == zero
            else f"is {format_log10(m)}, where {ref_name} is exactly 0"
        )
    rel = 10.0 ** (m - r) - 1 if m - r < 300 else math.inf
    if abs(rel) <= rtol:
        return (
            f"agrees with {ref_name} ({format_log10(r)}) within "
            f"{format_number(max(abs(rel) * 100, 1e-3), 2)}%"
        )
    return f"is {format_log10(m - r)} times {ref_name} ({format_log10(r)})"
