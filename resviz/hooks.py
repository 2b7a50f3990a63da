"""Recording activations through hook points (the TransformerLens pattern).

Every model marks the places worth looking at with :class:`HookPoint` modules.
:func:`capture` registers forward hooks on them, runs the model and removes the
hooks in ``finally``: a model leaves ``capture`` exactly as it came in, even when
the forward pass raises.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import nn

from .models import HookPoint


def _public_name(module_path: str) -> str:
    """``blocks.0.attn.pattern`` -> ``blocks.0.attn_pattern``; others unchanged."""
    if module_path.endswith(".attn.pattern"):
        return module_path[: -len(".attn.pattern")] + ".attn_pattern"
    if module_path.startswith("hook_"):
        return module_path[len("hook_") :]
    return module_path


def hook_names(model: nn.Module) -> list[str]:
    """Every name :func:`capture` can return for this model, in forward order."""
    return [_public_name(n) for n, m in model.named_modules() if isinstance(m, HookPoint)]


def capture(
    model: nn.Module,
    inputs: torch.Tensor | tuple[torch.Tensor, ...],
    names: Iterable[str] | None = None,
    grad: bool = False,
) -> dict[str, torch.Tensor]:
    """Run ``model(inputs)`` and return the activations at its hook points.

    Keys are module paths such as ``blocks.2.resid_post`` or
    ``blocks.0.attn_pattern`` (``[batch, heads, query, key]``); values are
    detached CPU tensors. ``names`` restricts what is kept; the forward pass
    runs without autograd unless ``grad=True``. The output is under ``"output"``.
    """
    wanted = set(names) if names is not None else None
    store: dict[str, torch.Tensor] = {}
    handles = []

    def make_hook(key: str):
        def hook(_module: nn.Module, _args: tuple, out: torch.Tensor) -> None:
            store[key] = out.detach().to("cpu", copy=True)

        return hook

    try:
        for path, module in model.named_modules():
            if isinstance(module, HookPoint):
                key = _public_name(path)
                if wanted is None or key in wanted:
                    handles.append(module.register_forward_hook(make_hook(key)))
        args = inputs if isinstance(inputs, tuple) else (inputs,)
        with torch.set_grad_enabled(grad):
            out = model(*args)
        store["output"] = out.detach().to("cpu", copy=True)
    finally:
        for h in handles:
            h.remove()
    return store
