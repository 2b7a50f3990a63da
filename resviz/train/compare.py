"""Experiments: pure functions from configs to tidy DataFrames.

Each draws its data from a ``torch.Generator`` seeded by its arguments (never
the global RNG, which other sessions share) and builds its models with
:func:`resviz.build`, so the same arguments give the same numbers.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

import pandas as pd
import torch
from torch import nn
from torch.nn import functional as F

from resviz.config import EncoderConfig, StackConfig, check_int
from resviz.data import Task, make_batch
from resviz.hooks import capture
from resviz.models import Encoder, build
from resviz.train.loop import STEP_COLUMNS, Trainer

Config = StackConfig | EncoderConfig
Pair = tuple[torch.Tensor, torch.Tensor]  # a batch's inputs and targets


def _n_layers(cfg: Config) -> int:
    return cfg.n_blocks if isinstance(cfg, StackConfig) else cfg.n_layers


def param_location(name: str, cfg: Config) -> tuple[int, str]:
    """Map a parameter's dotted name to ``(block, sublayer)``.

    ``block`` counts the model's blocks from 1 (``blocks.0`` is block 1); the
    embeddings are 0, the head and final norm ``n + 1`` (``n`` blocks).
    """
    n = _n_layers(cfg)
    m = re.match(r"blocks\.(\d+)\.(\w+)", name)
    if m:
        block, part = int(m.group(1)) + 1, m.group(2)
        if part.startswith("norm"):
            return block, "norm"
        if part == "attn":
            return block, "attn"
        if part == "ffn":
            return block, "ffn"
        return block, "linear"
    if name.startswith(("embed", "pos")):
        return 0, "embed"
    if name.startswith("final_norm"):
        return n + 1, "norm"
    return n + 1, "head"


def compute_loss(model: nn.Module, x: torch.Tensor, y: torch.Tensor, task: Task) -> torch.Tensor:
    if isinstance(model, Encoder):
        if task == "copy":
            logits = model(x)  # (B, T, V)
            return F.cross_entropy(logits.flatten(0, 1), y.flatten())
        return F.mse_loss(model.encode(x), y)
    return F.mse_loss(model(x), y)


def gradient_norms(
    cfg: Config,
    seed: int = 0,
    batch_size: int = 32,
    seq_len: int = 16,
    task: Task | None = None,
    device: torch.device | str | None = None,
) -> pd.DataFrame:
    """Gradient norm of every parameter tensor after one backward pass at init.

    The loss is MSE to Gaussian targets for stacks and, for encoders, the
    cross-entropy of predicting the input tokens through the LM head
    (``task="copy"``), so every parameter, the head included, gets a gradient.

    Columns: ``block`` (from 1; 0 the embeddings, ``n + 1`` the head), ``sublayer``
    (``attn | ffn | norm | embed | head | linear``), ``param`` (dotted name),
    ``grad_norm`` (L2 norm of the gradient) and ``numel``. Stacks take one batch
    of ``batch_size`` vectors (``seq_len`` is ignored).
    """
    device = torch.device(device or "cpu")
    task = task or ("regression" if isinstance(cfg, StackConfig) else "copy")
    model = build(cfg, device)
    gen = torch.Generator().manual_seed(seed)
    seq = 1 if isinstance(cfg, StackConfig) else seq_len
    x, y = make_batch(cfg, batch_size, seq, gen, task)
    loss = compute_loss(model, x.to(device), y.to(device), task)
    loss.backward()
    rows = []
    for name, p in model.named_parameters():
        block, sub = param_location(name, cfg)
        g = p.grad
        norm = float(g.norm()) if g is not None else 0.0
        rows.append(
            {"block": block, "sublayer": sub, "param": name, "grad_norm": norm, "numel": p.numel()}
        )
    return pd.DataFrame(rows)


def stream_norms(
    cfg: EncoderConfig,
    seed: int = 0,
    batch_size: int = 8,
    seq_len: int = 32,
    tokens: torch.Tensor | None = None,
    device: torch.device | str | None = None,
) -> pd.DataFrame:
    """Mean per-token L2 norm of an encoder's residual stream at init.

    One row per (``block``, ``point``) (``block`` from 1) with ``point`` in ``resid_pre``,
    ``resid_mid`` (after attention) and ``resid_post`` (after the FFN), plus
    ``sublayer_index`` (0, 1, 2, ... counting sublayers from the input) and
    ``norm``. ``tokens`` (``(B, T)``) replaces the random batch when given.
    """
    device = torch.device(device or "cpu")
    model = build(cfg, device)
    model.eval()
    if tokens is None:
        gen = torch.Generator().manual_seed(seed)
        tokens = torch.randint(0, cfg.vocab_size, (batch_size, seq_len), generator=gen)
    acts = capture(model, tokens.to(device))
    rows = []
    for i in range(cfg.n_layers):
        points = (
            ["resid_pre", "resid_mid", "resid_post"] if cfg.use_ffn else ["resid_pre", "resid_post"]
        )
        for j, point in enumerate(points):
            h = acts[f"blocks.{i}.{point}"]
            rows.append(
                {
                    "block": i + 1,
                    "point": point,
                    "sublayer_index": i * (len(points) - 1) + j,
                    "norm": float(h.norm(dim=-1).mean()),
                }
            )
    df = pd.DataFrame(rows)
    # resid_post of block i is resid_pre of block i+1: keep one row per place.
    last = df["block"] == cfg.n_layers
    return df[(df["point"] != "resid_post") | last].reset_index(drop=True)


def _batch_shape(cfg: Config) -> tuple[object, ...]:
    if isinstance(cfg, StackConfig):
        return ("stack", cfg.in_dim, cfg.out_dim or cfg.out_width)
    return ("encoder", cfg.vocab_size, cfg.d_model)


TRAIN_COLUMNS = STEP_COLUMNS


def train_compare(
    variants: Mapping[str, Config],
    steps: int = 100,
    seed: int = 0,
    lr: float = 1e-3,
    batch_size: int = 16,
    seq_len: int = 32,
    task: Task = "regression",
    warmup: int = 0,
    device: torch.device | str | None = None,
    callback: Callable[[pd.DataFrame, int, int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    sync_every: int = 10,
    workers: int | None = None,
) -> pd.DataFrame:
    """Train every variant with Adam from the same seed on the same batches.

    Each model is built with its config's seed replaced by ``seed``; batch ``t``
    is identical for every variant. Returns one row per (variant, step) with
    ``variant, step, loss, grad_norm, lr, diverged, divergence`` (``grad_norm``:
    total L2 norm of all gradients before the update). A variant that diverges
    (:func:`resviz.first_divergence`: loss or gradient NaN/Inf, or loss above
    ``DIVERGENCE_FACTOR`` times its step-0 loss) stops there; its last row has
    ``diverged=True`` and the reason in ``divergence``; ``attrs["diverged"]`` maps
    variant -> step and ``attrs["divergence"]`` variant -> :class:`resviz.Divergence`.

    Progress: every ``sync_every`` steps ``callback(frame_so_far, step, steps)``
    is called and ``should_stop()`` is checked; if it returns True, training ends
    and the rows so far are returned with ``frame.attrs["stopped"] = True``.
    Losses stay on the device between checks, so there is one host sync per
    ``sync_every`` steps rather than per parameter per step.

    ``workers``: variants step in parallel threads, one each (they share no
    state, so the numbers equal a run in turn). Default: one worker per CPU core
    when torch runs one thread per op on the CPU and no variant uses dropout
    (which draws from the global RNG); otherwise 1. The loop is
    :class:`resviz.train.loop.Trainer`'s; this function adds the batches and the loss.
    """
    if not variants:
        raise ValueError("train_compare needs at least one variant.")
    check_int("batch_size", batch_size, 1, 65_536)
    check_int("seq_len", seq_len, 1, 8192)

    def progress(run: Trainer[Config], done: int) -> None:
        if callback is not None:
            callback(run.frame(), done, steps)

    run = Trainer(
        variants,
        steps,
        seed=seed,
        lr=lr,
        warmup=warmup,
        device=device,
        sync_every=sync_every,
        progress=progress,
        should_stop=should_stop,
        workers=workers,
    )
    # Variants whose batches have the same shapes share one batch per step (drawn
    # once, moved once); each shape has its own generator seeded with ``seed``.
    shape_of = {n: _batch_shape(variants[n]) for n in run.names}
    gens = {k: torch.Generator().manual_seed(seed) for k in set(shape_of.values())}
    for _ in run:
        batches: dict[tuple[object, ...], Pair] = {}
        for n, _model in run.active():
            k = shape_of[n]
            if k not in batches:
                x, y = make_batch(variants[n], batch_size, seq_len, gens[k], task)
                batches[k] = (x.to(run.device), y.to(run.device))

        def loss_of(
            n: str, model: nn.Module, b: dict[tuple[object, ...], Pair] = batches
        ) -> torch.Tensor:
            return compute_loss(model, *b[shape_of[n]], task)

        run.update_all(loss_of)
    return run.frame()


def parameter_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


__all__ = [
    "gradient_norms",
    "make_batch",
    "param_location",
    "stream_norms",
    "parameter_count",
    "train_compare",
]
