"""One forward pass of a loaded model on a text, observed through hooks on its blocks.

The residual stream is read where the family adapter says the blocks are: ``x_0`` is
the first block's input (the embeddings), ``x_l`` block ``l``'s output (blocks
counted from 1), before any final norm. Attention maps come from the model's eager
attention (``output_attentions``). Every hook is removed in ``finally``; tensors are
detached copies on the CPU.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch

from resviz.pretrained.families import Args, Kwargs, block_input, first, replace_first
from resviz.pretrained.loading import Pretrained, PretrainedError

MAX_TOKENS = 256


def tokenize(p: Pretrained, text: str, max_tokens: int = MAX_TOKENS) -> tuple[torch.Tensor, bool]:
    """Token ids (with the tokenizer's own special tokens) and whether the text was cut."""
    if not text or not text.strip():
        raise PretrainedError("Type some text to run the model on.", "text")
    ids = p.tokenizer(text, add_special_tokens=True)["input_ids"]
    limit = min(max_tokens, int(getattr(p.config, "max_position_embeddings", 0) or max_tokens))
    limit = min(limit, int(getattr(p.config, "n_positions", 0) or limit))
    truncated = len(ids) > limit
    if not ids:
        raise PretrainedError("The tokenizer made no tokens of this text.", "text")
    return torch.tensor(ids[:limit], dtype=torch.long), truncated


def token_texts(p: Pretrained, ids: torch.Tensor) -> list[str]:
    """Each token as the text it stands for (decoded one by one)."""
    return [p.tokenizer.decode([int(i)]) for i in ids]


@contextmanager
def stream_hooks(p: Pretrained, into: list[torch.Tensor | None]) -> Iterator[None]:
    """Fill ``into`` (length L + 1) with x_0 .. x_L during the forward passes inside."""
    blocks = p.blocks

    def pre(_m: torch.nn.Module, args: Args, kwargs: Kwargs) -> None:
        into[0] = block_input(args, kwargs).detach()[0].clone()

    def make_post(i: int) -> Callable[[torch.nn.Module, Args, Kwargs, object], None]:
        def post(_m: torch.nn.Module, _a: Args, _k: Kwargs, out: object) -> None:
            into[i + 1] = first(out).detach()[0].clone()

        return post

    handles = [blocks[0].register_forward_pre_hook(pre, with_kwargs=True)]
    handles += [
        b.register_forward_hook(make_post(i), with_kwargs=True) for i, b in enumerate(blocks)
    ]
    try:
        yield
    finally:
        for h in handles:
            h.remove()


@contextmanager
def skipping(p: Pretrained, block: int) -> Iterator[None]:
    """Block ``block`` (from 1) returns its input as its output: the block deleted,
    through a hook, without copying the model. (It still runs; its result is dropped.)
    Holds the model's lock, so no other pass runs while the hook is in place."""
    if not 1 <= block <= p.n_layers:
        raise ValueError(f"block must be 1 to {p.n_layers}")

    def identity(_m: torch.nn.Module, args: Args, kwargs: Kwargs, out: object) -> object:
        return replace_first(out, block_input(args, kwargs))

    with p.lock:
        handle = p.blocks[block - 1].register_forward_hook(identity, with_kwargs=True)
        try:
            yield
        finally:
            handle.remove()


@dataclass(eq=False)
class Run:
    """What one forward pass gives: the stream, attention (when asked), the output."""

    stream: torch.Tensor  # (L + 1, T, C)
    attentions: torch.Tensor | None  # (L, H, T, T)
    logits: torch.Tensor | None  # (T, V), the model's own head; None without one
    last_hidden: torch.Tensor  # (T, C): the model's output stream (final norm applied)


def forward(p: Pretrained, ids: torch.Tensor, attentions: bool = False) -> Run:
    """Run the model on ``ids`` (T,) and capture its stream through block hooks."""
    into: list[torch.Tensor | None] = [None] * (p.n_layers + 1)
    with p.lock, torch.inference_mode(), stream_hooks(p, into):
        extra = {"use_cache": False} if p.decoder else {}  # no KV cache for one pass
        out = p.model(
            input_ids=ids[None], output_attentions=attentions, output_hidden_states=True, **extra
        )
    logits = getattr(out, "logits", None)
    att = None
    if attentions:
        att = torch.stack([a[0] for a in out.attentions]).float()
    return Run(
        stream=torch.stack(into),  # type: ignore[arg-type]
        attentions=att,
        logits=None if logits is None else logits[0].float(),
        last_hidden=out.hidden_states[-1][0],
    )


@dataclass(eq=False)
class Trace:
    """A model's pass over one text, with its tokens. Recipes read it."""

    model: Pretrained
    text: str
    ids: torch.Tensor  # (T,)
    tokens: list[str]
    truncated: bool
    run: Run

    @property
    def stream(self) -> torch.Tensor:
        return self.run.stream

    @property
    def n_tokens(self) -> int:
        return int(self.ids.numel())


def trace(p: Pretrained, text: str, max_tokens: int = MAX_TOKENS) -> Trace:
    """One pass of ``p`` over ``text`` (at most ``max_tokens`` tokens), stream and attention."""
    ids, truncated = tokenize(p, text, max_tokens)
    run = forward(p, ids, attentions=True)
    return Trace(p, text, ids, token_texts(p, ids), truncated, run)
