"""The two model families: a deep stack of blocks and a transformer encoder.

Both are small and readable, nanoGPT-style: the residual sum is one line per sublayer, and
where the norm sits is one small function per placement (:func:`pre_norm`, Xiong et al.
2020: ``x + F(norm(x))``; :func:`post_norm`, Vaswani et al. 2017: ``norm(x + F(x))``),
chosen once when a block is built. Every intermediate a page wants to see passes through an
identity :class:`resviz.hooks.HookPoint` (TransformerLens's idea) so :func:`resviz.capture`
can record it by module path, e.g. ``blocks.3.resid_post``. Nothing is stored on modules.

Departures from the seed snippets, on purpose: attention is written out (no
``nn.MultiheadAttention``) so the pattern is observable on ``(B, T, C)``; the FFN applies its
activation (seed 002 passed it as ``bias``); BatchNorm normalizes each feature over batch *and*
tokens, flattening ``(B, T, C)`` to ``(B*T, C)`` (seed 004's transpose crashed).
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Callable
from functools import partial
from typing import overload

import torch
from torch import nn

from resviz.config import EncoderConfig, StackConfig
from resviz.hooks import HookPoint
from resviz.sinusoid import sinusoidal_table

# nn.Module construction draws from torch's global RNG. Builds hold this lock
# and fork the RNG so concurrent sessions cannot interleave their draws.
_BUILD_LOCK = threading.Lock()

_ACTIVATIONS: dict[str, type[nn.Module]] = dict(
    relu=nn.ReLU, gelu=nn.GELU, tanh=nn.Tanh, sigmoid=nn.Sigmoid, identity=nn.Identity
)


class FeatureBatchNorm(nn.BatchNorm1d):
    """BatchNorm over every axis but the last: each feature is normalized across
    the batch (and tokens, for ``(B, T, C)`` input)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        return super().forward(x.reshape(-1, shape[-1])).reshape(shape)


def make_norm(kind: str, dim: int) -> nn.Module:
    """``"layer"``: per token over features; ``"rms"``: same without centring;
    ``"batch"``: per feature over the batch; ``"none"``: identity."""
    if kind == "layer":
        return nn.LayerNorm(dim)
    if kind == "rms":
        return nn.RMSNorm(dim, eps=1e-5)
    return FeatureBatchNorm(dim) if kind == "batch" else nn.Identity()


def make_activation(name: str) -> nn.Module:
    """A fresh module for the activation ``name`` (relu, gelu, tanh, sigmoid, identity)."""
    return _ACTIVATIONS[name]()


# ------------------------------------------------------------ norm placement
# A block sums its input x (the shortcut) and a sublayer's update F; where the norm
# sits is one small function, chosen once when a block is built. ``join(x, update)``
# is the sum itself: ``add`` (x + F), ``no_shortcut`` (F alone), or a stack block's
# own (scaled, concat, joined before the activation).
Sublayer = Callable[[torch.Tensor], torch.Tensor]
Join = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def add(x: torch.Tensor, update: torch.Tensor) -> torch.Tensor:
    """``x + F``: the identity shortcut."""
    return x + update


def no_shortcut(x: torch.Tensor, update: torch.Tensor) -> torch.Tensor:
    """``F``: no shortcut, the update alone."""
    return update


def pre_norm(
    x: torch.Tensor, norm: nn.Module, sublayer: Sublayer, join: Join = add
) -> torch.Tensor:
    """Pre-norm (Xiong et al. 2020): the sublayer reads ``norm(x)``, the stream passes
    on untouched: ``x + F(norm(x))``."""
    return join(x, sublayer(norm(x)))


def post_norm(
    x: torch.Tensor, norm: nn.Module, sublayer: Sublayer, join: Join = add
) -> torch.Tensor:
    """Post-norm (Vaswani et al. 2017): the sum is normalized, ``norm(x + F(x))``."""
    return norm(join(x, sublayer(x)))


NORM_PLACEMENTS = {"pre": pre_norm, "post": post_norm}


# --------------------------------------------------------------------------- stack


class StackBlock(nn.Module):
    """One block of a :class:`Stack`; see :class:`resviz.StackConfig` for the formulas."""

    def __init__(self, cfg: StackConfig, w_in: int, w_out: int) -> None:
        super().__init__()
        self.residual = cfg.residual
        self.join = cfg.join
        self.identity_scale = cfg.identity_scale
        self.norm_position = cfg.norm_position
        self.placement = NORM_PLACEMENTS[cfg.norm_position]
        self.block = cfg.block
        if cfg.block == "linear":
            self.fc = nn.Linear(w_in, w_out)
        else:
            self.fc1 = nn.Linear(w_in, cfg.ffn_mult * w_in)
            self.fc2 = nn.Linear(cfg.ffn_mult * w_in, w_out)
        self.act = make_activation(cfg.activation)

        # The shortcut: None (no path), Identity, or a projection where widths differ.
        self.shortcut: nn.Module | None = None
        if cfg.residual == "concat":
            self.shortcut = nn.Identity()
        elif cfg.residual in ("add", "scaled"):
            if w_in == w_out:
                self.shortcut = nn.Identity()
            elif cfg.mismatch == "project":
                self.shortcut = nn.Linear(w_in, w_out, bias=False)
        self.out_width = w_in + w_out if cfg.residual == "concat" else w_out
        self.concat_proj: nn.Module | None = None
        if cfg.residual == "concat" and cfg.concat_project:
            self.concat_proj = nn.Linear(w_in + w_out, w_out, bias=False)
            self.out_width = w_out

        if cfg.residual == "scaled":
            alpha = torch.tensor(float(cfg.alpha))
            if cfg.alpha_learnable:
                self.alpha = nn.Parameter(alpha)
            else:
                self.register_buffer("alpha", alpha)

        norm_dim = w_in if cfg.norm_position == "pre" else self.out_width
        self.norm = make_norm(cfg.norm, norm_dim)

        self.resid_pre = HookPoint()
        self.branch_out = HookPoint()  # f(x) (joined before the act: W x + b), before alpha
        self.shortcut_out = HookPoint()  # the shortcut's output, before identity_scale
        # The two terms the block joins, scales applied: y = shortcut_term + update_term
        # (side by side for concat); see resviz.layer_decomposition.
        self.shortcut_term = HookPoint()
        self.update_term = HookPoint()
        self.resid_post = HookPoint()

    @property
    def has_shortcut(self) -> bool:
        return self.shortcut is not None

    @property
    def projected(self) -> bool:
        return isinstance(self.shortcut, nn.Linear)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.resid_pre(x)  # (B, ..., w_in)
        return self.resid_post(self.placement(x, self.norm, self._branch, self._residual_sum))

    def _branch(self, h: torch.Tensor) -> torch.Tensor:
        """``f(h)``, before alpha: ``W h + b`` joined before the activation, else
        ``act(W h + b)`` (a linear block) or ``W2 act(W1 h + b1) + b2`` (an FFN)."""
        if self.block == "linear":
            z = self.fc(h)
            return self.branch_out(self.act(z) if self.join == "after_act" else z)
        return self.branch_out(self.fc2(self.act(self.fc1(h))))

    def _residual_sum(self, x: torch.Tensor, f: torch.Tensor) -> torch.Tensor:
        """``y = shortcut_term + update_term`` (side by side for concat), through the
        activation when joined before it: ``act(l*x + W x + b)``, or
        ``act(x + alpha (W x + b))`` when scaled."""
        s = self.shortcut_out(self.shortcut(x)) if self.shortcut is not None else None
        if s is None:
            y = self.update_term(f)
        elif self.residual == "scaled":
            y = self.shortcut_term(s) + self.update_term(self.alpha * f)
        elif self.residual == "concat":  # (B, ..., w_in + w_out)
            y = torch.cat([self.shortcut_term(s), self.update_term(f)], dim=-1)
            y = self.concat_proj(y) if self.concat_proj is not None else y
        else:
            y = self.shortcut_term(self.identity_scale * s) + self.update_term(f)
        return self.act(y) if self.join == "before_act" else y


class Stack(nn.Module):
    """``x_{l+1} = block_l(x_l)`` for every block, then an optional linear head."""

    def __init__(self, cfg: StackConfig) -> None:
        super().__init__()
        self.cfg = cfg
        widths = cfg.layer_widths
        blocks = []
        w = widths[0]
        for i in range(cfg.n_blocks):
            block = StackBlock(cfg, w, widths[i + 1])
            blocks.append(block)
            w = block.out_width
        self.blocks = nn.ModuleList(blocks)
        self.out_width = w
        self.head: nn.Module = nn.Linear(w, cfg.out_dim) if cfg.out_dim else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def _init_stack(model: Stack, init: str) -> None:
    for block in model.blocks:
        assert isinstance(block, StackBlock)  # a Stack's blocks (ModuleList yields Module)
        for lin in (m for m in block.modules() if isinstance(m, nn.Linear)):
            if init == "kaiming":
                nn.init.kaiming_normal_(lin.weight, nonlinearity="relu")
            elif init == "xavier":
                nn.init.xavier_normal_(lin.weight)
            if init in ("kaiming", "xavier") and lin.bias is not None:
                nn.init.zeros_(lin.bias)
        if init == "small":
            last = block.fc if block.block == "linear" else block.fc2
            with torch.no_grad():
                last.weight.mul_(0.01)
                last.bias.mul_(0.01)


# ------------------------------------------------------------------------- encoder


class SelfAttention(nn.Module):
    """Multi-head scaled dot-product self-attention on ``(B, T, C)``."""

    def __init__(self, cfg: EncoderConfig) -> None:
        super().__init__()
        self.n_heads = cfg.n_heads
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.dropout = nn.Dropout(cfg.dropout)
        self.pattern = HookPoint()

    def forward(self, x: torch.Tensor, pad_mask: torch.Tensor | None = None) -> torch.Tensor:
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=-1)
        # (B, T, C) -> (B, nh, T, hs)
        q, k, v = (t.view(B, T, self.n_heads, C // self.n_heads).transpose(1, 2) for t in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])  # (B, nh, T, T)
        if pad_mask is not None:  # (B, T), True where padding: no query attends to it
            scores = scores.masked_fill(pad_mask[:, None, None, :], float("-inf"))
        att = self.pattern(torch.softmax(scores, dim=-1))
        y = self.dropout(att) @ v  # (B, nh, T, hs)
        return self.proj(y.transpose(1, 2).reshape(B, T, C))


class FeedForward(nn.Module):
    """``W2 act(W1 x + b1) + b2``."""

    def __init__(self, cfg: EncoderConfig) -> None:
        super().__init__()
        self.fc1 = nn.Linear(cfg.d_model, cfg.d_ff)
        self.act = make_activation(cfg.activation)
        self.fc2 = nn.Linear(cfg.d_ff, cfg.d_model)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.fc2(self.act(self.fc1(x))))


class EncoderBlock(nn.Module):
    """One encoder layer; the formulas are in :class:`resviz.EncoderConfig`."""

    def __init__(self, cfg: EncoderConfig) -> None:
        super().__init__()
        self.residual = cfg.residual
        self.placement = NORM_PLACEMENTS[cfg.norm_position]
        self._residual_sum = add if cfg.residual else no_shortcut
        self.attn = SelfAttention(cfg)
        self.norm1 = make_norm(cfg.norm, cfg.d_model)
        self.ffn = FeedForward(cfg) if cfg.use_ffn else None
        self.norm2 = make_norm(cfg.norm, cfg.d_model) if cfg.use_ffn else None
        self.dropout = nn.Dropout(cfg.dropout)
        self.resid_pre, self.attn_out, self.resid_mid = HookPoint(), HookPoint(), HookPoint()
        self.ffn_out, self.resid_post = HookPoint(), HookPoint()

    def forward(self, x: torch.Tensor, pad_mask: torch.Tensor | None = None) -> torch.Tensor:
        x = self.resid_pre(x)  # (B, T, C)
        attend = partial(self._attend, pad_mask=pad_mask)
        x = self.resid_mid(self.placement(x, self.norm1, attend, self._residual_sum))
        if self.ffn is not None and self.norm2 is not None:  # both, or neither
            x = self.placement(x, self.norm2, self._feed_forward, self._residual_sum)
        return self.resid_post(x)

    def _attend(self, h: torch.Tensor, pad_mask: torch.Tensor | None) -> torch.Tensor:
        return self.attn_out(self.dropout(self.attn(h, pad_mask)))

    def _feed_forward(self, h: torch.Tensor) -> torch.Tensor:
        assert self.ffn is not None  # called only when the block has one
        return self.ffn_out(self.ffn(h))


class Encoder(nn.Module):
    """Token embedding + positions -> ``n_layers`` blocks -> (final norm) -> LM head."""

    def __init__(self, cfg: EncoderConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        # On the meta device (budget estimates) nothing is drawn: meta randn and arange
        # run torch's Python reference ops, which import torch._dynamo (1 s, 70 MB).
        meta = torch.get_default_device().type == "meta"
        if cfg.positional == "learned":
            size = (cfg.max_len, cfg.d_model)
            pos = torch.empty(size) if meta else torch.randn(size) * 0.02
            self.pos: torch.Tensor | None = nn.Parameter(pos)  # a buffer, or None, below
        elif cfg.positional == "sinusoidal":
            with torch.device("cpu") if meta else contextlib.nullcontext():
                table = sinusoidal_table(cfg.max_len, cfg.d_model)
            self.register_buffer("pos", table, persistent=False)
        else:
            self.pos = None
        self.hook_embed = HookPoint()
        self.hook_pos = HookPoint()
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(EncoderBlock(cfg) for _ in range(cfg.n_layers))
        use_final = cfg.norm != "none" and cfg.norm_position == "pre"
        self.final_norm = make_norm(cfg.norm, cfg.d_model) if use_final else nn.Identity()
        self.hook_final = HookPoint()
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size)

    def encode(self, tokens: torch.Tensor, pad_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Hidden states ``(B, T, C)`` after the final norm."""
        T = tokens.shape[1]
        if T > self.cfg.max_len:
            raise ValueError(f"sequence of {T} tokens is longer than max_len={self.cfg.max_len}.")
        x = self.hook_embed(self.embed(tokens))  # (B, T, C)
        if self.pos is not None:
            x = x + self.hook_pos(self.pos[:T])
        x = self.drop(x)
        for block in self.blocks:
            x = block(x, pad_mask)
        return self.hook_final(self.final_norm(x))

    def forward(self, tokens: torch.Tensor, pad_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Logits ``(B, T, vocab_size)``."""
        return self.head(self.encode(tokens, pad_mask))


def _init_encoder(model: Encoder, init: str) -> None:
    """``"xavier"``: linear weights Xavier-normal, biases zero; the fused q/k/v weight
    as its three ``d x d`` blocks (Xiong et al. 2020), in module order."""
    if init != "xavier":
        return
    qkv = {id(m.qkv) for m in model.modules() if isinstance(m, SelfAttention)}
    with torch.no_grad():
        for mod in model.modules():
            if isinstance(mod, nn.Linear):
                parts = mod.weight.chunk(3) if id(mod) in qkv else (mod.weight,)
                for w in parts:
                    nn.init.xavier_normal_(w)
                if mod.bias is not None:
                    nn.init.zeros_(mod.bias)


def reseed(model: Stack, seed: int) -> Stack:
    """Draw a built float32 stack's weights again as :func:`build` draws them from
    ``seed`` (the same numbers: its Linear layers in build order, then the init), in
    a quarter of a build's time: how several seeds' stacks are made at once."""
    with _BUILD_LOCK, torch.random.fork_rng(devices=[]):
        torch.default_generator.manual_seed(seed)  # build's CPU draws, without the wrapper
        for mod in model.modules():
            if isinstance(mod, nn.Linear):
                mod.reset_parameters()
        _init_stack(model, model.cfg.init)
    return model


@overload
def build(cfg: StackConfig, device: torch.device | str | None = None) -> Stack: ...
@overload
def build(cfg: EncoderConfig, device: torch.device | str | None = None) -> Encoder: ...
def build(cfg: StackConfig | EncoderConfig, device: torch.device | str | None = None) -> nn.Module:
    """Build the model a config describes, initialised from ``cfg.seed``: drawn on
    the CPU from a forked RNG, then moved (the same weights on every device)."""
    with _BUILD_LOCK, torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.seed)
        if isinstance(cfg, StackConfig):
            model: nn.Module = (stack := Stack(cfg))
            _init_stack(stack, cfg.init)
        elif isinstance(cfg, EncoderConfig):
            model = Encoder(cfg)
            _init_encoder(model, cfg.init)
        else:
            raise TypeError(f"build() takes a StackConfig or EncoderConfig, not {cfg!r}.")
    return model.to(device) if device is not None else model
