"""Tiny random models of every supported family, saved with ``save_pretrained`` and
loaded back by path exactly as a user's folder is (no download, no network).

Each gets a small tokenizer trained here with ``tokenizers`` on a fixed text: a
WordPiece one with [CLS]/[SEP] for the encoders, a byte-level BPE one for the decoders.
"""

from __future__ import annotations

from pathlib import Path

TEXT = (
    "The residual stream carries every block's update. Each block reads the stream, "
    "computes attention and a feed-forward update, and adds them back. Deleting a middle "
    "block changes little; deleting the first changes much. The quick brown fox jumps "
    "over the lazy dog, and the dog sleeps in the sun while the fox runs to the wood."
)
FAMILY_CONFIGS: dict[str, dict[str, object]] = {
    "bert": dict(
        hidden_size=32, num_hidden_layers=3, num_attention_heads=2, intermediate_size=64,
        max_position_embeddings=128,
    ),
    "roberta": dict(
        hidden_size=32, num_hidden_layers=3, num_attention_heads=2, intermediate_size=64,
        max_position_embeddings=130, pad_token_id=0,
    ),
    "gpt2": dict(n_embd=32, n_layer=3, n_head=2, n_positions=128),
    "gpt_neox": dict(
        hidden_size=32, num_hidden_layers=3, num_attention_heads=2, intermediate_size=64,
        max_position_embeddings=128,
    ),
    "llama": dict(
        hidden_size=32, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
        intermediate_size=64, max_position_embeddings=128,
    ),
}  # fmt: skip
for _llama_like in ("mistral", "qwen2"):
    FAMILY_CONFIGS[_llama_like] = FAMILY_CONFIGS["llama"]
HEADS = {
    "bert": "AutoModelForMaskedLM",
    "roberta": "AutoModelForMaskedLM",
    "mistral": "AutoModelForCausalLM",
    "qwen2": "AutoModelForCausalLM",
    "gpt2": "AutoModelForCausalLM",
    "gpt_neox": "AutoModelForCausalLM",
    "llama": "AutoModelForCausalLM",
}


def tokenizer(encoder: bool):  # noqa: ANN201 - a transformers tokenizer
    import tokenizers
    from tokenizers import decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    if encoder:
        tok = tokenizers.Tokenizer(models.WordPiece(unk_token="[UNK]"))
        tok.normalizer = tokenizers.normalizers.BertNormalizer(lowercase=True)
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
        tok.train_from_iterator(
            [TEXT], trainers.WordPieceTrainer(vocab_size=120, special_tokens=special)
        )
        cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
        tok.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]", special_tokens=[("[CLS]", cls), ("[SEP]", sep)]
        )
        tok.decoder = decoders.WordPiece()
        return PreTrainedTokenizerFast(
            tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
            sep_token="[SEP]", mask_token="[MASK]",
        )  # fmt: skip
    tok = tokenizers.Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(
        [TEXT],
        trainers.BpeTrainer(
            vocab_size=300, special_tokens=["<|endoftext|>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        ),
    )  # fmt: skip
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>")


def save_tiny(family: str, folder: Path, seed: int = 0, **overrides: object) -> Path:
    """A random ``family`` model and its tokenizer saved in ``folder``; returns it."""
    import torch
    import transformers

    encoder = family in ("bert", "roberta")
    tok = tokenizer(encoder=encoder)
    special = (
        {}
        if family == "bert"
        else {"bos_token_id": tok.eos_token_id, "eos_token_id": tok.eos_token_id}
    )
    cfg = transformers.AutoConfig.for_model(
        family, vocab_size=len(tok), **{**FAMILY_CONFIGS[family], **special, **overrides}
    )
    torch.manual_seed(seed)
    model = getattr(transformers, HEADS[family]).from_config(cfg)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder
