"""Training with a norm: the warm-up comparison and the stability experiment.

* :func:`warmup_variants`, :func:`train_warmup`: Post-LN and Pre-LN encoders trained
  on the copy task without and with a linear learning-rate warm-up, same seed and
  batches. Xiong et al. 2020 ("On Layer Normalization in the Transformer
  Architecture"): Post-LN's large last-layer gradients at init make it need the
  warm-up, Pre-LN's do not (the measures at init are :mod:`resviz.norms.prepost`).
* :func:`stability_variants`: the stability experiment, residual x
  norm (a 2x2 of FFN stacks), with the norm's type and placement, plus extra variants.
* :func:`variant_table`, :func:`run_summary`: the tables both training sections show,
  the models compared and what each run did (first, final, lowest loss; divergence).

The runs are :func:`resviz.train_compare`'s (one seed, identical batches):
:func:`train_warmup` calls it once without and once with warm-up; the stability
variants are passed to it as they are.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TypeGuard

import pandas as pd
import torch

from resviz.budget import estimate
from resviz.config import EncoderConfig, NormPosition, NormType, StackConfig
from resviz.train.compare import train_compare
from resviz.train.divergence import Divergence

NORM_LABELS = {"layer": "LayerNorm", "rms": "RMSNorm", "batch": "BatchNorm", "none": "no norm"}


def _is_norm(name: str) -> TypeGuard[NormType]:
    return name in NORM_LABELS


# ------------------------------------------------------------- warm-up training
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

        def cb(
            df: pd.DataFrame,
            step: int,
            total: int,
            i: int = i,
            label: Callable[[pd.DataFrame], pd.DataFrame] = label,
        ) -> None:
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


# ------------------------------------------------------------- stability experiment
def stability_variants(
    norm: NormType = "layer",
    position: NormPosition = "pre",
    depth: int = 4,
    width: int = 128,
    extra: tuple[str, ...] = (),
) -> dict[str, StackConfig]:
    """The 2x2 (residual x norm; FFN blocks ``W2 gelu(W1 x)``, 4 blocks,
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
            other: NormPosition = "post" if position == "pre" else "pre"
            out[f"residual + {name} ({other})"] = dataclasses.replace(
                base, residual="add", norm=norm, norm_position=other
            )
        elif _is_norm(e) and e not in ("none", norm):
            out[f"residual + {NORM_LABELS[e]} ({position})"] = dataclasses.replace(
                base,
                residual="add",
                norm=e,
                norm_position=position,
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
                "layers": cfg.n_layers if isinstance(cfg, EncoderConfig) else cfg.depth,
                "width": cfg.d_model if isinstance(cfg, EncoderConfig) else cfg.width,
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


def warmup_models(w_layers: int | str) -> dict[str, EncoderConfig]:
    """The Warm-up section's two encoders (d = 64, 4 heads, vocabulary 64)."""
    return warmup_variants(int(w_layers), 64)


def stability_models(
    s_norm: str, s_pos: str, s_norms: bool, s_place: bool
) -> dict[str, StackConfig]:
    """The Stability section's stacks: the 2x2 of residual x ``s_norm`` at ``s_pos``,
    plus residual with each other norm type (``s_norms``) and with the other
    placement (``s_place``)."""
    extra = tuple(n for n in ("layer", "rms", "batch") if s_norms and n != s_norm)
    extra += ("other placement",) if s_place else ()
    return stability_variants(s_norm, s_pos, extra=extra)  # type: ignore[arg-type]


__all__ = [
    "stability_models",
    "warmup_models",
    "NORM_LABELS",
    "run_summary",
    "stability_variants",
    "train_warmup",
    "variant_table",
    "warmup_variants",
]
