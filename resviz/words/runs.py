"""Sentences about training runs and stacks, worded from the measured numbers.

What the skip-connection and encoder pages say about their runs: whether the deeper
of two stacks trained worse (degradation, He et al. 2016), which of two noisy loss
curves ends lower and from which step, how a quantity moves between two stages,
and the algebra a configuration fixes (what the stream after a sublayer is, how a
block's output norm relates to its input's). Each is built from the generic
wording in :mod:`resviz.words.sentences` (one number format, :func:`format_number`), so
every such sentence holds at every setting a student tries.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from resviz.words.sentences import _cap, change, compare, crossing, order, ratio_words

__all__ = [
    "degradation_summary",
    "depth_effect",
    "encoder_stream_rule",
    "first_vs_last_block",
    "loss_race",
    "stack_norm_rule",
    "stage_change",
]


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


def first_vs_last_block(blocks: pd.DataFrame) -> str:
    """The first block's gradient norm as a multiple of the last block's, at the first
    and the latest step recorded, for each variant of a per-step block frame
    (``variant, step, block, grad_norm``, e.g. :attr:`resviz.GradTrace.layers`).

    ``"The first block's gradient norm is 0.012 times the last block's at step 0 and
    0.5 times at step 199 in plain"``; non-finite norms are left out, and a variant
    without a finite norm at both ends of a step is not mentioned. Empty when no
    variant can be worded."""
    parts = []
    for name, g in blocks.groupby("variant", sort=False):
        g = g[np.isfinite(g["grad_norm"])]
        if not len(g):
            continue
        first, last = g["block"].min(), g["block"].max()
        said = []
        for step in sorted({int(g["step"].min()), int(g["step"].max())}):
            at = g[g["step"] == step].set_index("block")["grad_norm"]
            if first in at.index and last in at.index:
                said.append((ratio_words(at[first], at[last]), step))
        if said:
            (r0, s0), rest = said[0], said[1:]
            parts.append(
                f"{r0} the last block's at step {s0}"
                + "".join(f" and {r} at step {s}" for r, s in rest)
                + f" in {name}"
            )
    return ("The first block's gradient norm is " + "; ".join(parts) + ".") if parts else ""
