"""What a configuration will cost, estimated before anything is allocated.

``estimate`` builds the model on PyTorch's ``meta`` device (shapes only, no
memory, no init), counts parameters exactly, and derives forward FLOPs and a
training activation-memory estimate from the layer shapes. ``combine`` adds up
models that train side by side. ``Budget`` holds the limits a shared server
applies; ``Budget.check`` returns a message that states the estimate, the limit
and what to reduce, or None when the run fits.

Limits default to values that keep one request comfortable on a 1 GB server
and can be set with environment variables (``RESVIZ_MAX_PARAMS``,
``RESVIZ_MAX_ACTIVATION_MB``, ``RESVIZ_MAX_MEMORY_MB``, ``RESVIZ_MAX_GFLOP``);
the app also reads a ``[budget]`` table from Streamlit secrets with the same
names in lower case.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

from resviz.config import EncoderConfig, StackConfig
from resviz.models import Encoder, Stack

BYTES = 4  # float32


@dataclass(frozen=True)
class Estimate:
    """Cost of running a config on ``batch`` sequences of ``seq_len`` tokens."""

    params: int
    flops_forward: float
    activation_bytes: int
    steps: int = 0
    bytes_per_value: int = BYTES

    @property
    def param_bytes(self) -> int:
        return self.params * self.bytes_per_value

    @property
    def flops_total(self) -> float:
        """Forward only when ``steps == 0``; otherwise training (about 3x forward per step)."""
        return self.flops_forward if self.steps == 0 else 3.0 * self.flops_forward * self.steps

    @property
    def memory_bytes(self) -> int:
        """Weights, Adam state and gradients (4 copies when training) plus activations."""
        copies = 4 if self.steps else 1
        return copies * self.param_bytes + self.activation_bytes

    def describe(self) -> str:
        return (
            f"{human_count(self.params)} parameters, ~{human_bytes(self.memory_bytes)} memory, "
            f"~{human_flops(self.flops_total)}"
        )


def human_count(n: float) -> str:
    for unit, size in (("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= size:
            return f"{n / size:.3g}{unit}"
    return f"{n:.0f}"


def human_bytes(n: float) -> str:
    for unit, size in (("GB", 2**30), ("MB", 2**20), ("kB", 2**10)):
        if abs(n) >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:.0f} B"


def human_flops(n: float) -> str:
    for unit, size in (("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6)):
        if abs(n) >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:.0f} FLOP"


class _SkipMetaInit(TorchFunctionMode):
    """Skip weight initialisation on meta tensors: they hold no values, so it cannot
    change a count, and ``normal_`` on a meta tensor goes through torch's Python
    reference implementations, whose first use imports ``torch._dynamo`` (about
    1.2 s and 70 MB resident for a server that never compiles anything)."""

    INIT = frozenset(
        {"normal_", "uniform_", "trunc_normal_", "kaiming_normal_", "kaiming_uniform_",
         "xavier_normal_", "xavier_uniform_", "orthogonal_", "zeros_", "ones_",
         "constant_", "zero_", "fill_"}
    )  # fmt: skip

    def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        kwargs = kwargs or {}
        if getattr(func, "__name__", "") in self.INIT:
            target = args[0] if args else kwargs.get("tensor")
            if isinstance(target, torch.Tensor) and target.is_meta:
                return target
        return func(*args, **kwargs)


def _meta_model(cfg: StackConfig | EncoderConfig) -> nn.Module:
    with torch.device("meta"), _SkipMetaInit():
        return Stack(cfg) if isinstance(cfg, StackConfig) else Encoder(cfg)


@functools.lru_cache(maxsize=512)
def estimate(
    cfg: StackConfig | EncoderConfig,
    batch: int = 1,
    seq_len: int | None = None,
    steps: int = 0,
    bytes_per_value: int = BYTES,
) -> Estimate:
    """Parameters, forward FLOPs and training activation memory for one batch.

    ``bytes_per_value`` is 4 for the float32 models resviz builds, 8 for a float64
    measurement (the gradient-flow page's, which casts the stack to float64).

    Stacks treat every row as a token (``seq_len`` defaults to 1); encoders
    default to ``cfg.max_len`` tokens. FLOPs count multiply-adds as 2 and
    include attention's two T x T products; element-wise work is ignored.
    Activation memory counts the tensors autograd keeps for the backward pass.
    Results are memoised (configs are frozen and hashable).
    """
    if batch < 1:
        raise ValueError("batch must be at least 1.")
    if isinstance(cfg, EncoderConfig):
        seq = cfg.max_len if seq_len is None else seq_len
        if not 1 <= seq <= cfg.max_len:
            raise ValueError(f"seq_len={seq} is out of range: choose 1 to {cfg.max_len}.")
    elif isinstance(cfg, StackConfig):
        seq = 1 if seq_len is None else seq_len
        if seq < 1:
            raise ValueError("seq_len must be at least 1.")
    else:
        raise TypeError(
            f"estimate() takes a StackConfig or EncoderConfig, not {type(cfg).__name__}."
        )
    model = _meta_model(cfg)
    tokens = batch * seq
    params = sum(p.numel() for p in model.parameters())
    linear = sum(m.weight.numel() for m in model.modules() if isinstance(m, nn.Linear))
    flops = 2.0 * linear * tokens
    if isinstance(cfg, EncoderConfig):
        # Token embedding is a lookup; attention adds QK^T and AV per layer.
        flops += cfg.n_layers * 4.0 * batch * seq * seq * cfg.d_model
        d, h = cfg.d_model, cfg.n_heads
        per_layer = (
            tokens * (8 * d + (2 * cfg.d_ff if cfg.use_ffn else 0)) + 2 * batch * h * seq * seq
        )
        act = cfg.n_layers * per_layer + tokens * (2 * d + cfg.vocab_size)
    else:
        mult = cfg.ffn_mult + 3 if cfg.block == "ffn" else 4
        act = tokens * sum(mult * w for w in cfg.layer_widths)
    return Estimate(
        params=params,
        flops_forward=flops,
        activation_bytes=int(act) * bytes_per_value,
        steps=steps,
        bytes_per_value=bytes_per_value,
    )


def combine(estimates: Iterable[Estimate]) -> Estimate:
    """The cost of several models trained side by side, one step each in turn (as
    ``train_compare`` and every page's comparison runs do): every model, its
    gradients and optimizer state stay alive for the whole run, so parameters and
    FLOPs add up; a model's activations are freed after its step, so the largest
    one's count. All estimates must have the same ``steps``."""
    items = list(estimates)
    if not items:
        raise ValueError("combine() needs at least one estimate.")
    if len({e.steps for e in items}) > 1:
        raise ValueError("combine() needs estimates with the same number of steps.")
    return Estimate(
        params=sum(e.params for e in items),
        flops_forward=sum(e.flops_forward for e in items),
        activation_bytes=max(e.activation_bytes for e in items),
        steps=items[0].steps,
        bytes_per_value=max(e.bytes_per_value for e in items),
    )


@dataclass(frozen=True)
class Budget:
    """Per-request limits for a shared server (defaults sized for about 1 GB).

    ``max_memory_bytes`` bounds :attr:`Estimate.memory_bytes`: weights, their
    gradients and optimizer state, and activations, everything one experiment
    holds at once.
    """

    max_params: int = 30_000_000
    max_activation_bytes: int = 256 * 2**20
    max_flops: float = 3e12
    max_memory_bytes: int = 256 * 2**20

    @classmethod
    def from_mapping(cls, env: Mapping[str, object] | None = None) -> Budget:
        """Read ``RESVIZ_MAX_PARAMS``, ``RESVIZ_MAX_ACTIVATION_MB``,
        ``RESVIZ_MAX_MEMORY_MB`` and ``RESVIZ_MAX_GFLOP`` (or lower-case names
        without the prefix)."""
        env = os.environ if env is None else env
        base = cls()

        def get(name: str, default: float) -> float:
            for k in (f"RESVIZ_{name}", name.lower()):
                if k in env:
                    try:
                        value = float(env[k])  # type: ignore[arg-type]
                    except (TypeError, ValueError):
                        continue
                    if math.isfinite(value) and value > 0:
                        return value
            return default

        return cls(
            max_params=int(get("MAX_PARAMS", base.max_params)),
            max_activation_bytes=int(
                get("MAX_ACTIVATION_MB", base.max_activation_bytes / 2**20) * 2**20
            ),
            max_flops=get("MAX_GFLOP", base.max_flops / 1e9) * 1e9,
            max_memory_bytes=int(get("MAX_MEMORY_MB", base.max_memory_bytes / 2**20) * 2**20),
        )

    def check(self, est: Estimate, what: str = "This configuration") -> str | None:
        """None when ``est`` fits; otherwise a message with the numbers and the fix."""
        problems = []
        if est.params > self.max_params:
            problems.append(
                f"{human_count(est.params)} parameters exceed the limit of "
                f"{human_count(self.max_params)}: reduce depth, width or d_ff"
            )
        if est.activation_bytes > self.max_activation_bytes:
            problems.append(
                f"~{human_bytes(est.activation_bytes)} of activations exceed the limit of "
                f"{human_bytes(self.max_activation_bytes)}: reduce the batch, sequence length, "
                "width or depth"
            )
        elif est.memory_bytes > self.max_memory_bytes:
            held = (
                "weights, gradients, optimizer state and activations"
                if est.steps
                else "weights and activations"
            )
            problems.append(
                f"~{human_bytes(est.memory_bytes)} of memory ({held}) exceed the limit of "
                f"{human_bytes(self.max_memory_bytes)}: reduce depth, width, the batch or "
                "the number of models"
            )
        if est.flops_total > self.max_flops:
            problems.append(
                f"~{human_flops(est.flops_total)} exceed the compute limit of "
                f"{human_flops(self.max_flops)}: reduce steps, depth, width or sequence length"
            )
        if not problems:
            return None
        return f"{what} is over this server's budget: " + "; ".join(problems) + "."


__all__ = ["Budget", "Estimate", "combine", "estimate", "human_bytes", "human_count", "human_flops"]
