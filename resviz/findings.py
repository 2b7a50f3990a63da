"""Word a finding from the numbers, so a caption says what was measured.

A page's caption must not state an outcome that the data on screen may
contradict ("the norm grows" is true for some settings and false for others).
These functions take the measured numbers and return text with the figures in
it, worded for whichever way the measurement came out (up, down or flat; lower,
higher or level; NaN/Inf), all written with one number format,
:func:`format_number`, so a test can read a figure back from a caption.

Two kinds: fragments without a trailing full stop, for a page to build its own
sentence around (``trend_words``: a trend over layers or depth by orders of
magnitude, exact zeros and underflow; ``ratio_words``, ``crossing_words``,
``lower_words``), and whole sentences about a named subject (``trend`` over
labelled values with peaks and dips, ``compare``, ``order``, ``change``,
``crossing``: from which step one curve stays below another, ``value_range``,
``spread_vs``, ``share_of``). Sentences about training runs and stacks built on
these are in :mod:`resviz.findings_runs`. No Streamlit, no HTML: plain text only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = [
    "change",
    "compare",
    "crossing",
    "crossing_words",
    "format_number",
    "lower_words",
    "order",
    "ratio_words",
    "share_of",
    "spread_vs",
    "trend",
    "trend_words",
    "value_range",
]


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
    spread = hi / lo
    if spread < 1.1 and 0 not in finite:
        pct = format_number((spread - 1) * 100, 2)
        return f"stays within {pct}% (from {a} to {b})" + bad
    if spread <= within and 0 not in finite:
        return f"stays within a factor of {_factor(spread)} (from {a} to {b})" + bad
    end_ratio = last / first
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
    times"`` (reference 0) or ``"not comparable with"`` (NaN or Inf involved)."""
    v, r = float(value), float(reference)
    if not (math.isfinite(v) and math.isfinite(r)):
        return "not comparable with"
    if v == r:
        return "exactly"
    if r == 0:
        return "infinitely many times"
    return f"{format_number(v / r)} times"


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


# --- whole sentences: a subject, labels, every outcome worded -----------------------


def _factor_between(a: float, b: float) -> str | None:
    """``max/min`` of two numbers of the same sign, as text; None when not meaningful."""
    if a == 0 or b == 0 or (a > 0) != (b > 0):
        return None
    hi, lo = max(abs(a), abs(b)), min(abs(a), abs(b))
    return format_number(hi / lo)


def _floats(values: Sequence[float]) -> list[float]:
    return [float(v) for v in values]


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def trend(values: Sequence[float], labels: Sequence[str], subject: str, flat: float = 1.5) -> str:
    """How ``values`` (one per label, in order) change from the first label to the last.

    ``"the norm rises from 8.01 at block 1 to 1.2e4 at block 16 (a factor of 1500)."``,
    ``"... falls from ..."``, or, when every value is positive and the largest is at
    most ``flat`` times the smallest, ``"... stays within a factor of 1.2 (0.98 to 1.18)
    from block 1 to block 16."``. A peak or dip beyond both ends is named; a NaN or Inf
    is reported where it first appears.
    """
    v = _floats(values)
    if len(v) != len(labels):
        raise ValueError("trend needs one label per value.")
    if not v:
        return f"There is no value of {subject} to show."
    if len(v) == 1:
        return f"{_cap(subject)} is {format_number(v[0])} at {labels[0]}."
    bad = [i for i, x in enumerate(v) if not math.isfinite(x)]
    if bad:
        i = bad[0]
        if i == 0:
            return f"{_cap(subject)} is already {format_number(v[0])} at {labels[0]}."
        return (
            f"{_cap(subject)} goes from {format_number(v[0])} at {labels[0]} to "
            f"{format_number(v[i])} (not finite) at {labels[i]}."
        )
    first, last = v[0], v[-1]
    lo, hi = min(v), max(v)
    span = f"from {labels[0]} to {labels[-1]}"
    if lo > 0 and hi / lo <= flat:
        return (
            f"{_cap(subject)} stays within a factor of {format_number(hi / lo)} "
            f"({format_number(lo)} to {format_number(hi)}) {span}."
        )
    if last == first:
        text = f"{_cap(subject)} ends where it starts, at {format_number(first)}, {span}"
    else:
        verb = "rises" if last > first else "falls"
        text = (
            f"{_cap(subject)} {verb} from {format_number(first)} at {labels[0]} to "
            f"{format_number(last)} at {labels[-1]}"
        )
        f = _factor_between(first, last)
        if f is not None:
            text += f" (a factor of {f})"
    extras = []
    if hi > max(first, last):
        extras.append(f"peaks at {format_number(hi)} at {labels[v.index(hi)]}")
    if lo < min(first, last):
        extras.append(f"dips to {format_number(lo)} at {labels[v.index(lo)]}")
    if extras:
        text += "; on the way it " + " and ".join(extras)
    return text + "."


def order(a: float, b: float, rtol: float = 0.05) -> int | None:
    """-1 if ``a`` is below ``b``, 1 if above, 0 if within ``rtol`` of the larger
    magnitude; None when either is NaN or Inf."""
    a, b = float(a), float(b)
    if not (math.isfinite(a) and math.isfinite(b)):
        return None
    if abs(a - b) <= rtol * max(abs(a), abs(b)):
        return 0
    return -1 if a < b else 1


def compare(a_name: str, a: float, b_name: str, b: float, quantity: str, rtol: float = 0.05) -> str:
    """Which of two figures is lower, with both figures and the factor between them.

    ``"The loss of your model (0.41) is lower than that of the other (0.93), by a factor
    of 2.27."``; ``"... is higher than ..."``; within ``rtol``: ``"... (0.41) is about
    the same as that of ... (0.42), within 5%."``; NaN/Inf are named as such.
    """
    o = order(a, b, rtol)
    left = f"{quantity} of {a_name} ({format_number(a)})"
    right = f"that of {b_name} ({format_number(b)})"
    if o is None:
        finite = [n for n, x in ((a_name, a), (b_name, b)) if math.isfinite(float(x))]
        tail = f"only that of {finite[0]} is finite" if finite else "neither is finite"
        return f"{_cap(left)} and {right}: {tail}."
    if o == 0:
        return f"{_cap(left)} is about the same as {right}, within {rtol:.0%}."
    text = f"{_cap(left)} is {'lower' if o < 0 else 'higher'} than {right}"
    f = _factor_between(a, b)
    return text + (f", by a factor of {f}." if f is not None else ".")


def crossing(
    steps: Sequence[int], a: Sequence[float], b: Sequence[float], a_name: str, b_name: str
) -> str:
    """From which step on ``a`` stays below ``b`` (NaN counts as not below).

    ``"a is below b at every step (1 to 100)."``, ``"a is below b from step 37 on."``
    or ``"a is not below b at the last step (100)."``.
    """
    s, x, y = list(steps), _floats(a), _floats(b)
    if not (len(s) == len(x) == len(y)):
        raise ValueError("crossing needs one value of a and b per step.")
    if not s:
        return f"There are no steps yet to compare {a_name} with {b_name}."
    below = [u < v for u, v in zip(x, y, strict=True)]
    if not below[-1]:
        ever = any(below)
        tail = "" if ever else f"; it is not below at any step from {s[0]}"
        return f"{_cap(a_name)} is not below {b_name} at the last step ({s[-1]}){tail}."
    k = len(below)
    while k > 0 and below[k - 1]:
        k -= 1
    if k == 0:
        return f"{_cap(a_name)} is below {b_name} at every step ({s[0]} to {s[-1]})."
    return f"{_cap(a_name)} is below {b_name} from step {s[k]} on."


def value_range(values: Sequence[float], labels: Sequence[str], subject: str) -> str:
    """``"subject ranges from 0.12 (L1 attn) to 0.9 (L3 ffn)."``; NaN/Inf are left out
    and counted."""
    v = _floats(values)
    if len(v) != len(labels):
        raise ValueError("value_range needs one label per value.")
    finite = [(x, lab) for x, lab in zip(v, labels, strict=True) if math.isfinite(x)]
    skipped = len(v) - len(finite)
    note = f" ({skipped} value(s) not finite)" if skipped else ""
    if not finite:
        return f"{_cap(subject)} has no finite value{note}."
    lo = min(finite, key=lambda t: t[0])
    hi = max(finite, key=lambda t: t[0])
    if lo[0] == hi[0]:
        return f"{_cap(subject)} is {format_number(lo[0])} everywhere{note}."
    return (
        f"{_cap(subject)} ranges from {format_number(lo[0])} ({lo[1]}) to "
        f"{format_number(hi[0])} ({hi[1]}){note}."
    )


def change(before: float, after: float, subject: str, rtol: float = 0.05) -> str:
    """``"subject falls from 0.9 to 0.45 (a factor of 2)."``, ``"... rises ..."`` or
    ``"subject stays at about 0.9 (0.9 to 0.91)."``"""
    o = order(after, before, rtol)
    a, b = format_number(before), format_number(after)
    if o is None:
        return f"{_cap(subject)} goes from {a} to {b}."
    if o == 0:
        return f"{_cap(subject)} stays at about {a} ({a} to {b})."
    text = f"{_cap(subject)} {'falls' if o < 0 else 'rises'} from {a} to {b}"
    f = _factor_between(before, after)
    return text + (f" (a factor of {f})." if f is not None else ".")


def spread_vs(values: Sequence[float], reference: float, subject: str, ref_name: str) -> str:
    """How far ``values`` (``subject`` is plural: "the weights") spread around a reference.

    ``"The weights lie between 0.05 and 0.21; uniform attention would give each 0.1,
    and the largest is 2.1 times that."``
    """
    v = [x for x in _floats(values) if math.isfinite(x)]
    if not v:
        return f"{_cap(subject)} have no finite value."
    lo, hi = min(v), max(v)
    head = (
        f"{_cap(subject)} all equal {format_number(lo)}"
        if lo == hi
        else f"{_cap(subject)} lie between {format_number(lo)} and {format_number(hi)}"
    )
    text = f"{head}; {ref_name} would give each {format_number(reference)}"
    if reference > 0 and hi > 0:
        text += f", and the largest is {format_number(hi / reference)} times that"
    return text + "."


def share_of(values: Sequence[float], labels: Sequence[str], subject: str) -> str:
    """The largest of ``values`` and its label: ``"The largest share: L3 ffn (0.41)."``"""
    v = _floats(values)
    finite = [(x, lab) for x, lab in zip(v, labels, strict=True) if math.isfinite(x)]
    if not finite:
        return f"No {subject} is finite."
    x, lab = max(finite, key=lambda t: t[0])
    return f"The largest {subject}: {lab} ({format_number(x)})."
