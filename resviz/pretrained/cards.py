"""Replication cards: a published figure beside the live one, with a verdict computed
from both. Where the loaded model is not the paper's kind (family, or size by more than
10x), the card says so: the verdict then tells whether the finding carries over to
this model, not whether the paper replicates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from resviz.pretrained.loading import Pretrained
from resviz.pretrained.published import PUBLISHED, Published
from resviz.pretrained.recipes import norm_growth
from resviz.words.numbers import FLOAT32_RESOLUTION, format_number, resolution_words


@dataclass(frozen=True)
class Card:
    key: str
    paper: str
    source: str
    published: str  # the paper's figure, with its model
    live: str  # ours, with our model
    verdict: str
    agrees: bool | None  # None: the live data cannot decide
    caveat: str | None  # how the loaded model differs from the paper's

    def markdown_lines(self) -> list[str]:
        """The card as plain lines (our own words and numbers; no user text)."""
        lines = [
            f"Paper: {self.paper} ({self.source}).",
            f"Published: {self.published}.",
            f"Live: {self.live}.",
            f"Verdict: {self.verdict}.",
        ]
        if self.caveat:
            lines.append(self.caveat)
        return lines


def _pct(x: float) -> str:
    return f"{format_number(100 * x, 3)}%"


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


def _card(key: str, model: Pretrained, live: str, verdict: str, agrees: bool | None) -> Card:
    pub = PUBLISHED[key]
    return Card(
        key,
        pub.paper,
        pub.source,
        f"{pub.finding} ({pub.model})",
        live,
        verdict,
        agrees,
        caveat(pub, model),
    )


def _deep_half(block: int, n: int) -> bool:
    return block > n / 2


def stream_norms(frame: pd.DataFrame, model: Pretrained) -> Card:
    pub = PUBLISHED["stream_norms"]
    rate = norm_growth(frame)
    target, tol = float(pub.low), float(pub.tolerance)  # type: ignore[arg-type]
    if not math.isfinite(rate):
        return _card("stream_norms", model, "fewer than two blocks", "no rate to fit", None)
    live = (
        f"the median token norm changes by a factor {format_number(rate, 4)} per block "
        f"({'+' if rate >= 1 else ''}{_pct(rate - 1)}; least-squares fit of log norm over "
        f"blocks 1-{model.n_layers} of {model.architecture})"
    )
    gap = (rate - 1) - (target - 1)
    agrees = abs(gap) <= tol
    verdict = (
        f"{_pct(rate - 1)} per block against {_pct(target - 1)}: "
        + ("agrees" if agrees else "differs")
        + f" (by {format_number(100 * abs(gap), 3)} percentage points; we call a gap of at "
        f"most {format_number(100 * tol, 2)} points agreement)"
    )
    return _card("stream_norms", model, live, verdict, agrees)


def block_influence(frame: pd.DataFrame, model: Pretrained) -> Card:
    n = len(frame)
    low = frame.loc[frame["influence"].idxmin()]
    b = int(low["block"])
    live = f"lowest Block Influence {format_number(float(low['influence']), 3)} at block {b} of {n}"
    agrees = _deep_half(b, n)
    verdict = (
        f"block {b} is in the "
        + ("deeper half: agrees" if agrees else "first half: differs")
        + " with the paper's lowest influence in the deeper blocks"
    )
    return _card("block_influence", model, live, verdict, agrees)


def layer_similarity(frame: pd.DataFrame, model: Pretrained) -> Card:
    n_layers = model.n_layers
    gap = max(1, n_layers // 4)
    wide = frame.pivot(index="block_a", columns="block_b", values="cos")
    dist = {
        a: math.acos(max(-1.0, min(1.0, float(wide.loc[a, a + gap])))) / math.pi
        for a in range(0, n_layers - gap + 1)
    }
    best = min(dist, key=dist.__getitem__)
    live = (
        f"angular distance between x_l and x_(l+{gap}) smallest from block {best} to "
        f"{best + gap} ({format_number(dist[best], 3)}), of {n_layers} blocks"
    )
    agrees = _deep_half(best + gap, n_layers)
    verdict = f"that span ends in the {'deeper' if agrees else 'first'} half: " + (
        "agrees" if agrees else "differs"
    )
    return _card("layer_similarity", model, live, verdict, agrees)


def layer_deletion(frame: pd.DataFrame, model: Pretrained) -> Card:
    pub = PUBLISHED["layer_deletion"]
    lo, hi = float(pub.low), float(pub.high)  # type: ignore[arg-type]
    middle = frame[(frame["block"] > 1) & (frame["block"] < model.n_layers)]
    kept = middle["accuracy_kept"].dropna()
    measure = "accuracy kept"
    if kept.empty or not np.isfinite(kept).all():
        kept = middle["top1_agreement"].dropna()
        measure = "top-1 agreement with the full model"
    if kept.empty:
        cos = middle["output_cos"].dropna()
        live = (
            "no middle block to delete"
            if cos.empty
            else f"deleting one middle block leaves the output states at a mean cosine of "
            f"{format_number(float(cos.min()), 3)} to {format_number(float(cos.max()), 3)} "
            "with the full model's (this model has no output head, so no predictions)"
        )
        return _card(
            "layer_deletion", model, live, "cannot compare: the paper measures predictions", None
        )
    k_lo, k_hi, med = float(kept.min()), float(kept.max()), float(kept.median())
    span = "block 2" if model.n_layers == 3 else f"blocks 2-{model.n_layers - 1}"
    live = (
        f"deleting one middle block ({span}) keeps {_pct(k_lo)} to {_pct(k_hi)} ({measure}; "
        f"median {_pct(med)}) on this text"
    )
    if lo <= med <= hi:
        verdict, agrees = f"the median {_pct(med)} lies within {_pct(lo)}-{_pct(hi)}: agrees", True
    else:
        side = "above" if med > hi else "below"
        gap = med - hi if med > hi else lo - med
        verdict = (
            f"the median {_pct(med)} lies {side} {_pct(lo)}-{_pct(hi)} by "
            f"{format_number(100 * gap, 3)} points: differs"
        )
        agrees = False
    first = frame[frame["block"] == 1]["loss_change"]
    if not first.empty and frame["loss_change"].notna().all():
        worst = int(frame.loc[frame["loss_change"].idxmax(), "block"])
        verdict += (
            "; deleting block 1 hurts most, as the paper found"
            if worst == 1
            else f"; the largest loss increase comes from block {worst}, not block 1"
        )
    if measure != "accuracy kept":
        verdict += " (the paper's measure is accuracy kept; this model has no head for it)"
    return _card("layer_deletion", model, live, verdict, agrees)


def logit_lens(frame: pd.DataFrame, model: Pretrained) -> Card:
    n = len(frame) - 1
    agree = frame["agreement"].to_numpy(float)
    ranks = frame["answer_rank"].to_numpy(int)
    settled = n
    while settled > 0 and ranks[settled - 1] == 1:
        settled -= 1
    live = (
        f"positions whose decoded top token matches the final one: {_pct(agree[0])} after "
        f"the embeddings, {_pct(agree[n - 1])} after block {n - 1}, 100% at block {n}; the "
        f"last token's final answer is the top token from block {settled} on"
    )
    agrees = bool(agree[n - 1] > agree[0])
    verdict = (
        "the decoded predictions move toward the final one with depth: agrees"
        if agrees
        else "the decoded predictions do not get closer to the final one before the last "
        "block: differs"
    )
    return _card("logit_lens", model, live, verdict, agrees)


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


def rank_collapse(frame: pd.DataFrame, model: Pretrained) -> Card:
    last = frame[frame["block"] == frame["block"].max()].set_index("variant")["residual"]
    with_s, without = float(last["with shortcuts"]), float(last["no shortcuts"])
    live = (
        f"after block {model.n_layers}, the distance from rank one is "
        f"{collapse_value(with_s)} with shortcuts and {collapse_value(without)} without"
    )
    if not (math.isfinite(with_s) and math.isfinite(without)):
        return _card("rank_collapse", model, live, "a stream without shortcuts overflowed", None)
    if with_s == 0:
        # One token (or tokens all alike) is its own mean: rank one with or without
        # shortcuts, so there is nothing to compare.
        return _card(
            "rank_collapse", model, live, "the tokens are already rank one with shortcuts", None
        )
    agrees = collapses(with_s, without)
    if agrees is None:
        return _card(
            "rank_collapse",
            model,
            live,
            "too close to float32 resolution to judge: undecided",
            None,
        )
    tenth = format_number(COLLAPSE_FRACTION)
    if without < COLLAPSE_FLOOR:
        ratio = f"under {format_number(COLLAPSE_FLOOR / with_s, 3)}x"
    else:
        ratio = f"{format_number(without / with_s, 3)}x"
    verdict = f"without shortcuts it is {ratio} the value with them: " + (
        f"under {tenth} of it, agrees" if agrees else f"not under {tenth} of it, differs"
    )
    return _card("rank_collapse", model, live, verdict, agrees)


def attention_sinks(frame: pd.DataFrame, model: Pretrained) -> Card:
    pub = PUBLISHED["attention_sinks"]
    above = frame[frame["block"] > 2] if model.n_layers > 2 else frame
    share = float((above["first_token_share"] > float(pub.low)).mean())  # type: ignore[arg-type]
    where = "beyond blocks 1-2" if model.n_layers > 2 else "in every block"
    live = (
        f"{_pct(share)} of the heads {where} put more than half their attention on the "
        f"first token (mean share {_pct(float(above['first_token_share'].mean()))}; "
        f"evenly spread attention would give {_pct(float(frame['uniform_share'].iloc[0]))})"
    )
    agrees = share > 0.5
    verdict = ("most heads: agrees" if agrees else "not most heads: differs") + (
        " (the first token here is the tokenizer's first, not necessarily a special token)"
    )
    return _card("attention_sinks", model, live, verdict, agrees)


def massive_activations(frame: pd.DataFrame, model: Pretrained) -> Card:
    pub = PUBLISHED["massive_activations"]
    row = frame.loc[frame["ratio"].idxmax()]
    ratio = float(row["ratio"])
    live = (
        f"largest |activation| {format_number(float(row['max_abs']), 4)} at block "
        f"{int(row['block'])}, token position {int(row['position'])}, dimension "
        f"{int(row['dim'])}: {format_number(ratio, 3)}x the median"
    )
    orders = math.log10(float(pub.low)) - math.log10(max(ratio, 1e-300))  # type: ignore[arg-type]
    agrees = orders <= 1.0
    verdict = (
        f"{format_number(abs(orders), 2)} orders of magnitude "
        + ("below" if orders > 0 else "above")
        + " the paper's example of 100,000x: "
        + ("agrees (within one order)" if agrees else "differs")
    )
    return _card("massive_activations", model, live, verdict, agrees)


CARDS = {
    "stream_norms": stream_norms,
    "block_influence": block_influence,
    "layer_similarity": layer_similarity,
    "layer_deletion": layer_deletion,
    "logit_lens": logit_lens,
    "rank_collapse": rank_collapse,
    "attention_sinks": attention_sinks,
    "massive_activations": massive_activations,
}


def card(key: str, frame: pd.DataFrame, model: Pretrained) -> Card:
    """The replication card for recipe ``key``'s ``frame`` on ``model``."""
    return CARDS[key](frame, model)
