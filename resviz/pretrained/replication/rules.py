"""The rule each replication card applies: its statistic (computed in
:mod:`resviz.pretrained.replication.evidence`), the band where the paper's finding holds, the
measure the card cites (and where it differs from the paper's), and what a card
concludes from the trained model's judgement beside its random twin's.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from resviz.pretrained.loading import Pretrained
from resviz.pretrained.replication.evidence import BOOT, MIN_POSITIONS, Band, Evidence
from resviz.pretrained.replication.published import Published
from resviz.words.numbers import FLOAT32_RESOLUTION, format_number, resolution_words


def pct(x: float) -> str:
    """A share as a percentage, 3 significant figures."""
    return f"{format_number(100 * x, 3)}%"


_pct = pct


# What a card concludes: the finding holds and training made it (the random twin
# decidedly lacks it), holds at random init too (the twin decidedly has it: the
# architecture's doing), holds with the twin undecided or absent, does not hold, or
# cannot be told (the interval straddles the band's edge, or no data).
TRAINING, ARCHITECTURE, HOLDS, NOT, UNDECIDED = (
    "training",
    "architecture",
    "holds",
    "does not hold",
    "undecided",
)
OUTCOMES = (TRAINING, ARCHITECTURE, HOLDS, NOT, UNDECIDED)


def outcome(trained: bool | None, twin: bool | None) -> str:
    """The card's conclusion from the trained model's judgement and its twin's
    (:func:`resviz.pretrained.replication.evidence.judge`): training is credited only when the
    twin decidedly lacks what the trained model decidedly has."""
    if trained is None:
        return UNDECIDED
    if not trained:
        return NOT
    return {True: ARCHITECTURE, False: TRAINING, None: HOLDS}[twin]


@dataclass(frozen=True)
class Rule:
    """A card's statistic (``stat``, :mod:`resviz.pretrained.replication.evidence`), the band where
    the paper's finding holds, how to write a value, and the measure cited."""

    band: Band
    stat: str
    needs: str  # the band in words
    fmt: Callable[[float], str]
    equation: str


def _num(x: float) -> str:
    return format_number(x, 3)


def _times(x: float) -> str:
    return f"{format_number(x, 4)}x"


def _points(x: float) -> str:
    return f"{'+' if x > 0 else ''}{format_number(100 * x, 3)} points"


def _ratio(x: float) -> str:
    return f"{format_number(x, 3)}x"


_INF = math.inf
RULES: dict[str, Rule] = {
    "stream_norms": Rule(
        Band(1.025, 1.065), "growth factor per block", "a factor from 1.025 to 1.065", _times,
        "||x_l|| ~ g^l; g = exp of the least-squares slope of log median_t ||x_l[t]|| over "
        "blocks 1..L (the post fits the growth of the norm; ours takes the median over tokens, "
        "which one outlying token cannot move)",
    ),
    "block_influence": Rule(
        Band(0, _INF, open_low=True),
        "lowest Block Influence in the first half minus the lowest in the deeper half",
        "a positive difference (the lowest in the deeper half)", _num,
        "ShortGPT's Block Influence BI_l = 1 - E_t cos(x_(l-1)[t], x_l[t]), the paper's own "
        "measure (it averages over a calibration set; we average over this text's tokens)",
    ),
    "layer_similarity": Rule(
        Band(0, _INF, open_low=True),
        "smallest angular distance over spans ending in the first half minus the smallest "
        "over spans ending in the deeper half",
        "a positive difference (the smallest in the deeper half)", _num,
        "Gromov et al.'s d(x_l, x_(l+n)) = arccos(cos(x_l[T], x_(l+n)[T])) / pi of the last "
        "token T, n a quarter of the blocks",
    ),
    "layer_deletion": Rule(
        Band(0.72, 0.95), "median accuracy kept over the middle blocks",
        "72% to 95%", _pct,
        "Lad et al.'s accuracy kept, acc(block b deleted) / acc(full model), top-1 "
        "next-token accuracy on this text (an encoder's head: the input tokens), median over "
        "blocks 2..L-1",
    ),
    "logit_lens": Rule(
        Band(0, _INF, open_low=True),
        "share of positions agreeing with the final top token after block L-1 minus after "
        "the embeddings",
        "a positive difference", _points,
        "nostalgebraist's logit lens, logits_l = W_U final_norm(x_l); ours scores it by the "
        "share of positions whose decoded top token equals the model's final one (the post "
        "reads the decoded tokens and their ranks)",
    ),
    "rank_collapse": Rule(
        Band(0, 0.1, open_high=True), "distance from rank one without shortcuts over with",
        "under 0.1", _ratio,
        "||X - 1 mean^T||_F / ||X||_F after the last block, with and without shortcuts "
        "(Dong et al. bound res(X) = X - 1 x^T in a composite l1/l-infinity norm, for pure "
        "attention; ours is Frobenius, relative to ||X||_F, through the model's own blocks)",
    ),
    "attention_sinks": Rule(
        Band(0.5, 1, open_low=True), "share of heads beyond blocks 1-2 over half on the first "
        "token", "over 50%", _pct,
        "each head's attention weight on position 0, mean over queries 1..T-1 (the paper "
        "shows the maps; 'most of the attention' read as more than half)",
    ),
    "massive_activations": Rule(
        Band(4, _INF), "orders of magnitude of max |x| / median |x|",
        "at least 4 (within one order of 100,000x)", _num,
        "max |x_l| / median |x_l| over one stream state's tokens and dimensions, the largest "
        "over states (the paper's ratio to the median magnitude)",
    ),
}  # fmt: skip


def interval_line(rule: Rule, ev: Evidence) -> str:
    if not ev.finite:
        return f"none: the {rule.stat} cannot be computed on {ev.basis}"
    return (
        f"{rule.stat} {rule.fmt(ev.value)}, 95% interval {bounds_words(rule, ev)} over {ev.basis} "
        f"({BOOT} bootstrap resamples); the finding needs {rule.needs}"
    )


def bounds_words(rule: Rule, ev: Evidence) -> str:
    """The interval in words: unbounded where too many resamples have no value."""
    if not (math.isfinite(ev.low) and math.isfinite(ev.high)):
        return "unbounded (too few positions to bound it, or undefined on over 2.5% of resamples)"
    return f"{rule.fmt(ev.low)} to {rule.fmt(ev.high)}"


def judged_words(j: bool | None) -> str:
    return {True: "has the finding", False: "lacks it", None: "undecided"}[j]


def conclusion(rule: Rule, out: str, ev: Evidence | None, twin: Evidence | str | None) -> str:
    """The verdict's last words for outcome ``out`` (:func:`outcome`): "agrees" or
    "differs", and what the twin adds ("" where nothing was judged)."""
    tv = f"random {rule.fmt(twin.value)}" if isinstance(twin, Evidence) and twin.finite else ""
    if out == UNDECIDED and ev is not None and ev.finite and ev.n < MIN_POSITIONS:
        word = f"undecided (it rests on {ev.basis}: fewer than {MIN_POSITIONS} positions, too few to judge)"
    elif out == UNDECIDED:
        word = "undecided (its interval reaches past the band's edge)" if ev and ev.finite else ""
    elif out == NOT:
        word = "differs" + (f" ({tv})" if tv else "")
    elif out == TRAINING:
        word = f"agrees, and training made it (trained {rule.fmt(ev.value)}, {tv})"  # type: ignore[union-attr]
    elif out == ARCHITECTURE:
        word = f"agrees at random init too ({tv}): a property of the architecture, not of training"
    elif isinstance(twin, Evidence):
        word = "agrees; the random twin is undecided, so whether training made it cannot be told"
    elif twin is not None:
        word = "agrees; without a random twin, whether training made it cannot be told"
    else:
        word = "agrees"
    return word


# A stream "collapses" without its shortcuts when its distance from rank one ends
# under this fraction of the model's own (with shortcuts): the card's rule and the
# lesson's (rv.recipes.pretrained.collapses_too) are this one.
COLLAPSE_FRACTION = 0.1
# The models run in float32: a distance under this is rounding (FLOAT32_RESOLUTION).
COLLAPSE_FLOOR = FLOAT32_RESOLUTION


def collapse_value(x: float) -> str:
    """A rank-collapse distance as the card and the page write it: the number, or
    "below float32 resolution (< 1e-5)" under :data:`COLLAPSE_FLOOR` (an exact 0, every
    token's state the same vector, is written as 0)."""
    return resolution_words(COLLAPSE_FLOOR) if 0 < x < COLLAPSE_FLOOR else format_number(x, 3)


def collapses(with_s: float, without: float) -> bool | None:
    """Whether the stream without shortcuts ends under :data:`COLLAPSE_FRACTION` of the
    distance with them; None when it cannot be told: a value not finite, the distance
    with shortcuts 0 (tokens already rank one), or both under the float32 floor.
    A distance under the floor counts as the floor, its largest possible value."""
    if not (math.isfinite(with_s) and math.isfinite(without)) or with_s == 0:
        return None
    if without >= COLLAPSE_FLOOR:
        return without < COLLAPSE_FRACTION * with_s
    # Under the floor: at most the floor. Decided only when even that is under a tenth.
    return True if COLLAPSE_FLOOR < COLLAPSE_FRACTION * with_s else None


def caveat(pub: Published, model: Pretrained) -> str | None:
    """How the loaded model differs from the paper's, or None when it is the same kind."""
    diffs = []
    if model.family.name not in pub.families:
        diffs.append(f"a {model.family.name} where the paper measured {pub.model}")
    ratio = pub.params / max(model.n_params, 1)
    if ratio > 10 or ratio < 0.1:
        diffs.append(
            f"{format_number(model.n_params / 1e6, 3)}M parameters against the paper's "
            f"{format_number(pub.params / 1e6, 3)}M"
        )
    if not diffs:
        return None
    return (
        "Not the paper's model: this is "
        + " and ".join(diffs)
        + ". The verdict says whether the finding carries over to this model; it is not a "
        "replication of the paper's figure."
    )
