"""Skip connections, measured: the block, its code, its paths, its training.

Behind the skip-connections page, usable from a notebook:

* :func:`shortcut_table` lists which blocks of a stack got a shortcut (identity,
  projection, concat or none), read off the built model, e.g. for the seed
  network with layer sizes 25, 25, 43, 43, 54, 54.
* :func:`generate_code` writes a self-contained PyTorch script (no resviz) for
  exactly one :class:`StackConfig`; seeded the same way, it builds the same
  weights as :func:`resviz.build`.
* :func:`path_lengths`: a stack of ``n`` residual blocks unrolls into ``2**n``
  paths whose lengths follow Binomial(n, 1/2) (Veit et al. 2016).
* :func:`layer_decomposition` splits each block's output into the identity
  part and the update, with their norms and the cosine between them.
* :func:`train_degradation` is the He et al. (2016, Fig. 1) experiment on a
  built-in spiral task: shallow and deep stacks, plain and with shortcuts, the
  same seed and batches; then :func:`lesion` deletes one block at a time from
  each trained model (Veit et al. 2016).
* :func:`train_lesion` is the lesion study on stacks that learned their task
  (:class:`LesionConfig`: a plain and a residual stack of one depth, on easier
  spirals), summarised by :func:`lesion_summary` and :func:`lesion_caption`.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

import pandas as pd
import torch
from torch import nn
from torch.nn import functional as F

from .config import (
    Activation,
    Init,
    Join,
    Residual,
    StackConfig,
    _check_float,
    _check_int,
)
from .data import spirals
from .divergence import Divergence, first_divergence
from .hooks import capture
from .models import Stack, StackBlock, build
from .train import Trainer

# ------------------------------------------------------------------ the block


def _meta_stack(cfg: StackConfig) -> Stack:
    with torch.device("meta"):
        return Stack(cfg)


def shortcut_kind(block: StackBlock) -> str:
    """``"identity"``, ``"projection"``, ``"concat"``, ``"concat + projection"`` or ``"none"``."""
    if block.residual == "concat":
        return "concat + projection" if block.concat_proj is not None else "concat"
    if block.shortcut is None:
        return "none"
    return "projection" if block.projected else "identity"


def shortcut_table(cfg: StackConfig) -> pd.DataFrame:
    """One row per block: which shortcut it got, read off the model ``cfg`` builds.

    Columns: ``block``, ``w_in``, ``w_out`` (nominal width of the branch output),
    ``out_width`` (what the next block receives), ``shortcut`` (see
    :func:`shortcut_kind`), ``shortcut_params`` and ``branch_params``.
    """
    model = _meta_stack(cfg)
    widths = cfg.layer_widths
    rows = []
    w = widths[0]
    for i, block in enumerate(model.blocks):
        sc = sum(p.numel() for p in block.shortcut.parameters()) if block.shortcut else 0
        if block.concat_proj is not None:
            sc += sum(p.numel() for p in block.concat_proj.parameters())
        linears = ("fc",) if cfg.block == "linear" else ("fc1", "fc2")
        br = sum(p.numel() for n in linears for p in getattr(block, n).parameters())
        rows.append(
            {
                "block": i,
                "w_in": w,
                "w_out": widths[i + 1],
                "out_width": block.out_width,
                "shortcut": shortcut_kind(block),
                "shortcut_params": sc,
                "branch_params": br,
            }
        )
        w = block.out_width
    return pd.DataFrame(rows)


_ACT_TEX = {
    "relu": r"\mathrm{ReLU}",
    "gelu": r"\mathrm{GELU}",
    "tanh": r"\tanh",
    "sigmoid": r"\sigma",
    "identity": "",
}


def block_formula(cfg: StackConfig) -> str:
    """The block as a LaTeX formula (``x`` in, ``y`` out), for a block whose
    shapes match (and, where widths differ, the projection ``P``)."""
    act = _ACT_TEX[cfg.activation]
    h = r"\mathrm{norm}(x)" if cfg.norm != "none" and cfg.norm_position == "pre" else "x"
    if cfg.block == "linear":
        pre = f"W {h} + b"
        f = f"{act}({pre})"
    else:
        pre = f"W_2\\,{act}(W_1 {h} + b_1) + b_2"
        f = pre
    s = "x" if cfg.identity_scale == 1 else f"{cfg.identity_scale:g}\\,x"
    if cfg.residual == "none":
        y = f
    elif cfg.join == "before_act" and cfg.residual == "scaled":
        a = r"\alpha" if cfg.alpha_learnable else f"{cfg.alpha:g}"
        y = f"{act}(x + {a}\\,({pre}))"
    elif cfg.join == "before_act":
        y = f"{act}({s} + {pre})"
    elif cfg.residual == "add":
        y = f"{s} + {f}"
    elif cfg.residual == "scaled":
        a = r"\alpha" if cfg.alpha_learnable else f"{cfg.alpha:g}"
        y = f"x + {a}\\,{f}"
    else:
        y = f"[\\,x,\\; {f}\\,]"
        if cfg.concat_project:
            y = f"P{y}"
    if cfg.norm != "none" and cfg.norm_position == "post":
        y = f"\\mathrm{{norm}}\\left({y}\\right)"
    return f"y = {y}"


# ------------------------------------------------------------------ the code

_ACT_CODE = {
    "relu": "nn.ReLU()",
    "gelu": "nn.GELU()",
    "tanh": "nn.Tanh()",
    "sigmoid": "nn.Sigmoid()",
    "identity": "nn.Identity()",
}
_NORM_CODE = {
    "layer": "nn.LayerNorm({dim})",
    "rms": "nn.RMSNorm({dim}, eps=1e-5)",
    "batch": "FeatureBatchNorm({dim})",
}


def _widths_literal(widths: tuple[int, ...]) -> str:
    if len(set(widths)) == 1:
        return f"[{widths[0]}] * {len(widths)}"
    return "[" + ", ".join(map(str, widths)) + "]"


def generate_code(cfg: StackConfig) -> str:
    """A self-contained PyTorch script for exactly ``cfg`` (needs only ``torch``).

    ``build_model()`` in the script seeds torch's RNG with ``cfg.seed`` and
    creates the layers in the same order as :func:`resviz.build`, so it returns
    the same weights (and the same ``state_dict`` keys); running the script
    prints the output shape for a random batch.
    """
    c = cfg
    out: list[str] = []
    emit = out.append
    residual_text = {
        "none": "no shortcut (plain)",
        "add": "add: y = x + f(x)",
        "scaled": f"scaled: y = x + alpha * f(x), alpha = {c.alpha:g}"
        + (" (learnable)" if c.alpha_learnable else " (fixed)"),
        "concat": "concat: y = [x, f(x)]" + (" then a projection" if c.concat_project else ""),
    }[c.residual]
    emit(f'"""A {c.n_blocks}-block {c.block} stack, {residual_text}.')
    emit("")
    emit("Generated by resviz for this exact configuration; needs only PyTorch.")
    emit('"""')
    emit("")
    emit("import torch")
    emit("from torch import nn")
    emit("")
    emit(f"SEED = {c.seed}")
    emit(f"WIDTHS = {_widths_literal(c.layer_widths)}  # input first: block i maps i -> i + 1")
    if c.block == "ffn":
        emit(f"FFN_MULT = {c.ffn_mult}")
    if c.out_dim:
        emit(f"OUT_DIM = {c.out_dim}")
    if c.identity_scale != 1 and c.residual == "add":
        emit(f"IDENTITY_SCALE = {float(c.identity_scale)!r}")
    if c.residual == "scaled":
        emit(f"ALPHA = {float(c.alpha)!r}")
    emit("")
    if c.norm == "batch":
        emit("")
        emit("class FeatureBatchNorm(nn.BatchNorm1d):")
        emit('    """BatchNorm of each feature over the batch (and any token axis)."""')
        emit("")
        emit("    def forward(self, x):")
        emit("        shape = x.shape")
        emit("        return super().forward(x.reshape(-1, shape[-1])).reshape(shape)")
        emit("")
    emit("")
    emit("class Block(nn.Module):")
    emit("    def __init__(self, w_in, w_out):")
    emit("        super().__init__()")
    if c.block == "linear":
        emit("        self.fc = nn.Linear(w_in, w_out)")
    else:
        emit("        self.fc1 = nn.Linear(w_in, FFN_MULT * w_in)")
        emit("        self.fc2 = nn.Linear(FFN_MULT * w_in, w_out)")
    emit(f"        self.act = {_ACT_CODE[c.activation]}")
    out_width = "w_out"
    if c.residual in ("add", "scaled"):
        if c.mismatch == "project":
            emit("        # Identity where the widths match, a projection where they differ.")
            emit("        if w_in == w_out:")
            emit("            self.shortcut = nn.Identity()")
            emit("        else:")
            emit("            self.shortcut = nn.Linear(w_in, w_out, bias=False)")
        else:
            emit("        # A shortcut only where the widths match.")
            emit("        self.shortcut = nn.Identity() if w_in == w_out else None")
    elif c.residual == "concat" and c.concat_project:
        emit("        # [x, f(x)] projected back to w_out.")
        emit("        self.concat_proj = nn.Linear(w_in + w_out, w_out, bias=False)")
    elif c.residual == "concat":
        out_width = "w_in + w_out"
    emit(f"        self.out_width = {out_width}")
    if c.residual == "scaled":
        if c.alpha_learnable:
            emit("        self.alpha = nn.Parameter(torch.tensor(ALPHA))")
        else:
            emit('        self.register_buffer("alpha", torch.tensor(ALPHA))')
    if c.norm != "none":
        dim = "w_in" if c.norm_position == "pre" else "self.out_width"
        emit(f"        self.norm = {_NORM_CODE[c.norm].format(dim=dim)}")
    emit("")
    emit("    def forward(self, x):  # (batch, w_in)")
    h = "x"
    if c.norm != "none" and c.norm_position == "pre":
        emit("        h = self.norm(x)")
        h = "h"
    z = f"self.fc({h})" if c.block == "linear" else f"self.fc2(self.act(self.fc1({h})))"
    # The model scales the shortcut by identity_scale when adding (before or after the
    # activation); a scaled shortcut multiplies the branch by alpha instead.
    scaled_sc = c.identity_scale != 1 and c.residual == "add"
    scale = "IDENTITY_SCALE * " if scaled_sc else ""
    post = c.norm != "none" and c.norm_position == "post"
    ret = "y = " if post else "return "
    if c.residual == "none":
        f_expr = f"self.act({z})" if c.block == "linear" else z
        emit(f"        {ret}{f_expr}")
    elif c.join == "before_act":
        emit(f"        z = {z}")
        emit("        if self.shortcut is None:")
        emit(f"            {ret}self.act(z)")
        emit("        else:")
        if c.residual == "scaled":
            emit(f"            {ret}self.act(self.shortcut(x) + self.alpha * z)")
        else:
            emit(f"            {ret}self.act({scale}self.shortcut(x) + z)")
    else:
        f_expr = f"self.act({z})" if c.block == "linear" else z
        emit(f"        f = {f_expr}")
        if c.residual == "concat":
            if c.concat_project:
                emit(f"        {ret}self.concat_proj(torch.cat([x, f], dim=-1))")
            else:
                emit(f"        {ret}torch.cat([x, f], dim=-1)  # (batch, w_in + w_out)")
        else:
            combine = (
                f"{scale}self.shortcut(x) + f"
                if c.residual == "add"
                else "self.shortcut(x) + self.alpha * f"
            )
            emit("        if self.shortcut is None:")
            emit(f"            {ret}f")
            emit("        else:")
            emit(f"            {ret}{combine}")
    if post:
        emit("        return self.norm(y)")
    emit("")
    emit("")
    emit("class Net(nn.Module):")
    emit("    def __init__(self):")
    emit("        super().__init__()")
    emit("        blocks = []")
    emit("        w = WIDTHS[0]")
    emit("        for w_out in WIDTHS[1:]:")
    emit("            blocks.append(Block(w, w_out))")
    emit("            w = blocks[-1].out_width")
    emit("        self.blocks = nn.ModuleList(blocks)")
    emit(
        "        self.head = nn.Linear(w, OUT_DIM)"
        if c.out_dim
        else "        self.head = nn.Identity()"
    )
    emit("")
    emit("    def forward(self, x):")
    emit("        for block in self.blocks:")
    emit("            x = block(x)")
    emit("        return self.head(x)")
    emit("")
    emit("")
    emit("def build_model():")
    emit("    torch.manual_seed(SEED)")
    emit("    model = Net()")
    if c.init in ("kaiming", "xavier", "small"):
        emit("    for block in model.blocks:")
        if c.init in ("kaiming", "xavier"):
            emit("        for m in block.modules():")
            emit("            if isinstance(m, nn.Linear):")
            if c.init == "kaiming":
                emit('                nn.init.kaiming_normal_(m.weight, nonlinearity="relu")')
            else:
                emit("                nn.init.xavier_normal_(m.weight)")
            emit("                if m.bias is not None:")
            emit("                    nn.init.zeros_(m.bias)")
        else:
            last = "block.fc" if c.block == "linear" else "block.fc2"
            emit("        # Near-zero branches: the last layer of each scaled by 0.01.")
            emit("        with torch.no_grad():")
            emit(f"            {last}.weight.mul_(0.01)")
            emit(f"            {last}.bias.mul_(0.01)")
    emit("    return model")
    emit("")
    emit("")
    emit('if __name__ == "__main__":')
    emit("    model = build_model()")
    emit("    x = torch.randn(8, WIDTHS[0])")
    emit("    y = model(x)")
    emit(
        '    print(f"{sum(p.numel() for p in model.parameters())} parameters; output {tuple(y.shape)}")'
    )
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------ the paths


def path_lengths(cfg: StackConfig) -> pd.DataFrame:
    """How many paths of each length the unrolled stack has (Veit et al. 2016).

    Each block with a shortcut offers two routes (skip it, or go through its
    branch); a block without one must be passed through. With ``k`` shortcut
    blocks out of ``n`` there are ``2**k`` paths, and the number that pass
    through ``L`` branches is ``C(k, L - (n - k))``: Binomial(k, 1/2) shifted by
    the ``n - k`` blocks that cannot be skipped. Columns: ``length``, ``count``
    (exact int), ``fraction`` (of all paths) and ``binomial_pmf``.
    """
    table = shortcut_table(cfg)
    n = len(table)
    k = int((table["shortcut"] != "none").sum())
    forced = n - k
    rows = []
    for length in range(n + 1):
        j = length - forced
        count = math.comb(k, j) if 0 <= j <= k else 0
        rows.append(
            {
                "length": length,
                "count": count,
                "fraction": count / 2**k,
                "binomial_pmf": math.comb(k, j) * 0.5**k if 0 <= j <= k else 0.0,
            }
        )
    return pd.DataFrame(rows)


# --------------------------------------------------------- per-layer forward


_TERMS = ("branch_out", "shortcut_term", "update_term", "resid_post")


def _decompose_block(i: int, acts: dict[str, torch.Tensor], concat: bool) -> dict[str, float | int]:
    """One row of :func:`layer_decomposition` from block ``i``'s hooked tensors."""
    y = acts[f"blocks.{i}.resid_post"].double()
    f = acts[f"blocks.{i}.branch_out"].double()
    u = acts[f"blocks.{i}.update_term"].double()
    s = acts.get(f"blocks.{i}.shortcut_term")
    u_sq = u.pow(2).sum(-1)  # one value per vector: per sample, or per token for (B, T, C)
    row: dict[str, float | int] = {
        "layer": i,
        "norm": float(y.norm(dim=-1).mean()),
        "std": float(y.std()),
        "branch_norm": float(f.norm(dim=-1).mean()),
        "shortcut_norm": 0.0,
        "update_norm": float(u_sq.sqrt().mean()),
        "identity_share": 0.0,
        "cosine": math.nan,
    }
    if s is None:  # no shortcut: the output is all update
        return row
    s = s.double()
    s_sq = s.pow(2).sum(-1)
    row["shortcut_norm"] = float(s_sq.sqrt().mean())
    total = float(s_sq.sum() + u_sq.sum())
    row["identity_share"] = float(s_sq.sum()) / total if total > 0 else math.nan
    if not concat:
        both = (s_sq > 0) & (u_sq > 0)  # cos is undefined for a zero vector
        if bool(both.any()):
            cos = (s * u).sum(-1)[both] / (s_sq[both] * u_sq[both]).sqrt()
            row["cosine"] = float(cos.mean())
    return row


@torch.no_grad()
def layer_decomposition(model: Stack, x: torch.Tensor) -> pd.DataFrame:
    """Per block, on the batch ``x``: where the output comes from.

    This is resviz's one definition of these quantities (:func:`forward_decomposition`
    and :func:`resviz.forward_signal` return this frame). Each block joins two
    terms, read from its hook points with :func:`resviz.capture`:
    ``s = blocks.{i}.shortcut_term`` (the shortcut after ``identity_scale``: ``x``,
    ``l x`` or ``P x``) and ``u = blocks.{i}.update_term`` (the update after
    ``alpha``: ``f(x)`` or ``alpha f(x)``; joined before the activation, the
    pre-activation ``W x + b`` or ``alpha (W x + b)``), so that
    ``y = s + u`` before any activation or norm that follows the sum; ``concat``
    puts them side by side, ``[s, u]``, before its optional projection. A block
    without a shortcut has ``u`` only.

    Columns: ``layer``; ``norm`` (mean L2 norm of the block's output ``x_{l+1}``
    per vector) and ``std`` (of that output); ``branch_norm`` (mean ``||f(x)||``,
    the branch before ``alpha``: ``blocks.{i}.branch_out``); ``shortcut_norm``
    (mean ``||s||``, 0 without a shortcut) and ``update_norm`` (mean ``||u||``);
    ``identity_share`` ``= sum||s||^2 / (sum||s||^2 + sum||u||^2)`` over the batch
    (1 for a block that only passes its input on, e.g. ReZero at init; 0 without a
    shortcut; NaN when both terms are 0); ``cosine``, the mean of
    ``cos(s, u)`` over the vectors where both are non-zero (NaN where none are,
    without a shortcut, and for ``concat``, whose terms are never added). Norms
    are taken over the last axis: per sample for ``(B, C)`` input, per token for
    ``(B, T, C)``.
    """
    n = len(model.blocks)
    acts = capture(model, x, [f"blocks.{i}.{t}" for i in range(n) for t in _TERMS])
    rows = [
        _decompose_block(i, acts, block.residual == "concat")
        for i, block in enumerate(model.blocks)
    ]
    return pd.DataFrame(rows)


def forward_decomposition(
    cfg: StackConfig,
    seed: int = 0,
    batch_size: int = 256,
    device: torch.device | str | None = None,
) -> pd.DataFrame:
    """:func:`layer_decomposition` of the model ``cfg`` builds (weights from
    ``cfg.seed``), at init, on a batch of ``batch_size`` standard Gaussian inputs
    drawn from ``seed``."""
    device = torch.device(device or "cpu")
    model = build(cfg, device).eval()
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(batch_size, cfg.in_dim, generator=gen).to(device)
    return layer_decomposition(model, x)


# ------------------------------------------------------------- the built-in task


# ------------------------------------------------------ degradation experiment


@dataclass(frozen=True)
class DegradationConfig:
    """He et al. (2016, Fig. 1) in miniature: four stacks trained on :func:`spirals`.

    ``shallow`` and ``deep`` blocks, each plain and with the shortcut given by
    ``residual`` (and ``alpha``, ``alpha_learnable``, ``join``; concat is always
    projected back so every variant has the same width). The first block maps the
    2-d input to ``width`` and has no shortcut (the widths differ); a linear head
    gives the class logits. Every variant starts from the same seed and sees the
    same batches. The defaults are the ones the tests pin for several seeds.
    """

    shallow: int = 4
    deep: int = 16
    width: int = 32
    activation: Activation = "relu"
    init: Init = "default"
    residual: Residual = "add"
    alpha: float = 1.0
    alpha_learnable: bool = False
    join: Join = "after_act"
    steps: int = 400
    lr: float = 3e-3
    batch_size: int = 128
    n_points: int = 1536
    classes: int = 3
    turns: float = 2.0
    noise: float = 0.05
    eval_every: int = 20

    def __post_init__(self) -> None:
        _check_int(self, "shallow", 1, 64)
        _check_int(self, "deep", 1, 128)
        if self.deep <= self.shallow:
            raise ValueError(
                f"deep={self.deep} must be larger than shallow={self.shallow}: "
                "the experiment compares a shallow stack with a deeper one."
            )
        _check_int(self, "width", 2, 512)
        _check_int(self, "steps", 1, 20_000)
        _check_float(self, "lr", 1e-6, 1.0)
        _check_int(self, "batch_size", 1, 4096)
        _check_int(self, "n_points", 10, 100_000)
        _check_int(self, "classes", 2, 10)
        _check_float(self, "turns", 0.0, 10.0)
        _check_float(self, "noise", 0.0, 1.0)
        _check_int(self, "eval_every", 1, 10_000)
        if self.residual == "none":
            raise ValueError(
                "residual='none' leaves nothing to compare: pick add, scaled or concat."
            )
        # The stacks validate the fields they take (activation, init, residual, alpha,
        # alpha_learnable, join) and their combinations (join with concat).
        self.variants(0)

    def variants(self, seed: int) -> dict[str, StackConfig]:
        """The four stacks, by name: ``plain, {shallow}`` ... ``residual, {deep}``."""
        out = {}
        for kind in ("plain", "residual"):
            for depth in (self.shallow, self.deep):
                out[f"{kind}, {depth} blocks"] = StackConfig(
                    widths=(2,) + (self.width,) * depth,
                    activation=self.activation,
                    init=self.init,
                    residual="none" if kind == "plain" else self.residual,
                    alpha=self.alpha,
                    alpha_learnable=self.alpha_learnable,
                    join=self.join if kind == "residual" else "after_act",
                    concat_project=True,
                    out_dim=self.classes,
                    seed=seed,
                )
        return out


@dataclass(frozen=True)
class LesionConfig:
    """Veit et al. (2016) in miniature: a plain and a residual stack of ``depth``
    blocks, trained on :func:`spirals` as in :class:`DegradationConfig` (same
    fields, same first block 2 -> ``width`` without a shortcut), then lesioned.

    A lesion only says something about a stack that learned its task, so the
    default task is easier than the degradation experiment's: one turn per arm
    (``turns=1.0``) instead of two. Measured on the defaults (seeds 0-4): both
    stacks reach 0.89-0.96 accuracy; deleting one block costs the residual stack
    2.4-4.1 accuracy points on average and the plain stack 42-57.
    """

    depth: int = 16
    width: int = 32
    activation: Activation = "relu"
    init: Init = "default"
    residual: Residual = "add"
    alpha: float = 1.0
    alpha_learnable: bool = False
    join: Join = "after_act"
    steps: int = 400
    lr: float = 3e-3
    batch_size: int = 128
    n_points: int = 1536
    classes: int = 3
    turns: float = 1.0
    noise: float = 0.05
    eval_every: int = 20

    def __post_init__(self) -> None:
        _check_int(self, "depth", 2, 128)
        self._task()  # the degradation config validates every other field

    def _task(self) -> DegradationConfig:
        kw = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "depth"}
        return DegradationConfig(shallow=1, deep=self.depth, **kw)

    def variants(self, seed: int) -> dict[str, StackConfig]:
        """The two stacks, by name: ``plain, {depth} blocks`` and ``residual, {depth} blocks``."""
        return {n: c for n, c in self._task().variants(seed).items() if c.n_blocks == self.depth}


@dataclass
class DegradationResult:
    """What :func:`train_degradation` returns.

    ``curves``: ``variant, kind, depth, step, loss, error, diverged, divergence``
    (loss and error on the whole training set every ``eval_every`` steps, and at the
    step where a variant diverged); ``final``: one row
    per variant; ``lesion``: :func:`lesion` of every trained model; ``signal``:
    :func:`layer_decomposition` of every variant on the task's points, ``stage``
    ``init`` and ``trained``. ``attrs["stopped"]`` is True when training ended early;
    ``attrs["diverged"]`` maps variant -> step and ``attrs["divergence"]`` variant ->
    :class:`resviz.Divergence` (also in ``curves.attrs``).
    """

    curves: pd.DataFrame
    final: pd.DataFrame
    lesion: pd.DataFrame
    signal: pd.DataFrame
    seconds: float
    attrs: dict[str, Any] = field(default_factory=dict)


@torch.no_grad()
def evaluate(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> tuple[float, float]:
    """``(cross-entropy, error rate)`` of ``model`` on ``(x, y)``."""
    logits = model(x)
    return float(F.cross_entropy(logits, y)), float((logits.argmax(-1) != y).float().mean())


@torch.no_grad()
def lesion(model: Stack, x: torch.Tensor, y: torch.Tensor) -> pd.DataFrame:
    """Delete one block at a time (``x_{i+1} = x_i``) and measure the damage (Veit et al.).

    Only blocks whose input and output widths match can be deleted. Columns:
    ``deleted`` (block index from 0), ``block`` (the same block counted from 1, as
    the pages show it), ``loss``, ``accuracy``, and ``base_accuracy`` (the intact
    model's).
    """
    model.eval()
    base_loss, base_err = evaluate(model, x, y)
    rows = []
    for i in range(len(model.blocks)):
        w_in = x.shape[-1] if i == 0 else model.blocks[i - 1].out_width
        if model.blocks[i].out_width != w_in:
            continue
        h = x
        for j, block in enumerate(model.blocks):
            if j != i:
                h = block(h)
        logits = model.head(h)
        rows.append(
            {
                "deleted": i,
                "block": i + 1,
                "loss": float(F.cross_entropy(logits, y)),
                "accuracy": float((logits.argmax(-1) == y).float().mean()),
                "base_accuracy": 1.0 - base_err,
            }
        )
    return pd.DataFrame(rows, columns=["deleted", "block", "loss", "accuracy", "base_accuracy"])


def train_degradation(
    dcfg: DegradationConfig | LesionConfig,
    seed: int = 0,
    device: torch.device | str | None = None,
    callback: Callable[[pd.DataFrame, int, int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> DegradationResult:
    """Train the stacks of ``dcfg`` (four; two for a :class:`LesionConfig`) with Adam
    on the same batches, then lesion them.

    Progress: ``callback(curves_so_far, step, steps)`` at every evaluation, and
    ``should_stop()`` is checked there.

    Divergence (:func:`resviz.first_divergence`) is judged on two series per
    variant: the training step's batch loss and gradient norm (start: the loss at
    step 1), checked every step, and the whole-set loss at each evaluation (start:
    step 0). A variant that diverges stops at that step: it is not updated there,
    and its last row (the whole-set loss and error at that step) has
    ``diverged=True`` and the reason in ``divergence``.
    """
    t0 = time.perf_counter()
    device = torch.device(device or "cpu")
    cfgs = dcfg.variants(seed)
    x_all, y_all = spirals(dcfg.n_points, dcfg.classes, dcfg.turns, dcfg.noise, seed=seed)
    x_all, y_all = x_all.to(device), y_all.to(device)
    init_signal = {n: layer_decomposition(build(c, device).eval(), x_all) for n, c in cfgs.items()}
    rows: list[dict[str, Any]] = []
    eval_start: dict[str, float] = {}

    def record_one(n: str, step: int, found: Divergence | None = None) -> None:
        m = run.models[n]
        m.eval()
        loss, err = evaluate(m, x_all, y_all)
        m.train()
        eval_start.setdefault(n, loss)
        if found is None:
            found = first_divergence([loss], start=eval_start[n], first_step=step)
            if found is not None:
                run.halt(n, found)
        rows.append(_row(n, cfgs[n], step, loss, err, found))

    def record(step: int) -> None:
        for n, _model in run.active():
            record_one(n, step)

    def frame() -> pd.DataFrame:
        out = pd.DataFrame(rows, columns=list(DEGRADATION_COLUMNS))
        out.attrs["diverged"] = run.diverged
        out.attrs["divergence"] = dict(run.divergence)
        return out

    def progress(_run: Trainer, done: int) -> None:
        record(done)
        if callback is not None:
            callback(frame(), done, dcfg.steps)

    # Steps count from 1 (step 0 is the evaluation at init); each step's loss is judged
    # before the update (eager), so a diverged model is evaluated as it diverged.
    run = Trainer(
        cfgs,
        dcfg.steps,
        seed=seed,
        lr=dcfg.lr,
        device=device,
        first_step=1,
        sync_every=dcfg.eval_every,
        eager=True,
        progress=progress,
        should_stop=should_stop,
    )
    record(0)
    gen = torch.Generator().manual_seed(seed + 1)
    for t in run:
        idx = torch.randint(0, len(x_all), (dcfg.batch_size,), generator=gen).to(device)
        xb, yb = x_all[idx], y_all[idx]
        for n, m in run.active():
            found = run.update(n, F.cross_entropy(m(xb), yb))
            if found is not None:  # not updated: the row shows the model that diverged
                record_one(n, t + 1, found)

    curves = frame()
    final = curves.groupby("variant", sort=False).tail(1).reset_index(drop=True)
    final = final.assign(accuracy=1.0 - final["error"])
    lesions, signals = [], []
    for n, m in run.models.items():
        m.eval()
        lesions.append(lesion(m, x_all, y_all).assign(variant=n, **_meta(cfgs[n])))
        signals.append(init_signal[n].assign(variant=n, stage="init", **_meta(cfgs[n])))
        healthy = n not in run.divergence
        trained = layer_decomposition(m, x_all) if healthy else init_signal[n].iloc[:0]
        signals.append(trained.assign(variant=n, stage="trained", **_meta(cfgs[n])))
    return DegradationResult(
        curves=curves,
        final=final,
        lesion=pd.concat(lesions, ignore_index=True),
        signal=pd.concat(signals, ignore_index=True),
        seconds=time.perf_counter() - t0,
        attrs=run.attrs,
    )


# The mean drop in accuracy (a fraction) up to which a lesioned stack "barely changes".
LESION_SMALL_DROP = 0.05


def learned_accuracy(classes: int) -> float:
    """The accuracy at which a stack counts as having learned the task: halfway from
    chance (``1 / classes``, the spirals are balanced) to perfect. 2/3 for 3 classes."""
    return (1.0 + 1.0 / classes) / 2.0


def train_lesion(
    lcfg: LesionConfig,
    seed: int = 0,
    device: torch.device | str | None = None,
    callback: Callable[[pd.DataFrame, int, int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> DegradationResult:
    """Train the plain and the residual stack of ``lcfg`` and delete each block in turn.

    The training loop is :func:`train_degradation`'s; ``result.lesion`` holds every
    deletion and :func:`lesion_summary` condenses it.
    """
    return train_degradation(lcfg, seed, device, callback, should_stop)


def lesion_summary(les: pd.DataFrame, classes: int = 3) -> pd.DataFrame:
    """One row per lesioned stack of :func:`lesion` frames tagged ``variant, kind, depth``.

    Columns: ``variant, kind, depth, intact`` (accuracy before any deletion),
    ``mean_deleted`` and ``worst_deleted`` (accuracy with one block deleted, mean over
    blocks and lowest), ``mean_drop`` and ``worst_drop`` (``intact`` minus those),
    ``worst_block`` (the deletion that hurt most, counted from 1 as on the chart) and
    ``learned`` (``intact >= learned_accuracy(classes)``).
    """
    cols = ["variant", "kind", "depth", "intact", "mean_deleted", "worst_deleted",
            "mean_drop", "worst_drop", "worst_block", "learned"]  # fmt: skip
    rows = []
    for name, g in les.groupby("variant", sort=False):
        intact = float(g["base_accuracy"].iloc[0])
        worst = g.loc[g["accuracy"].idxmin()]
        rows.append(
            {
                "variant": name,
                "kind": g["kind"].iloc[0],
                "depth": int(g["depth"].iloc[0]),
                "intact": intact,
                "mean_deleted": float(g["accuracy"].mean()),
                "worst_deleted": float(worst["accuracy"]),
                "mean_drop": intact - float(g["accuracy"].mean()),
                "worst_drop": intact - float(worst["accuracy"]),
                "worst_block": int(worst["deleted"]) + 1,
                "learned": intact >= learned_accuracy(classes),
            }
        )
    return pd.DataFrame(rows, columns=cols)


def lesion_caption(summary: pd.DataFrame, classes: int = 3) -> str:
    """What the lesion chart shows, worded from :func:`lesion_summary` alone."""
    need = learned_accuracy(classes)
    parts = [
        "Veit et al. (2016): each trained stack with one block deleted (x_{l+1} = x_l), on "
        f"the training points; chance is 1/{classes}. A stack counts as having learned the "
        f"task at accuracy {need:.2f} or more (halfway from chance to perfect), and as barely "
        f"changing when a deletion costs it at most {100 * LESION_SMALL_DROP:g} accuracy "
        "points on average."
    ]
    for r in summary.itertuples():
        who = f"The {r.kind} stack ({r.depth} blocks, accuracy {r.intact:.2f} intact)"
        cost = (
            f"deleting one block costs {100 * r.mean_drop:.1f} accuracy points on average "
            f"and {100 * r.worst_drop:.1f} at worst (block {r.worst_block})"
        )
        if not r.learned:
            parts.append(
                f"{who} did not learn the task, so its lesion shows nothing: a stack that "
                "never fit the spirals has little to lose. More steps, or fewer blocks, may "
                "give one that learns."
            )
        elif r.mean_drop <= LESION_SMALL_DROP:
            why = (
                " It behaves like an ensemble of many paths: deleting a block removes only the "
                "half of them that pass through it."
                if r.kind == "residual"
                else ""
            )
            parts.append(f"{who} barely changes: {cost}.{why}")
        else:
            why = (
                " A plain stack has a single path, and every deletion cuts it."
                if r.kind == "plain"
                else " At these settings it does not shrug a deletion off the way Veit et "
                "al.'s deep residual networks did."
            )
            parts.append(f"{who} suffers: {cost}.{why}")
    return " ".join(parts)


# ------------------------------------------------- ready-to-chart frames (the page's)


def signal_variants(cfg: StackConfig) -> dict[str, StackConfig]:
    """The stacks :func:`compare_signal` measures, by name: ``plain`` (``cfg`` without
    its shortcut) and ``shortcut: {cfg.residual}`` (``cfg``); the latter alone when
    ``cfg`` has no shortcut."""
    out = {}
    if cfg.residual != "none":
        out["plain"] = dataclasses.replace(cfg, residual="none")
    out[f"shortcut: {cfg.residual}"] = cfg
    return out


def signal_frame(decompositions: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """:func:`layer_decomposition` frames by variant name as one frame: ``variant``
    and ``block`` (``layer + 1``, counted from 1 as on the charts) added, ``layer``
    dropped."""
    parts = [df.assign(variant=name) for name, df in decompositions.items()]
    out = pd.concat(parts, ignore_index=True)
    out["block"] = out["layer"] + 1
    return out.drop(columns="layer")


def compare_signal(
    cfg: StackConfig,
    seed: int = 0,
    batch_size: int = 256,
    device: torch.device | str | None = None,
) -> pd.DataFrame:
    """:func:`forward_decomposition` of each of :func:`signal_variants` (weights from
    ``cfg.seed``, the Gaussian batch from ``seed``), as :func:`signal_frame`."""
    return signal_frame(
        {
            name: forward_decomposition(c, seed=seed, batch_size=batch_size, device=device)
            for name, c in signal_variants(cfg).items()
        }
    )


SHORTCUT_TERMS = ("block", "shortcut_norm", "update_norm", "identity_share", "cosine")


def shortcut_terms(signal: pd.DataFrame) -> pd.DataFrame:
    """The rows of :func:`compare_signal` for the stack with the shortcut (not
    ``plain``): ``block, shortcut_norm, update_norm, identity_share, cosine``."""
    return signal.loc[signal["variant"] != "plain", list(SHORTCUT_TERMS)].reset_index(drop=True)


def share_long(terms: pd.DataFrame) -> pd.DataFrame:
    """:func:`shortcut_terms` in long form for one chart: ``block, measure``
    (``identity_share`` or ``cosine``) ``, value``."""
    return terms.melt(
        id_vars=["block"],
        value_vars=["identity_share", "cosine"],
        var_name="measure",
        value_name="value",
    )


def path_bars(paths: pd.DataFrame) -> pd.DataFrame:
    """:func:`path_lengths` for the bar chart: the lengths some path has (the one row
    there is when there is one), with the fraction of paths as ``paths``."""
    shown = paths[paths["count"] > 0] if len(paths) > 1 else paths
    return shown.assign(paths=shown["fraction"]).reset_index(drop=True)


def path_table(paths: pd.DataFrame) -> pd.DataFrame:
    """:func:`path_lengths` as a table to download: ``count`` as text, exact (C(64, 32)
    is above 2^53, where a float, a spreadsheet's or the browser's, rounds)."""
    return paths.assign(count=paths["count"].astype(str))


def task_frame(dcfg: DegradationConfig | LesionConfig, seed: int = 0) -> pd.DataFrame:
    """The :func:`spirals` that :func:`train_degradation` trains ``dcfg`` on with
    ``seed``: ``x1, x2`` (the point) and ``class``."""
    x, y = spirals(dcfg.n_points, dcfg.classes, dcfg.turns, dcfg.noise, seed=seed)
    return pd.DataFrame({"x1": x[:, 0].numpy(), "x2": x[:, 1].numpy(), "class": y.numpy()})


def curves_long(curves: pd.DataFrame, measure: str) -> pd.DataFrame:
    """One measure (``loss`` or ``error``) of :class:`DegradationResult` ``.curves`` for
    one chart: ``variant, step, diverged, divergence, measure, value``."""
    if measure not in ("loss", "error"):
        raise ValueError(f"measure={measure!r} is not one of 'loss', 'error'.")
    return curves.melt(
        id_vars=["variant", "step", "diverged", "divergence"],
        value_vars=[measure],
        var_name="measure",
    )


FINAL_COLUMNS = ("variant", "kind", "depth", "step", "loss", "accuracy", "diverged", "divergence")


def final_table(result: DegradationResult) -> pd.DataFrame:
    """Where each stack ended: ``variant, kind, depth, step, loss, accuracy, diverged,
    divergence``."""
    return result.final[list(FINAL_COLUMNS)].reset_index(drop=True)


def cosine_stages(result: DegradationResult) -> pd.DataFrame:
    """The residual stacks' :func:`layer_decomposition` at init and trained, with
    ``block`` (``layer + 1``) and ``series`` (``"{variant}, {stage}"``) for one chart."""
    sig = result.signal[result.signal["kind"] == "residual"].reset_index(drop=True)
    return sig.assign(block=sig["layer"] + 1, series=sig["variant"] + ", " + sig["stage"])


def lesion_blocks(les: pd.DataFrame) -> pd.DataFrame:
    """:func:`lesion` frames with ``block`` (``deleted + 1``, counted from 1 as on the
    chart)."""
    return les.assign(block=les["deleted"] + 1)


def _meta(cfg: StackConfig) -> dict[str, Any]:
    return {"kind": "plain" if cfg.residual == "none" else "residual", "depth": cfg.n_blocks}


DEGRADATION_COLUMNS = (
    "variant", "kind", "depth", "step", "loss", "error", "diverged", "divergence"
)  # fmt: skip


def _row(
    name: str, cfg: StackConfig, step: int, loss: float, err: float, found: Divergence | None
) -> dict[str, Any]:
    return {"variant": name, **_meta(cfg), "step": step, "loss": loss, "error": err,
            "diverged": found is not None,
            "divergence": found.label if found is not None else ""}  # fmt: skip


__all__ = [
    "LESION_SMALL_DROP",
    "compare_signal",
    "cosine_stages",
    "curves_long",
    "final_table",
    "lesion_blocks",
    "path_bars",
    "path_table",
    "share_long",
    "shortcut_terms",
    "signal_frame",
    "signal_variants",
    "task_frame",
    "DegradationConfig",
    "DegradationResult",
    "LesionConfig",
    "block_formula",
    "evaluate",
    "forward_decomposition",
    "generate_code",
    "layer_decomposition",
    "learned_accuracy",
    "lesion",
    "lesion_caption",
    "lesion_summary",
    "path_lengths",
    "shortcut_kind",
    "shortcut_table",
    "spirals",
    "train_degradation",
    "train_lesion",
]
