"""Predict, then measure: the answer to a lesson question, computed from the data.

A lesson step's ``[steps.predict]`` names a measure here. The measure recomputes
what the step's section shows, with the page's declared defaults overridden by
the settings on screen (``settings``: URL name -> value) and the session's seed,
and returns which choice the numbers support and a sentence with the numbers. The
lesson's ``expect`` is only what its author expects: if a setting turns the
outcome around, the page says what was measured.

Each measure's docstring lists the choices it answers with (a lesson's choices
must be these labels).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch

import resviz as rv
from resviz import norms as N
from resviz import positional as P

from .specs.pages import spec_of


@dataclass(frozen=True)
class Measured:
    answer: str  # one of the question's choices
    sentence: str  # what was measured, with the numbers


Measure = Callable[[Mapping[str, Any], int], Measured]


def settings_for(page: str, settings: Mapping[str, Any]) -> dict[str, Any]:
    """The page's declared defaults, overridden by ``settings``."""
    out = {p.name: p.default for p in spec_of(page).params}
    out.update(settings)
    return out


# ------------------------------------------------------------- sinusoidal_encoding
def offset_only(settings: Mapping[str, Any], seed: int) -> Measured:
    """Choices: "only on p - q", "on p too". Whether PE(p).PE(q) depends on the
    offset alone, over the positions shown (float64)."""
    s = settings_for("sinusoidal_encoding", settings)
    pe = rv.sinusoidal_encoding(
        int(s["positions"]), int(s["d_model"]), float(s["base"]), dtype=torch.float64
    )
    err = P.offset_dependence(pe)
    scale = int(s["d_model"]) / 2  # PE(p).PE(p) = d/2
    answer = "only on p - q" if err <= 1e-9 * scale else "on p too"
    return Measured(
        answer,
        f"Largest gap between PE(p).PE(q) and PE(0).PE(|p-q|) over {s['positions']} positions: "
        f"{err:.2e} (the dot product itself is up to {scale:g}).",
    )


def similarity_monotone(settings: Mapping[str, Any], seed: int) -> Measured:
    """Choices: "falls steadily", "rises again somewhere". Whether PE(0).PE(k) falls
    with every step of k over the positions shown."""
    s = settings_for("sinusoidal_encoding", settings)
    pe = rv.sinusoidal_encoding(
        int(s["positions"]), int(s["d_model"]), float(s["base"]), dtype=torch.float64
    )
    by = P.similarity_by_offset(pe)
    rises = by["offset"][by["dot"].diff() > 1e-9].tolist()
    if rises:
        return Measured(
            "rises again somewhere",
            f"Over offsets 0 to {len(by) - 1}, PE(0).PE(k) rises again at {len(rises)} offsets, "
            f"first at k = {rises[0]}.",
        )
    return Measured(
        "falls steadily",
        f"Over offsets 0 to {len(by) - 1}, PE(0).PE(k) falls at every step, from "
        f"{rv.format_number(float(by['dot'].iloc[0]))} to {rv.format_number(float(by['dot'].iloc[-1]))}.",
    )


# ------------------------------------------------------------------- normalization
def _norm_input(s: Mapping[str, Any], seed: int) -> Any:
    """The normalization page's input batch (its first three sections), as shown."""
    return N.scaled_batch(
        int(s["batch"]), int(s["tokens"]), int(s["d"]), float(s["big"]), float(s["small"]), seed
    )


def layernorm_keeps_halves(settings: Mapping[str, Any], seed: int) -> Measured:
    """Choices: "yes", "no". Whether, after LayerNorm, the first half of the features
    (multiplied by "first half x") is still more than twice as large as the second
    half: mean |value| in sample 0, as the Four views caption measures it."""
    s = settings_for("normalization", settings)
    frame = N.norm_views(N.apply_norms(_norm_input(s, seed)), 0)
    raw, ln = N.half_means(frame, "raw"), N.half_means(frame, "LayerNorm")
    ratio = ln[0] / ln[1]
    return Measured(
        "yes" if ratio > 2 else "no",
        f"Mean |value| of the first half over the second half's, in sample 0: "
        f"{rv.format_number(raw[0] / raw[1])} raw, {rv.format_number(ratio)} after LayerNorm "
        f"(halves x{float(s['big']):g} and x{float(s['small']):g}).",
    )


def textbook_gap_large(settings: Mapping[str, Any], seed: int) -> Measured:
    """Choices: "yes", "no". Whether the hand-written LayerNorm (unbiased std, eps on
    the std) differs from torch's somewhere by more than 0.05: the largest
    |textbook - torch| over every token of the batch, as the Textbook LayerNorm
    section measures it. Its cause, the factor sqrt((d-1)/d), matters at small d."""
    s = settings_for("normalization", settings)
    gap = N.layernorm_gap(_norm_input(s, seed))
    d = int(s["d"])
    largest = float(gap["measured"].max())
    return Measured(
        "yes" if largest > 0.05 else "no",
        f"Largest |textbook - torch| over {len(gap)} tokens of d = {d} features: "
        f"{rv.format_number(largest)} (the formulas predict "
        f"{rv.format_number(float(gap['predicted'].max()))}; sqrt((d-1)/d) = "
        f"{rv.format_number(((d - 1) / d) ** 0.5)}).",
    )


def preln_stream_doubles(settings: Mapping[str, Any], seed: int) -> Measured:
    """Choices: "yes", "no". Whether the Pre-LN stream's ||x_l||²/d at the last layer
    is more than twice its value at the input, at init (the Pre-LN vs Post-LN
    section's stream chart). Xavier's larger weights make it grow faster than
    PyTorch's default init."""
    s = settings_for("normalization", settings)
    layers = int(s["layers"])
    stream = N.prepost_stream(layers, int(s["d_model"]), seed, str(s["init"]))
    pre = stream[stream["variant"] == "Pre-LN"].sort_values("layer")["sq_norm_per_dim"]
    first, last = float(pre.iloc[0]), float(pre.iloc[-1])
    return Measured(
        "yes" if last > 2 * first else "no",
        f"Pre-LN's ||x_l||²/d goes from {rv.format_number(first)} at the input to "
        f"{rv.format_number(last)} after layer {layers} ({rv.format_number(last / first)} "
        f"times; {s['init']} init, d = {s['d_model']}).",
    )


MEASURES: dict[str, Measure] = {
    "offset_only": offset_only,
    "similarity_monotone": similarity_monotone,
    "layernorm_keeps_halves": layernorm_keeps_halves,
    "textbook_gap_large": textbook_gap_large,
    "preln_stream_doubles": preln_stream_doubles,
}
