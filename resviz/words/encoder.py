"""The encoder playground's sentences, worded from the measured frames: how each
sublayer's output projects on the final stream x_L (which of them are its terms)."""

from __future__ import annotations

import pandas as pd

from resviz.words.numbers import format_number
from resviz.words.sentences import share_of


def share_words(share: pd.DataFrame) -> str:
    """What :func:`resviz.encoder.views.final_share`'s bars are, read from its
    ``part`` column (how this model makes x_L), with the measured numbers."""
    head = (
        "Each component's projection on the final stream x_L (the last block's output, "
        "before any final norm), as a fraction of ||x_L||^2. "
    )
    values = share["share"].astype(float)
    total = format_number(float(values.sum()))
    if share["part"].all():
        return (
            head + "x_L is the sum of these components (residuals, and no norm on the stream "
            f"itself), so the bars sum to 1 (here {total}). "
            + share_of(values, share["component"], "share")
        )
    if share["part"].sum() == 1:
        last = share[share["part"]].iloc[0]
        others = values[~share["part"]]
        return (
            head + f"Without residuals, x_L is the last sublayer's output itself, so its bar "
            f"({last['component']}) is {format_number(float(last['share']))}; the other bars "
            "are projections of outputs that do not reach x_L, not parts of it (from "
            f"{format_number(float(others.min()))} to {format_number(float(others.max()))})."
        )
    return (
        head + "Post-LN normalizes the stream after every sublayer, so x_L is no sum of these "
        f"components: each bar is only a projection, and the bars need not sum to 1 (here "
        f"{total}). " + share_of(values, share["component"], "projection")
    )
