"""The accounts under the Stream norms, Block influence, Similarity, Logit lens and
Attention sinks charts, worded from each recipe's result
(:mod:`resviz.pretrained.recipes`). A token is written by ``escape(token, limit)``: the
page passes its Markdown escape; the default writes the token's repr."""

from __future__ import annotations

from collections.abc import Callable

from resviz.core import Result
from resviz.words.numbers import format_number

Escape = Callable[[str, int], str]


def _plain(text: str, limit: int) -> str:
    """A token as plain text: its repr, cut at ``limit`` characters."""
    return repr(text[:limit])


def _n(x: float, digits: int = 3) -> str:
    return format_number(x, digits)


def norms_words(r: Result) -> str:
    """The Stream norms account: the median token norm of the embeddings and after the
    last block, the fitted growth per block (where it is a number), and the range of the
    normed stream the head reads (or that the family has no final norm)."""
    norms = r.norms
    raw = norms[norms["variant"] == "stream"].set_index("block")["median_norm"]
    rate = r.growth
    fitted = (
        f", a fitted factor of {_n(rate, 4)} per block over blocks 1-{r.n_layers}"
        if rate == rate
        else ""
    )
    out = (
        f"Block 0 is the embeddings. The median token norm goes from {_n(raw.iloc[0])} "
        f"(embeddings) to {_n(raw.iloc[-1])} after block {r.n_layers}{fitted}. "
    )
    if not r.has_final_norm:
        return out + "This family has no final norm: every block ends in its own LayerNorm."
    normed = norms[norms["variant"] == "final norm applied"]["median_norm"]
    return out + (
        f"With the final norm applied (what the head reads) it stays between "
        f"{_n(normed.min())} and {_n(normed.max())}."
    )


def influence_words(r: Result) -> str:
    """The Block influence account: the block that turns the stream most and the one
    that turns it least (the first of tied blocks)."""
    infl = r.influence
    hi = infl.loc[infl["influence"].idxmax()]
    lo = infl.loc[infl["influence"].idxmin()]
    return (
        f"Block {int(hi['block'])} changes the direction of the stream most "
        f"(1 - cos = {_n(hi['influence'])}), block {int(lo['block'])} least "
        f"({_n(lo['influence'])}). Mean over the {r.n_tokens} tokens."
    )


def similarity_words(r: Result) -> str:
    """The Similarity account: what the heatmap's distance is, and how far apart the
    embeddings and the last block's output are."""
    sim = r.similarity
    first_last = sim[(sim["block_a"] == 0) & (sim["block_b"] == r.n_layers)].iloc[0]
    return (
        "Mean over tokens of the angular distance arccos(cos(x_a, x_b)) / pi (Gromov et "
        "al.'s; 0 = same direction, 0.5 = orthogonal); block 0 is the embeddings. The "
        f"embeddings and the last block's output are {_n(first_last['angular'])} apart "
        f"(mean cosine {_n(first_last['cos'])})."
    )


def lens_words(r: Result, escape: Escape = _plain) -> str:
    """The Logit lens account: the model's next token, its probability decoded from the
    embeddings and from the output, the block it is the top token from, and how each
    state is decoded."""
    lens = r.lens
    how = (
        "through the final norm, then the model's own unembedding"
        if r.has_final_norm
        else "through the model's own unembedding"
    )
    return (
        f"The model's next token after the text is {escape(str(lens['answer_token'].iloc[0]), 30)}. "
        f"Its probability goes from {_n(lens['answer_prob'].iloc[0])} (embeddings decoded) to "
        f"{_n(lens['answer_prob'].iloc[-1])} (the output); it is the top token from block "
        f"{r.settled} on. Each state passes {how}."
    )


def sinks_words(r: Result, escape: Escape = _plain) -> str:
    """The Attention sinks account: the range of the block means of the first token's
    share, the even share, and how many heads put more than half there."""
    sinks = r.sinks
    per_block = sinks.groupby("block")["first_token_share"].mean()
    over = int((sinks["first_token_share"] > 0.5).sum())
    return (
        f"Share of each head's attention on the first token {escape(r.first_token, 20)} "
        f"(mean over the other {r.n_tokens - 1} query positions). Block means run from "
        f"{_n(per_block.min())} to {_n(per_block.max())}; spread evenly it would be "
        f"{_n(sinks['uniform_share'].iloc[0])}. {over} of {len(sinks)} heads put more than half "
        "their attention there."
    )


def massive_words(r: Result, escape: Escape = _plain) -> str:
    """The Massive activations account: the largest activation relative to the median,
    where it sits (the first of ties)."""
    m = r.massive
    row = m.loc[m["ratio"].idxmax()]
    return (
        f"The largest activation relative to the median: {_n(row['ratio'])}x at block "
        f"{int(row['block'])}, on token {escape(r.peak_token, 20)} (position "
        f"{int(row['position'])}), dimension {int(row['dim'])}."
    )
