"""The norm's place around the residual sum: Post-LN versus Pre-LN (Xiong et al. 2020).

"On Layer Normalization in the Transformer Architecture": at init, Post-LN keeps
the hidden state's ``||x_l||^2 / d`` at 1 while Pre-LN's grows linearly in ``l``
(:func:`prepost_stream`), so Pre-LN's last-layer gradient shrinks like
``1 / sqrt(L)`` while Post-LN's does not (:func:`last_layer_grad`,
:func:`grad_summary`), which is why Post-LN needs a learning-rate warm-up
(:func:`resviz.norms.training.train_warmup`). Inputs are standardized to unit variance per feature
(``E||x||^2 = d``, the paper's assumption) and weights Xavier-normal by default:
``rv.build(xiong_config(...))`` is the model the charts measure.

These are the measures at initialisation. Training with and without warm-up, and the
stability experiment (residual x norm), are :mod:`resviz.norms.training`.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import torch
from torch.nn import functional as F

from resviz.config import EncoderConfig
from resviz.hooks import capture, capture_grads, stream_points
from resviz.models import Encoder, build
from resviz.norms.settings import XIONG_INITS


def xiong_encoder(cfg: EncoderConfig, init: str | None = None) -> Encoder:
    """``rv.build(cfg)`` on the CPU, with ``cfg.init`` replaced by ``init`` when given.

    ``init="xavier"``: Xiong et al.'s setting, every linear weight Xavier-normal with
    zero biases and W_Q, W_K, W_V each initialised as its own ``d x d`` matrix
    (:class:`resviz.EncoderConfig`); ``"default"``: PyTorch's initialisation (weights
    U(+-1/sqrt(fan_in)), whose sublayer outputs are about ten times smaller)."""
    if init is not None:
        if init not in XIONG_INITS:
            raise ValueError(f"init={init!r} is not one of {XIONG_INITS}.")
        cfg = dataclasses.replace(cfg, init=init)  # type: ignore[arg-type]
    return build(cfg)


def xiong_inputs(
    model: Encoder, batch_size: int, seq_len: int, seed: int, standardize: bool = True
) -> torch.Tensor:
    """Token embeddings plus positions of random tokens, standardized per feature to
    mean 0 and variance 1 over batch and tokens, so ``E||x_0||^2 = d`` (Xiong et al.'s
    assumption). Without this (``standardize=False``), the N(0, 1) embedding plus
    positions (``||x||^2`` about ``1.5 d``) dwarfs what each Pre-LN sublayer adds under
    PyTorch's default init."""
    cfg = model.cfg
    gen = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, cfg.vocab_size, (batch_size, seq_len), generator=gen)
    with torch.no_grad():
        x = model.embed(tokens)
        if model.pos is not None:
            x = x + model.pos[:seq_len]
        if standardize:
            x = (x - x.mean((0, 1))) / x.std((0, 1), unbiased=False).clamp_min(1e-12)
    return x


def xiong_config(
    n_layers: int, d_model: int, placement: str, seed: int, init: str = "xavier"
) -> EncoderConfig:
    """The encoder of the Post-LN/Pre-LN charts: ``rv.build(xiong_config(...))`` is the
    model they measure (4 heads where they divide ``d_model``, ReLU FFN of ``4 d``)."""
    if init not in XIONG_INITS:
        raise ValueError(f"init={init!r} is not one of {XIONG_INITS}.")
    return EncoderConfig(
        n_layers=n_layers,
        d_model=d_model,
        n_heads=4 if d_model % 4 == 0 else 1,
        d_ff=4 * d_model,
        vocab_size=256,
        max_len=128,
        norm_position=placement,  # type: ignore[arg-type]
        activation="relu",
        init=init,  # type: ignore[arg-type]
        seed=seed,
    )


@torch.no_grad()
def prepost_stream(
    n_layers: int = 12,
    d_model: int = 64,
    seed: int = 0,
    init: str = "xavier",
    batch_size: int = 8,
    seq_len: int = 32,
    standardize: bool = True,
) -> pd.DataFrame:
    """Hidden-state size after every layer of a Post-LN and a Pre-LN encoder at init.

    Same weights' seed, same unit-variance inputs (:func:`xiong_inputs`; the raw
    embedding plus positions with ``standardize=False``). Columns:
    ``variant`` (``Post-LN``/``Pre-LN``), ``block`` (0 = the input, ``l`` = after
    block ``l``, counted from 1), ``sq_norm_per_dim`` (mean ``||x_l||^2 / d``: Xiong et al.'s Lemma
    says it stays 1 for Post-LN and grows linearly in ``l`` for Pre-LN) and
    ``norm`` (mean ``||x_l||``).
    """
    rows = []
    points = stream_points(n_layers)
    for placement in ("post", "pre"):
        model = xiong_encoder(xiong_config(n_layers, d_model, placement, seed, init)).eval()
        x = xiong_inputs(model, batch_size, seq_len, seed, standardize)
        tokens, patch = _stream_input(x)
        acts = capture(model, tokens, points, patch=patch)
        label = f"{placement.capitalize()}-LN"
        for block, key in enumerate(points):
            sq = acts[key].pow(2).sum(-1)
            rows.append(
                {
                    "variant": label,
                    "block": block,
                    "sq_norm_per_dim": float(sq.mean() / d_model),
                    "norm": float(sq.sqrt().mean()),
                }
            )
    return pd.DataFrame(rows)


def _stream_input(x: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Inputs for :func:`resviz.capture` that run an encoder's blocks on the stream
    ``x`` ``(B, T, C)``: placeholder token ids, whose embedding is replaced by ``x``
    at ``blocks.0.resid_pre``."""
    return torch.zeros(x.shape[:2], dtype=torch.long, device=x.device), {"blocks.0.resid_pre": x}


def _last_ffn_grad(
    cfg: EncoderConfig, batch_size: int, seq_len: int, seed: int
) -> tuple[float, float]:
    model = xiong_encoder(cfg).train()
    x = xiong_inputs(model, batch_size, seq_len, seed)
    gen = torch.Generator().manual_seed(seed + 99)
    target = torch.randint(0, cfg.vocab_size, (batch_size, seq_len), generator=gen)
    last, weight = (
        f"blocks.{cfg.n_layers - 1}.resid_post",
        f"blocks.{cfg.n_layers - 1}.ffn.fc2.weight",
    )
    tokens, patch = _stream_input(x)
    cap = capture_grads(
        model,
        tokens,
        lambda logits: F.cross_entropy(logits.flatten(0, 1), target.flatten()),
        names=[last],
        params=[weight],
        patch=patch,
    )
    last_sq = float(cap.acts[last].pow(2).sum(-1).mean() / cfg.d_model)
    return cap.param_grad_norms[weight], last_sq


def last_layer_grad(
    depths: tuple[int, ...] = (1, 2, 4, 8, 16),
    seeds: tuple[int, ...] = (0, 1, 2),
    d_model: int = 64,
    init: str = "xavier",
    batch_size: int = 8,
    seq_len: int = 16,
) -> pd.DataFrame:
    """Gradient norm of the last layer's second FFN weight ``W^{2,L}`` at init, versus depth.

    Loss: cross-entropy of random target tokens through the final norm (Pre-LN) and
    the LM head, on :func:`xiong_inputs`. Columns: ``variant, n_layers, seed,
    grad_norm, last_sq_norm_per_dim`` (``||x_L||^2 / d`` before the final norm).
    Xiong et al.: Post-LN's is about independent of ``L``; Pre-LN's shrinks like
    ``1 / sqrt(L)``, because the final norm divides by ``||x_L||``, which grows like
    ``sqrt(L)``.
    """
    if not depths or not seeds:
        raise ValueError("give at least one depth and one seed.")
    rows = []
    for placement in ("post", "pre"):
        for n_layers in depths:
            for seed in seeds:
                cfg = xiong_config(n_layers, d_model, placement, seed, init)
                g, sq = _last_ffn_grad(cfg, batch_size, seq_len, seed)
                rows.append(
                    {
                        "variant": f"{placement.capitalize()}-LN",
                        "n_layers": n_layers,
                        "seed": seed,
                        "grad_norm": g,
                        "last_sq_norm_per_dim": sq,
                    }
                )
    return pd.DataFrame(rows)


def grad_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Mean over seeds of :func:`last_layer_grad`, plus ``ratio_to_L1`` (mean at ``L``
    over mean at the smallest depth) and the ``1/sqrt(L)`` reference ``inv_sqrt_L``
    (relative to the smallest depth)."""
    g = df.groupby(["variant", "n_layers"], as_index=False)["grad_norm"].agg(["mean", "min", "max"])
    g = g.rename(columns={"mean": "grad_norm_mean", "min": "grad_norm_min", "max": "grad_norm_max"})
    l0 = g["n_layers"].min()
    first = g[g["n_layers"] == l0].set_index("variant")["grad_norm_mean"]
    g["ratio_to_L1"] = g["grad_norm_mean"] / g["variant"].map(first)
    g["inv_sqrt_L"] = np.sqrt(l0 / g["n_layers"])
    return g


def xiong_depths(n_layers: int) -> tuple[int, ...]:
    """The depths the last-layer gradient is measured at for an ``n_layers`` encoder:
    1, 2, 4, 8, 16 up to ``n_layers``, and ``n_layers`` itself."""
    if n_layers < 1:
        raise ValueError("n_layers must be at least 1.")
    return tuple(sorted({1, 2, 4, 8, 16, n_layers} & set(range(1, n_layers + 1))))


def prepost_grads(n_layers: int, d_model: int, seed: int, init: str = "xavier") -> pd.DataFrame:
    """:func:`last_layer_grad` at :func:`xiong_depths` ``(n_layers)``, seeds ``seed``,
    ``seed + 1`` and ``seed + 2``, batch 4: the Post-LN/Pre-LN gradient chart's data."""
    return last_layer_grad(
        xiong_depths(n_layers), (seed, seed + 1, seed + 2), d_model, init, batch_size=4
    )


def grad_ratio_lines(summary: pd.DataFrame) -> pd.DataFrame:
    """:func:`grad_summary`'s ``ratio_to_L1`` per variant plus the reference
    ``1/sqrt(L)`` (relative to the shallowest depth) as a third variant, named
    ``"1/sqrt(L)"``: ``variant, n_layers, ratio_to_L1``."""
    ref = summary[summary["variant"] == summary["variant"].iloc[0]][["n_layers", "inv_sqrt_L"]]
    ref = ref.rename(columns={"inv_sqrt_L": "ratio_to_L1"}).assign(variant="1/sqrt(L)")
    return pd.concat(
        [
            summary[["variant", "n_layers", "ratio_to_L1"]],
            ref[["variant", "n_layers", "ratio_to_L1"]],
        ],
        ignore_index=True,
    )


__all__ = [
    "XIONG_INITS",
    "grad_ratio_lines",
    "grad_summary",
    "last_layer_grad",
    "prepost_grads",
    "prepost_stream",
    "xiong_config",
    "xiong_depths",
    "xiong_encoder",
    "xiong_inputs",
]
