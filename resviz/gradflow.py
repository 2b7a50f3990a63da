"""Gradient flow through deep stacks: where gradients vanish and why shortcuts stop it.

Backpropagating through ``x_{l+1} = x_l + f(x_l)`` multiplies the gradient by
``I + J_l`` (``J_l = df/dx_l``) instead of ``J_l``, so

    dL/dx_0 = dL/dx_L  prod_l (I + J_l)

keeps an identity term however small the ``J_l`` are (the seed derivation
dL/dx1 = dL/dx2 (1 + d layer(x1)/dx1)). With He et al. 2016's (Identity
Mappings in Deep Residual Networks, section 3) scaled shortcut
``x_{l+1} = s x_l + f(x_l)`` that term becomes ``s^L``: it vanishes for ``s < 1``
and explodes for ``s > 1``. Balduzzi et al. 2017 (The Shattered Gradients
Problem) add a second failure: in deep plain nets with batch normalization the
gradient with respect to the input looks like white noise, while residual nets
keep it correlated between neighbouring inputs.

Every function here is pure: configs and seeds in, tidy DataFrames out. Data come
from seeded ``torch.Generator``s, models from :func:`resviz.build`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch
from torch import nn
from torch.nn import functional as F

from .config import StackConfig
from .data import make_batch, teacher_batch
from .hooks import GradCapture, capture, capture_grads, stream_points, tap
from .models import Stack, build
from .train import Trainer

Progress = Callable[[object, int, int], None]


def _device(device: torch.device | str | None) -> torch.device:
    return torch.device(device or "cpu")


def _first_weight(block: nn.Module) -> torch.Tensor:
    return block.fc.weight if block.block == "linear" else block.fc1.weight


def _first_weight_name(model: Stack, i: int) -> str:
    return f"blocks.{i}.{'fc' if model.blocks[i].block == 'linear' else 'fc1'}.weight"


def _stream_capture(model: Stack, x: torch.Tensor, y: torch.Tensor) -> GradCapture:
    """One MSE backward pass observed on the stream: ``x_l`` and ``dL/dx_l`` for
    ``l = 0..L`` and every block's first-weight gradient norm, each weight gradient
    dropped as soon as it is measured (:func:`resviz.capture_grads`)."""
    n = len(model.blocks)
    return capture_grads(
        model,
        x,
        lambda out: F.mse_loss(out, y),
        names=stream_points(n),
        params=[_first_weight_name(model, i) for i in range(n)],
    )


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
    batch from ``seed``. One row per stream position ``l = 0..L`` (``x_0`` is
    the input, ``x_L`` the output): ``layer``, ``act_grad`` (``||dL/dx_l||``
    over the batch), ``gain`` (``act_grad / act_grad[L]``),
    ``stream_norm`` (mean per-sample ``||x_l||``) and, for ``l < L``, block
    ``l``'s first weight gradient ``weight_grad`` (``||dL/dW||``; NaN at ``l = L``,
    which has no block). Layers are counted from the input, so block ``l`` reads
    ``x_l`` and writes ``x_{l+1}``. Everything comes from one pass observed at
    the hook points (:func:`resviz.capture_grads`), which holds at most one
    weight gradient at a time.
    """
    dev = _device(device)
    model = build(cfg, dev)
    model.train()
    gen = torch.Generator().manual_seed(seed)
    x, y = make_batch(cfg, batch_size, 1, gen)
    cap = _stream_capture(model, x.to(dev), y.to(dev))
    points = stream_points(cfg.n_blocks)
    act = [float(cap.grads[k].norm()) for k in points]
    norms = [float(cap.acts[k].norm(dim=-1).mean()) for k in points]
    weight = [cap.param_grad_norms[_first_weight_name(model, i)] for i in range(cfg.n_blocks)]
    last = act[-1]
    return pd.DataFrame(
        {
            "layer": range(len(act)),
            "act_grad": act,
            "gain": [a / last if last > 0 else math.nan for a in act],
            "weight_grad": [*weight, math.nan],
            "stream_norm": norms,
        }
    )


def identity_ratio(
    cfg: StackConfig, seed: int = 0, batch_size: int = 32, device: torch.device | str | None = None
) -> pd.DataFrame:
    """The measured gain ``||dL/dx_l|| / ||dL/dx_L||`` beside the identity term's ``s^(L-l)``.

    ``s`` is ``cfg.identity_scale`` for ``residual="add"`` (``s x + f(x)``), 1 for
    ``"scaled"`` and 0 for plain stacks. With near-zero branches (``init="small"``)
    the product ``prod (s I + J)`` is ``s^(L-l)`` up to the branches' size, which is
    what the tests pin. Columns: ``layer``, ``blocks_above`` (``L - l``),
    ``measured``, ``identity_term``, ``rel_error`` (``measured / identity_term - 1``).
    """
    df = layer_gradients(cfg, seed, batch_size, device)
    s = {"add": cfg.identity_scale, "scaled": 1.0}.get(cfg.residual, 0.0)
    L = cfg.n_blocks
    out = pd.DataFrame({"layer": df["layer"], "blocks_above": L - df["layer"]})
    out["measured"] = df["gain"]
    # s ** k in float64: 0.5 ** 30 is 9.3e-10, far inside float64's range.
    out["identity_term"] = [float(s) ** int(k) for k in out["blocks_above"]]
    with np.errstate(divide="ignore", invalid="ignore"):
        out["rel_error"] = out["measured"] / out["identity_term"] - 1.0
    return out


def block_jacobian(
    cfg: StackConfig,
    layer: int = 0,
    seed: int = 0,
    batch_size: int = 32,
    sample: int = 0,
    device: torch.device | str | None = None,
) -> pd.DataFrame:
    """Singular values of one block's Jacobians at init: the block ``dx_{l+1}/dx_l``
    and its branch ``J = df/dx_l``.

    The block's input ``x_l`` comes from running a Gaussian batch through blocks
    ``0..l-1``; the Jacobian is taken for one ``sample`` of that batch with the
    others held fixed (batch norm couples the samples through the batch
    statistics). For ``y = s x + f(x)`` the block Jacobian is ``s I + J``.

    One row per singular value: ``matrix`` (``"block"`` or ``"branch J"``),
    ``index`` (0 = largest) and ``sigma``. ``attrs`` holds the spectral norms
    ``block_norm`` and ``branch_norm``.
    """
    if not 0 <= layer < cfg.n_blocks:
        raise ValueError(f"layer={layer} is out of range: choose 0 to {cfg.n_blocks - 1}.")
    if not 0 <= sample < batch_size:
        raise ValueError(f"sample={sample} is out of range: choose 0 to {batch_size - 1}.")
    dev = _device(device)
    model = build(cfg, dev)
    model.train()
    gen = torch.Generator().manual_seed(seed)
    x, _ = make_batch(cfg, batch_size, 1, gen)
    key = f"blocks.{layer}.resid_pre"
    h = capture(model, x.to(dev), [key])[key].to(dev)  # x_l, the block's input
    block = model.blocks[layer]
    # Only this block is needed from here on: free the others' weights (all of a
    # 100 x 512 stack's are 105 MB) before the Jacobian's own working memory.
    del model

    def run(v: torch.Tensor, which: str, live: dict[str, torch.Tensor]) -> torch.Tensor:
        batch = torch.cat([h[:sample], v[None], h[sample + 1 :]])
        out = block(batch)
        return (out if which == "block" else live["branch_out"])[sample]

    # One backward per row, not vmap: vmap's batched rows hold [width, batch, width]
    # intermediates (about 70 MB more at width 512) and, at one torch thread per
    # caller (the server's policy), were slower too: 2.6 s against 1.4 s at width 512.
    with tap(block, ["branch_out"], live=True) as live:
        jac = {
            "block": torch.autograd.functional.jacobian(
                lambda v: run(v, "block", live), h[sample], vectorize=False
            ),
            "branch J": torch.autograd.functional.jacobian(
                lambda v: run(v, "branch", live), h[sample], vectorize=False
            ),
        }
    rows = []
    norms = {}
    for name, m in jac.items():
        sv = torch.linalg.svdvals(m.detach().double().cpu()).numpy()
        norms[name] = float(sv[0])
        rows += [{"matrix": name, "index": i, "sigma": float(v)} for i, v in enumerate(sv)]
    out = pd.DataFrame(rows)
    out.attrs["block_norm"] = norms["block"]
    out.attrs["branch_norm"] = norms["branch J"]
    return out


DEFAULT_DEPTHS: tuple[int, ...] = (1, 2, 3, 5, 8, 12, 16, 24, 32, 48, 64, 80, 100)


def depth_sweep(
    base: StackConfig,
    depths: Sequence[int] = DEFAULT_DEPTHS,
    activations: Sequence[str] = ("tanh", "sigmoid", "relu", "gelu"),
    residuals: Sequence[str] = ("none", "add"),
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
    (``input_grad / output_grad``). Float32 gradients that underflow are exactly 0
    (plain sigmoid stacks reach that within 100 layers); they are kept as 0.

    ``callback(frame_so_far, done, total)`` is called after each run and
    ``should_stop()`` checked; a stopped sweep returns what it has with
    ``attrs["stopped"] = True``.
    """
    combos = [(a, r, d) for a in activations for r in residuals for d in depths]
    rows: list[dict[str, object]] = []
    stopped = False
    for i, (act, res, depth) in enumerate(combos):
        cfg = dataclasses.replace(base, activation=act, residual=res, depth=depth, widths=None)
        df = layer_gradients(cfg, seed, batch_size, device)
        rows.append(
            {
                "activation": act,
                "residual": res,
                "depth": depth,
                "first_weight_grad": float(df["weight_grad"].iloc[0]),
                "input_grad": float(df["act_grad"].iloc[0]),
                "output_grad": float(df["act_grad"].iloc[-1]),
                "gain": float(df["gain"].iloc[0]),
            }
        )
        if callback is not None:
            callback(pd.DataFrame(rows), i + 1, len(combos))
        if should_stop is not None and i < len(combos) - 1 and should_stop():
            stopped = True
            break
    out = pd.DataFrame(rows)
    out.attrs["stopped"] = stopped
    return out


# ----------------------------------------------------------------------- training


@dataclass
class GradTrace:
    """What :func:`train_layer_grads` records.

    ``loss``: one row per (``variant``, ``step``) with ``loss``, ``grad_norm`` (all
    parameters), ``diverged`` and ``divergence`` (the reason, on the diverged step).
    ``layers``: one row per (``variant``, ``step``, ``layer``) with ``grad_norm`` of
    that block's parameters before the update (``layer`` counts blocks from 0,
    ``block`` from 1, as the pages do). ``attrs``: ``stopped``, ``diverged``
    (variant -> step) and ``divergence`` (variant -> :class:`resviz.Divergence`).
    """

    loss: pd.DataFrame
    layers: pd.DataFrame
    steps: int
    attrs: dict[str, object] = field(default_factory=dict)

    def heatmap(self, variant: str) -> np.ndarray:
        """``[n_layers, steps]`` matrix of ``log10`` gradient norms (NaN where not run;
        ``-inf`` where a norm is exactly 0)."""
        d = self.layers[self.layers["variant"] == variant]
        n_layers = int(d["layer"].max()) + 1 if len(d) else 0
        m = np.full((n_layers, self.steps), np.nan)
        with np.errstate(divide="ignore", invalid="ignore"):
            m[d["layer"].to_numpy(), d["step"].to_numpy()] = np.log10(d["grad_norm"].to_numpy())
        return m

    def heatmaps(self) -> Heatmaps:
        """Every variant's :meth:`heatmap` on one colour scale, ready to draw: exact
        zeros (``-inf``) are set to the scale's lowest value and counted."""
        mats = {v: self.heatmap(v) for v in self.loss["variant"].unique()}
        finite = np.concatenate([m[np.isfinite(m)] for m in mats.values()] or [np.empty(0)])
        lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (-1.0, 0.0)
        hi = hi if hi > lo else lo + 1.0
        zeros = sum(int(np.isneginf(m).sum()) for m in mats.values())
        shown = {v: np.where(np.isneginf(m), lo, m) for v, m in mats.items()}
        return Heatmaps(shown, lo, hi, zeros)


@dataclass(frozen=True)
class Heatmaps:
    """:meth:`GradTrace.heatmaps`: ``matrices`` (variant -> ``[n_layers, steps]`` log10
    gradient norms, NaN where not run), their shared scale ``vmin`` to ``vmax``, and
    how many cells were exactly 0 (``zeros``, drawn at ``vmin``)."""

    matrices: dict[str, np.ndarray]
    vmin: float
    vmax: float
    zeros: int


def train_layer_grads(
    variants: Mapping[str, StackConfig],
    steps: int = 200,
    seed: int = 0,
    lr: float = 1e-3,
    batch_size: int = 64,
    device: torch.device | str | None = None,
    callback: Callable[[GradTrace, int, int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    sync_every: int = 10,
) -> GradTrace:
    """Train stacks with Adam from the same seed on the same batches, recording every
    block's gradient norm at every step (the layer x step heatmap).

    All variants must share input and output widths. Each is built with its seed
    replaced by ``seed``; batch ``t`` is identical for every variant: Gaussian
    inputs and the outputs of a fixed random teacher (:func:`teacher_batch`). A
    variant that diverges (:func:`resviz.first_divergence`: loss or gradient
    NaN/Inf, or loss above ``DIVERGENCE_FACTOR`` times its step-0 loss) stops at
    that step, which is marked ``diverged``. Every ``sync_every`` steps
    ``callback(trace_so_far, step, steps)`` runs and ``should_stop()`` is checked.
    The loop is :class:`resviz.train.Trainer`'s with ``blocks=True``.
    """
    if not variants:
        raise ValueError("train_layer_grads needs at least one variant.")
    in_dims = {c.in_dim for c in variants.values()}
    out_dims = {c.out_dim or c.out_width for c in variants.values()}
    if len(in_dims) > 1 or len(out_dims) > 1:
        raise ValueError("every variant needs the same input and output width.")
    in_dim, out_dim = in_dims.pop(), out_dims.pop()

    def trace(run: Trainer) -> GradTrace:
        loss = run.frame(("variant", "step", "loss", "grad_norm", "diverged", "divergence"))
        return GradTrace(loss, run.block_frame(), steps, run.attrs)

    def progress(run: Trainer, done: int) -> None:
        if callback is not None:
            callback(trace(run), done, steps)

    run = Trainer(
        variants,
        steps,
        seed=seed,
        lr=lr,
        device=device,
        sync_every=sync_every,
        blocks=True,
        progress=progress,
        should_stop=should_stop,
    )
    teacher_gen = torch.Generator().manual_seed(seed + 1)
    teacher = torch.randn(in_dim, in_dim + out_dim, generator=teacher_gen) / math.sqrt(in_dim)
    gen = torch.Generator().manual_seed(seed)
    for _ in run:
        x, y = teacher_batch(in_dim, out_dim, batch_size, gen, teacher)
        x, y = x.to(run.device), y.to(run.device)
        for name, model in run.active():
            run.update(name, F.mse_loss(model(x), y))
    return trace(run)


# ------------------------------------------------------- the page's frames, ready to chart
# The gradient-flow page and the notebooks it exports both call these, so what a
# notebook draws cannot drift from what the page draws.

PLAIN, RESIDUAL = "plain: f(x)", "residual: x + f(x)"


def plain_and_residual(base: StackConfig) -> dict[str, StackConfig]:
    """The two stacks the page compares: ``base`` without a shortcut and with one
    (``base``'s own ``residual``, ``"add"`` by default), labelled :data:`PLAIN` and
    :data:`RESIDUAL`."""
    return {PLAIN: dataclasses.replace(base, residual="none"), RESIDUAL: base}


def scaled_label(scale: float) -> str:
    """The label of the stack ``scale·x + f(x)``."""
    return f"scaled: {scale:g}·x + f(x)"


def training_variants(base: StackConfig, scale: float | None = None) -> dict[str, StackConfig]:
    """The stacks trained side by side: plain and residual, and ``scale·x + f(x)``
    when ``scale`` is given."""
    out = plain_and_residual(base)
    if scale is not None:
        out[scaled_label(scale)] = dataclasses.replace(base, identity_scale=scale)
    return out


def _stacked(frames: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    return pd.concat([df.assign(variant=name) for name, df in frames.items()], ignore_index=True)


def weight_gradient_frame(per_layer: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Each stack's first-weight gradient per block, from :func:`layer_gradients` frames
    by label: ``variant``, ``layer`` (block, 1 = input side), ``param`` (its name in
    the model) and ``grad_norm``."""
    out = _stacked({name: df.iloc[:-1] for name, df in per_layer.items()})
    out["param"] = "blocks." + out["layer"].astype(str) + ".fc.weight"
    out["layer"] = out["layer"] + 1
    out = out.rename(columns={"weight_grad": "grad_norm"})
    return out[["variant", "layer", "param", "grad_norm"]]


def stream_gradient_frame(per_layer: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Each stack's stream gradient per position, from :func:`layer_gradients` frames by
    label: ``variant``, ``layer`` (``l``, 0 = input), ``act_grad`` (``||dL/dx_l||``),
    ``gain`` and ``stream_norm``."""
    return _stacked(per_layer)[["variant", "layer", "act_grad", "gain", "stream_norm"]]


def jacobian_norms(
    spectra: Mapping[str, pd.DataFrame], per_layer: Mapping[str, pd.DataFrame]
) -> pd.DataFrame:
    """One row per stack: the spectral norms (largest singular values) of the branch
    Jacobian ``J`` and of the block Jacobian, from :func:`block_jacobian` frames by
    label, beside the whole stack's gain ``||dL/dx_0|| / ||dL/dx_L||`` from its
    :func:`layer_gradients` frame."""
    rows = []
    for name, sv in spectra.items():
        top = sv.groupby("matrix")["sigma"].max()
        rows.append(
            {
                "variant": name,
                "||J|| (branch)": float(top["branch J"]),
                "||block Jacobian||": float(top["block"]),
                "||dL/dx_0|| / ||dL/dx_L||": float(per_layer[name]["gain"].iloc[0]),
            }
        )
    return pd.DataFrame(rows)


def jacobian_spectrum(
    spectra: Mapping[str, pd.DataFrame], without_shortcut: Sequence[str] = (PLAIN,)
) -> pd.DataFrame:
    """Every singular value, from :func:`block_jacobian` frames by label, one curve each:
    ``variant``, ``matrix``, ``index``, ``sigma`` and ``curve`` (the label up to its
    colon and the matrix: ``"plain, branch J"``, ``"residual, I + J"``). A stack
    named in ``without_shortcut`` has one curve: its block Jacobian is its branch's."""
    out = _stacked(spectra)
    plain = out["variant"].isin(list(without_shortcut)) & (out["matrix"] == "block")
    out = out[~plain].reset_index(drop=True)
    kind = out["variant"].str.split(":").str[0]
    out["curve"] = kind + ", " + out["matrix"]
    out.loc[out["matrix"] == "block", "curve"] = kind + ", I + J"
    return out[["variant", "matrix", "index", "sigma", "curve"]]


def identity_ratio_long(ratio: pd.DataFrame) -> pd.DataFrame:
    """:func:`identity_ratio`'s measured gain and identity term as two curves:
    ``blocks_above``, ``ratio`` and ``curve``."""
    cols = {
        "measured": "measured ||dL/dx_l|| / ||dL/dx_L||",
        "identity_term": "identity term l^(L-l)",
    }
    return pd.concat(
        [
            ratio[["blocks_above", col]].rename(columns={col: "ratio"}).assign(curve=label)
            for col, label in cols.items()
        ],
        ignore_index=True,
    )


def with_variant(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with a ``variant`` column, ``"plain"`` or ``"residual"``, from its
    ``residual`` column (a sweep's or the shattered gradients')."""
    return df.assign(variant=np.where(df["residual"] == "none", "plain", "residual"))


# ------------------------------------------------------------- shattered gradients


def shattered_gradients(
    residual: str = "none",
    depth: int = 24,
    width: int = 128,
    activation: str = "relu",
    norm: str = "batch",
    n_points: int = 256,
    lo: float = -2.0,
    hi: float = 2.0,
    seed: int = 0,
    device: torch.device | str | None = None,
) -> pd.DataFrame:
    """``df/dx`` of a scalar network on a 1-D grid of inputs (Balduzzi et al. 2017).

    The network maps ``x`` (width 1) through a first block to ``width``, then
    ``depth`` blocks of width ``width`` (plain or with identity shortcuts, norm
    before the branch), then a linear head to one output. ``n_points`` inputs
    evenly spaced on ``[lo, hi]`` form one batch; batch norm's statistics are taken
    from that batch once and then frozen, so the network is a fixed function of
    ``x`` and ``df/dx`` is each point's own derivative. Columns: ``x``, ``grad``,
    ``output``.
    """
    if not 8 <= n_points <= 4096:
        raise ValueError(f"n_points={n_points} is out of range: choose 8 to 4096.")
    if not lo < hi:
        raise ValueError("the interval needs lo < hi.")
    cfg = StackConfig(
        widths=(1,) + (width,) * (depth + 1),
        activation=activation,  # type: ignore[arg-type]
        residual=residual,  # type: ignore[arg-type]
        norm=norm,  # type: ignore[arg-type]
        init="kaiming" if activation == "relu" else "default",
        out_dim=1,
        seed=seed,
    )
    dev = _device(device)
    model = build(cfg, dev)
    x = torch.linspace(lo, hi, n_points, device=dev)[:, None]
    for m in model.modules():
        if isinstance(m, nn.BatchNorm1d):
            m.momentum = None  # cumulative average: one pass sets the batch statistics
    model.train()
    with torch.no_grad():
        model(x)
    model.eval()
    xg = x.clone().requires_grad_(True)
    out = model(xg)
    (grad,) = torch.autograd.grad(out.sum(), xg)
    return pd.DataFrame(
        {
            "x": x[:, 0].cpu().numpy(),
            "grad": grad[:, 0].detach().cpu().numpy(),
            "output": out[:, 0].detach().cpu().numpy(),
        }
    )


def autocorrelation(values: Iterable[float], max_lag: int = 1) -> pd.DataFrame:
    """Pearson correlation between ``g[i]`` and ``g[i + k]`` for ``k = 0..max_lag``.

    A constant sequence has no defined correlation (NaN). Columns: ``lag``, ``corr``.
    """
    g = np.asarray(list(values), dtype=float)
    rows = []
    for k in range(max_lag + 1):
        a, b = (g, g) if k == 0 else (g[:-k], g[k:])
        if len(a) < 2 or not np.isfinite(a).all() or not np.isfinite(b).all():
            corr = math.nan
        else:
            sa, sb = a.std(), b.std()
            corr = (
                float(((a - a.mean()) * (b - b.mean())).mean() / (sa * sb))
                if sa * sb > 0
                else math.nan
            )
        rows.append({"lag": k, "corr": corr})
    return pd.DataFrame(rows)


def shattered_summary(
    depths: Sequence[int] = (2, 10, 50),
    residuals: Sequence[str] = ("none", "add"),
    width: int = 128,
    activation: str = "relu",
    norm: str = "batch",
    n_points: int = 256,
    seed: int = 0,
    max_lag: int = 16,
    device: torch.device | str | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`shattered_gradients` for every (residual, depth), and the autocorrelation
    of each gradient sequence.

    Returns ``(gradients, acf)``: ``gradients`` has ``residual, depth, x, grad,
    grad_scaled`` (``grad`` divided by its standard deviation, so depths share an
    axis); ``acf`` has ``residual, depth, lag, corr``.
    """
    grads, acfs = [], []
    for res in residuals:
        for d in depths:
            g = shattered_gradients(
                res, d, width, activation, norm, n_points, seed=seed, device=device
            )
            sd = float(g["grad"].std())
            g["grad_scaled"] = g["grad"] / sd if sd > 0 and math.isfinite(sd) else math.nan
            grads.append(g.assign(residual=res, depth=d))
            acfs.append(autocorrelation(g["grad"], max_lag).assign(residual=res, depth=d))
    gcols = ["residual", "depth", "x", "grad", "grad_scaled"]
    acols = ["residual", "depth", "lag", "corr"]
    return (
        pd.concat(grads, ignore_index=True)[gcols],
        pd.concat(acfs, ignore_index=True)[acols],
    )


def lag_table(acf: pd.DataFrame, lag: int = 1) -> pd.DataFrame:
    """The autocorrelation at ``lag`` per depth, a column per net:
    ``depth``, ``plain lag-1 autocorrelation``, ``residual lag-1 autocorrelation``."""
    return (
        with_variant(acf[acf["lag"] == lag])
        .pivot(index="depth", columns="variant", values="corr")
        .reset_index()
        .rename(columns={v: f"{v} lag-{lag} autocorrelation" for v in ("plain", "residual")})
        .rename_axis(columns=None)
    )


def acf_curves(acf: pd.DataFrame) -> pd.DataFrame:
    """:func:`shattered_summary`'s autocorrelations with ``variant`` and a ``curve``
    per net (``"plain, depth 50"``)."""
    out = with_variant(acf)
    out["curve"] = out["variant"] + ", depth " + out["depth"].astype(str)
    return out


__all__ = [
    "DEFAULT_DEPTHS",
    "PLAIN",
    "RESIDUAL",
    "GradTrace",
    "Heatmaps",
    "acf_curves",
    "autocorrelation",
    "block_jacobian",
    "depth_sweep",
    "identity_ratio",
    "identity_ratio_long",
    "jacobian_norms",
    "jacobian_spectrum",
    "lag_table",
    "layer_gradients",
    "plain_and_residual",
    "scaled_label",
    "stream_gradient_frame",
    "shattered_gradients",
    "shattered_summary",
    "teacher_batch",
    "train_layer_grads",
    "training_variants",
    "weight_gradient_frame",
    "with_variant",
]
