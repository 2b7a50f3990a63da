"""Gradient flow through deep stacks at init: where gradients vanish and why shortcuts stop it.

Backpropagating through ``x_{l+1} = x_l + f(x_l)`` multiplies the gradient by
``I + J_l`` (``J_l = df/dx_l``) instead of ``J_l``, so

    dL/dx_0 = dL/dx_L  prod_l (I + J_l)

keeps an identity term however small the ``J_l`` are (the seed derivation
dL/dx1 = dL/dx2 (1 + d layer(x1)/dx1)). With He et al. 2016's (Identity
Mappings in Deep Residual Networks, section 3) scaled shortcut
``x_{l+1} = s x_l + f(x_l)`` that term becomes ``s^L``: it vanishes for ``s < 1``
and explodes for ``s > 1``.

:func:`layer_gradients` reads ``dL/dx_l`` per position from the stream's hook points
(:func:`resviz.capture_grads`); :func:`identity_ratio` sets the measured gain beside
``s^(L - l)``; :func:`block_jacobian` gives the singular values of one block's ``J``
and ``I + J``; :func:`depth_sweep` repeats the measure from 1 to 100 blocks. The
frames at the end are what the gradient-flow page and its notebooks draw.

Every function here is pure: configs and seeds in, tidy DataFrames out. Data come
from seeded ``torch.Generator``s, models from :func:`resviz.build`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd
import torch
from torch import nn
from torch.nn import functional as F

from resviz.config import Activation, Residual, StackConfig
from resviz.data import make_batch
from resviz.hooks import GradCapture, capture_grads, stream_points
from resviz.models import Stack, StackBlock, build, make_activation

Progress = Callable[[object, int, int], None]


def _device(device: torch.device | str | None) -> torch.device:
    return torch.device(device or "cpu")


def _float64_device(device: torch.device | str | None) -> torch.device:
    """Where a float64 measurement runs: the device asked for, except Apple MPS,
    which has no float64 (the CPU then; these stacks are small)."""
    dev = _device(device)
    return torch.device("cpu") if dev.type == "mps" else dev


def _first_weight(block: StackBlock) -> torch.Tensor:
    return block.fc.weight if block.block == "linear" else block.fc1.weight


def _first_weight_name(model: Stack, i: int) -> str:
    return f"blocks.{i}.{'fc' if model.blocks[i].block == 'linear' else 'fc1'}.weight"


def _stream_capture(
    model: Stack, x: torch.Tensor, y: torch.Tensor, unit_grads: bool = False
) -> GradCapture:
    """One MSE backward pass observed on the stream: ``x_l`` and ``dL/dx_l`` for
    ``l = 0..L`` and every block's first-weight gradient norm, each weight gradient
    dropped as soon as it is measured (:func:`resviz.capture_grads`, which with
    ``unit_grads`` passes each ``dL/dx_l`` on at unit norm)."""
    n = len(model.blocks)
    return capture_grads(
        model,
        x,
        lambda out: F.mse_loss(out, y),
        names=stream_points(n),
        params=[_first_weight_name(model, i) for i in range(n)],
        unit_grads=unit_grads,
    )


def _log10(x: float) -> float:
    """``log10(x)``: ``-inf`` for 0, NaN for NaN or a negative."""
    if math.isnan(x) or x < 0:
        return math.nan
    return math.log10(x) if x > 0 else -math.inf


def _power(lg: float) -> float:
    """``10 ** lg`` as a float: 0 under float64's smallest normal number (2.2e-308;
    below it a float keeps too few digits to print, and the log10 column has it)."""
    if math.isnan(lg):
        return math.nan
    if lg < _LOG10_TINY:
        return 0.0
    return math.inf if lg > 308.5 else float(10.0**lg)


_LOG10_TINY = math.log10(np.finfo(np.float64).tiny)


def _backward_with_streams(
    model: Stack, x: torch.Tensor, y: torch.Tensor
) -> tuple[list[torch.Tensor], torch.Tensor, list[float]]:
    """The gradients ``dL/dx_l`` for ``l = 0..L``, the loss and each block's
    first-weight gradient norm ``||dL/dW||``, from :func:`_stream_capture`."""
    cap = _stream_capture(model, x, y)
    n = len(model.blocks)
    weight = [cap.param_grad_norms[_first_weight_name(model, i)] for i in range(n)]
    return [cap.grads[k] for k in stream_points(n)], torch.tensor(cap.loss), weight


def layer_gradients(
    cfg: StackConfig,
    seed: int = 0,
    batch_size: int = 32,
    device: torch.device | str | None = None,
) -> pd.DataFrame:
    """Per-layer gradient norms of a stack after one backward pass at init.

    The loss is the MSE to Gaussian targets of one Gaussian batch (as
    :func:`resviz.gradient_norms`); the weights come from ``cfg.seed``, the
    batch from ``seed``. One row per stream position ``l = 0..L``: ``block``
    (``l``; blocks count from 1 at the input side, block ``l`` writes ``x_l``,
    and ``x_0`` is the input), ``act_grad`` (``||dL/dx_l||`` over the batch),
    ``gain`` (``act_grad / act_grad[L]``), ``stream_norm`` (mean per-sample
    ``||x_l||``) and ``weight_grad``, block ``l``'s first weight gradient
    ``||dL/dW||`` (NaN at ``l = 0``, the input, which no block writes), and
    ``log10_act_grad``, ``log10_gain``, ``log10_weight_grad``: the same three in
    log10, which is what is measured.
    Everything comes from one pass observed at the hook points
    (:func:`resviz.capture_grads`), which holds at most one weight gradient at a
    time. Through a deep plain stack dL/dx_0 reaches 1e-26 (tanh, 100 blocks), under
    float32's smallest normal number, and 1e-420 (width 2 with a LayerNorm), under
    float64's: so the pass runs in float64 (the float32 weights cast exactly) and
    passes the gradient on at unit norm from every ``x_l``, its size kept in log
    space. The log10 columns are exact at any depth; ``act_grad``, ``gain`` and
    ``weight_grad`` are 0 only where a gradient is exactly 0 or under float64's
    smallest normal number (2.2e-308).
    """
    dev = _float64_device(device)
    return _measured(build(cfg, dev).to(torch.float64).train(), cfg, seed, batch_size, dev)


def _measured(
    model: Stack, cfg: StackConfig, seed: int, batch_size: int, dev: torch.device
) -> pd.DataFrame:
    """:func:`layer_gradients`'s frame for ``model``, ``cfg``'s float64 stack on ``dev``."""
    gen = torch.Generator().manual_seed(seed)
    x, y = make_batch(cfg, batch_size, 1, gen)
    cap = _stream_capture(
        model, x.to(dev, torch.float64), y.to(dev, torch.float64), unit_grads=True
    )
    points = stream_points(cfg.n_blocks)
    # ||dL/dx_l|| is the norm x_l received times the norms every later point divided
    # the gradient by: a running sum of log10s from the output back.
    received = [_log10(cap.grad_scales.get(k, float(cap.grads[k].norm()))) for k in points]
    log_act = list(np.cumsum(received[::-1])[::-1])
    log_weight = [
        _log10(cap.param_grad_norms[_first_weight_name(model, i)]) + log_act[i + 1]
        for i in range(cfg.n_blocks)
    ]
    norms = [float(cap.acts[k].norm(dim=-1).mean()) for k in points]
    return _layer_frame(log_act, log_weight, norms)


def _layer_frame(
    log_act: Sequence[float] | np.ndarray,
    log_weight: Sequence[float] | np.ndarray,
    norms: Sequence[float] | np.ndarray,
) -> pd.DataFrame:
    """:func:`layer_gradients`'s frame from the log10 stream gradients ``x_0..x_L``,
    the log10 first-weight gradients of blocks 1..L and the stream norms; given
    arrays with a leading seed axis, every seed's rows one after another."""
    act = np.atleast_2d(np.asarray(log_act, dtype=np.float64))
    weight = np.atleast_2d(np.asarray(log_weight, dtype=np.float64))
    n_seeds, n_points = act.shape
    weight = np.concatenate([np.full((n_seeds, 1), np.nan), weight], axis=1)
    with np.errstate(invalid="ignore"):
        gain = act - act[:, -1:]
    return pd.DataFrame(
        {
            "block": np.tile(np.arange(n_points), n_seeds),
            "act_grad": [_power(v) for v in act.ravel()],
            "gain": [_power(v) for v in gain.ravel()],
            "weight_grad": [_power(v) for v in weight.ravel()],
            "stream_norm": np.asarray(norms, dtype=np.float64).ravel(),
            "log10_act_grad": act.ravel(),
            "log10_gain": gain.ravel(),
            "log10_weight_grad": weight.ravel(),
        }
    )


def identity_ratio(
    cfg: StackConfig, seed: int = 0, batch_size: int = 32, device: torch.device | str | None = None
) -> pd.DataFrame:
    """The measured gain ``||dL/dx_l|| / ||dL/dx_L||`` beside the identity term's ``s^(L-l)``.

    ``s`` is ``cfg.identity_scale`` for ``residual="add"`` (``s x + f(x)``), 1 for
    ``"scaled"`` and 0 for plain stacks. With near-zero branches (``init="small"``)
    the product ``prod (s I + J)`` is ``s^(L-l)`` up to the branches' size, which is
    what the tests pin. Columns: ``block`` (``l``, as :func:`layer_gradients`),
    ``blocks_above`` (``L - l``), ``stream_norm`` (mean ``||x_l||``),
    ``measured``, ``identity_term``, their log10s ``log10_measured`` and
    ``log10_identity_term``, and ``rel_error`` (``measured / identity_term - 1``,
    from the log10s).
    """
    df = layer_gradients(cfg, seed, batch_size, device)
    s = {"add": cfg.identity_scale, "scaled": 1.0}.get(cfg.residual, 0.0)
    L = cfg.n_blocks
    out = pd.DataFrame({"block": df["block"], "blocks_above": L - df["block"]})
    out["stream_norm"] = df["stream_norm"]
    out["measured"] = df["gain"]
    # s ** k in float64: 0.05 ** 100 is 8e-131, inside float64's range; the log10s
    # are what the comparison uses (the measurement can be under float64's range).
    out["identity_term"] = [float(s) ** int(k) for k in out["blocks_above"]]
    out["log10_measured"] = df["log10_gain"]
    out["log10_identity_term"] = [
        int(k) * _log10(abs(float(s))) if k else 0.0 for k in out["blocks_above"]
    ]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out["rel_error"] = np.power(10.0, out["log10_measured"] - out["log10_identity_term"]) - 1
    return out


DEFAULT_DEPTHS: tuple[int, ...] = (1, 2, 3, 5, 8, 12, 16, 24, 32, 48, 64, 80, 100)


def depth_sweep(
    base: StackConfig,
    depths: Sequence[int] = DEFAULT_DEPTHS,
    activations: Sequence[Activation] = ("tanh", "sigmoid", "relu", "gelu"),
    residuals: Sequence[Residual] = ("none", "add"),
    seed: int = 0,
    batch_size: int = 32,
    device: torch.device | str | None = None,
    callback: Progress | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> pd.DataFrame:
    """Gradient reaching the first layer versus depth, per activation, plain versus residual.

    For every (activation, residual, depth) the stack ``base`` with those fields
    replaced runs :func:`layer_gradients`. Columns: ``activation``, ``residual``,
    ``depth``, ``first_weight_grad`` (``||dL/dW_1||``), ``input_grad``
    (``||dL/dx_0||``), ``output_grad`` (``||dL/dx_L||``) and ``gain``
    (``input_grad / output_grad``), all measured by :func:`layer_gradients` (a plain
    tanh stack of 100 blocks passes 1.5e-26 of its output gradient back, under
    float32's smallest normal number), and ``log10_first_weight_grad`` and
    ``log10_gain``, exact where the others are under float64's range.

    ``callback(frame_so_far, done, total)`` is called after each run and
    ``should_stop()`` checked; the runs go depth by depth, the shallowest first, so a
    stopped sweep returns every curve up to some depth, with ``attrs["stopped"] = True``.
    """
    combos = [(a, r, j) for a in activations for r in residuals for j in range(len(depths))]
    # Depth by depth: every activation and shortcut of a depth runs on one stack
    # (_restyled), one build per depth instead of one per point, about half the time.
    # The rows, and the frames the callback gets, keep the order of ``combos``.
    todo = sorted(range(len(combos)), key=lambda i: combos[i][2])
    dev = _float64_device(device)
    rows: dict[int, dict[str, object]] = {}
    stopped = False
    model, built_at = None, -1
    for done, i in enumerate(todo, 1):
        act, res, j = combos[i]
        cfg = dataclasses.replace(base, activation=act, residual=res, depth=depths[j], widths=None)
        if model is None or built_at != j or not _restyled(model, cfg):
            model, built_at = build(cfg, dev).to(torch.float64).train(), j
        df = _measured(model, cfg, seed, batch_size, dev)
        rows[i] = {
            "activation": act,
            "residual": res,
            "depth": depths[j],
            "first_weight_grad": float(df["weight_grad"].iloc[1]),
            "input_grad": float(df["act_grad"].iloc[0]),
            "output_grad": float(df["act_grad"].iloc[-1]),
            "gain": float(df["gain"].iloc[0]),
            "log10_first_weight_grad": float(df["log10_weight_grad"].iloc[1]),
            "log10_gain": float(df["log10_gain"].iloc[0]),
        }
        if callback is not None:
            callback(pd.DataFrame([rows[k] for k in sorted(rows)]), done, len(combos))
        if should_stop is not None and done < len(combos) and should_stop():
            stopped = True
            break
    out = pd.DataFrame([rows[k] for k in sorted(rows)])
    out.attrs["stopped"] = stopped
    return out


def _restyled(model: Stack, cfg: StackConfig) -> bool:
    """Make ``model`` ``cfg``'s stack in place where their configs differ at most in the
    activation and an identity shortcut or none (else False, ``model`` untouched): a
    stack of equal widths draws the same weights whatever those are, which hold none
    (tests/unit/gradients/test_layers.py checks the sweep against a build per point)."""
    was, plain = model.cfg, ("none", "add")
    same = dataclasses.replace(was, activation=cfg.activation, residual=cfg.residual) == cfg
    if not (same and cfg.widths is None and cfg.residual in plain and was.residual in plain):
        return False
    for block in model.blocks:
        assert isinstance(block, StackBlock)  # a Stack's blocks (ModuleList yields Module)
        if cfg.activation != was.activation:
            block.act = make_activation(cfg.activation)
        if cfg.residual != was.residual:
            block.residual = cfg.residual
            block.shortcut = nn.Identity() if cfg.residual == "add" else None
    model.cfg = cfg
    return True


# ------------------------------------------------------- the page's frames, ready to chart
# The gradient-flow page and the notebooks it exports both call these, so what a
# notebook draws cannot drift from what the page draws.

PLAIN, RESIDUAL = "plain: f(x)", "residual: x + f(x)"


def plain_and_residual(base: StackConfig) -> dict[str, StackConfig]:
    """The two stacks the page compares: ``base`` without a shortcut and with one
    (``base``'s own ``residual``, ``"add"`` by default), labelled :data:`PLAIN` and
    :data:`RESIDUAL`."""
    return {PLAIN: dataclasses.replace(base, residual="none"), RESIDUAL: base}


def _stacked(frames: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    return pd.concat([df.assign(variant=name) for name, df in frames.items()], ignore_index=True)


def _seed_first(df: pd.DataFrame, cols: list[str]) -> pd.DataFrame:
    """``df[cols]``, after its ``seed`` column where it has one (several seeds' rows)."""
    return df[["seed", *cols] if "seed" in df.columns else cols]


def weight_gradient_frame(per_layer: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Each stack's first-weight gradient per block, from :func:`layer_gradients` frames
    by label: ``variant``, ``block`` (1 = input side), ``param`` (its name in the
    model), ``grad_norm`` and ``log10_grad_norm`` (and ``seed``, first, where the
    frames hold several seeds' rows)."""
    out = _stacked({name: df[df["block"] > 0] for name, df in per_layer.items()})
    out["param"] = "blocks." + (out["block"] - 1).astype(str) + ".fc.weight"
    out = out.rename(columns={"weight_grad": "grad_norm", "log10_weight_grad": "log10_grad_norm"})
    return _seed_first(out, ["variant", "block", "param", "grad_norm", "log10_grad_norm"])


def stream_gradient_frame(per_layer: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Each stack's stream gradient per position, from :func:`layer_gradients` frames by
    label: ``variant``, ``block`` (``l``, 0 = the input), ``act_grad``
    (``||dL/dx_l||``), ``gain``, ``stream_norm``, ``log10_act_grad`` and ``log10_gain``
    (and ``seed``, first, where the frames hold several seeds' rows)."""
    cols = ["act_grad", "gain", "stream_norm", "log10_act_grad", "log10_gain"]
    return _seed_first(_stacked(per_layer), ["variant", "block", *cols])


def input_gain_frame(per_layer: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Each stack's ``||dL/dx_0|| / ||dL/dx_L||`` (``input_gain``, and its log10), from
    :func:`layer_gradients` frames by label (and ``seed``, first, where they hold
    several seeds' rows)."""
    out = _stacked({name: df[df["block"] == 0] for name, df in per_layer.items()})
    out = out.rename(columns={"gain": "input_gain", "log10_gain": "log10_input_gain"})
    return _seed_first(out, ["variant", "input_gain", "log10_input_gain"]).reset_index(drop=True)


def identity_ratio_long(ratio: pd.DataFrame) -> pd.DataFrame:
    """:func:`identity_ratio`'s measured gain and identity term as two curves:
    ``blocks_above``, ``ratio``, ``log10_ratio`` and ``curve``."""
    cols = {
        "measured": "measured ||dL/dx_l|| / ||dL/dx_L||",
        "identity_term": "identity term λ^(L-l)",
    }
    return pd.concat(
        [
            ratio[["blocks_above", col, f"log10_{col}"]]
            .rename(columns={col: "ratio", f"log10_{col}": "log10_ratio"})
            .assign(curve=label)
            for col, label in cols.items()
        ],
        ignore_index=True,
    )


def with_variant(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with a ``variant`` column, ``"plain"`` or ``"residual"``, from its
    ``residual`` column (a sweep's or the shattered gradients')."""
    return df.assign(variant=np.where(df["residual"] == "none", "plain", "residual"))


__all__ = [
    "DEFAULT_DEPTHS",
    "PLAIN",
    "RESIDUAL",
    "depth_sweep",
    "identity_ratio",
    "identity_ratio_long",
    "layer_gradients",
    "plain_and_residual",
    "input_gain_frame",
    "stream_gradient_frame",
    "weight_gradient_frame",
    "with_variant",
]
