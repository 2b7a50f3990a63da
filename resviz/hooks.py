"""Recording activations and gradients through hook points (the TransformerLens pattern).

Every model marks the places worth looking at with :class:`HookPoint` modules.
:func:`capture` registers forward hooks on them, runs the model and removes the
hooks in ``finally``: a model leaves ``capture`` exactly as it came in, even when
the forward pass raises. :func:`capture_grads` adds the backward pass: at the
same hook points it records ``dL/d(hook output)`` through tensor hooks, and it
measures parameter gradients as they are accumulated and drops them, so a pass
never holds a gradient for every weight. :func:`tap` is the mechanism both use,
for a caller that needs the live tensors (a Jacobian through one block); its
``patch`` is also how an intervention is made (:func:`delete_block`, the lesion).

Every per-layer measure in resviz is a function of these captured tensors.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn


class HookPoint(nn.Module):
    """An identity module: a named place where :func:`capture` can look. The models
    (:mod:`resviz.models`) put one wherever a page wants to see an intermediate."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


# What ``patch`` puts at a hook point: a tensor, or the name of an earlier hook point
# whose output (in the same forward pass) is passed on instead.
Patch = torch.Tensor | str
Args = tuple[Any, ...]  # a forward hook's positional arguments
Tensors = dict[str, torch.Tensor]  # by name: weights, their gradients, activations


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


def stream_points(n_blocks: int) -> list[str]:
    """The hook points of the residual stream ``x_0 .. x_L`` (stacks and encoders):
    block 0's input, then every block's output."""
    return ["blocks.0.resid_pre", *(f"blocks.{i}.resid_post" for i in range(n_blocks))]


def _cpu(t: torch.Tensor) -> torch.Tensor:
    return t.detach().to("cpu", copy=True)


@contextlib.contextmanager
def tap(
    model: nn.Module,
    names: Iterable[str] | None = None,
    *,
    live: bool = False,
    grads: dict[str, torch.Tensor] | None = None,
    patch: Mapping[str, Patch] | None = None,
    grad_scales: dict[str, float] | None = None,
) -> Iterator[dict[str, torch.Tensor]]:
    """Within the ``with`` block, every forward pass of ``model`` writes its hook
    points' outputs into the yielded dict (by public name; ``names`` restricts
    them): detached CPU copies, or the live tensors with ``live=True``. Given a
    ``grads`` dict, each recorded output that requires grad also gets a tensor
    hook that writes ``dL/d(output)`` there (a detached CPU copy) when a backward
    pass reaches it. ``patch`` replaces the output at the points it names: by a
    tensor (e.g. a chosen input stream at ``blocks.0.resid_pre``), or by the name of
    a hook point that runs earlier in the same forward pass, whose output is passed
    on instead (:func:`delete_block`: ``blocks.{i}.resid_post`` <- ``blocks.{i}.resid_pre``).
    Given a ``grad_scales`` dict too, each such gradient is passed on divided by its
    norm, which is written there (see :func:`capture_grads`'s ``unit_grads``).
    Every hook is removed on leaving the block, even on error."""
    patch = dict(patch or {})
    sources = {v for v in patch.values() if isinstance(v, str)}
    kept = set(names) if names is not None else None
    hooked = kept | set(patch) | sources if kept is not None else None
    store: dict[str, torch.Tensor] = {}
    seen: dict[str, torch.Tensor] = {}  # the live outputs that patches pass on
    handles: list[torch.utils.hooks.RemovableHandle] = []

    def replaced(key: str, out: torch.Tensor) -> torch.Tensor:
        new = patch.get(key, out)
        if not isinstance(new, str):
            return new
        if new not in seen:
            raise ValueError(
                f"patch {key!r} <- {new!r}: {new!r} has not run before {key!r} in this "
                "forward pass (is it a hook point of this model, earlier in the pass?)."
            )
        return seen[new]

    def on_grad(key: str) -> Callable[[torch.Tensor], torch.Tensor | None]:
        def hook(g: torch.Tensor) -> torch.Tensor | None:
            assert grads is not None
            grads[key] = _cpu(g)
            if grad_scales is None:
                return None
            n = float(g.norm())
            grad_scales[key] = n
            return g / n if 0 < n < math.inf else None

        return hook

    def on_forward(key: str) -> Callable[[nn.Module, Args, torch.Tensor], torch.Tensor]:
        def hook(_module: nn.Module, _args: Args, out: torch.Tensor) -> torch.Tensor:
            out = replaced(key, out)
            if key in sources:
                seen[key] = out
            if kept is None or key in kept:
                store[key] = out if live else _cpu(out)
                if grads is not None and out.requires_grad:
                    handles.append(out.register_hook(on_grad(key)))
            return out

        return hook

    try:
        for path, module in model.named_modules():
            if isinstance(module, HookPoint):
                key = _public_name(path)
                if hooked is None or key in hooked:
                    handles.append(module.register_forward_hook(on_forward(key)))
        yield store
    finally:
        for h in handles:
            h.remove()
        seen.clear()


def delete_block(block: int) -> dict[str, str]:
    """The ``patch`` that deletes ``block`` (counted from 1, so module ``blocks.{block - 1}``)
    of a stack or an encoder: its output ``resid_post`` is replaced by its input
    ``resid_pre``, so ``x_l = x_{l-1}`` (Veit et al. 2016). Only a block whose input
    and output widths match can be deleted this way."""
    if isinstance(block, bool) or not isinstance(block, int) or block < 1:
        raise ValueError(f"block={block!r}: blocks are counted from 1.")
    i = block - 1
    return {f"blocks.{i}.resid_post": f"blocks.{i}.resid_pre"}


def _as_args(inputs: torch.Tensor | tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
    return inputs if isinstance(inputs, tuple) else (inputs,)


def capture(
    model: nn.Module,
    inputs: torch.Tensor | tuple[torch.Tensor, ...],
    names: Iterable[str] | None = None,
    grad: bool = False,
    patch: Mapping[str, Patch] | None = None,
) -> dict[str, torch.Tensor]:
    """Run ``model(inputs)`` and return the activations at its hook points.

    Keys are module paths such as ``blocks.2.resid_post`` or
    ``blocks.0.attn_pattern`` (``[batch, heads, query, key]``); values are
    detached CPU tensors. ``names`` restricts what is kept; the forward pass
    runs without autograd unless ``grad=True`` (for gradients at the hook
    points, see :func:`capture_grads`). ``patch`` replaces the output at the hook
    points it names (see :func:`tap`). The output is under ``"output"``.
    """
    with tap(model, names, patch=patch) as store, torch.set_grad_enabled(grad):
        out = model(*_as_args(inputs))
    store["output"] = _cpu(out)
    return store


@dataclass
class GradCapture:
    """What :func:`capture_grads` records: ``acts`` (hook outputs, as
    :func:`capture`), ``grads`` (``dL/d(hook output)`` at the same names, for the
    outputs that depend on the input or a parameter), ``param_grad_norms``
    (``||dL/dp||`` for the parameters asked for, by name) and ``loss``."""

    acts: dict[str, torch.Tensor]
    grads: dict[str, torch.Tensor]
    loss: float
    param_grad_norms: dict[str, float] = field(default_factory=dict)
    # With ``unit_grads=True``: the norm of the gradient each point received, before
    # it passed the gradient on divided by it (see :func:`capture_grads`).
    grad_scales: dict[str, float] = field(default_factory=dict)


def capture_grads(
    model: nn.Module,
    inputs: torch.Tensor | tuple[torch.Tensor, ...],
    loss_fn: Callable[[torch.Tensor], torch.Tensor],
    names: Iterable[str] | None = None,
    params: Iterable[str] = (),
    patch: Mapping[str, Patch] | None = None,
    unit_grads: bool = False,
) -> GradCapture:
    """One forward and backward pass of ``loss_fn(model(inputs))``, observed at the
    hook points: activations and ``dL/d(hook output)``, detached on the CPU.

    Floating-point inputs are made to require grad, so a hook point that passes
    the input on (``blocks.0.resid_pre``) gets ``dL/dx_0``. Parameter gradients
    are never kept: each is measured as the backward pass accumulates it (its
    norm, for the names in ``params``) and dropped at once, so the pass holds at
    most one weight gradient at a time, not a second copy of the model. Each
    parameter's ``.grad`` is as it was before the call; every hook is removed,
    even on error.

    ``unit_grads=True`` keeps the pass in range however small the gradient gets (a
    deep plain stack's reaches 1e-420, under float64's smallest number): at each
    recorded point the gradient, once complete, is passed on divided by its norm,
    which goes into ``grad_scales``. Everything recorded before the input is then
    scaled down by the product of the ``grad_scales`` of the points between it and
    the loss: with the points on one chain (a stack's stream), the true
    ``log ||dL/dx_l||`` is the sum of ``log grad_scales`` from ``x_l`` to the output,
    and a parameter's true gradient norm is its measured one times the product of
    the scales of the points after it (:func:`resviz.layer_gradients` does this).
    """
    args = tuple(
        a.detach().requires_grad_(True) if a.is_floating_point() else a for a in _as_args(inputs)
    )
    wanted = set(params)
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    saved = {n: p.grad for n, p in named}
    norms: dict[str, float] = {n: math.nan for n in wanted}
    handles = []

    def measure_and_drop(name: str) -> Callable[[torch.Tensor], None]:
        def hook(p: torch.Tensor) -> None:
            if name in wanted and p.grad is not None:
                norms[name] = float(p.grad.norm())
            p.grad = None

        return hook

    grads: dict[str, torch.Tensor] = {}
    scales: dict[str, float] | None = {} if unit_grads else None
    try:
        for n, p in named:
            p.grad = None
            handles.append(p.register_post_accumulate_grad_hook(measure_and_drop(n)))
        with (
            tap(model, names, grads=grads, patch=patch, grad_scales=scales) as acts,
            torch.enable_grad(),
        ):
            loss = loss_fn(model(*args))
            loss.backward()  # inside: leaving the block removes the tensor hooks
    finally:
        for h in handles:
            h.remove()
        for n, p in named:
            p.grad = saved[n]
    return GradCapture(
        acts=acts,
        grads=grads,
        loss=float(loss.detach()),
        param_grad_norms=norms,
        grad_scales=scales or {},
    )


@dataclass(frozen=True)
class SeedsGradNorms:
    """What :func:`capture_grad_norms_over_states` measures, one value per state
    (seed) in each tensor: at each hook point the mean over the batch of the output's
    norm over its last axis (``act_norms``) and ``||dL/d(output)||`` over the whole
    batch (``grad_norms``), and each named parameter's ``||dL/dW||``."""

    act_norms: dict[str, torch.Tensor]
    grad_norms: dict[str, torch.Tensor]
    param_grad_norms: dict[str, torch.Tensor]


def capture_grad_norms_over_states(
    model: nn.Module,
    states: Sequence[Mapping[str, torch.Tensor]],
    inputs: torch.Tensor,
    targets: torch.Tensor,
    loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    names: Iterable[str],
    params: Iterable[str] = (),
) -> SeedsGradNorms:
    """:func:`capture_grads`'s norms for several copies of one architecture at once:
    ``states[i]`` (a state dict) runs on ``inputs[i]`` against ``targets[i]``, all in
    one pass vectorised over the copies (``torch.func.vmap`` of ``grad`` through
    ``functional_call``). The hook points are observed by forward hooks, as
    :func:`tap` does; each adds a zero whose gradient is ``dL/d(output)``. ``model``
    gives the architecture only (its own tensors are not used or changed); batch
    statistics (BatchNorm in training mode) are not supported."""
    from torch.func import functional_call, grad, vmap

    names, wanted = list(names), list(params)
    stacked = {k: torch.stack([st[k] for st in states]) for k in states[0]}
    weights = {k: stacked.pop(k) for k in wanted}
    modules = dict(model.named_modules())
    shapes: dict[str, torch.Size] = {}
    with capture_shapes(model, names, shapes), torch.no_grad():
        functional_call(model, {k: v[0] for k, v in {**stacked, **weights}.items()}, (inputs[0],))
    live: dict[str, Any] = {}

    def add_zero(name: str) -> Callable[..., torch.Tensor]:
        def hook(_m: nn.Module, _a: Args, out: torch.Tensor) -> torch.Tensor:
            out = out + live["zeros"][name]
            live["acts"][name] = out.norm(dim=-1).mean()
            return out

        return hook

    def loss(
        w: Tensors, zeros: Tensors, rest: Tensors, x: torch.Tensor, y: torch.Tensor
    ) -> tuple[torch.Tensor, Tensors]:
        live["zeros"], live["acts"] = zeros, {}
        out = functional_call(model, {**rest, **w}, (x,))
        return loss_fn(out, y), dict(live["acts"])

    def one(
        w: Tensors, rest: Tensors, x: torch.Tensor, y: torch.Tensor
    ) -> tuple[Tensors, Tensors, Tensors]:
        zeros = {n: torch.zeros(shapes[n], dtype=x.dtype, device=x.device) for n in names}
        (gw, gz), acts = grad(loss, argnums=(0, 1), has_aux=True)(w, zeros, rest, x, y)
        return {k: v.norm() for k, v in gw.items()}, {k: v.norm() for k, v in gz.items()}, acts

    handles = [modules[n].register_forward_hook(add_zero(n)) for n in names]
    try:
        gw, gz, acts = vmap(one)(weights, stacked, inputs, targets)
    finally:
        for h in handles:
            h.remove()
        live.clear()
    return SeedsGradNorms(acts, gz, gw)


@contextlib.contextmanager
def capture_shapes(
    model: nn.Module, names: Iterable[str], into: dict[str, torch.Size]
) -> Iterator[dict[str, torch.Size]]:
    """Within the block, record the output shape of each named hook point."""
    modules = dict(model.named_modules())

    def hook(name: str) -> Callable[..., None]:
        return lambda _m, _a, out: into.__setitem__(name, out.shape)

    handles = [modules[n].register_forward_hook(hook(n)) for n in names]
    try:
        yield into
    finally:
        for h in handles:
            h.remove()


__all__ = [
    "GradCapture",
    "HookPoint",
    "SeedsGradNorms",
    "capture_grad_norms_over_states",
    "capture_shapes",
    "Patch",
    "capture",
    "capture_grads",
    "delete_block",
    "hook_names",
    "stream_points",
    "tap",
]
