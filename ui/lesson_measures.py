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


MEASURES: dict[str, Measure] = {
    "offset_only": offset_only,
    "similarity_monotone": similarity_monotone,
}
