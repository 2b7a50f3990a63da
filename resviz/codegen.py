"""``generate_code(cfg)``: standalone PyTorch code for any config resviz builds."""

from __future__ import annotations

from . import codegen_encoder, codegen_stack
from .config import EncoderConfig, StackConfig


def generate_code(cfg: StackConfig | EncoderConfig) -> str:
    """A self-contained script (only torch) for exactly ``cfg``; its ``build_model()``
    gives the same weights as ``rv.build(cfg)``. Stacks: :func:`resviz.codegen_stack.generate_code`;
    encoders: :func:`resviz.codegen_encoder.generate_code`."""
    if isinstance(cfg, StackConfig):
        return codegen_stack.generate_code(cfg)
    if isinstance(cfg, EncoderConfig):
        return codegen_encoder.generate_code(cfg)
    raise TypeError(
        f"generate_code() takes a StackConfig or EncoderConfig, not {type(cfg).__name__}."
    )
