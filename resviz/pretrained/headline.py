"""The Pretrained page's headlines, one per section, from the same frames as its full
account (the page's captions and :mod:`resviz.pretrained.words`). A checkpoint
has one set of weights: no seeds to agree. A token is written by ``quote`` (the page
escapes it)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal

import pandas as pd

from resviz.pretrained.stream.travel import Travel, travel_sentence
from resviz.words.headline import Figure, Headline, seeds_headline
from resviz.words.numbers import format_number
from resviz.words.sentences import order

__all__ = [
    "attribution",
    "collapse",
    "deletion",
    "heal",
    "influence",
    "ladder",
    "lens",
    "norms",
    "patching",
    "similarity",
    "sinks",
]


def _fmt(x: float, digits: int = 3) -> str:
    return format_number(x, digits)


def norms(frame: pd.DataFrame, n_layers: int, growth: float) -> Headline:
    """How the stream's median token norm changes from the embeddings to the last
    block (``frame``: ``variant, block, median_norm``; the ``stream`` rows), and the
    factor per block fitted over blocks 1 to the last (``growth``, NaN where none was
    fitted)."""
    raw = frame[frame["variant"] == "stream"].sort_values("block")["median_norm"].astype(float)
    a, b = float(raw.iloc[0]), float(raw.iloc[-1])
    verbs: dict[int | None, str] = {1: "grows", -1: "shrinks", 0: "ends about where it starts"}
    verb = verbs.get(order(b, a), "goes")
    times = f" {_fmt(max(a, b) / min(a, b), 2)} times" if verb in ("grows", "shrinks") else ""
    if not (a > 0 and b > 0):
        times = ""
    line = (
        f"The stream's median token norm {verb}{times} over {n_layers} blocks: from "
        f"{_fmt(a)} (embeddings) to {_fmt(b)}."
    )
    figures = [Figure(f"median token norm after block {n_layers}", _fmt(b))]
    if math.isfinite(growth):
        figures.append(Figure(f"fitted factor per block, blocks 1-{n_layers}", _fmt(growth, 4)))
    return Headline(line, tuple(figures))


def influence(frame: pd.DataFrame) -> Headline:
    """Which block turns the stream most and which least (``block, influence``:
    1 - cos between the stream before and after it)."""
    hi = frame.loc[frame["influence"].idxmax()]
    lo = frame.loc[frame["influence"].idxmin()]
    return Headline(
        f"Block {int(hi['block'])} turns the stream most (1 - cos = {_fmt(hi['influence'])}), "
        f"block {int(lo['block'])} least ({_fmt(lo['influence'])}).",
        (Figure(f"1 - cos, block {int(hi['block'])}", _fmt(hi["influence"])),),
    )


def similarity(frame: pd.DataFrame, n_layers: int) -> Headline:
    """How far apart the embeddings and the last block's output are (``block_a,
    block_b, angular, cos``)."""
    row = frame[(frame["block_a"] == 0) & (frame["block_b"] == n_layers)].iloc[0]
    return Headline(
        f"The embeddings and block {n_layers}'s output are {_fmt(row['angular'])} apart in "
        "angle (0 = the same direction, 0.5 = orthogonal).",
        (Figure(f"angular distance, embeddings to block {n_layers}", _fmt(row["angular"])),),
    )


_MEASURE = {
    "accuracy_kept": "accuracy kept",
    "top1_agreement": "top-1 agreement with the full model",
    "output_cos": "output cosine",
}


def deletion(frame: pd.DataFrame, y: str) -> Headline:
    """Which deleted block costs most on ``y`` (the column the chart draws), and the
    least (:func:`resviz.pretrained.words.deletion_words`' numbers)."""
    lo = frame.loc[frame[y].idxmin()]
    hi = frame.loc[frame[y].idxmax()]
    what = _MEASURE.get(y, y.replace("_", " "))
    return Headline(
        f"Deleting block {int(lo['block'])} costs the most: {what} {_fmt(lo[y])} (without block "
        f"{int(hi['block'])}: {_fmt(hi[y])}).",
        (Figure(f"{what}, block {int(lo['block'])} deleted", _fmt(lo[y])),),
    )


def lens(frame: pd.DataFrame, settled: int, quote: Callable[[str], str] = repr) -> Headline:
    """The logit lens: from which block the model's final answer is the top token, and
    its probability at the embeddings and at the output (``answer_token,
    answer_prob`` per block)."""
    token = quote(str(frame["answer_token"].iloc[0]))
    p0, p1 = float(frame["answer_prob"].iloc[0]), float(frame["answer_prob"].iloc[-1])
    return Headline(
        f"The answer {token} is the top token from block {settled} on; its probability "
        f"goes from {_fmt(p0)} (embeddings) to {_fmt(p1)} (the output).",
        (Figure("P(answer) at the output", _fmt(p1)),),
    )


def collapse(
    frame: pd.DataFrame, n_tokens: int, value: Callable[[float], str], floor: float = 0.0
) -> Headline:
    """Rank collapse after the last block, with and without the shortcuts (``variant,
    block, residual``); ``value`` writes a distance, and one under ``floor`` (rounding)
    is compared as the floor."""
    last = frame[frame["block"] == frame["block"].max()].set_index("variant")["residual"]
    w, wo = float(last["with shortcuts"]), float(last["no shortcuts"])
    figures = (
        Figure("distance from rank one, with shortcuts", value(w)),
        Figure("without", value(wo)),
    )
    if n_tokens == 1:
        return Headline("One token is its own mean: no rank to lose.", figures)
    if max(abs(w), abs(wo)) < floor:
        return Headline("With and without its shortcuts the distances are rounding.", figures)
    o = order(max(w, floor), max(wo, floor))
    if o is None:
        line = "A distance is not finite: the two cannot be compared."
    elif o == 0:
        line = "With its shortcuts the model ends about as far from rank one as without them."
    else:
        rel = "further from" if o > 0 else "closer to"
        line = f"With its shortcuts the model ends {rel} rank one than without them."
    return Headline(line, figures)


def sinks(sinks: pd.DataFrame, massive: pd.DataFrame) -> Headline:
    """Attention sinks and massive activations: how many heads put more than half their
    attention on the first token, and the largest activation against the median."""
    over = int((sinks["first_token_share"] > 0.5).sum())
    top = massive.loc[massive["ratio"].idxmax()]
    return Headline(
        f"{over} of {len(sinks)} heads put more than half their attention on the first token; "
        f"the largest activation is {_fmt(top['ratio'])} times the median (block "
        f"{int(top['block'])}).",
        (
            Figure("heads with over half on the first token", f"{over} of {len(sinks)}"),
            Figure("largest activation ÷ median", _fmt(top["ratio"])),
        ),
    )


def attribution(parts: pd.DataFrame, linear: bool) -> Headline:
    """Who writes what: the largest single write to the logit (a linear path), or the
    largest share of the sum it enters (Post-LN, or no head)."""
    if linear:
        blocks = parts[parts["part"].isin(["attention", "mlp"])]
        top = blocks.loc[blocks["logit"].abs().idxmax()]
        return Headline(
            f"The largest single write to the logit (by size) is {top['label']}'s: "
            f"{_fmt(top['logit'])}.",
            (Figure(f"{top['label']}, direct contribution", _fmt(top["logit"])),),
        )
    shares = parts.dropna(subset=["share"])
    top = shares.loc[shares["share"].abs().idxmax()]
    return Headline(
        f"The largest share (by size) of the sum it enters is {top['label']}'s: "
        f"{_fmt(top['share'])}.",
        (Figure(f"{top['label']}, share", _fmt(top["share"])),),
    )


def patching(t: Travel) -> Headline:
    """Where the answer travels (:func:`travel_sentence`), with the block it reaches
    the last position at as the figure."""
    b = t.reaches
    figures = () if b is None else (Figure("block the answer reaches the last position", str(b)),)
    return Headline(travel_sentence(t), figures)


_VERSUS_DELETED = {
    -1: "healing lowers the held-out loss below the deleted model's",
    1: "healing raises the held-out loss above the deleted model's",
    0: "healing leaves the held-out loss within 5% of the deleted model's",
}
_VERSUS_SCRATCH = {
    -1: "and below the from-scratch model's",
    1: "but not below the from-scratch model's: it ends above it",
    0: "and within 5% of the from-scratch model's",
}


def _heal_outcome(last: pd.Series) -> str:
    """One seed's outcome at its last step (``last``: held-out loss by variant)."""
    d = order(last["healing"], last["deleted"])
    if d is None:
        return "not finite"
    s = order(last["healing"], last["from scratch"])
    return f"{d}|{s}"


def _heal_says(outcome: str) -> str:
    if outcome == "not finite":
        return "the held-out losses to compare are not all finite numbers"
    d, s = outcome.split("|")
    tail = "" if s == "None" else ", " + _VERSUS_SCRATCH[int(s)]
    return _VERSUS_DELETED[int(d)] + tail


def heal(frame: pd.DataFrame, deleted: str) -> Headline:
    """Delete, then heal: each seed's held-out loss at its last step (``seed, step,
    variant, held_out_loss``), healing against the deleted model and the model from
    scratch, with the seeds' agreement; one seed states its four figures. ``deleted``
    names what was deleted ("block 1")."""
    lasts, seeds = [], []
    for seed, f in frame.groupby("seed", sort=True):
        step = int(f["step"].max())
        lasts.append((step, f[f["step"] == step].set_index("variant")["held_out_loss"]))
        seeds.append(int(seed))
    outcomes = [_heal_outcome(last) for _, last in lasts]
    if len(lasts) == 1:
        step, last = lasts[0]
        line = (
            f"In the one seed run (seed {seeds[0]}) {step} steps of healing bring the held-out "
            f"loss from {_fmt(last['deleted'])} ({deleted} deleted) to "
            f"{_fmt(last['healing'])}, against {_fmt(last['full'])} for the full model and "
            f"{_fmt(last['from scratch'])} for a same-size model trained from scratch."
        )
        if outcomes[0] == "not finite":
            line = line[:-1] + ": not all of them are finite numbers."
    else:
        says = {o: _heal_says(o) for o in set(outcomes)}
        line = seeds_headline(outcomes, says, seeds, topic="what healing does")
    mean = pd.DataFrame([last for _, last in lasts]).mean()
    over = "" if len(lasts) == 1 else f", mean over {len(lasts)} seeds"
    same_step = lasts[0][0] if len({s for s, _ in lasts}) == 1 else None
    at = f" after {same_step} steps" if same_step is not None else " at the last step"
    return Headline(
        line,
        (
            Figure(f"held-out loss, {deleted} deleted{over}", _fmt(mean["deleted"])),
            Figure(f"healed{at}{over}", _fmt(mean["healing"])),
            Figure(f"from scratch{at}{over}", _fmt(mean["from scratch"])),
            Figure(f"full model{over}", _fmt(mean["full"])),
        ),
    )


_TREND = {
    -1: "the deeper the model, the less deleting one of its blocks costs",
    1: "the deeper the model, the more deleting one of its blocks costs",
    0: "deleting one block costs about the same at every depth",
}


def _ladder_trend(medians: list[float]) -> int | Literal["mixed"] | None:
    """How the median deletion cost goes from the shallowest model to the deepest: -1
    falling at every step, 1 rising at every step, 0 level (within 5%) at every step,
    "mixed" otherwise, None where a cost is not finite."""
    steps = [order(b, a) for a, b in zip(medians, medians[1:], strict=False)]
    known = [o for o in steps if o is not None]
    if len(known) < len(steps):
        return None
    kinds = set(known)
    return known[0] if len(kinds) == 1 else "mixed"


def ladder(depths: pd.DataFrame) -> Headline:
    """The depth ladder: what deleting one block costs each model in held-out loss
    (``depth, median_increase, worst_increase, worst_block``, a row per model), the
    median over its blocks from the shallowest to the deepest, and the worst."""
    d = depths.sort_values("depth")
    lo, hi = d.iloc[0], d.iloc[-1]
    figures = (
        Figure(
            f"median cost of one deletion, {int(hi['depth'])} blocks", _fmt(hi["median_increase"])
        ),
        Figure(
            f"worst, {int(hi['depth'])} blocks (block {int(hi['worst_block'])})",
            _fmt(hi["worst_increase"]),
        ),
        Figure(
            f"median, {int(lo['depth'])} block{'s' if lo['depth'] != 1 else ''}",
            _fmt(lo["median_increase"]),
        ),
    )
    if len(d) == 1:
        return Headline(
            f"Deleting one block of the {int(lo['depth'])}-block model raises its held-out "
            f"loss by a median of {_fmt(lo['median_increase'])} nats per token.",
            figures[:2],
        )
    trend = _ladder_trend([float(x) for x in d["median_increase"]])
    costs = (
        f"a median of {_fmt(hi['median_increase'])} nats of held-out loss at "
        f"{int(hi['depth'])} blocks against {_fmt(lo['median_increase'])} at "
        f"{int(lo['depth'])}"
    )
    if trend is None:
        line = f"Some deletion costs are not finite numbers: {costs}."
    elif trend == "mixed":
        line = f"Deleting one block costs {costs}, with no steady trend between."
    else:
        span = f"From {int(lo['depth'])} to {int(hi['depth'])} blocks"
        line = f"{span}, {_TREND[trend]}: {costs}."
    return Headline(line, figures)
