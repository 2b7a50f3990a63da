"""Replication cards: a published figure beside the live one, with a verdict computed
from both. Where the loaded model is not the paper's kind (family, or size by more than
10x), the card says so: the verdict then tells whether the finding carries over to
this model, not whether the paper replicates.

Given the card's evidence (:mod:`resviz.pretrained.replication.evidence`: its statistic with a
bootstrap interval over the text's positions) the verdict is judged on the interval
against the rule's band (:data:`RULES`): "agrees" only when the whole interval is in
it, "differs" when it is wholly outside, "undecided" when it reaches past an edge.
Given the random-weights twin's evidence too, the card says which of the
:data:`OUTCOMES` holds: training made the finding (the twin decidedly lacks it), the
architecture did (the twin decidedly has it), or it cannot be told.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import pandas as pd

from resviz.pretrained.loading import Pretrained
from resviz.pretrained.measurements import norm_growth
from resviz.pretrained.replication.evidence import Evidence, judge, similarity_gap
from resviz.pretrained.replication.published import PUBLISHED
from resviz.pretrained.replication.rules import (  # noqa: F401 - re-exported: the cards' names
    ARCHITECTURE,
    COLLAPSE_FLOOR,
    COLLAPSE_FRACTION,
    HOLDS,
    NOT,
    OUTCOMES,
    RULES,
    TRAINING,
    UNDECIDED,
    Rule,
    bounds_words,
    caveat,
    collapse_value,
    collapses,
    conclusion,
    interval_line,
    judged_words,
    outcome,
)
from resviz.pretrained.replication.rules import pct as _pct
from resviz.words.numbers import format_number


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
    equation: str = ""  # what the card computes, and how it differs from the paper's
    interval: str | None = None  # the bootstrap interval and what it rests on
    twin: str | None = None  # the random-weights twin's figure
    outcome: str = "undecided"  # one of OUTCOMES

    def markdown_lines(self) -> list[str]:
        """The card as plain lines (our own words and numbers; no user text)."""
        lines = [
            f"Paper: {self.paper} ({self.source}).",
            f"Published: {self.published}.",
            f"Live: {self.live}.",
        ]
        if self.equation:
            lines.append(f"Measure: {self.equation}.")
        if self.interval:
            lines.append(f"Interval: {self.interval}.")
        if self.twin:
            lines.append(f"Random twin: {self.twin}.")
        lines.append(f"Verdict: {self.verdict}.")
        if self.caveat:
            lines.append(self.caveat)
        return lines


def _card(
    key: str,
    model: Pretrained,
    live: str,
    said: str,
    agrees: bool | None,
    ev: Evidence | None = None,
    twin: Evidence | str | None = None,
    *,
    equation: str | None = None,
) -> Card:
    """``said``: the point figure against the paper's; ``agrees``: the point rule's
    judgement (None: nothing to judge, ``said`` says why). ``ev``: the interval, which
    decides in its place; ``twin``: the random twin's evidence, or why there is none."""
    pub = PUBLISHED[key]
    rule = RULES[key]
    interval = twin_line = None
    if ev is not None:
        interval = interval_line(rule, ev)
        agrees = judge(ev, rule.band) if agrees is not None else None
    twin_j = None
    if isinstance(twin, Evidence):
        twin_j = judge(twin, rule.band)
        twin_line = (
            f"the same configuration with random weights: {rule.fmt(twin.value)} "
            f"(interval {bounds_words(rule, twin)}), {judged_words(twin_j)}"
            if twin.finite
            else f"the same configuration with random weights: no value on {twin.basis}"
        )
    elif isinstance(twin, str):
        twin_line = twin
    out = outcome(agrees, twin_j)
    word = conclusion(rule, out, ev, twin)
    verdict = f"{said}: {word}" if word else said
    return Card(
        key,
        pub.paper,
        pub.source,
        f"{pub.finding} ({pub.model})",
        live,
        verdict,
        agrees,
        caveat(pub, model),
        equation or rule.equation,
        interval,
        twin_line,
        out,
    )


def _deep_half(block: int, n: int) -> bool:
    return block > n / 2


Twin = Evidence | str | None


def stream_norms(
    frame: pd.DataFrame, model: Pretrained, ev: Evidence | None = None, twin: Twin = None
) -> Card:
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
    said = (
        f"{_pct(rate - 1)} per block against {_pct(target - 1)}, a gap of "
        f"{format_number(100 * abs(gap), 3)} percentage points (we call at most "
        f"{format_number(100 * tol, 2)} points agreement)"
    )
    return _card("stream_norms", model, live, said, abs(gap) <= tol, ev, twin)


def block_influence(
    frame: pd.DataFrame, model: Pretrained, ev: Evidence | None = None, twin: Twin = None
) -> Card:
    n = len(frame)
    low = frame.loc[frame["influence"].idxmin()]
    b = int(low["block"])
    live = f"lowest Block Influence {format_number(float(low['influence']), 3)} at block {b} of {n}"
    agrees = _deep_half(b, n)
    said = (
        f"block {b} is in the {'deeper' if agrees else 'first'} half, where the paper finds "
        "the lowest influence in the deeper blocks"
    )
    return _card("block_influence", model, live, said, agrees, ev, twin)


def layer_similarity(
    frame: pd.DataFrame, model: Pretrained, ev: Evidence | None = None, twin: Twin = None
) -> Card:
    n_layers = model.n_layers
    gap = similarity_gap(n_layers)
    wide = frame.pivot(index="block_a", columns="block_b", values="angular")
    dist = {a: float(wide.loc[a, a + gap]) for a in range(0, n_layers - gap + 1)}
    best = min(dist, key=dist.__getitem__)
    live = (
        f"mean angular distance between x_l and x_(l+{gap}) smallest from block {best} to "
        f"{best + gap} ({format_number(dist[best], 3)}), of {n_layers} blocks"
    )
    agrees = _deep_half(best + gap, n_layers)
    said = f"that span ends in the {'deeper' if agrees else 'first'} half"
    rule = RULES["layer_similarity"].equation
    if "angular_last" in frame:
        last_wide = frame.pivot(index="block_a", columns="block_b", values="angular_last")
        last = {a: float(last_wide.loc[a, a + gap]) for a in dist}
        lb = min(last, key=last.__getitem__)
        live += (
            f"; the last token alone (one token, no interval): smallest from block {lb} to "
            f"{lb + gap} ({format_number(last[lb], 3)}), in the "
            f"{'deeper' if _deep_half(lb + gap, n_layers) else 'first'} half"
        )
    if model.decoder:
        how = (
            "; each position is the last token of the prefix ending there (a decoder's state "
            "there sees no later token), so the mean over positions is the paper's measure "
            "over this text's prefixes"
        )
    else:
        how = (
            "; differs from the paper's: an encoder's positions all see the whole text, so "
            "its only last token is the final special token (the live line gives it alone); "
            "the verdict averages over every position"
        )
    return _card("layer_similarity", model, live, said, agrees, ev, twin, equation=rule + how)


def layer_deletion(
    frame: pd.DataFrame, model: Pretrained, ev: Evidence | None = None, twin: Twin = None
) -> Card:
    pub = PUBLISHED["layer_deletion"]
    lo, hi = float(pub.low), float(pub.high)  # type: ignore[arg-type]
    middle = frame[(frame["block"] > 1) & (frame["block"] < model.n_layers)]
    kept = middle["accuracy_kept"].dropna()
    if middle.empty:
        return _card("layer_deletion", model, "no middle block to delete", "cannot judge", None)
    if middle["accuracy"].isna().all():
        cos = middle["output_cos"]
        live = (
            f"deleting one middle block leaves the output states at a mean cosine of "
            f"{format_number(float(cos.min()), 3)} to {format_number(float(cos.max()), 3)} "
            "with the full model's (this model has no output head, so no predictions)"
        )
        return _card(
            "layer_deletion", model, live, "cannot compare: the paper measures predictions", None
        )
    if kept.empty:
        live = "the full model predicts none of this text's tokens right (accuracy 0)"
        said = "cannot judge: with no right prediction there is no accuracy to keep"
        return _card("layer_deletion", model, live, said, None, ev, twin)
    k_lo, k_hi, med = float(kept.min()), float(kept.max()), float(kept.median())
    span = "block 2" if model.n_layers == 3 else f"blocks 2-{model.n_layers - 1}"
    live = (
        f"deleting one middle block ({span}) keeps {_pct(k_lo)} to {_pct(k_hi)} of the full "
        f"model's accuracy (median {_pct(med)}) on this text"
    )
    if lo <= med <= hi:
        said, agrees = f"the median {_pct(med)} lies within {_pct(lo)}-{_pct(hi)}", True
    else:
        side = "above" if med > hi else "below"
        gap = med - hi if med > hi else lo - med
        said = (
            f"the median {_pct(med)} lies {side} {_pct(lo)}-{_pct(hi)} by "
            f"{format_number(100 * gap, 3)} points"
        )
        agrees = False
    card_ = _card("layer_deletion", model, live, said, agrees, ev, twin)
    first = frame[frame["block"] == 1]["loss_change"]
    if not first.empty and frame["loss_change"].notna().all():
        worst = int(frame.loc[frame["loss_change"].idxmax(), "block"])
        extra = (
            "; deleting block 1 hurts most, as the paper found"
            if worst == 1
            else f"; the largest loss increase comes from block {worst}, not block 1"
        )
        card_ = replace(card_, verdict=card_.verdict + extra)
    return card_


def logit_lens(
    frame: pd.DataFrame, model: Pretrained, ev: Evidence | None = None, twin: Twin = None
) -> Card:
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
    said = (
        "the decoded predictions move toward the final one with depth"
        if agrees
        else "the decoded predictions do not get closer to the final one before the last block"
    )
    return _card("logit_lens", model, live, said, agrees, ev, twin)


def rank_collapse(
    frame: pd.DataFrame, model: Pretrained, ev: Evidence | None = None, twin: Twin = None
) -> Card:
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
        said = "too close to float32 resolution to judge"
        return _card("rank_collapse", model, live, said + ": undecided", None)
    tenth = format_number(COLLAPSE_FRACTION)
    if without < COLLAPSE_FLOOR:
        ratio = f"under {format_number(COLLAPSE_FLOOR / with_s, 3)}x"
    else:
        ratio = f"{format_number(without / with_s, 3)}x"
    said = f"without shortcuts it is {ratio} the value with them, " + (
        f"under {tenth} of it" if agrees else f"not under {tenth} of it"
    )
    return _card("rank_collapse", model, live, said, agrees, ev, twin)


def attention_sinks(
    frame: pd.DataFrame, model: Pretrained, ev: Evidence | None = None, twin: Twin = None
) -> Card:
    pub = PUBLISHED["attention_sinks"]
    above = frame[frame["block"] > 2] if model.n_layers > 2 else frame
    share = float((above["first_token_share"] > float(pub.low)).mean())  # type: ignore[arg-type]
    where = "beyond blocks 1-2" if model.n_layers > 2 else "in every block"
    live = (
        f"{_pct(share)} of the heads {where} put more than half their attention on the "
        f"first token (mean share {_pct(float(above['first_token_share'].mean()))}; "
        f"evenly spread attention would give {_pct(float(frame['uniform_share'].iloc[0]))}; "
        "the first token here is the tokenizer's first, not necessarily a special token)"
    )
    agrees = share > 0.5
    said = "most heads" if agrees else "not most heads"
    return _card("attention_sinks", model, live, said, agrees, ev, twin)


def massive_activations(
    frame: pd.DataFrame, model: Pretrained, ev: Evidence | None = None, twin: Twin = None
) -> Card:
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
    said = (
        f"{format_number(abs(orders), 2)} orders of magnitude "
        + ("below" if orders > 0 else "above")
        + " the paper's example of 100,000x (we call within one order agreement)"
    )
    return _card("massive_activations", model, live, said, agrees, ev, twin)


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


def card(
    key: str,
    frame: pd.DataFrame,
    model: Pretrained,
    evidence: Evidence | None = None,
    twin: Evidence | str | None = None,
) -> Card:
    """The replication card for recipe ``key``'s ``frame`` on ``model``. With
    ``evidence`` (:mod:`resviz.pretrained.replication.evidence`, from the same trace) the verdict is
    judged on its interval; ``twin`` is the random-weights twin's evidence (or why
    there is none), which decides whether training made the finding."""
    return CARDS[key](frame, model, evidence, twin)
