"""Inside an encoder on one sequence: attention, the residual stream, rank collapse.

Every view comes from the hook points of one forward pass (:func:`resviz.capture`):

* attention maps ``[layer, head, query, key]`` (:func:`attention_maps`);
* the residual stream (:func:`residual_stream`): norms and update ratios
  ``||f(x)|| / ||x||`` per sublayer, and each component's projection on the final
  vector (:func:`final_share`; a decomposition where the stream is a sum, residuals
  with Pre-LN or no norm);
* rank collapse (:func:`rank_collapse`, :func:`rank_collapse_compare`): Dong et
  al. 2021, "Attention is not all you need: pure attention loses rank doubly
  exponentially with depth", measured as ``||X - 1 x^T|| / ||X||`` and the mean
  token cosine per layer;
* init beside trained (:func:`ratio_before_after`, :func:`collapse_before_after`),
  the frames the encoder playground's Training section draws.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TypedDict

import numpy as np
import pandas as pd
import torch
from torch import nn

from resviz.config import EncoderConfig
from resviz.hooks import capture
from resviz.models import build


def run_encoder(model: nn.Module, ids: Sequence[int]) -> dict[str, torch.Tensor]:
    """Every hook point of ``model`` on one sequence, in eval mode (no dropout)."""
    if len(ids) == 0:
        raise ValueError("there are no tokens to run: type some text.")
    model.eval()
    device = next(model.parameters()).device
    return capture(model, torch.tensor([list(ids)], device=device))


def attention_maps(acts: Mapping[str, torch.Tensor], n_layers: int) -> np.ndarray:
    """``[layer, head, query, key]`` attention weights of the first sequence."""
    return np.stack([acts[f"blocks.{i}.attn_pattern"][0].numpy() for i in range(n_layers)])


def attention_frame(maps: np.ndarray, labels: Sequence[str], block: int, head: int) -> pd.DataFrame:
    """One row per (query, key) of one head: ``block, head, query, key, weight``.

    ``block`` and ``head`` count from 1, as the pages and the frame's columns do
    (``maps[block - 1, head - 1]``)."""
    n_blocks, n_heads = maps.shape[:2]
    for name, value, hi in (("block", block, n_blocks), ("head", head, n_heads)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= hi:
            raise ValueError(f"{name}={value!r} is out of range: choose 1 to {hi}.")
    att = maps[block - 1, head - 1]
    T = att.shape[0]
    q, k = np.meshgrid(range(T), range(T), indexing="ij")
    lab = np.asarray(labels, dtype=object)
    return pd.DataFrame(
        {
            "block": block,
            "head": head,
            "query": lab[q.ravel()],
            "key": lab[k.ravel()],
            "weight": att.ravel().astype(float),
        }
    )


def _token_norm(x: torch.Tensor) -> torch.Tensor:
    return x[0].double().norm(dim=-1)  # (T,)


def residual_stream(acts: Mapping[str, torch.Tensor], cfg: EncoderConfig) -> pd.DataFrame:
    """One row per sublayer (attention, FFN) of every layer.

    Columns: ``block`` (from 1), ``sublayer`` (``attn``/``ffn``), ``index``
    (sublayers counted from the input, 1-based), ``stream_norm`` (mean token
    norm of the stream after the sublayer), ``input_norm`` (``||x||`` going in),
    ``update_norm`` (``||f(x)||``) and ``update_ratio`` (mean over tokens of
    ``||f(x)|| / ||x||``).
    """
    rows = []
    index = 0
    for i in range(cfg.n_layers):
        subs = [("attn", "resid_pre", "attn_out", "resid_mid")]
        if cfg.use_ffn:
            subs.append(("ffn", "resid_mid", "ffn_out", "resid_post"))
        for name, x_in, f_out, x_out in subs:
            index += 1
            xn = _token_norm(acts[f"blocks.{i}.{x_in}"])
            fn = _token_norm(acts[f"blocks.{i}.{f_out}"])
            rows.append(
                {
                    "block": i + 1,
                    "sublayer": name,
                    "index": index,
                    "stream_norm": float(_token_norm(acts[f"blocks.{i}.{x_out}"]).mean()),
                    "input_norm": float(xn.mean()),
                    "update_norm": float(fn.mean()),
                    "update_ratio": float((fn / xn.clamp_min(1e-30)).mean()),
                }
            )
    return pd.DataFrame(rows)


def additive_stream(cfg: EncoderConfig) -> bool:
    """True when the last block's output is exactly embedding + every sublayer output."""
    return cfg.residual and (cfg.norm_position == "pre" or cfg.norm == "none")


def final_is_last_output(cfg: EncoderConfig) -> bool:
    """True when the last block's output is exactly its last sublayer's output: no
    residuals and no norm after the sublayer (Pre-LN, or no norm)."""
    return not cfg.residual and (cfg.norm_position == "pre" or cfg.norm == "none")


def final_share(acts: Mapping[str, torch.Tensor], cfg: EncoderConfig) -> pd.DataFrame:
    """Each component's projection on the final stream ``x_L`` (before the final norm),
    as a fraction of ``||x_L||^2``: ``sum_t <c_t, x_t> / sum_t ||x_t||^2``, in float64
    from the captured stream, for every configuration.

    What the shares mean depends on how ``x_L`` is made, and ``part`` says which
    components are terms of it: where the stream is additive (residuals on, Pre-LN or
    no norm; :func:`additive_stream`) ``x_L = e + sum_l a_l + sum_l f_l``, every
    component is a part and the shares sum to 1 (a share can be negative when a
    component points against the sum). Without residuals and without a norm after the
    sublayer (:func:`final_is_last_output`) ``x_L`` is the last sublayer's output
    itself: its share is 1 and it is the only part; the other components are
    projections of outputs that do not reach ``x_L``. With Post-LN (and a norm)
    ``x_L`` is a normalized vector, no sum of components: no component is a part, and
    each share is only its projection.

    Columns: ``component`` (``embedding``, ``L1 attn``, ``L1 ffn``, ...),
    ``block`` (from 1; 0 for the embedding), ``sublayer``, ``share``, ``part``.
    """
    parts: list[tuple[str, int, str, torch.Tensor]] = [
        ("embedding", 0, "embedding", acts["blocks.0.resid_pre"][0].double())
    ]
    for i in range(cfg.n_layers):
        parts.append((f"L{i + 1} attn", i + 1, "attn", acts[f"blocks.{i}.attn_out"][0].double()))
        if cfg.use_ffn:
            parts.append((f"L{i + 1} ffn", i + 1, "ffn", acts[f"blocks.{i}.ffn_out"][0].double()))
    final = acts[f"blocks.{cfg.n_layers - 1}.resid_post"][0].double()
    additive, last_only = additive_stream(cfg), final_is_last_output(cfg)
    denom = float((final * final).sum())
    rows = [
        (
            name,
            layer,
            sub,
            float((c * final).sum()) / denom if denom > 0 else float("nan"),
            additive or (last_only and k == len(parts) - 1),
        )
        for k, (name, layer, sub, c) in enumerate(parts)
    ]
    return pd.DataFrame(rows, columns=["component", "block", "sublayer", "share", "part"])


def rank_collapse(acts: Mapping[str, torch.Tensor], cfg: EncoderConfig) -> pd.DataFrame:
    """How far the token matrix is from rank one, after each layer (Dong et al. 2021).

    ``residual = ||X - 1 x^T||_F / ||X||_F`` with ``x`` the mean token (the best
    rank-one approximation of this form), and ``cosine``: the mean cosine
    between distinct tokens. One row per ``block`` ``0..L``: the stream after that
    block (counted from 1), block 0 being the input to the first. Computed in
    float64 from the captured float32 stream.
    """
    rows = []
    for block in range(cfg.n_layers + 1):
        key = "blocks.0.resid_pre" if block == 0 else f"blocks.{block - 1}.resid_post"
        X = acts[key][0].double()  # (T, C)
        T = X.shape[0]
        total = float(X.norm())
        resid = float((X - X.mean(0, keepdim=True)).norm()) / total if total > 0 else 0.0
        if T > 1:
            Xn = X / X.norm(dim=-1, keepdim=True).clamp_min(1e-300)
            C = Xn @ Xn.T
            cos = float((C.sum() - C.diagonal().sum()) / (T * (T - 1)))
        else:
            cos = float("nan")
        rows.append({"block": block, "residual": resid, "cosine": cos})
    return pd.DataFrame(rows)


def collapse_variants(cfg: EncoderConfig) -> dict[str, EncoderConfig]:
    """The configuration, its residual flipped, and the attention-only pair (no FFN,
    no norm: Dong et al.'s pure-attention setting) with and without shortcuts."""
    mine = "your model" + ("" if cfg.residual else " (no shortcuts)")
    flipped = "your model, " + ("no shortcuts" if cfg.residual else "with shortcuts")
    attn = dataclasses.replace(cfg, use_ffn=False, norm="none")
    return {
        mine: cfg,
        flipped: dataclasses.replace(cfg, residual=not cfg.residual),
        "attention only, shortcuts": dataclasses.replace(attn, residual=True),
        "attention only, no shortcuts": dataclasses.replace(attn, residual=False),
    }


def rank_collapse_compare(
    cfg: EncoderConfig, ids: Sequence[int], device: torch.device | str | None = None
) -> pd.DataFrame:
    """:func:`rank_collapse` for every variant of :func:`collapse_variants`, at init,
    on the same tokens, each model run in float64 (the same weights, cast): without
    shortcuts the distance falls through many orders of magnitude, past float32's
    floor (about 2e-7, which a float32 run would show as a stalled curve) to float64's
    (about 2e-16). Values under :data:`resviz.words.numbers.FLOAT64_RESOLUTION` are
    rounding; the page and its words say so instead of quoting them. Columns
    ``variant, shortcuts, block, residual, cosine``."""
    frames = []
    # MPS has no float64: there the comparison runs on the CPU.
    where = torch.device(device) if device is not None else None
    if where is not None and where.type == "mps":
        where = torch.device("cpu")
    for name, c in collapse_variants(cfg).items():
        acts = run_encoder(build(c, where).double(), ids)
        frames.append(rank_collapse(acts, c).assign(variant=name, shortcuts=c.residual))
    return pd.concat(frames, ignore_index=True)[
        ["variant", "shortcuts", "block", "residual", "cosine"]
    ]


class Views(TypedDict):
    """What :func:`inspect` returns."""

    attention: np.ndarray
    stream: pd.DataFrame
    share: pd.DataFrame
    collapse: pd.DataFrame


def inspect(model: nn.Module, cfg: EncoderConfig, ids: Sequence[int]) -> Views:
    """Every view of one model on one sequence from a single forward pass:
    ``attention`` (array), ``stream``, ``share`` and ``collapse`` (DataFrames)."""
    acts = run_encoder(model, ids)
    return {
        "attention": attention_maps(acts, cfg.n_layers),
        "stream": residual_stream(acts, cfg),
        "share": final_share(acts, cfg),
        "collapse": rank_collapse(acts, cfg),
    }


def ratio_before_after(init_stream: pd.DataFrame, trained: Mapping[str, Views]) -> pd.DataFrame:
    """Update ratios of your model at init beside every trained model's.

    ``init_stream``: :func:`residual_stream` of your model at init; ``trained``:
    :func:`inspect_trained`. Columns ``model`` (``"your model, init"``,
    ``"<name>, trained"``), ``block, sublayer, stream_norm, update_ratio`` and
    ``series`` (model and sublayer, one line each)."""
    ratio = pd.concat(
        [init_stream.assign(model="your model, init")]
        + [v["stream"].assign(model=f"{n}, trained") for n, v in trained.items()],
        ignore_index=True,
    )
    ratio["series"] = ratio["model"] + " · " + ratio["sublayer"]
    return ratio[["model", "block", "sublayer", "stream_norm", "update_ratio", "series"]]


def collapse_before_after(collapse: pd.DataFrame, trained: Mapping[str, Views]) -> pd.DataFrame:
    """Rank collapse at init (the variants of :func:`rank_collapse_compare` whose
    name starts with ``your model``: yours and its residual flipped) beside every
    trained model's. Columns ``variant, weights`` (``init``/``trained``), ``block,
    residual, cosine`` and ``series`` (variant and weights)."""
    rc = pd.concat(
        [collapse[collapse["variant"].str.startswith("your model")].assign(weights="init")]
        + [v["collapse"].assign(variant=n, weights="trained") for n, v in trained.items()],
        ignore_index=True,
    )
    rc["series"] = rc["variant"] + " · " + rc["weights"]
    return rc[["variant", "weights", "block", "residual", "cosine", "series"]]


__all__ = [
    "Views",
    "additive_stream",
    "attention_frame",
    "attention_maps",
    "collapse_before_after",
    "collapse_variants",
    "final_is_last_output",
    "final_share",
    "inspect",
    "rank_collapse",
    "rank_collapse_compare",
    "ratio_before_after",
    "residual_stream",
    "run_encoder",
]
