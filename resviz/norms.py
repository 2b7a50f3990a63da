"""Normalization, measured: what LayerNorm, BatchNorm and RMSNorm do to activations,
and why the norm's place around the residual sum decides whether a deep
transformer trains.

Everything returns tidy DataFrames (or plain tensors) from seeded generators:

* :func:`scaled_batch`, :func:`apply_norms`, :func:`norm_views`, :func:`norm_stats`,
  :func:`norm_histograms`: one input with features of very different scales, four views;
* :func:`textbook_layernorm`, :func:`layernorm_gap`: the hand-written LayerNorm
  (unbiased std, eps added to the std) against ``torch.nn.LayerNorm``, with the
  difference its formula predicts;
* :func:`invariance_table`: shift/scale the input, one sample, or the weights;
* :func:`batch_dependence`: BatchNorm's output for one token as its batch changes;
* :func:`prepost_stream`, :func:`last_layer_grad`: Post-LN versus Pre-LN at init
  (Xiong et al. 2020);
* :func:`warmup_variants`, :func:`train_warmup`, :func:`stability_variants`: training runs;
* :func:`norm_timing`: forward and backward time of LayerNorm versus RMSNorm.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import time
from collections.abc import Callable

import numpy as np
import pandas as pd
import torch
from torch import nn
from torch.nn import functional as F

from .budget import Estimate, estimate
from .config import EncoderConfig, NormPosition, NormType, StackConfig
from .divergence import Divergence
from .experiments import train_compare
from .hooks import capture, capture_grads, stream_points
from .models import Encoder, FeatureBatchNorm, build

VIEWS = ("raw", "LayerNorm", "BatchNorm", "RMSNorm")
# Which axis each view normalizes over, for labels.
AXES = {
    "raw": "no normalization",
    "LayerNorm": "per token, over its features (subtract mean, divide by std)",
    "BatchNorm": "per feature, over the batch and tokens (training mode)",
    "RMSNorm": "per token, over its features (divide by root mean square, no centring)",
}
NORM_LABELS = {"layer": "LayerNorm", "rms": "RMSNorm", "batch": "BatchNorm", "none": "no norm"}


# ----------------------------------------------------------- 1. four views of one input
def scaled_batch(
    batch_size: int = 8,
    seq_len: int = 16,
    d_model: int = 64,
    big: float = 10.0,
    small: float = 0.1,
    seed: int = 0,
) -> torch.Tensor:
    """Gaussian ``(B, T, d)`` input whose first half of features is multiplied by
    ``big`` and second half by ``small`` (the seed notebook's x10 / x0.1)."""
    if d_model < 2:
        raise ValueError("d_model must be at least 2 (two halves of features).")
    if batch_size < 1 or seq_len < 1:
        raise ValueError("batch_size and seq_len must be at least 1.")
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(batch_size, seq_len, d_model, generator=gen)
    half = d_model // 2
    x[..., :half] *= big
    x[..., half:] *= small
    return x


def make_norms(d_model: int) -> dict[str, nn.Module]:
    """Fresh LayerNorm, BatchNorm (per feature over batch and tokens) and RMSNorm, at init
    (gain 1, bias 0), in training mode."""
    return {
        "LayerNorm": nn.LayerNorm(d_model),
        "BatchNorm": FeatureBatchNorm(d_model),
        "RMSNorm": nn.RMSNorm(d_model, eps=1e-5),
    }


@torch.no_grad()
def apply_norms(x: torch.Tensor) -> dict[str, torch.Tensor]:
    """``{"raw": x, "LayerNorm": ..., "BatchNorm": ..., "RMSNorm": ...}`` for ``(B, T, d)`` x."""
    out = {"raw": x}
    for name, norm in make_norms(x.shape[-1]).items():
        out[name] = norm.train()(x)
    return out


def norm_views(views: dict[str, torch.Tensor], sample: int = 0) -> pd.DataFrame:
    """Long form of one sample's ``(T, d)`` matrix per view: ``view, token, feature, value``."""
    parts = []
    for name, t in views.items():
        m = t[sample].numpy()
        tok, feat = np.meshgrid(range(m.shape[0]), range(m.shape[1]), indexing="ij")
        parts.append(
            pd.DataFrame(
                {"view": name, "token": tok.ravel(), "feature": feat.ravel(), "value": m.ravel()}
            )
        )
    return pd.concat(parts, ignore_index=True)


def norm_stats(views: dict[str, torch.Tensor]) -> pd.DataFrame:
    """Mean and std per token (over features) and per feature (over batch and tokens).

    One row per view: ``view, normalizes, token_mean_absmax, token_std_min,
    token_std_max, feature_mean_absmax, feature_std_min, feature_std_max``
    (population std). LayerNorm makes every token's mean 0 and std 1; BatchNorm
    makes every feature's; RMSNorm makes every token's root mean square 1.
    """
    rows = []
    for name, t in views.items():
        flat = t.reshape(-1, t.shape[-1]).double()  # (B*T, d)
        tm, ts = flat.mean(1), flat.std(1, unbiased=False)
        fm, fs = flat.mean(0), flat.std(0, unbiased=False)
        rows.append(
            {
                "view": name,
                "normalizes": AXES.get(name, ""),
                "token_mean_absmax": float(tm.abs().max()),
                "token_std_min": float(ts.min()),
                "token_std_max": float(ts.max()),
                "token_rms_mean": float(flat.pow(2).mean(1).sqrt().mean()),
                "feature_mean_absmax": float(fm.abs().max()),
                "feature_std_min": float(fs.min()),
                "feature_std_max": float(fs.max()),
            }
        )
    return pd.DataFrame(rows)


def norm_histograms(views: dict[str, torch.Tensor], bins: int = 40) -> pd.DataFrame:
    """Histogram of all values per view: ``view, bin_start, bin_end, count``."""
    parts = []
    for name, t in views.items():
        v = t.reshape(-1).double().numpy()
        counts, edges = np.histogram(v, bins=bins)
        parts.append(
            pd.DataFrame(
                {"view": name, "bin_start": edges[:-1], "bin_end": edges[1:], "count": counts}
            )
        )
    return pd.concat(parts, ignore_index=True)


VIEW_TITLES = {
    "raw": "raw (as drawn)",
    "LayerNorm": "LayerNorm (each token over features)",
    "BatchNorm": "BatchNorm (each feature over batch)",
    "RMSNorm": "RMSNorm (each token, no centring)",
}


def half_means(views: pd.DataFrame, view: str) -> tuple[float, float]:
    """In :func:`norm_views`'s frame, one view: the mean ``|value|`` of the first half
    of the features (the ones :func:`scaled_batch` multiplies by ``big``) and of the
    second half (``small``)."""
    sub = views[views["view"] == view]
    d = int(sub["feature"].max()) + 1
    first = sub[sub["feature"] < d // 2]["value"].abs().mean()
    second = sub[sub["feature"] >= d // 2]["value"].abs().mean()
    return float(first), float(second)


# ------------------------------------------------------- 2. textbook versus torch LayerNorm
def textbook_layernorm(x: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """The common hand-written LayerNorm: ``(x - mean) / (std + eps)`` with the
    *unbiased* std (divides by ``n - 1``) and eps added to the std, not the variance."""
    mean = x.mean(-1, keepdim=True)
    std = x.std(-1, keepdim=True)  # unbiased
    return (x - mean) / (std + eps)


def predicted_gap(
    x: torch.Tensor, eps_textbook: float = 1e-6, eps_torch: float = 1e-5
) -> torch.Tensor:
    """What the two formulas predict ``textbook - torch`` to be, element by element:
    ``(x - mu) * (1 / (sigma * sqrt(n / (n - 1)) + eps_t) - 1 / sqrt(sigma^2 + eps))``
    with ``sigma`` the population std over the ``n`` features."""
    n = x.shape[-1]
    xd = x.double()
    mu = xd.mean(-1, keepdim=True)
    var = xd.var(-1, keepdim=True, unbiased=False)
    sigma = var.sqrt()
    return (xd - mu) * (
        1.0 / (sigma * math.sqrt(n / (n - 1)) + eps_textbook) - 1.0 / (var + eps_torch).sqrt()
    )


@torch.no_grad()
def layernorm_gap(
    x: torch.Tensor, eps_textbook: float = 1e-6, eps_torch: float = 1e-5
) -> pd.DataFrame:
    """Per token: the measured ``max |textbook - torch|``, the formula's prediction,
    and the first-order approximation ``max|y| * (1 - sqrt((n-1)/n))``.

    Columns: ``token`` (flat index), ``sigma`` (population std), ``measured``,
    ``predicted``, ``approx``.
    """
    flat = x.reshape(-1, x.shape[-1])
    n = flat.shape[-1]
    if n < 2:
        raise ValueError("LayerNorm over one feature is undefined for the unbiased std.")
    torch_ln = F.layer_norm(flat, (n,), eps=eps_torch)
    book = textbook_layernorm(flat, eps_textbook)
    measured = (book - torch_ln).abs().amax(-1)
    predicted = predicted_gap(flat, eps_textbook, eps_torch).abs().amax(-1)
    approx = torch_ln.abs().amax(-1) * (1 - math.sqrt((n - 1) / n))
    return pd.DataFrame(
        {
            "token": range(flat.shape[0]),
            "sigma": flat.double().std(-1, unbiased=False).numpy(),
            "measured": measured.double().numpy(),
            "predicted": predicted.numpy(),
            "approx": approx.double().numpy(),
        }
    )


def gap_long(gap: pd.DataFrame) -> pd.DataFrame:
    """:func:`layernorm_gap`'s measured and predicted columns in long form, to chart
    as two lines: ``token, what`` (``measured``/``predicted``), ``gap``."""
    return gap.melt(
        id_vars=["token"], value_vars=["measured", "predicted"], var_name="what", value_name="gap"
    )


# --------------------------------------------------------------------- 3. invariances
INVARIANCE_NORMS = ("LayerNorm", "RMSNorm", "BatchNorm (train)", "BatchNorm (eval)")


def _norm_fn(name: str, d: int, x_ref: torch.Tensor) -> Callable[[torch.Tensor], torch.Tensor]:
    if name == "LayerNorm":
        return lambda t: F.layer_norm(t, (d,), eps=1e-5)
    if name == "RMSNorm":
        return lambda t: F.rms_norm(t, (d,), eps=1e-5)
    bn = FeatureBatchNorm(
        d, momentum=None, dtype=x_ref.dtype
    )  # cumulative average: one pass sets the stats
    if name == "BatchNorm (train)":
        return lambda t: bn.train()(t)
    bn.train()(x_ref)  # running statistics = the clean batch's statistics
    return lambda t: bn.eval()(t)


@torch.no_grad()
def invariance_table(
    batch_size: int = 8,
    seq_len: int = 16,
    d_model: int = 64,
    shift: float = 5.0,
    scale: float = 3.0,
    seed: int = 0,
    big: float = 10.0,
    small: float = 0.1,
) -> pd.DataFrame:
    """Measured ``max |output change|`` of each norm under each transformation.

    The input is ``h = x W^T`` (``x`` from :func:`scaled_batch` with ``big`` and
    ``small``, ``W`` a seeded
    Gaussian ``d x d`` matrix), so weight transformations can be applied too.
    Transformations: add ``shift`` / multiply by ``scale`` to the whole batch, to
    sample 0 only (change measured on sample 0, and separately on the *other*
    samples), and re-scale ``W`` by ``scale`` or re-centre it (``W + shift/d``:
    every output feature of a token moves by the same amount). Returns one row
    per (transformation, norm): ``transformation, measured_on, norm, max_abs_change,
    invariant`` (``invariant``: change below 1e-4).
    """
    if not (scale > 0 and math.isfinite(scale) and math.isfinite(shift)):
        raise ValueError("scale must be a positive finite number and shift finite.")
    if batch_size < 2:
        raise ValueError("batch_size must be at least 2 (one sample changes, the others not).")
    x = scaled_batch(batch_size, seq_len, d_model, big, small, seed).double()
    gen = torch.Generator().manual_seed(seed + 1)
    W = torch.randn(d_model, d_model, generator=gen, dtype=torch.float64) / math.sqrt(d_model)
    h = x @ W.T
    one = torch.zeros(batch_size, 1, 1, dtype=torch.float64)
    one[0] = 1.0
    cases = [
        ("add a constant to every input", "all samples", h + shift),
        ("multiply every input by a constant", "all samples", h * scale),
        ("add a constant to sample 0", "sample 0", h + shift * one),
        ("multiply sample 0 by a constant", "sample 0", h * (1 + (scale - 1) * one)),
        ("add a constant to sample 0", "the other samples", h + shift * one),
        ("replace samples 1.. by new draws", "sample 0", None),
        ("re-scale the weights W", "all samples", x @ (scale * W).T),
        ("re-centre the weights W", "all samples", x @ (W + shift / d_model).T),
    ]
    other = scaled_batch(batch_size, seq_len, d_model, big, small, seed + 7).double() @ W.T
    replaced = torch.cat([h[:1], other[1:]])
    rows = []
    for norm in INVARIANCE_NORMS:
        fn = _norm_fn(norm, d_model, h)
        base = fn(h)
        for what, on, changed in cases:
            out = fn(replaced if changed is None else changed)
            diff = (out - base).abs()
            if on == "sample 0":
                diff = diff[:1]
            elif on == "the other samples":
                diff = diff[1:]
            rows.append(
                {
                    "transformation": what,
                    "measured_on": on,
                    "norm": norm,
                    "max_abs_change": float(diff.max()),
                }
            )
    df = pd.DataFrame(rows)
    df["invariant"] = df["max_abs_change"] < 1e-4
    return df


def invariance_wide(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`invariance_table` with one column per norm: ``transformation,
    measured_on`` and each of :data:`INVARIANCE_NORMS` in that order (its
    ``max_abs_change``), rows in the table's order."""
    wide = (
        table.pivot_table(
            index=["transformation", "measured_on"],
            columns="norm",
            values="max_abs_change",
            sort=False,
        )
        .reset_index()
        .rename_axis(columns=None)
    )
    norms = [n for n in INVARIANCE_NORMS if n in wide.columns]
    return wide[["transformation", "measured_on", *norms]]


# -------------------------------------------------------------- 4. BatchNorm's batch
@torch.no_grad()
def batch_dependence(
    batch_size: int = 8, seq_len: int = 16, d_model: int = 64, seed: int = 0
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """BatchNorm's output for one fixed token (sample 0, token 0) as the rest of its
    batch changes, in training and in eval mode.

    Scenarios: the original batch; samples 1.. replaced by new draws; samples 1..
    multiplied by 10; a batch of one sequence (normalized over its own tokens);
    a batch of one token (training mode cannot normalize one value per feature:
    reported, not raised). Eval mode uses the running statistics of the original
    batch. Returns ``(values, summary)``: ``values`` has ``scenario, mode,
    feature, value`` for the first features; ``summary`` has ``scenario, mode,
    max_abs_change`` (versus the original batch in the same mode) and ``note``.
    """
    x = scaled_batch(batch_size, seq_len, d_model, seed=seed)
    fresh = scaled_batch(batch_size, seq_len, d_model, seed=seed + 7)
    scenarios = {
        "original batch": x,
        "other samples redrawn": torch.cat([x[:1], fresh[1:]]),
        "other samples x10": torch.cat([x[:1], 10 * x[1:]]),
        "batch of 1 sequence": x[:1],
        "batch of 1 token": x[:1, :1],
    }
    bn = FeatureBatchNorm(d_model, momentum=None)
    bn.train()(x)
    running = {k: v.clone() for k, v in bn.state_dict().items()}
    rows, summary = [], []
    ref: dict[str, torch.Tensor] = {}
    for mode in ("train", "eval"):
        for name, batch in scenarios.items():
            bn.load_state_dict(running)
            bn.train(mode == "train")
            note = ""
            try:
                out = bn(batch)[0, 0]
            except ValueError as exc:
                summary.append(
                    {
                        "scenario": name,
                        "mode": mode,
                        "max_abs_change": float("nan"),
                        "note": str(exc),
                    }
                )
                continue
            ref.setdefault(mode, out)
            if name == "batch of 1 sequence" and mode == "train":
                note = "statistics over the 16 tokens of one sequence only"
            summary.append(
                {
                    "scenario": name,
                    "mode": mode,
                    "max_abs_change": float((out - ref[mode]).abs().max()),
                    "note": note,
                }
            )
            for f, v in enumerate(out.tolist()):
                rows.append({"scenario": name, "mode": mode, "feature": f, "value": v})
    return pd.DataFrame(rows), pd.DataFrame(summary)


def batch_values_shown(values: pd.DataFrame, mode: str, n_features: int = 16) -> pd.DataFrame:
    """The rows of :func:`batch_dependence`'s ``values`` for one ``mode`` (``train``
    or ``eval``) and the first ``n_features`` features: one line per scenario."""
    return values[(values["mode"] == mode) & (values["feature"] < n_features)]


# ------------------------------------------------------------- 5. Post-LN versus Pre-LN
XIONG_INITS = ("xavier", "default")


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
    return build(cfg)  # type: ignore[return-value]


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
    ``variant`` (``Post-LN``/``Pre-LN``), ``layer`` (0 = the input, ``l`` = after
    block ``l``), ``sq_norm_per_dim`` (mean ``||x_l||^2 / d``: Xiong et al.'s Lemma
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
        for layer, key in enumerate(points):
            sq = acts[key].pow(2).sum(-1)
            rows.append(
                {
                    "variant": label,
                    "layer": layer,
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


# ------------------------------------------------------------ 5b. warm-up training
def warmup_variants(
    n_layers: int = 8, d_model: int = 64, vocab_size: int = 64
) -> dict[str, EncoderConfig]:
    """Post-LN and Pre-LN encoders (4 heads, FFN 4d) for the copy task."""
    base = EncoderConfig(
        n_layers=n_layers,
        d_model=d_model,
        n_heads=4 if d_model % 4 == 0 else 1,
        d_ff=4 * d_model,
        vocab_size=vocab_size,
        max_len=64,
    )
    return {
        "Post-LN": dataclasses.replace(base, norm_position="post"),
        "Pre-LN": dataclasses.replace(base, norm_position="pre"),
    }


def train_warmup(
    variants: dict[str, EncoderConfig],
    warmup: int,
    steps: int = 150,
    lr: float = 1.5e-2,
    seed: int = 0,
    batch_size: int = 16,
    seq_len: int = 16,
    device: torch.device | str | None = None,
    callback: Callable[[pd.DataFrame, int, int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> pd.DataFrame:
    """Train every variant on the copy task without warm-up and with ``warmup`` linear
    warm-up steps (same seed, same batches). Returns :func:`resviz.train_compare`'s rows
    with ``variant`` suffixed ``", no warm-up"`` / ``", warm-up N"`` and a ``warmup``
    column. Progress counts both runs: ``callback(frame, done, 2 * steps)``."""
    if warmup < 1:
        raise ValueError("warmup must be at least 1 step (the comparison is with 0).")
    parts: list[pd.DataFrame] = []
    stopped = False
    diverged: dict[str, int] = {}
    divergence: dict[str, Divergence] = {}
    for i, w in enumerate((0, warmup)):
        suffix = ", no warm-up" if w == 0 else f", warm-up {w}"

        def label(df: pd.DataFrame, w: int = w, suffix: str = suffix) -> pd.DataFrame:
            return df.assign(variant=df["variant"] + suffix, warmup=w)

        def cb(df: pd.DataFrame, step: int, total: int, i: int = i, label=label) -> None:
            if callback is not None:
                callback(
                    pd.concat([*parts, label(df)], ignore_index=True), i * steps + step, 2 * steps
                )

        out = train_compare(
            variants,
            steps=steps,
            seed=seed,
            lr=lr,
            batch_size=batch_size,
            seq_len=seq_len,
            task="copy",
            warmup=w,
            device=device,
            callback=cb,
            should_stop=should_stop,
        )
        parts.append(label(out))
        diverged.update({k + suffix: v for k, v in out.attrs.get("diverged", {}).items()})
        divergence.update({k + suffix: v for k, v in out.attrs.get("divergence", {}).items()})
        if out.attrs.get("stopped"):
            stopped = True
            break
    df = pd.concat(parts, ignore_index=True)
    df.attrs["stopped"] = stopped
    df.attrs["diverged"] = diverged
    df.attrs["divergence"] = divergence
    return df


# ------------------------------------------------------------ 6. stability experiment
def stability_variants(
    norm: NormType = "layer",
    position: NormPosition = "pre",
    depth: int = 4,
    width: int = 128,
    extra: tuple[str, ...] = (),
) -> dict[str, StackConfig]:
    """The seed notebook's 2x2 (residual x norm; FFN blocks ``W2 gelu(W1 x)``, 4 blocks,
    width 128) with the chosen norm type and placement, plus optional ``extra``
    variants among ``"rms"``, ``"batch"``, ``"layer"`` (residual + that norm, same
    placement) and ``"other placement"`` (residual + the chosen norm, other placement)."""
    if norm == "none":
        raise ValueError("choose a norm type for the 2x2: layer, rms or batch.")
    base = StackConfig(depth=depth, width=width, block="ffn", activation="gelu", ffn_mult=4)
    name = NORM_LABELS[norm]
    out = {
        f"residual + {name} ({position})": dataclasses.replace(
            base, residual="add", norm=norm, norm_position=position
        ),
        "residual only": dataclasses.replace(base, residual="add"),
        f"{name} only ({position})": dataclasses.replace(
            base, residual="none", norm=norm, norm_position=position
        ),
        "neither": dataclasses.replace(base, residual="none"),
    }
    for e in extra:
        if e == "other placement":
            other = "post" if position == "pre" else "pre"
            out[f"residual + {name} ({other})"] = dataclasses.replace(
                base, residual="add", norm=norm, norm_position=other
            )
        elif e in NORM_LABELS and e not in ("none", norm):
            out[f"residual + {NORM_LABELS[e]} ({position})"] = dataclasses.replace(
                base,
                residual="add",
                norm=e,
                norm_position=position,  # type: ignore[arg-type]
            )
        elif e != norm:
            raise ValueError(f"unknown extra variant {e!r}.")
    return out


def variant_table(variants: dict[str, EncoderConfig] | dict[str, StackConfig]) -> pd.DataFrame:
    """The models a training run compares, one row each: ``variant, residual`` (``add``
    or ``none``; a stack's ``scaled`` and ``concat`` as they are), ``norm,
    placement`` (empty without a norm), ``layers`` (an encoder's layers or a stack's
    blocks), ``width`` (``d_model`` or the stack's width) and ``parameters`` (exact,
    :func:`resviz.estimate`)."""
    rows = []
    for name, cfg in variants.items():
        encoder = isinstance(cfg, EncoderConfig)
        rows.append(
            {
                "variant": name,
                "residual": ("add" if cfg.residual else "none") if encoder else cfg.residual,
                "norm": NORM_LABELS.get(cfg.norm, cfg.norm),
                "placement": "" if cfg.norm == "none" else cfg.norm_position,
                "layers": cfg.n_layers if encoder else cfg.depth,
                "width": cfg.d_model if encoder else cfg.width,
                "parameters": estimate(cfg).params,
            }
        )
    return pd.DataFrame(rows)


def run_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Per variant of a training frame: ``first_loss, final_loss, min_loss,
    max_grad_norm, steps_run, diverged_at, divergence`` (the step at which the run
    diverged, see :func:`resviz.first_divergence`, or None; the reason, or "")."""
    rows = []
    for name, g in df.groupby("variant", sort=False):
        bad = g[g["diverged"]]
        rows.append(
            {
                "variant": name,
                "first_loss": float(g["loss"].iloc[0]),
                "final_loss": float(g["loss"].iloc[-1]),
                "min_loss": float(g["loss"].min()),
                "max_grad_norm": float(g["grad_norm"].max()),
                "steps_run": int(len(g)),
                "diverged_at": int(bad["step"].iloc[0]) if len(bad) else None,
                "divergence": str(bad["divergence"].iloc[0])
                if len(bad) and "divergence" in g
                else "",
            }
        )
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------- 7. cost
# Peak memory of :func:`norm_timing` in float32 copies of its input: the input and
# the upstream gradient, a fresh leaf, its gradient and the output, and what
# RMSNorm's backward (built from element-wise ops on the CPU) holds at once, plus
# what glibc's allocator keeps of freed blocks between calls: the peak resident
# increase of a warmed-up process measured 15 to 22 copies (16 x 128 x 256 up to
# 16 x 256 x 1024, repeated runs); 28 bounds it with room to spare.
NORM_TIMING_COPIES = 28


def norm_timing_cost(batch_size: int, seq_len: int, d_model: int, repeats: int = 7) -> Estimate:
    """What :func:`norm_timing` costs, for ``Budget.check``: its peak memory (as
    activations: ``NORM_TIMING_COPIES`` float32 copies of the input), both norms'
    weights, and their forward and backward element-wise work (about 10 FLOPs per
    element and pass, each call run ``repeats + 1`` times)."""
    elements = batch_size * seq_len * d_model
    return Estimate(
        params=3 * d_model,
        flops_forward=2 * 2 * 10.0 * elements * (repeats + 1),
        activation_bytes=NORM_TIMING_COPIES * 4 * elements,
    )


def norm_timing(
    batch_size: int = 16,
    seq_len: int = 128,
    d_model: int = 512,
    repeats: int = 7,
    device: torch.device | str | None = None,
) -> pd.DataFrame:
    """Forward and backward wall time of ``nn.LayerNorm`` versus ``nn.RMSNorm`` on
    ``device`` for a ``(B, T, d)`` input, measured now (one warm-up call, then
    ``repeats`` timed calls; CUDA is synchronized around each).

    Columns: ``norm, pass, median_ms, min_ms, max_ms, repeats, elements``.
    """
    if not 1 <= repeats <= 100:
        raise ValueError("repeats must be 1 to 100.")
    device = torch.device(device or "cpu")
    gen = torch.Generator().manual_seed(0)
    x0 = torch.randn(batch_size, seq_len, d_model, generator=gen).to(device)
    grad = torch.randn(batch_size, seq_len, d_model, generator=gen).to(device)

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    rows = []
    for name, mod in (
        ("LayerNorm", nn.LayerNorm(d_model)),
        ("RMSNorm", nn.RMSNorm(d_model, eps=1e-5)),
    ):
        mod = mod.to(device)
        fwd, bwd = [], []
        for i in range(repeats + 1):
            x = x0.clone().requires_grad_(True)
            sync()
            t0 = time.perf_counter()
            y = mod(x)
            sync()
            t1 = time.perf_counter()
            y.backward(grad)
            sync()
            t2 = time.perf_counter()
            if i:  # the first call warms up kernels and allocators
                fwd.append((t1 - t0) * 1e3)
                bwd.append((t2 - t1) * 1e3)
            del x, y  # free this call's tensors before the next call allocates its own
        for pass_, ts in (("forward", fwd), ("backward", bwd)):
            rows.append(
                {
                    "norm": name,
                    "pass": pass_,
                    "median_ms": statistics.median(ts),
                    "min_ms": min(ts),
                    "max_ms": max(ts),
                    "repeats": repeats,
                    "elements": x0.numel(),
                }
            )
    return pd.DataFrame(rows)


__all__ = [
    "AXES",
    "VIEWS",
    "VIEW_TITLES",
    "apply_norms",
    "batch_dependence",
    "batch_values_shown",
    "gap_long",
    "grad_ratio_lines",
    "grad_summary",
    "half_means",
    "invariance_table",
    "invariance_wide",
    "last_layer_grad",
    "layernorm_gap",
    "make_norms",
    "norm_histograms",
    "norm_stats",
    "norm_timing",
    "norm_timing_cost",
    "norm_views",
    "predicted_gap",
    "prepost_grads",
    "prepost_stream",
    "run_summary",
    "scaled_batch",
    "stability_variants",
    "variant_table",
    "textbook_layernorm",
    "train_warmup",
    "warmup_variants",
    "xiong_config",
    "xiong_depths",
    "xiong_encoder",
    "xiong_inputs",
]
