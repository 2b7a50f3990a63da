"""Delete, then heal: one block (a contiguous range of blocks, or only one block's
attention or MLP) of a decoder deleted, the rest fine-tuned on the training text, and a
same-size model trained from scratch on the same batches for comparison.

The shared model is never changed: :func:`heal` fine-tunes a copy. Whole blocks are
taken out of the copy's block list (a test checks this equals
:func:`resviz.pretrained.observe.skipping`'s hook, block by block); an attention or MLP
alone is deleted by a hook that makes its output zero, so the block adds nothing
through it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd
import torch
from torch import nn

from resviz.pretrained.checks import PretrainedError, float32_bytes, max_bytes_default
from resviz.pretrained.families import Args, _get, replace_first
from resviz.pretrained.loading import Pretrained

if TYPE_CHECKING:  # for readers and type checkers: transformers is imported lazily
    from transformers import PreTrainedModel

Progress = Callable[[pd.DataFrame, int, int], None]
ShouldStop = Callable[[], bool]

VARIANTS = ("full", "deleted", "healing", "from scratch")
PARTS = ("block", "attention", "mlp")
COLUMNS = ["step", "variant", "held_out_loss", "seed"]
# Training holds two models, each with its gradients and Adam's two moments: 8 x the
# float32 weights, and the passes' activations beside them (a factor of 2 over that).
TRAIN_FACTOR = 16
# The fine-tuning's optimiser and batches (the page's caption quotes them).
LR, BATCH, WINDOW = 3e-4, 4, 64


@dataclass(frozen=True)
class Deletion:
    """What is deleted: blocks ``first`` to ``first + n - 1`` (from 1), whole or only
    their ``part`` (``"attention"`` or ``"mlp"``)."""

    first: int = 1
    n: int = 1
    part: str = "block"

    def blocks(self) -> range:
        return range(self.first, self.first + self.n)

    def check(self, p: Pretrained) -> None:
        if not p.decoder:
            raise PretrainedError(
                f"Delete, then heal trains on next-token loss, so it needs a decoder; "
                f"{p.architecture} is an encoder. Pick the Sonnets GPT-2 or a decoder folder.",
                "architecture",
            )
        if self.part not in PARTS:
            raise ValueError(f"part must be one of {PARTS}")
        last = self.first + self.n - 1
        if self.n < 1 or self.first < 1 or last > p.n_layers:
            raise PretrainedError(f"Blocks must lie within 1 to {p.n_layers}.", "block")
        if self.part == "block" and self.n == p.n_layers:
            raise PretrainedError("Deleting every block leaves nothing to heal.", "block")

    def label(self) -> str:
        which = (
            f"block {self.first}"
            if self.n == 1
            else f"blocks {self.first}-{self.first + self.n - 1}"
        )
        return which if self.part == "block" else f"the {self.part} of {which}"


def heal_bytes(p: Pretrained) -> int:
    """The memory a run takes: :data:`TRAIN_FACTOR` x the model's float32 weights."""
    return TRAIN_FACTOR * float32_bytes(p.n_params)


def budget_refusal(p: Pretrained) -> str | None:
    """Why this model cannot be trained here (over the server's budget), or None."""
    need, have = heal_bytes(p), max_bytes_default()
    if need <= have:
        return None
    return (
        f"Healing trains two copies of this model ({p.n_params / 1e6:,.1f}M parameters) "
        f"with their gradients and optimiser state: about {need / 2**20:,.0f} MB, over this "
        f"server's budget of {have / 2**20:,.0f} MB."
    )


def _zero_output(_m: nn.Module, _a: Args, out: Any) -> object:
    first = out[0] if isinstance(out, tuple | list) else out
    return replace_first(out, torch.zeros_like(first))


def apply(model: PreTrainedModel, p: Pretrained, d: Deletion) -> nn.Module:
    """``model`` (a copy of ``p.model``'s kind) with ``d`` deleted, in place: whole
    blocks removed from its block list (its config's block count to match), or a hook
    that zeroes the part's output on each block."""
    base = p.family.base_of(model)
    blocks = list(_get(base, p.family.blocks))
    if d.part == "block":
        kept = [b for i, b in enumerate(blocks, 1) if i not in d.blocks()]
        *path, name = p.family.blocks.split(".")
        setattr(_get(base, ".".join(path)) if path else base, name, nn.ModuleList(kept))
        model.config.num_hidden_layers = len(kept)
    else:
        attr = p.family.attention if d.part == "attention" else p.family.mlp
        for i in d.blocks():
            _get(blocks[i - 1], attr).register_forward_hook(_zero_output)
    return model


def deleted_copy(p: Pretrained, d: Deletion) -> Pretrained:
    """A copy of ``p`` with ``d`` deleted; ``p`` is left as it was. Taken under the
    model's lock, so no other pass's hooks come with it."""
    d.check(p)
    with p.lock:
        model = copy.deepcopy(p.model)
    return _wrap(p, apply(model, p, d), f"{p.name} without {d.label()}")


def scratch_model(p: Pretrained, d: Deletion, seed: int) -> Pretrained:
    """A model the deleted copy's size: ``p``'s config without the deleted blocks (or
    with the same part zeroed), ``transformers``' own random init, torch seeded with
    ``seed`` (the process's random state is left as it was)."""
    from resviz.pretrained.checks import _BUILD_LOCK

    config = copy.deepcopy(p.config)
    keep = p.n_layers - (d.n if d.part == "block" else 0)
    config.num_hidden_layers = keep
    with _BUILD_LOCK, torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = type(p.model)._from_config(config, attn_implementation="eager", dtype=torch.float32)
    if d.part != "block":
        apply(model, p, d)
    return _wrap(p, model, f"{p.name}'s config from scratch (seed {seed})")


def _wrap(p: Pretrained, model: nn.Module, name: str) -> Pretrained:
    model.eval().requires_grad_(True)
    n = sum(t.numel() for t in model.parameters())
    return Pretrained(model, p.tokenizer, p.family, name, n, float32_bytes(n), p.architecture)


def held_out_ids(p: Pretrained, text: str) -> torch.Tensor:
    """The held-out text's token ids, refused under two tokens (nothing to predict)."""
    ids = torch.tensor(p.tokenizer(text)["input_ids"], dtype=torch.long)
    if len(ids) < 2:
        raise PretrainedError("The held-out text needs at least two tokens.", "text")
    return ids


def held_out_loss(p: Pretrained, ids: torch.Tensor, window: int | None = None) -> float:
    """Mean next-token cross-entropy (nats per token) on ``ids`` (what
    :func:`resviz.pretrained.text_loss` returns for their text): consecutive windows of
    ``window`` tokens (default the model's context), each token after the first of its
    window predicted once, in float64 from the float32 logits; the full windows in one
    batch."""
    window = window or int(getattr(p.config, "n_positions", 0) or p.config.max_position_embeddings)
    n = len(ids) // window
    chunks = [ids[: n * window].view(n, window)] if n else []
    if len(ids) - n * window >= 2:
        chunks.append(ids[n * window :][None])
    total, count = 0.0, 0
    p.model.eval()
    for x in chunks:
        with torch.inference_mode():
            logits = p.model(input_ids=x, use_cache=False).logits.double()
        logp = torch.log_softmax(logits[:, :-1], -1)
        total += float(-logp.gather(-1, x[:, 1:, None]).sum())
        count += x.shape[0] * (x.shape[1] - 1)
    return total / count


def windows(p: Pretrained, text: str, window: int) -> torch.Tensor:
    """The training text's token ids (N,), to draw windows of ``window + 1`` from."""
    ids = torch.tensor(p.tokenizer(text)["input_ids"], dtype=torch.long)
    if len(ids) < window + 2:
        raise PretrainedError(f"The training text needs over {window + 1} tokens.", "text")
    return ids


@dataclass(frozen=True)
class Healing:
    """A run's frame (``step, variant, held_out_loss, seed``) and whether it stopped
    early."""

    frame: pd.DataFrame
    stopped: bool


def heal(
    p: Pretrained,
    train: str,
    held_out: str,
    deletion: Deletion | None = None,
    *,
    steps: int = 60,
    every: int = 10,
    batch: int = BATCH,
    window: int = WINDOW,
    lr: float = LR,
    seed: int = 0,
    progress: Progress | None = None,
    should_stop: ShouldStop | None = None,
) -> Healing:
    """Delete ``deletion`` from a copy of ``p``, fine-tune the copy for ``steps`` steps
    of Adam (``lr``, gradients clipped at 1) on ``batch`` windows of ``window`` tokens
    of ``train`` per step, and train a same-size model from scratch
    (:func:`scratch_model`) on the same batches with the same optimiser. The seed sets
    the batch order, the dropout and the from-scratch model's init. Held-out loss
    (:func:`held_out_loss` on ``held_out``) at step 0 and every
    ``every`` steps; ``full`` and ``deleted`` (the untrained models) stand at every
    step evaluated. ``progress(frame so far, step, steps)``; ``should_stop()`` ends the
    run at the next evaluation."""
    d = deletion or Deletion()
    d.check(p)
    refusal = budget_refusal(p)
    if refusal:
        raise PretrainedError(refusal, "budget")
    ids = windows(p, train, window)
    held = held_out_ids(p, held_out)
    with p.lock:  # no other pass's hooks on the shared model meanwhile
        full = held_out_loss(p, held)
    healing, scratch = deleted_copy(p, d), scratch_model(p, d, seed)
    deleted = held_out_loss(healing, held)
    gen = torch.Generator().manual_seed(seed)
    models = (healing.model, scratch.model)
    opts = [torch.optim.Adam(m.parameters(), lr=lr) for m in models]
    rows: list[dict[str, Any]] = []

    def evaluate(step: int) -> None:
        losses = {"full": full, "deleted": deleted}
        losses["healing"] = held_out_loss(healing, held)
        losses["from scratch"] = held_out_loss(scratch, held)
        rows.extend(
            {"step": step, "variant": v, "held_out_loss": losses[v], "seed": seed} for v in VARIANTS
        )
        if progress is not None:
            progress(pd.DataFrame(rows, columns=COLUMNS), step, steps)

    evaluate(0)
    stopped = False
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)  # dropout
        for step in range(1, steps + 1):
            at = torch.randint(0, len(ids) - window - 1, (batch,), generator=gen)
            x = torch.stack([ids[i : i + window] for i in at.tolist()])
            for m, opt in zip(models, opts, strict=True):
                m.train()
                loss = m(input_ids=x, labels=x, use_cache=False).loss
                opt.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
                opt.step()
            if step % every == 0 or step == steps:
                evaluate(step)
                if should_stop is not None and should_stop() and step < steps:
                    stopped = True
                    break
    return Healing(pd.DataFrame(rows, columns=COLUMNS), stopped)
