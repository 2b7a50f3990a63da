"""Masked-token training on the user's text: a tiny BERT objective, side by side.

:func:`train_masked` trains every variant (the user's encoder and one to compare,
:func:`training_variants`) on the same seeded batches of :func:`resviz.data.masked_batch`
(15% of tokens hidden, cross-entropy at the hidden positions only, as in BERT,
Devlin et al. 2019) through :class:`resviz.train.loop.Trainer`, and returns a
:class:`MaskedRun` (curves and trained weights). Then: the first batch as text
(:func:`batch_frame`), the trained models' guesses at masked positions
(:func:`predict_masked`, :func:`masked_predictions`) and the views of
:mod:`resviz.encoder.views` on the trained weights (:func:`inspect_trained`).
Text is data: it is split and counted, never evaluated or rendered.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import pandas as pd
import torch
from torch import nn
from torch.nn import functional as F

from resviz.config import EncoderConfig
from resviz.data import MASK, Vocab, masked_batch
from resviz.encoder.views import Views, inspect
from resviz.models import build
from resviz.train.loop import Trainer

# Training reads at most this many tokens of the text (the views read max_len).
TRAIN_MAX_TOKENS = 4096


def batch_frame(
    ids: Sequence[int],
    vocab: Vocab,
    batch_size: int = 8,
    seq_len: int = 32,
    seed: int = 0,
    mask_rate: float = 0.15,
) -> pd.DataFrame:
    """The first batch :func:`train_masked` draws with ``seed`` (same arguments), as text.

    One row per window: ``window`` (from 1), ``input`` (its tokens as the model sees
    them, ``[MASK]`` where hidden), ``hidden`` (the masked tokens, in order) and
    ``n_masked``. Words are joined with spaces, characters without.
    """
    stream = torch.tensor(list(ids)[:TRAIN_MAX_TOKENS])
    gen = torch.Generator().manual_seed(seed)
    x, y = masked_batch(stream, batch_size, seq_len, gen, mask_rate)
    sep = " " if vocab.level == "word" else ""
    rows = []
    for w in range(x.shape[0]):
        hidden = [vocab.token(int(t)) for t in y[w] if int(t) != -100]
        rows.append(
            {
                "window": w + 1,
                "input": sep.join(vocab.token(int(t)) for t in x[w]),
                "hidden": ", ".join(hidden),
                "n_masked": len(hidden),
            }
        )
    return pd.DataFrame(rows)


@dataclass
class MaskedRun:
    """What :func:`train_masked` returns: loss curves and the trained weights (CPU)."""

    curves: pd.DataFrame
    states: dict[str, dict[str, torch.Tensor]]
    configs: dict[str, EncoderConfig]
    stopped: bool = False

    def model(self, name: str, device: torch.device | str | None = None) -> nn.Module:
        """The trained model ``name``, rebuilt and loaded strictly."""
        m = build(self.configs[name], device)
        m.load_state_dict(self.states[name])
        return m.eval()


def _masked_loss(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The cross-entropy of ``model``'s guesses where ``y`` holds a hidden token (-100
    elsewhere)."""
    logits = model(x)  # (B, L, V)
    return F.cross_entropy(logits.flatten(0, 1), y.flatten(), ignore_index=-100)


def train_masked(
    variants: Mapping[str, EncoderConfig],
    ids: Sequence[int],
    steps: int = 150,
    seed: int = 0,
    lr: float = 3e-3,
    batch_size: int = 8,
    seq_len: int = 32,
    mask_rate: float = 0.15,
    device: torch.device | str | None = None,
    callback: Callable[[pd.DataFrame, int, int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    sync_every: int = 10,
) -> MaskedRun:
    """Train every variant on the masked-token task over ``ids`` (a tiny BERT objective).

    Each model is built with its config's seed replaced by ``seed`` and trained with
    Adam; batch ``t`` is the same for every variant. The loss is the cross-entropy
    at masked positions only. Curves: ``variant, step, loss, grad_norm, diverged,
    divergence`` (steps count from 1; ``grad_norm``: total L2 norm of the gradients
    before the update). A variant that diverges (:func:`resviz.first_divergence`:
    loss or gradient NaN/Inf, or loss above ``DIVERGENCE_FACTOR`` times its first
    loss) stops there with ``diverged=True`` and the reason in ``divergence`` on
    that step; ``curves.attrs["diverged"]`` maps variant -> step and
    ``curves.attrs["divergence"]`` variant -> :class:`resviz.Divergence`.
    ``callback(curves_so_far, step, steps)`` and ``should_stop()`` run every
    ``sync_every`` steps, as in :func:`resviz.train_compare`, whose rule for stepping
    the variants in parallel threads (the same numbers as one after another) this
    follows too.
    """
    if not variants:
        raise ValueError("train_masked needs at least one variant.")
    if len(ids) < 2:
        raise ValueError("the text needs at least 2 tokens to train on.")
    if max(ids) >= min(c.vocab_size for c in variants.values()):
        raise ValueError("a token id is outside a variant's vocabulary.")
    columns = ("variant", "step", "loss", "grad_norm", "diverged", "divergence")

    def curves(run: Trainer[EncoderConfig]) -> pd.DataFrame:
        df = run.frame(columns)
        df["loss"] = df["loss"].astype(float)
        df["grad_norm"] = df["grad_norm"].astype(float)
        df.attrs = {k: run.attrs[k] for k in ("diverged", "divergence")}
        return df

    def progress(run: Trainer[EncoderConfig], done: int) -> None:
        if callback is not None:
            callback(curves(run), done, steps)

    run = Trainer(
        variants,
        steps,
        seed=seed,
        lr=lr,
        device=device,
        first_step=1,
        sync_every=sync_every,
        progress=progress,
        should_stop=should_stop,
        workers=None,  # in parallel where that gives the same numbers (variant_workers)
    )
    stream = torch.tensor(list(ids)[:TRAIN_MAX_TOKENS])
    seq_len = min(seq_len, min(c.max_len for c in run.configs.values()))
    # One generator serves every variant: batch t is the same for all of them.
    gen = torch.Generator().manual_seed(seed)
    for _ in run:
        x, y = masked_batch(stream, batch_size, seq_len, gen, mask_rate)
        x, y = x.to(run.device), y.to(run.device)

        def loss_of(
            _name: str, model: nn.Module, x: torch.Tensor = x, y: torch.Tensor = y
        ) -> torch.Tensor:
            return _masked_loss(model, x, y)

        run.update_all(loss_of)
    states = {
        n: {k: v.detach().to("cpu", copy=True) for k, v in m.state_dict().items()}
        for n, m in run.models.items()
    }
    return MaskedRun(curves=curves(run), states=states, configs=run.configs, stopped=run.stopped)


def mask_positions(n: int, rate: float = 0.15, seed: int = 0) -> list[int]:
    """About ``rate * n`` positions of ``n`` (at least one), chosen from ``seed``."""
    if n < 1:
        return []
    k = max(1, round(rate * n))
    gen = torch.Generator().manual_seed(seed)
    return sorted(torch.randperm(n, generator=gen)[:k].tolist())


def predict_masked(
    model: nn.Module,
    ids: Sequence[int],
    vocab: Vocab,
    positions: Sequence[int],
    top_k: int = 3,
) -> pd.DataFrame:
    """Mask ``positions`` of ``ids`` together and read the model's guesses there.

    Columns: ``position, token`` (the hidden one), ``prediction`` (top-1),
    ``correct``, ``p_token`` (probability given to the hidden token) and ``top``
    (the ``top_k`` guesses with probabilities, as text).
    """
    x = torch.tensor([list(ids)])
    pos = list(positions)
    x[0, pos] = MASK
    model.eval()
    device = next(model.parameters()).device
    with torch.no_grad():
        probs = torch.softmax(model(x.to(device))[0, pos].float().cpu(), dim=-1)  # (P, V)
    top_p, top_i = probs.topk(min(top_k, probs.shape[-1]), dim=-1)
    rows = []
    for r, p in enumerate(pos):
        true = ids[p]
        guess = int(top_i[r, 0])
        rows.append(
            {
                "position": p,
                "token": vocab.token(true),
                "prediction": vocab.token(guess),
                "correct": guess == true,
                "p_token": float(probs[r, true]),
                "top": ", ".join(
                    f"{vocab.token(int(i))} ({float(q):.2f})"
                    for q, i in zip(top_p[r], top_i[r], strict=True)
                ),
            }
        )
    return pd.DataFrame(rows)


# ------------------------------------------------- training against another model
FLIPPED = "the same, residual flipped"


def training_variants(cfg: EncoderConfig, against: str = FLIPPED) -> dict[str, EncoderConfig]:
    """``{"your model": cfg, <other>: ...}``: the models the playground trains side by side.

    ``against`` is :data:`FLIPPED` (the same configuration with its residual
    switched, named ``"same, no residuals"`` or ``"same, with residuals"``) or a
    preset name of ``resviz.ENCODER_PRESETS``, given this configuration's
    vocabulary, length and seed.
    """
    if against == FLIPPED:
        name = "same, " + ("no residuals" if cfg.residual else "with residuals")
        return {"your model": cfg, name: dataclasses.replace(cfg, residual=not cfg.residual)}
    from resviz.config import ENCODER_PRESETS

    if against not in ENCODER_PRESETS:
        raise ValueError(
            f"against={against!r} is not {FLIPPED!r} or one of {', '.join(ENCODER_PRESETS)}."
        )
    other = dataclasses.replace(
        ENCODER_PRESETS[against], vocab_size=cfg.vocab_size, max_len=cfg.max_len, seed=cfg.seed
    )
    return {"your model": cfg, against: other}


def masked_predictions(
    run: MaskedRun,
    ids: Sequence[int],
    vocab: Vocab,
    positions: Sequence[int],
    device: torch.device | str | None = None,
) -> pd.DataFrame:
    """:func:`predict_masked` for every trained model of ``run``, one after the other.

    Columns ``variant, position, token, prediction, correct, p_token, top``."""
    frames = [
        predict_masked(run.model(n, device), ids, vocab, positions).assign(variant=n)
        for n in run.configs
    ]
    cols = ["variant", "position", "token", "prediction", "correct", "p_token", "top"]
    return pd.concat(frames, ignore_index=True)[cols]


def inspect_trained(
    run: MaskedRun, ids: Sequence[int], device: torch.device | str | None = None
) -> dict[str, Views]:
    """:func:`inspect` on every trained model of ``run``, by name."""
    return {n: inspect(run.model(n, device), run.configs[n], ids) for n in run.configs}


__all__ = [
    "FLIPPED",
    "TRAIN_MAX_TOKENS",
    "MaskedRun",
    "batch_frame",
    "inspect_trained",
    "mask_positions",
    "masked_predictions",
    "predict_masked",
    "train_masked",
    "training_variants",
]
