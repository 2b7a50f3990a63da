"""Recipes of the gradient-flow page: dL/dx through plain and residual stacks.

The residual block's Jacobian is ``I + J`` instead of ``J`` (He et al. 2016, "Identity
Mappings in Deep Residual Networks", eq. 5), so the gradient at the input keeps an
identity term that no product of small Jacobians can remove.
"""

from __future__ import annotations

import pandas as pd
import torch

from .. import gradients as G
from ..config import StackConfig
from ..findings_words import format_number
from .core import Answer, Result, measure, recipe


def stack(
    depth: int, width: int, act: str, init: str, norm: str, seed: int, residual: str = "add"
) -> StackConfig:
    """The stack the page's settings describe (the URL's names), weights from ``seed``."""
    return StackConfig(
        depth=depth,
        width=width,
        activation=act,  # type: ignore[arg-type]
        init=init,  # type: ignore[arg-type]
        norm=norm,  # type: ignore[arg-type]
        residual=residual,  # type: ignore[arg-type]
        seed=seed,
    )


@recipe
def per_layer(
    *,
    depth: int = 10,
    width: int = 64,
    act: str = "tanh",
    init: str = "default",
    norm: str = "none",
    seed: int = 0,
    device: str | torch.device = "cpu",
) -> Result:
    """Per layer: weight and stream gradients of a plain and a residual stack at init,
    one MSE backward pass on a Gaussian batch of 32, measured in float64.

    Frames: ``weights`` (variant, block, param, grad_norm), ``streams`` (variant, block,
    act_grad, gain, stream_norm) and ``gains`` (variant, input_gain =
    ``||dL/dx_0|| / ||dL/dx_L||``)."""
    base = stack(depth, width, act, init, norm, seed)
    per = {
        name: G.layer_gradients(cfg, seed=seed, device=device)
        for name, cfg in G.plain_and_residual(base).items()
    }
    gains = [{"variant": name, "input_gain": float(df["gain"].iloc[0])} for name, df in per.items()]
    return Result(
        {
            "weights": G.weight_gradient_frame(per),
            "streams": G.stream_gradient_frame(per),
            "gains": pd.DataFrame(gains),
        }
    )


@measure("gradflow_input_gradient", of=per_layer, choices=("plain", "residual"))
def larger_input_gradient(r: Result) -> Answer:
    """Which stack passes the larger gradient back to its input, relative to its
    output? The one whose ``||dL/dx_0|| / ||dL/dx_L||`` is larger (residual on ties)."""
    g = r.gains.set_index("variant")["input_gain"]
    plain, resid = float(g[G.PLAIN]), float(g[G.RESIDUAL])
    return Answer(
        "plain" if plain > resid else "residual",
        f"||dL/dx_0|| / ||dL/dx_L|| is {format_number(plain)} in the plain stack and "
        f"{format_number(resid)} in the residual one.",
    )
