"""The Pretrained page's sentences for its layer deletion, Who writes what and Where
the answer travels sections and its rank collapse caption, worded from each recipe's result
(:mod:`resviz.pretrained.recipes`, which re-exports them)."""

from __future__ import annotations

import math
from collections.abc import Callable

import pandas as pd

from resviz.core import Answer, Result
from resviz.pretrained.replication.rules import COLLAPSE_FLOOR, collapse_value, collapses
from resviz.pretrained.stream.travel import Travel, travel, travel_sentence
from resviz.words.numbers import format_number, resolution_words
from resviz.words.sentences import order


def deletion_measure(frame: pd.DataFrame) -> str:
    """The column the deletion chart draws: what the card judges, ``accuracy_kept``;
    ``top1_agreement`` where the full model predicts no token right (no accuracy to
    keep); ``output_cos`` for a model without a head."""
    if frame.empty or frame["accuracy"].isna().all():
        return "output_cos"
    return "accuracy_kept" if frame["accuracy_kept"].notna().any() else "top1_agreement"


def deletion_words(frame: pd.DataFrame, y: str) -> str:
    """What the Layer deletion chart shows: the lowest and highest ``y`` and the
    block whose deletion changes the loss most (by its size, either sign)."""
    what = {
        "accuracy_kept": "accuracy kept (deleted over full)",
        "top1_agreement": "top-1 agreement with the full model",
        "output_cos": "output cosine",
    }[y]
    lo = frame.loc[frame[y].idxmin()]
    hi = frame.loc[frame[y].idxmax()]
    out = (
        f"Lowest {what}: {format_number(lo[y], 3)} without block {int(lo['block'])}; "
        f"highest: {format_number(hi[y], 3)} without block {int(hi['block'])}."
    )
    if frame["loss_change"].notna().all():
        w = frame.loc[frame["loss_change"].abs().idxmax()]
        sign = "+" if w["loss_change"] >= 0 else ""
        out += (
            f" The loss on this text changes most without block {int(w['block'])}: "
            f"{sign}{format_number(w['loss_change'], 3)} nats."
        )
    if y == "top1_agreement" and "accuracy" in frame and (frame["accuracy"] == 0).all():
        out += (
            " The full model predicts none of this text's tokens right, so there is no "
            "accuracy to keep: the bars show top-1 agreement instead."
        )
    return out


def attribution_words(r: Result, quote: Callable[[str], str] = repr) -> str:
    """What the Who writes what chart shows: every part's contribution, and their sum
    against the model's own logit. ``quote`` writes a token (the page escapes it)."""
    parts = r.parts
    blocks = parts[parts["part"].isin(["attention", "mlp"])]
    per_block = blocks.groupby("block")["logit"].sum()
    emb = float(parts.loc[parts["part"] == "embeddings", "logit"].iloc[0])
    bias = float(parts.loc[parts["part"] == "bias", "logit"].iloc[0])
    top = blocks.loc[blocks["logit"].abs().idxmax()]
    listed = ", ".join(f"block {b} {format_number(v, 3)}" for b, v in per_block.items())
    return (
        f"The logit of {quote(r.token)} at position {r.position} (token {quote(r.position_token)}) "
        f"splits into x_0 {format_number(emb, 3)}, {listed} (attention + MLP) and the final "
        f"norm's bias {format_number(bias, 3)}: together {format_number(parts['logit'].sum(), 5)}; "
        f"the model's logit is {format_number(r.logit, 5)}. The largest single write: "
        f"{top['label']} ({format_number(top['logit'], 3)}). Against {quote(r.versus)}, the "
        f"logit difference {format_number(r.logit_diff, 4)} splits the same way (the "
        "logit_diff column)."
    )


def attribution_share_words(r: Result, quote: Callable[[str], str] = repr) -> str:
    """Post-LN: what the share chart shows (each write's share of the sum it enters)."""
    parts = r.parts.dropna(subset=["share"])
    top = parts.loc[parts["share"].abs().idxmax()]
    what = (
        "each part's share of the final stream (part . x_L / ||x_L||^2; the shares add up to 1)"
        if r.decoder
        else "each write's share of the sum it is added to, before the LayerNorm that follows "
        "(a . (x + a) / ||x + a||^2; the stream's own share is 1 minus it)"
    )
    return (
        f"At position {r.position} (token {quote(r.position_token)}): {what}. The largest: "
        f"{top['label']} ({format_number(top['share'], 3)}); the smallest: "
        f"{parts.loc[parts['share'].abs().idxmin(), 'label']} "
        f"({format_number(parts.loc[parts['share'].abs().idxmin(), 'share'], 3)})."
    )


def answer_travel(r: Result) -> Travel:
    """Where the answer sits, block by block, in a :func:`resviz.pretrained.recipes.patching`
    result (:func:`resviz.pretrained.stream.travel.travel`)."""
    return travel(r.patching, r.differs, r.read_position, r.n_layers)


def patching_words(r: Result, quote: Callable[[str], str] = repr) -> str:
    """What the patching heatmap shows: the two runs' logit differences, the changed
    position and where the answer travels (:func:`resviz.pretrained.headline.travel_sentence`)."""
    changed = ", ".join(str(t) for t in r.differs) or "none"
    return (
        f"Logit difference {quote(r.token)} minus {quote(r.versus)} at position "
        f"{r.read_position}: {format_number(r.clean_diff, 4)} on the clean prompt, "
        f"{format_number(r.corrupted_diff, 4)} on the corrupted one (the prompts differ at "
        f"position {changed}). Each cell: the share of that gap recovered when x_l at that "
        "position is taken from the clean run (1 = all of it, 0 = none). "
        + travel_sentence(answer_travel(r))
    )


def collapse_words(r: Result) -> str:
    """What the Rank collapse chart shows after the last block."""
    rc = r.collapse
    last = rc[rc["block"] == rc["block"].max()].set_index("variant")
    w, wo = last.loc["with shortcuts"], last.loc["no shortcuts"]
    if r.n_tokens == 1:
        return (
            "One token is its own mean: its distance from rank one is 0 with and without "
            "shortcuts. Give a longer text to compare them."
        )
    floor = (
        " Triangles at the bottom mark distances "
        f"{resolution_words(COLLAPSE_FLOOR)}: the model runs in float32, and a distance "
        "that small is rounding, not a measurement."
        if (rc["residual"].abs().lt(COLLAPSE_FLOOR) & rc["residual"].ne(0)).any()
        else ""
    )
    zero = " (exactly 0: every token's state is the same vector)" if wo["residual"] == 0 else ""
    return (
        f"After the last block: {collapse_value(w['residual'])} with shortcuts (mean cosine "
        f"between tokens {format_number(w['cosine'], 3)}), {collapse_value(wo['residual'])} "
        f"without{zero} (cosine {format_number(wo['cosine'], 3)}).{floor}"
    )


# ------------------------------------------ the lesson "Inside a real model"'s readings
# (lessons/stream.toml; registered as measures on their recipes in
# resviz.pretrained.recipes). Each answers one of the question's choices, or says why it
# cannot be told at the settings on screen; two figures within 5% of each other
# (resviz.words.sentences.order) are level: a question is never decided by rounding.
CANNOT = "cannot be told"
LEVEL = "level"
TRAVEL_CHOICES = ("the changed word", "the last position")
LADDER_CHOICES = ("under half as much", "about as much or more")


def collapses_too(r: Result) -> Answer:
    """Without its shortcuts, does the stream end up much nearer rank one? Yes when
    the distance after the last block is under a tenth of the value with shortcuts
    (:func:`resviz.pretrained.replication.rules.collapses`, the card's rule: "does not" where it
    cannot be told)."""
    with_s, without = r.with_s, r.without
    one = " (a single token is its own mean)" if r.n_tokens == 1 else ""
    return Answer(
        "collapses too" if collapses(with_s, without) else "does not",
        f"{r.architecture}, {r.n_layers} blocks: after the last block the distance from "
        f"rank one is {collapse_value(with_s)} with its shortcuts and "
        f"{collapse_value(without)} without them{one}.",
    )


def _n(x: float) -> str:
    return format_number(x, 3)


def _larger(a: float, b: float, said: str, a_is: str, b_is: str, what: str) -> Answer:
    """``a_is`` where ``a`` is the larger of the two, ``b_is`` where ``b`` is; level within
    5% of each other; cannot be told where either is not finite (``what`` names it)."""
    o = order(a, b)
    if o is None:
        return Answer(CANNOT, f"{said} {what} is not a finite number.")
    if o == 0:
        return Answer(LEVEL, f"{said} The two are within 5% of each other.")
    return Answer(a_is if o > 0 else b_is, said)


def mlps_write_more(r: Result) -> Answer:
    """Summed over the blocks, do the attention layers or the MLPs write more of the
    token's logit (their direct contributions through the frozen final norm)?"""
    if not r.linear:
        return Answer(
            CANNOT,
            f"{r.architecture} has no logit made of parts: a Post-LN encoder normalizes "
            "after every sum, and a model without an output head has no logit.",
        )
    parts = r.parts
    attn = float(parts.loc[parts["part"] == "attention", "logit"].sum(skipna=False))
    mlp = float(parts.loc[parts["part"] == "mlp", "logit"].sum(skipna=False))
    said = (
        f"Of the logit of {r.token!r} at position {r.position} ({_n(r.logit)}), the "
        f"{r.n_layers} MLPs write {_n(mlp)} and the {r.n_layers} attention layers {_n(attn)}."
    )
    return _larger(mlp, attn, said, "MLPs", "attention", "A sum")


def answer_after_block_1(r: Result) -> Answer:
    """After block 1, does patching the changed word or the last position recover
    more of the logit difference?"""
    t = answer_travel(r)
    if not t.changed:
        return Answer(
            CANNOT,
            f"The prompts differ only at position {t.read}, where the answer is read: it "
            "has nowhere to travel.",
        )
    at_read, at_changed, where = t.at(1)
    said = (
        f"After block 1, patching the changed word (position {where}) recovers "
        f"{_n(at_changed)} of the gap; patching the last position ({t.read}), {_n(at_read)}."
    )
    return _larger(at_changed, at_read, said, *TRAVEL_CHOICES, "A share")


def first_block_costs_most(r: Result) -> Answer:
    """Which block's deletion raises the loss on the text most: the first, or a later
    one? (A model without a head: which lowers the output's cosine to the full
    model's most.)"""
    d = r.deletion.set_index("block")
    if d["loss_change"].isna().all():  # no head (or one token): no loss to raise
        cost, what = 1 - d["output_cos"], "lowers the output's cosine to the full model's by"
    else:
        cost, what = d["loss_change"], "raises the loss on the text by"
    if len(cost) < 2:
        return Answer(CANNOT, f"{r.architecture} has one block: there is no later one.")
    if not all(math.isfinite(float(c)) for c in cost):
        return Answer(CANNOT, "A deletion's cost is not a finite number.")
    first, later = float(cost.iloc[0]), cost.iloc[1:]
    worst = int(later.idxmax())
    said = (
        f"Deleting block 1 {what} {_n(first)}; the costliest later block, {worst}, "
        f"{_n(float(later.max()))}."
    )
    return _larger(first, float(later.max()), said, "the first", "a later one", "A cost")


def heal_beats_scratch(r: Result) -> Answer:
    """After the same steps, which ends lower on held-out text: the model healed after
    the deletion, or the same-size model trained from scratch on the same batches?"""
    f = r.healing
    last = f[f["step"] == f["step"].max()].set_index("variant")["held_out_loss"]
    healed, scratch = float(last["healing"]), float(last["from scratch"])
    said = (
        f"After {int(f['step'].max())} steps, held-out loss {_n(healed)} healed (deleted: "
        f"{r.deleted}) and {_n(scratch)} from scratch (the full model: {_n(last['full'])})."
    )
    # The lower loss wins: the larger of the two is the other model's.
    return _larger(scratch, healed, said, "healed", "from scratch", "A loss")


def depth_protects_block_1(r: Result) -> Answer:
    """Does deleting block 1 cost the 8-block sibling under half as much held-out loss
    as it costs the 4-block one?"""
    d = r.deletion
    first = d[d["block"] == 1].set_index("depth")["loss_increase"]
    if 4 not in first.index or 8 not in first.index:
        return Answer(CANNOT, "The run stopped before the 8-block sibling was measured.")
    four, eight = float(first[4]), float(first[8])
    said = (
        f"Deleting block 1 raises the held-out loss by {_n(eight)} in the 8-block sibling "
        f"and by {_n(four)} in the 4-block one."
    )
    if not (math.isfinite(four) and math.isfinite(eight)) or four <= 0:
        return Answer(CANNOT, said + " The 4-block cost is not a positive finite number.")
    return Answer("under half as much" if eight < four / 2 else "about as much or more", said)
