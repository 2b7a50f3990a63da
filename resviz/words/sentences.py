"""Word a finding from the numbers, so a caption says what was measured: whole sentences.

A page's caption must not state an outcome that the data on screen may
contradict ("the norm grows" is true for some settings and false for others).
These functions take the measured numbers and a named subject and return a whole
sentence with the figures in it, worded for whichever way the measurement came
out (up, down or flat; lower, higher or about the same; NaN/Inf named): ``trend``
over labelled values with peaks and dips, ``compare`` and ``order``, ``change``,
``crossing`` (from which step one curve stays below another), ``value_range``,
``spread_vs``, ``share_of``.

Every figure is written with :func:`format_number`, so a test can read it back.
It and the fragments a page builds its own sentence around (``trend_words``,
``ratio_words``, ``crossing_words``, ``lower_words``) live in
:mod:`resviz.words.numbers` and are exported here too, so ``resviz.words.sentences`` is
the one place to import any wording from. Sentences about training runs and
stacks built on these are in the topic modules (:mod:`resviz.shortcuts.words`, ... No Streamlit, no HTML:
plain text only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from resviz.words.numbers import (
    crossing_words,
    format_log10,
    format_number,
    lower_words,
    ratio_words,
    trend_words,
)

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
    "trend_outcome",
    "trend_words",
    "value_range",
]


def _factor_between(a: float, b: float) -> str | None:
    """``max/min`` of two numbers of the same sign, as text; None when not meaningful."""
    if a == 0 or b == 0 or (a > 0) != (b > 0):
        return None
    hi, lo = max(abs(a), abs(b)), min(abs(a), abs(b))
    q = hi / lo
    return format_number(q) if math.isfinite(q) else format_log10(math.log10(hi) - math.log10(lo))


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
        odd = "" if math.isfinite(v[0]) else " (not finite)"
        return f"{_cap(subject)} is {format_number(v[0])}{odd} at {labels[0]}."
    bad = [i for i, x in enumerate(v) if not math.isfinite(x)]
    if bad:
        i = bad[0]
        if i == 0:
            return f"{_cap(subject)} is already {format_number(v[0])} (not finite) at {labels[0]}."
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


def trend_outcome(values: Sequence[float], flat: float = 1.5) -> str:
    """The direction :func:`resviz.words.trend` words for ``values``: ``"rises"``,
    ``"falls"``, ``"flat"`` (every value positive, the largest at most ``flat`` times
    the smallest), ``"returns"`` (ends where it starts), ``"not finite"``, ``"one
    value"`` or ``"none"``."""
    v = [float(x) for x in values]
    if not v:
        return "none"
    if len(v) == 1:
        return "one value"
    if not all(math.isfinite(x) for x in v):
        return "not finite"
    lo, hi = min(v), max(v)
    if lo > 0 and hi / lo <= flat:
        return "flat"
    if v[-1] == v[0]:
        return "returns"
    return "rises" if v[-1] > v[0] else "falls"


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
        return f"{_cap(subject)} goes from {a} to {b} (a value is not finite)."
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
        text += f", and the largest is {ratio_words(hi, reference)} that"
    return text + "."


def share_of(values: Sequence[float], labels: Sequence[str], subject: str) -> str:
    """The largest of ``values`` and its label: ``"The largest share: L3 ffn (0.41)."``"""
    v = _floats(values)
    finite = [(x, lab) for x, lab in zip(v, labels, strict=True) if math.isfinite(x)]
    if not finite:
        return f"No {subject} is finite."
    x = max(t[0] for t in finite)
    tops = [lab for y, lab in finite if y == x]
    if len(tops) > 1:  # a tie names every label at the top, none as the largest
        return f"The largest {subject}, tied: {', '.join(tops)} ({format_number(x)} each)."
    return f"The largest {subject}: {tops[0]} ({format_number(x)})."
