"""One small adapter per model family: where its blocks, final norm, embedding and
unembedding live, and how to take its shortcuts out with hooks.

The model is wrapped, never converted (TransformerLens-style weight copies double
memory and drift from the original): every measurement reads the model's own modules
through forward hooks that a context manager always removes.

Families (``config.model_type``):

- ``bert``, ``roberta``: Post-LN encoders; every block ends in a LayerNorm, so there
  is no final norm. The unembedding is the masked-LM head when the checkpoint has one.
- ``gpt2``: Pre-LN decoder, ``transformer.h``, final norm ``ln_f``.
- ``gpt_neox`` (Pythia): Pre-LN decoder, ``gpt_neox.layers``, final norm
  ``final_layer_norm``; attention and MLP read the same input when
  ``use_parallel_residual`` (Pythia's setting).
- ``llama``, ``mistral``, ``qwen2``: Pre-RMSNorm decoders, ``model.layers``, final
  norm ``model.norm``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

if TYPE_CHECKING:  # for readers and type checkers: transformers is imported lazily
    from transformers import PreTrainedModel

# A forward hook's positional and keyword arguments, as torch passes them on.
Args = tuple[Any, ...]
Kwargs = dict[str, Any]


def first(output: Any) -> torch.Tensor:
    """The hidden states in a module's output (a tensor, or a tuple led by one)."""
    return output[0] if isinstance(output, tuple | list) else output


def replace_first(output: Any, value: torch.Tensor) -> Any:
    """``output`` with its hidden states replaced, keeping its structure."""
    if isinstance(output, tuple | list):
        return type(output)((value, *output[1:]))
    return value


def block_input(args: Args, kwargs: Kwargs) -> torch.Tensor:
    """The hidden states a block was called with (positionally or by name)."""
    return args[0] if args else kwargs["hidden_states"]


@dataclass(frozen=True)
class Family:
    """Where one family keeps its parts. ``base`` names the attribute of a model with a
    head that holds the bare model (a bare model is its own base)."""

    name: str  # what a user reads: "BERT-like encoder", "GPT-2", ...
    decoder: bool
    base: str
    blocks: str  # path of the block list, from the base
    final_norm: str | None  # from the base
    embedding: str  # token embedding, from the base
    attention: str  # a block's attention module, from the block
    mlp: str  # a block's MLP module, from the block

    def base_of(self, model: nn.Module) -> nn.Module:
        return getattr(model, self.base, model)

    def block_list(self, model: nn.Module) -> list[nn.Module]:
        return list(_get(self.base_of(model), self.blocks))

    def final_norm_of(self, model: nn.Module) -> nn.Module | None:
        return None if self.final_norm is None else _get(self.base_of(model), self.final_norm)

    def embedding_of(self, model: nn.Module) -> nn.Module:
        return _get(self.base_of(model), self.embedding)

    def unembedding_of(self, model: PreTrainedModel) -> nn.Module | None:
        """The module that maps a (final-normed) stream to logits, or None (no head)."""
        if self.decoder:
            return model.get_output_embeddings()
        head = getattr(model, "cls", None)
        return head if head is not None else getattr(model, "lm_head", None)

    @contextmanager
    def without_shortcuts(self, model: nn.Module) -> Iterator[None]:
        """Every block's identity paths removed, through hooks on its own sub-layers.

        Sequential Pre-LN (GPT-2, Llama, GPT-NeoX without parallel residual): a block
        computes ``h = x + A(N1 x)``, ``y = h + M(N2 h)``; with the hooks ``h = A(N1 x)``
        and ``y = M(N2 h)``. Parallel (Pythia): ``y = x + A(N1 x) + M(N2 x)`` becomes
        ``A(N1 x) + M(N2 x)``. Post-LN (BERT): ``h = LN(x + A(x))``, ``y = LN(h + M(h))``
        become ``LN(A(x))`` and ``LN(M(h))``. Weights, norms and embeddings are unchanged.
        """
        handles = []
        for block in self.block_list(model):
            handles += self._shortcut_hooks(model, block)
        try:
            yield
        finally:
            for h in handles:
                h.remove()

    def _shortcut_hooks(self, model: nn.Module, block: nn.Module) -> list[Any]:
        attn, mlp = _get(block, self.attention), _get(block, self.mlp)
        if not self.decoder:
            # BertSelfOutput / BertOutput add their ``input_tensor`` before the LayerNorm.
            def zero_input(_m: nn.Module, args: Args, kwargs: Kwargs) -> tuple[Args, Kwargs]:
                if len(args) >= 2:
                    return (args[0], torch.zeros_like(args[1]), *args[2:]), kwargs
                kwargs = dict(kwargs, input_tensor=torch.zeros_like(kwargs["input_tensor"]))
                return args, kwargs

            return [
                _get(attn, "output").register_forward_pre_hook(zero_input, with_kwargs=True),
                mlp.register_forward_pre_hook(zero_input, with_kwargs=True),
            ]
        seen: dict[str, torch.Tensor] = {}

        def grab(_m: nn.Module, args: Args, kwargs: Kwargs) -> None:
            seen["x"] = block_input(args, kwargs)

        def attn_out(_m: nn.Module, _a: Args, _k: Kwargs, out: Any) -> Any:
            a = first(out)
            seen["a"] = a
            return replace_first(out, a - seen["x"])  # the block adds x back: x + (a - x) = a

        hooks = [
            block.register_forward_pre_hook(grab, with_kwargs=True),
            attn.register_forward_hook(attn_out, with_kwargs=True),
        ]
        parallel = bool(getattr(model.config, "use_parallel_residual", False))
        if not parallel:

            def mlp_out(_m: nn.Module, _a: Args, _k: Kwargs, out: Any) -> Any:
                return replace_first(out, first(out) - seen["a"])  # h + (m - h) = m, h = a

            hooks.append(mlp.register_forward_hook(mlp_out, with_kwargs=True))
        return hooks


def _get(obj: Any, path: str) -> Any:
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


_BERT = Family(
    "BERT-like encoder",
    decoder=False,
    base="bert",
    blocks="encoder.layer",
    final_norm=None,
    embedding="embeddings.word_embeddings",
    attention="attention",
    mlp="output",
)
FAMILIES: dict[str, Family] = {
    "bert": _BERT,
    "roberta": Family(**{**_BERT.__dict__, "base": "roberta"}),
    "gpt2": Family(
        "GPT-2",
        decoder=True,
        base="transformer",
        blocks="h",
        final_norm="ln_f",
        embedding="wte",
        attention="attn",
        mlp="mlp",
    ),
    "gpt_neox": Family(
        "GPT-NeoX (Pythia)",
        decoder=True,
        base="gpt_neox",
        blocks="layers",
        final_norm="final_layer_norm",
        embedding="embed_in",
        attention="attention",
        mlp="mlp",
    ),
}
for _llama_like in ("llama", "mistral", "qwen2"):
    FAMILIES[_llama_like] = Family(
        "Llama-like decoder",
        decoder=True,
        base="model",
        blocks="layers",
        final_norm="norm",
        embedding="embed_tokens",
        attention="self_attn",
        mlp="mlp",
    )

# The classes ``load`` instantiates, by the name a checkpoint's config.json gives in
# ``architectures``; a checkpoint without one gets its family's first class.
ARCHITECTURES: dict[str, tuple[str, ...]] = {
    "bert": ("BertForMaskedLM", "BertModel"),
    "roberta": ("RobertaForMaskedLM", "RobertaModel"),
    "gpt2": ("GPT2LMHeadModel", "GPT2Model"),
    "gpt_neox": ("GPTNeoXForCausalLM", "GPTNeoXModel"),
    "llama": ("LlamaForCausalLM", "LlamaModel"),
    "mistral": ("MistralForCausalLM", "MistralModel"),
    "qwen2": ("Qwen2ForCausalLM", "Qwen2Model"),
}


def supported() -> str:
    """The supported ``model_type`` values, for messages."""
    return ", ".join(sorted(FAMILIES))
