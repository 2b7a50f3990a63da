"""The Pretrained page's sentences for its layer deletion, Who writes what and Where
the answer travels sections and its rank collapse caption, worded from each recipe's result
(:mod:`resviz.recipes.pretrained`, which re-exports them)."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from resviz.pretrained.rules import COLLAPSE_FLOOR, collapse_value
from resviz.recipes.core import Result
from resviz.words.numbers import format_number, resolution_words


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


def patching_words(r: Result, quote: Callable[[str], str] = repr) -> str:
    """What the patching heatmap shows: the two runs' logit differences, the changed
    position, and the cell recovering most in the deepest block done."""
    f = r.patching
    deepest = f[f["block"] == f["block"].max()]
    best = deepest.loc[deepest["recovered"].idxmax()]
    changed = ", ".join(str(t) for t in r.differs) or "none"
    return (
        f"Logit difference {quote(r.token)} minus {quote(r.versus)} at position "
        f"{r.read_position}: {format_number(r.clean_diff, 4)} on the clean prompt, "
        f"{format_number(r.corrupted_diff, 4)} on the corrupted one (the prompts differ at "
        f"position {changed}). Each cell: the share of that gap recovered when x_l at that "
        "position is taken from the clean run (1 = all of it, 0 = none). After block "
        f"{int(best['block'])}, position {int(best['position'])} recovers the most: "
        f"{format_number(best['recovered'], 3)}."
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
