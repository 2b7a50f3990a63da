"""The encoder playground's headlines, one per section, from the per-seed outcomes its
full account words (:mod:`resviz.encoder.words`)."""

from __future__ import annotations

import math

import pandas as pd

from resviz.encoder.words import _SAID_AS, FLOOR, _final
from resviz.encoder.words_training import race
from resviz.words.headline import Figure, Headline, seeds_headline
from resviz.words.seeds import _of, by_seed, seeds_label, span, span_floor
from resviz.words.sentences import order, trend_outcome

__all__ = ["attention", "collapse", "loss_race", "model", "stream"]


def model(
    n_layers: int,
    d_model: int,
    params: str,
    flops: str,
    n_tokens: int,
    figures: tuple[Figure, ...] = (),
) -> Headline:
    """Model: the encoder's size and cost, as the model card counts them (no seed);
    ``params`` and ``flops`` as the card writes them (``"1.2M"``, ``"79 MFLOP"``)."""
    return Headline(
        f"{n_layers} layer{'s' if n_layers != 1 else ''} of width {d_model}: {params} "
        f"parameters, {flops} per forward pass over your {n_tokens} token"
        f"{'s' if n_tokens != 1 else ''}.",
        figures,
    )


def attention(attention: pd.DataFrame, n_tokens: int, block: int, head: int) -> Headline:
    """Attention: the largest weight of the map as a multiple of uniform attention, in
    every seed (the numbers :func:`resviz.encoder.words.attention_spread_words` quotes)."""
    parts, seeds = by_seed(attention)
    tops = [float(p["weight"].max()) * n_tokens for p in parts]
    over = f"over {seeds_label(seeds)}" if len(seeds) > 1 else f"in {seeds_label(seeds)}"
    figure = Figure("largest weight ÷ uniform (1/T)", span(tops))
    return Headline(
        f"In layer {block}, head {head} the largest weight is {span(tops)} times uniform "
        f"attention (1/{n_tokens}), {over}.",
        (figure,),
    )


def stream(stream: pd.DataFrame) -> Headline:
    """Residual stream: how the mean token norm changes from the input to after the last
    sublayer, in every seed (the outcomes :func:`resviz.encoder.words.stream_norm_words`
    words); the norm at both ends as the figures."""
    parts, seeds = by_seed(stream)
    values = [[float(p["input_norm"].iloc[0]), *map(float, p["stream_norm"])] for p in parts]
    outcomes = [_SAID_AS.get(o, o) for o in (trend_outcome(v) for v in values)]
    first, last = [v[0] for v in values], [v[-1] for v in values]
    factor = [
        max(abs(a), abs(b)) / min(abs(a), abs(b)) if a * b > 0 else math.nan
        for a, b in zip(first, last, strict=True)
    ]
    spread = [max(v) / min(v) if min(v) > 0 else math.nan for v in values]
    n = len(parts[0])
    where = f"over {n} sublayer{'s' if n != 1 else ''}"
    says = {}
    for o in set(outcomes):
        f = [x for x in _of(seeds, outcomes, o, factor) if math.isfinite(x)]
        times = f" {span(f, 2)} times" if f and o in ("rises", "falls") else ""
        says[o] = {
            "rises": f"the mean token norm rises{times} {where}",
            "falls": f"the mean token norm falls{times} {where}",
            "stays": "the mean token norm stays within a factor of "
            f"{span(_of(seeds, outcomes, o, spread))} {where}",
            "ends": f"the mean token norm ends where it starts, {where}",
        }.get(o, f"the mean token norm reaches a value that is not finite {where}")
    short = {"rises": "rises", "falls": "falls", "stays": "stays", "ends": "ends where it starts"}
    short = {o: short.get(o, "not finite") for o in outcomes}
    line = seeds_headline(outcomes, says, seeds, "the stream's norm", short)
    figures = (
        Figure("mean token norm, input", span(first)),
        Figure("after the last sublayer", span(last)),
    )
    return Headline(line, figures)


_PAIR = {
    "apart": "end further from rank one with shortcuts than without",
    "closer": "end closer to rank one with shortcuts than without",
    "same": "end about as far from rank one with shortcuts as without",
    "none": "cannot be compared with and without shortcuts (a value is not finite)",
    "unresolved": "end below float64 resolution with shortcuts and without",
}
_PAIR_SHORT = {
    "apart": "apart",
    "closer": "closer",
    "same": "level",
    "none": "not finite",
    "unresolved": "under rounding",
}


def _pair_outcome(a: float, b: float) -> str:
    """As :func:`resviz.encoder.words.collapse_words` compares two final distances."""
    if max(abs(a), abs(b)) < FLOOR:
        return "unresolved"
    x, y = (max(v, FLOOR) if v < FLOOR else v for v in (a, b))
    return {1: "apart", -1: "closer", 0: "same", None: "none"}[order(x, y)]


def collapse(collapse: pd.DataFrame) -> Headline:
    """Rank collapse: in every seed, whether the tokens end further from rank one with
    shortcuts than without, in your model and in attention alone (the comparisons
    :func:`resviz.encoder.words.collapse_words` words); your model's final distance
    with and without them as the figures."""
    parts, seeds = by_seed(collapse)
    variants = list(pd.unique(parts[0]["variant"]))
    has = parts[0].drop_duplicates("variant").set_index("variant")["shortcuts"]
    mine = (variants[0], variants[1]) if bool(has[variants[0]]) else (variants[1], variants[0])
    alone = ("attention only, shortcuts", "attention only, no shortcuts")
    finals = {v: [_final(p, v) for p in parts] for v in (*mine, *alone)}
    pairs = [
        (_pair_outcome(finals[mine[0]][i], finals[mine[1]][i]),)
        + (_pair_outcome(finals[alone[0]][i], finals[alone[1]][i]),)
        for i in range(len(parts))
    ]
    outcomes = [" / ".join(p) for p in pairs]
    last = int(parts[0]["block"].max())
    says, short = {}, {}
    for o in set(outcomes):
        a, b = o.split(" / ")
        if a == b:
            says[o] = f"the tokens {_PAIR[a]}, in your model and in attention alone"
        else:
            says[o] = f"your model's tokens {_PAIR[a]}; attention alone's {_PAIR[b]}"
        short[o] = f"your model {_PAIR_SHORT[a]}, attention alone {_PAIR_SHORT[b]}"
    line = seeds_headline(outcomes, says, seeds, "what the shortcuts do", short)
    figures = tuple(
        Figure(f"distance from rank one after block {last}, {v}", span_floor(finals[v], FLOOR))
        for v in mine
    )
    return Headline(line, figures)


def loss_race(curves: pd.DataFrame, a: str, b: str, window: int = 10) -> Headline:
    """Training: which model ends with the lower mean loss over the last ``window``
    steps both have, in every seed (the outcomes
    :func:`resviz.encoder.words_training.loss_race_words` words); both means as the
    figures."""
    parts, seeds = by_seed(curves)
    outcomes, ma, mb, _ = race(parts, a, b, window)
    ma = [x for x, o in zip(ma, outcomes, strict=True) if o != "none"]
    mb = [y for y, o in zip(mb, outcomes, strict=True) if o != "none"]
    qa, qb = f'"{a}"', f'"{b}"'
    says = {
        "a": f"{qa} ends with the lower loss",
        "b": f"{qb} ends with the lower loss",
        "same": f"{qa} and {qb} end level, within 5%",
        "inf": f"a final loss of {qa} or {qb} is not finite",
        "none": f"no step has a loss for both {qa} and {qb} yet",
    }
    short = {"a": f"{qa} lower", "b": f"{qb} lower", "same": "level", "inf": "not finite"}
    short["none"] = "no step yet"
    line = seeds_headline(outcomes, says, seeds, "which model ends lower", short)
    figures = tuple(
        Figure(f"final loss, {name} (mean of the last {window} steps)", span(v))
        for name, v in ((a, ma), (b, mb))
        if v
    )
    return Headline(line, figures)
