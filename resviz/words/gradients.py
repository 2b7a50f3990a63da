"""The gradient-flow page's sentences: whether the measured gain at the input follows
the identity term l^L of ``l·x + f(x)`` (He et al. 2016, Identity Mappings in Deep
Residual Networks, section 3) and why, and which singular values of a block's
Jacobian are zero, each worded from the measured frames.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from resviz.gradients.layers import RESIDUAL
from resviz.words.numbers import format_number

# How close the measured gain must come to l^L to be said to "agree" with it.
AGREE_RTOL = 0.05


def zero_sv_words(spec: pd.DataFrame) -> str:
    """How many of the residual stack's singular values of J are 0 to float64's
    rounding (below ``n · eps · largest``, numpy's rank tolerance), and whether I + J
    has any; empty if J has none."""
    part = spec[spec["variant"] == RESIDUAL]
    j = part[part["matrix"] == "branch J"]["sigma"]
    block = part[part["matrix"] == "block"]["sigma"]
    tol = float(j.max()) * len(j) * np.finfo(np.float64).eps
    k = int((j <= tol).sum())
    if not k:
        return ""
    still = (
        "while every singular value of I + J is at least "
        f"{format_number(block.min())}, so I + J passes all of them"
        if float(block.min()) > tol
        else "and so are some of I + J's"
    )
    return (
        f" {k} of J's {len(j)} singular values are 0 to float64's rounding (at most "
        f"{format_number(tol)}): J passes no gradient "
        f"along those directions, {still}."
    )


def _agrees(log_m: float, log_t: float) -> bool:
    """Whether ``|measured / identity_term - 1| <= AGREE_RTOL``, from their log10s."""
    diff = log_m - log_t
    return bool(math.isfinite(diff) and abs(10.0**diff - 1) <= AGREE_RTOL)


def scaled_shortcut_words(ratio: pd.DataFrame, l: float, norm: str, small: bool) -> str:  # noqa: E741
    """Why the measured gain of ``l·x + f(x)`` at the input does or does not follow
    the identity term ``l^L``, from :func:`resviz.identity_ratio`'s frame: a sentence
    that holds for the run it describes."""
    log_m = float(ratio["log10_measured"].iloc[0])
    log_t = float(ratio["log10_identity_term"].iloc[0])
    branches = "these near-zero branches" if small else "these branches"
    if log_t == -math.inf:
        return (
            "l = 0 is a plain stack: the identity term is exactly 0, and what reaches the "
            "input comes from the terms made of the branches' Jacobians alone."
        )
    if _agrees(log_m, log_t):
        return (
            f"With {branches} the terms made of the branches' Jacobians are small next "
            "to the identity term: it is nearly all that is left."
        )
    s0, s_last = float(ratio["stream_norm"].iloc[0]), float(ratio["stream_norm"].iloc[-1])
    if norm != "none" and s_last < s0:
        return (
            f"A {norm} norm sits before every branch here. Its Jacobian scales as one over "
            f"the size of its input, and with l = {l:g} the stream shrinks block by block "
            f"(its mean norm falls from {format_number(s0)} at x_0 to "
            f"{format_number(s_last)} at x_L), so the branches' Jacobians are not small "
            "next to l: the argument that leaves the identity "
            "term alone does not apply."
        )
    return (
        f"With {branches} the terms made of the branches' Jacobians are not small next to "
        f"the identity term l^L: they change the gain by more than "
        f"{format_number(AGREE_RTOL * 100)}%."
    )
