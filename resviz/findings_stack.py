"""Measured sentences: what the numbers on screen say, worded from the numbers.

A caption that states an outcome ("the norm grows", "the residual model learns
faster") is true for some settings and false for others. The functions here take
the figures a page has just computed and return a plain sentence that states
them, with the figures in it, so every such sentence holds at every setting.
Each handles every outcome: up, down or flat; lower, higher or level; NaN/Inf.

Numbers are written with :func:`num` (three significant digits), so a test can
read a figure back from a caption and compare it with the data.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

__all__ = [
    "change",
    "compare",
    "crossing",
    "degradation_summary",
    "depth_effect",
    "encoder_stream_rule",
    "loss_race",
    "num",
    "order",
    "share_of",
    "spread_vs",
    "stack_norm_rule",
    "stage_change",
    "trend",
    "value_range",
]


def num(x: float) -> str:
    """Three significant digits: ``0.0123``, ``4.56``, ``1.23e+04``; ``NaN``, ``Inf``, ``-Inf``."""
    x = float(x)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Inf" if x > 0 else "-Inf"
    if x == 0:
        return "0"
    return f"{x:.3g}"


def _factor(a: float, b: float) -> str | None:
    """``max/min`` of two numbers of the same sign, as text; None when not meaningful."""
    if a == 0 or b == 0 or (a > 0) != (b > 0):
        return None
    hi, lo = max(abs(a), abs(b)), min(abs(a), abs(b))
    return num(hi / lo)


def _floats(values: Sequence[float]) -> list[float]:
    return [float(v) for v in values]


def trend(values: Sequence[float], labels: Sequence[str], subject: str, flat: float = 1.5) -> str:
    """How ``values`` (one per label, in order) change from the first label to the last.

    ``"the norm rises from 8.01 at block 1 to 1.2e+04 at block 16 (a factor of 1.5e+03)."``,
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
        return f"{_cap(subject)} is {num(v[0])} at {labels[0]}."
    bad = [i for i, x in enumerate(v) if not math.isfinite(x)]
    if bad:
        i = bad[0]
        if i == 0:
            return f"{_cap(subject)} is already {num(v[0])} at {labels[0]}."
        return (
            f"{_cap(subject)} goes from {num(v[0])} at {labels[0]} to {num(v[i])} "
            f"(not finite) at {labels[i]}."
        )
    first, last = v[0], v[-1]
    lo, hi = min(v), max(v)
    span = f"from {labels[0]} to {labels[-1]}"
    if lo > 0 and hi / lo <= flat:
        return (
            f"{_cap(subject)} stays within a factor of {num(hi / lo)} "
            f"({num(lo)} to {num(hi)}) {span}."
        )
    if last == first:
        text = f"{_cap(subject)} ends where it starts, at {num(first)}, {span}"
    else:
        verb = "rises" if last > first else "falls"
        text = f"{_cap(subject)} {verb} from {num(first)} at {labels[0]} to {num(last)} at {labels[-1]}"
        f = _factor(first, last)
        if f is not None:
            text += f" (a factor of {f})"
    extras = []
    if hi > max(first, last):
        extras.append(f"peaks at {num(hi)} at {labels[v.index(hi)]}")
    if lo < min(first, last):
        extras.append(f"dips to {num(lo)} at {labels[v.index(lo)]}")
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
    left = f"{quantity} of {a_name} ({num(a)})"
    right = f"that of {b_name} ({num(b)})"
    if o is None:
        finite = [n for n, x in ((a_name, a), (b_name, b)) if math.isfinite(float(x))]
        tail = f"only that of {finite[0]} is finite" if finite else "neither is finite"
        return f"{_cap(left)} and {right}: {tail}."
    if o == 0:
        return f"{_cap(left)} is about the same as {right}, within {rtol:.0%}."
    text = f"{_cap(left)} is {'lower' if o < 0 else 'higher'} than {right}"
    f = _factor(a, b)
    return text + (f", by a factor of {f}." if f is not None else ".")


def depth_effect(
    kind: str,
    shallow: int,
    shallow_loss: float,
    deep: int,
    deep_loss: float,
    quantity: str = "the loss",
    rtol: float = 0.05,
) -> str:
    """Did the deeper of two stacks of the same ``kind`` end lower or higher?

    ``"Plain: the loss of the 16-block stack (0.93) is higher than that of the 4-block
    one (0.41), by a factor of 2.27; so here the deeper plain stack trains worse
    (degradation)."``
    """
    base = compare(
        f"the {deep}-block stack", deep_loss, f"the {shallow}-block one", shallow_loss, quantity,
        rtol,
    )  # fmt: skip
    o = order(deep_loss, shallow_loss, rtol)
    if o is None:
        verdict = "the two cannot be compared"
    elif o > 0:
        verdict = f"here the deeper {kind} stack trains worse (degradation)"
    elif o < 0:
        verdict = f"here the deeper {kind} stack trains better"
    else:
        verdict = "here depth makes little difference"
    return f"{_cap(kind)}: {base[:1].lower()}{base[1:-1]}; so {verdict}."


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
        return f"{_cap(subject)} is {num(lo[0])} everywhere{note}."
    return f"{_cap(subject)} ranges from {num(lo[0])} ({lo[1]}) to {num(hi[0])} ({hi[1]}){note}."


def change(before: float, after: float, subject: str, rtol: float = 0.05) -> str:
    """``"subject falls from 0.9 to 0.45 (a factor of 2)."``, ``"... rises ..."`` or
    ``"subject stays at about 0.9 (0.9 to 0.91)."``"""
    o = order(after, before, rtol)
    if o is None:
        return f"{_cap(subject)} goes from {num(before)} to {num(after)}."
    if o == 0:
        return f"{_cap(subject)} stays at about {num(before)} ({num(before)} to {num(after)})."
    text = f"{_cap(subject)} {'falls' if o < 0 else 'rises'} from {num(before)} to {num(after)}"
    f = _factor(before, after)
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
        f"{_cap(subject)} all equal {num(lo)}"
        if lo == hi
        else f"{_cap(subject)} lie between {num(lo)} and {num(hi)}"
    )
    text = f"{head}; {ref_name} would give each {num(reference)}"
    if reference > 0 and hi > 0:
        text += f", and the largest is {num(hi / reference)} times that"
    return text + "."


def share_of(values: Sequence[float], labels: Sequence[str], subject: str) -> str:
    """The largest of ``values`` and its label: ``"The largest share: L3 ffn (0.41)."``"""
    v = _floats(values)
    finite = [(x, lab) for x, lab in zip(v, labels, strict=True) if math.isfinite(x)]
    if not finite:
        return f"No {subject} is finite."
    x, lab = max(finite, key=lambda t: t[0])
    return f"The largest {subject}: {lab} ({num(x)})."


def encoder_stream_rule(residual: bool, norm: str, position: str) -> str:
    """What the stream after a sublayer is, for this encoder (a fact of the config)."""
    normed = norm != "none"
    name = {"layer": "LayerNorm", "rms": "RMSNorm", "batch": "BatchNorm"}.get(norm, norm)
    if residual and (position == "pre" or not normed):
        how = "Pre-LN" if normed else "no norm"
        return (
            f"With residuals and {how}, each sublayer adds its output to the stream: after "
            "sublayer k the stream is the embedding plus the first k sublayer outputs."
        )
    if residual:
        return (
            f"With residuals and Post-LN, each sum x + f(x) passes through {name}, so every "
            "point is the mean norm of normalized tokens."
        )
    if normed and position == "post":
        return (
            f"Without residuals, the stream after a sublayer is that sublayer's output, "
            f"passed through {name}."
        )
    return "Without residuals, the stream after a sublayer is that sublayer's output."


def stack_norm_rule(residual: str, join: str = "after_act", concat_project: bool = False) -> str:
    """How a block's output norm relates to its input's, for this shortcut (algebra,
    true for every weight): the sentence a forward-signal chart can rest on."""
    if residual == "none":
        return (
            "Without a shortcut, a block outputs f(x) alone: its norm is whatever the weights "
            "and activation make of the previous one."
        )
    if join == "before_act":
        return (
            "Joined before the activation, y = act(x + u): the activation acts on the sum, "
            "so the input is not passed on unchanged."
        )
    if residual == "concat":
        rule = "||[x, f]||^2 = ||x||^2 + ||f||^2: the input's norm is kept"
        if concat_project:
            rule += ", and then the projection P maps [x, f] back to the width"
        return f"Concatenating, {rule}."
    return (
        "With y = x + u, ||y||^2 = ||x||^2 + ||u||^2 + 2<x, u>: the norm can fall only "
        "where u points against x."
    )


def degradation_summary(curves: pd.DataFrame, shallow: int, deep: int) -> str:
    """The degradation chart in words: for plain and residual, did the deeper stack end
    with a higher loss than the shallower one, at each stack's last evaluation?

    ``curves`` has ``kind`` (``plain``/``residual``), ``depth``, ``step`` and ``loss``
    (:func:`resviz.train_degradation`'s curves, complete or in progress).
    """
    if curves.empty:
        return "No evaluation yet."
    last = curves.groupby(["kind", "depth"], sort=False).tail(1).set_index(["kind", "depth"])
    lo, hi = int(last["step"].min()), int(last["step"].max())
    when = f"step {hi}" if lo == hi else f"steps {lo} to {hi}"
    parts = [f"At each stack's last evaluation ({when}):"]
    for kind in ("plain", "residual"):
        if (kind, shallow) in last.index and (kind, deep) in last.index:
            parts.append(
                depth_effect(
                    kind,
                    shallow,
                    float(last.loc[(kind, shallow), "loss"]),
                    deep,
                    float(last.loc[(kind, deep), "loss"]),
                )
            )
    return " ".join(parts)


def loss_race(curves: pd.DataFrame, a: str, b: str, window: int = 10) -> str:
    """Two noisy training curves (``variant, step, loss``) in words (names in quotes).

    Compares the mean loss of variants ``a`` and ``b`` over the last ``window`` steps
    both have, and says from which step on ``a``'s ``window``-step running mean stays
    below ``b``'s (:func:`crossing`). A variant whose curve ended early (diverged or
    stopped) is compared on the steps both have.
    """
    ca = curves.loc[curves["variant"] == a].set_index("step")["loss"].astype(float)
    cb = curves.loc[curves["variant"] == b].set_index("step")["loss"].astype(float)
    steps = ca.index.intersection(cb.index)
    if len(steps) == 0:
        return f"No step has a loss for both {a} and {b} yet."
    ca, cb = ca.loc[steps], cb.loc[steps]
    k = min(window, len(steps))
    span = f"step {steps[-1]}" if k == 1 else f"steps {steps[-k]} to {steps[-1]}"
    qa, qb = f'"{a}"', f'"{b}"'
    head = compare(qa, float(ca.iloc[-k:].mean()), qb, float(cb.iloc[-k:].mean()), "the mean loss")
    ra = ca.rolling(window, min_periods=1).mean()
    rb = cb.rolling(window, min_periods=1).mean()
    cross = crossing(
        list(steps), ra, rb, f"the {window}-step mean of {qa}", f"that of {qb}"
    )  # fmt: skip
    return f"Over {span}: {head[:1].lower()}{head[1:]} {cross}"


def stage_change(
    frame: pd.DataFrame, value: str, group: str, stage: str, before: str, after: str, what: str
) -> str:
    """Per ``group``, how the mean of ``value`` over finite rows changes from stage
    ``before`` to stage ``after``: ``"residual, 16 blocks: the mean cosine falls from
    0.52 to 0.31 (a factor of 1.68)."``; a group without finite values at one stage says
    so, and a group with none at either is left out (nothing of it is drawn)."""
    out = []
    for name, g in frame.groupby(group, sort=False):
        means = {}
        for st in (before, after):
            vals = g.loc[g[stage] == st, value]
            vals = vals[vals.map(lambda x: math.isfinite(float(x)))]
            means[st] = float(vals.mean()) if len(vals) else None
        missing = [st for st in (before, after) if means[st] is None]
        if len(missing) == 2:
            continue  # nothing of this group is drawn
        if missing:
            out.append(f"{name}: no finite value of {what} at {' or '.join(missing)}.")
        else:
            sentence = change(means[before], means[after], what)  # type: ignore[arg-type]
            out.append(f"{name}: {sentence[:1].lower()}{sentence[1:]}")
    return " ".join(out)


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]
