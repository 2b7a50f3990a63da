"""The encoder playground: an encoder on the user's own text, seen from inside.

Everything the playground page shows comes from here, so a notebook gets the
same numbers:

* tokenizers (word and character level) with a vocabulary built from the text
  itself, an unknown token, and a maximum length with a truncation flag;
* a model card (parameters, FLOPs and activation memory from
  :func:`resviz.estimate`, plus a measured forward latency) and the PyTorch
  code for exactly one configuration (:func:`generate_code`);
* the views: attention maps, the residual stream (norms, update ratios
  ``||f(x)|| / ||x||``, each sublayer's share of the final representation) and
  rank collapse (Dong et al. 2021, "Attention is not all you need: pure
  attention loses rank doubly exponentially with depth");
* a small BERT-style masked-token task on the text (:func:`train_masked`) and the
  trained model's predictions at masked positions (:func:`predict_masked`).

Text is data: it is split and counted, never evaluated or rendered.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from torch import nn
from torch.nn import functional as F

from .budget import estimate
from .config import EncoderConfig
from .data import (
    MASK,
    PAD,
    SPECIALS,
    UNK,
    Tokens,
    Vocab,
    axis_labels,
    build_vocab,
    clean_text,
    encode,
    masked_batch,
    split_tokens,
    tokenize,
)
from .hooks import capture
from .models import build
from .train import Trainer

# Training reads at most this many tokens of the text (the views read max_len).
TRAIN_MAX_TOKENS = 4096
# The page's default paragraph, written for this project.
DEFAULT_TEXT = (
    "A residual connection lets each layer add to a running sum instead of replacing it. "
    "The input travels along the stream unchanged, every sublayer writes a small update, "
    "and the gradient finds a short path back to the first layer. Take the stream away "
    "and attention alone blurs the tokens together until every position looks the same."
)


# ----------------------------------------------------------------- tokenizers
# The tokenizers live in resviz.data (imported above); the table is this page's view.
def token_table(tokens: Tokens) -> pd.DataFrame:
    """One row per token: ``position, token, id, unknown``."""
    return pd.DataFrame(
        {
            "position": range(len(tokens)),
            "token": list(tokens.tokens),
            "id": list(tokens.ids),
            "unknown": [i == UNK for i in tokens.ids],
        }
    )


# ------------------------------------------------------------------ model card
def forward_latency(
    model: nn.Module, ids: Sequence[int], budget_s: float = 0.1, max_runs: int = 30
) -> dict[str, float]:
    """Median wall time of ``model(ids)`` in milliseconds (after one warm-up run).

    Runs until ``budget_s`` seconds or ``max_runs`` runs have passed, at least 3.
    """
    device = next(model.parameters()).device
    x = torch.tensor([list(ids)], device=device)
    model.eval()
    times = []

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    with torch.no_grad():
        model(x)
        sync()
        start = time.perf_counter()
        while len(times) < 3 or (len(times) < max_runs and time.perf_counter() - start < budget_s):
            t0 = time.perf_counter()
            model(x)
            sync()
            times.append(time.perf_counter() - t0)
    return {"latency_ms": float(np.median(times) * 1e3), "runs": float(len(times))}


def model_card(
    cfg: EncoderConfig,
    seq_len: int,
    batch: int = 1,
    latency: Mapping[str, float] | None = None,
) -> pd.DataFrame:
    """Parameters, forward FLOPs and activation memory for one input (``rv.estimate``).

    Columns ``quantity, value, unit``. The latency is measured separately
    (:func:`forward_latency`) because it depends on the device and its load; pass
    its result as ``latency`` to add it as the last row (``forward latency``, in ms).
    """
    est = estimate(cfg, batch=batch, seq_len=seq_len)
    rows = [
        {"quantity": "parameters", "value": float(est.params), "unit": "count"},
        {"quantity": "forward FLOPs", "value": est.flops_forward, "unit": "FLOP"},
        {
            "quantity": "activation memory (training)",
            "value": float(est.activation_bytes),
            "unit": "bytes",
        },
        {"quantity": "weights", "value": float(est.param_bytes), "unit": "bytes"},
    ]
    if latency is not None:
        rows.append(
            {
                "quantity": "forward latency",
                "value": float(latency["latency_ms"]),
                "unit": f"ms (median of {latency['runs']:.0f})",
            }
        )
    return pd.DataFrame(rows)


# -------------------------------------------------------------- code generation
def generate_code(cfg: EncoderConfig) -> str:
    """Self-contained PyTorch code (torch only) for exactly this configuration.

    Module names match :class:`resviz.Encoder`, so the two state dicts load into
    each other strictly, and ``build_model()`` draws the same weights from the
    seed as ``rv.build(cfg)`` (same modules created in the same order).
    """
    d, h = cfg.d_model, cfg.n_heads
    drop = cfg.dropout > 0
    acts = {"relu": "nn.ReLU()", "gelu": "nn.GELU()", "tanh": "nn.Tanh()"}
    acts |= {"sigmoid": "nn.Sigmoid()", "identity": None}
    norms = {
        "layer": "nn.LayerNorm(D_MODEL)",
        "rms": "nn.RMSNorm(D_MODEL, eps=1e-5)",
        "batch": "FeatureBatchNorm(D_MODEL)",
        "none": None,
    }
    norm = norms[cfg.norm]
    act = acts[cfg.activation]
    pre = cfg.norm_position == "pre"
    L: list[str] = []
    w = L.append
    w('"""A transformer encoder, generated by resviz for one configuration:')
    for f in dataclasses.fields(cfg):
        w(f"    {f.name} = {getattr(cfg, f.name)!r}")
    block = (
        "Pre-LN: x = x + sublayer(norm(x))"
        if pre and norm and cfg.residual
        else "Post-LN: x = norm(x + sublayer(x))"
        if norm and cfg.residual
        else "residual sum x = x + sublayer(...)"
        if cfg.residual
        else "no residual: x = sublayer(...)"
    )
    w(f"Block: {block}.")
    w('"""')
    w("")
    w("import math")
    w("")
    w("import torch")
    w("from torch import nn")
    w("")
    w(f"VOCAB_SIZE = {cfg.vocab_size}")
    w(f"MAX_LEN = {cfg.max_len}")
    w(f"D_MODEL = {d}")
    w(f"N_HEADS = {h}")
    w(f"N_LAYERS = {cfg.n_layers}")
    if cfg.use_ffn:
        w(f"D_FF = {cfg.d_ff}")
    if drop:
        w(f"DROPOUT = {cfg.dropout!r}")
    w(f"SEED = {cfg.seed}")
    w("")
    if cfg.norm == "batch":
        w("")
        w("class FeatureBatchNorm(nn.BatchNorm1d):")
        w('    """BatchNorm of each feature over batch and tokens."""')
        w("")
        w("    def forward(self, x):")
        w("        return super().forward(x.reshape(-1, x.shape[-1])).reshape(x.shape)")
        w("")
    if cfg.positional == "sinusoidal":
        w("")
        w("def sinusoidal(n_positions, d_model, base=10000.0):")
        w('    """P(k, 2i) = sin(k / base^(2i/d)), P(k, 2i+1) = cos(same), in float64."""')
        w("    pos = torch.arange(n_positions, dtype=torch.float64)[:, None]")
        w("    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)")
        w("    angle = pos / base ** (two_i / d_model)")
        w("    pe = torch.empty(n_positions, d_model, dtype=torch.float64)")
        w("    pe[:, 0::2] = torch.sin(angle)")
        w("    pe[:, 1::2] = torch.cos(angle)")
        w("    return pe.float()")
        w("")
    w("")
    w("class SelfAttention(nn.Module):")
    w("    def __init__(self):")
    w("        super().__init__()")
    w("        self.qkv = nn.Linear(D_MODEL, 3 * D_MODEL)")
    w("        self.proj = nn.Linear(D_MODEL, D_MODEL)")
    if drop:
        w("        self.dropout = nn.Dropout(DROPOUT)")
    w("")
    w("    def forward(self, x):")
    w("        B, T, C = x.shape")
    w("        q, k, v = self.qkv(x).split(C, dim=-1)")
    w("        # (B, T, C) -> (B, heads, T, head size)")
    w("        q, k, v = (t.view(B, T, N_HEADS, C // N_HEADS).transpose(1, 2) for t in (q, k, v))")
    w("        att = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(C // N_HEADS), dim=-1)")
    w(f"        y = {'self.dropout(att)' if drop else 'att'} @ v  # (B, heads, T, head size)")
    w("        return self.proj(y.transpose(1, 2).reshape(B, T, C))")
    w("")
    if cfg.use_ffn:
        w("")
        w("class FeedForward(nn.Module):")
        w("    def __init__(self):")
        w("        super().__init__()")
        w("        self.fc1 = nn.Linear(D_MODEL, D_FF)")
        if act:
            w(f"        self.act = {act}")
        w("        self.fc2 = nn.Linear(D_FF, D_MODEL)")
        if drop:
            w("        self.dropout = nn.Dropout(DROPOUT)")
        w("")
        w("    def forward(self, x):")
        inner = "self.act(self.fc1(x))" if act else "self.fc1(x)"
        out = f"self.fc2({inner})"
        w(f"        return {'self.dropout(' + out + ')' if drop else out}")
        w("")
    w("")
    w("class EncoderBlock(nn.Module):")
    w("    def __init__(self):")
    w("        super().__init__()")
    w("        self.attn = SelfAttention()")
    if norm:
        w(f"        self.norm1 = {norm}")
    if cfg.use_ffn:
        w("        self.ffn = FeedForward()")
        if norm:
            w(f"        self.norm2 = {norm}")
    if drop:
        w("        self.dropout = nn.Dropout(DROPOUT)")
    w("")
    w("    def forward(self, x):  # (B, T, C)")
    attn = "self.dropout(self.attn({}))" if drop else "self.attn({})"
    subs = [("norm1", attn)]
    if cfg.use_ffn:
        subs.append(("norm2", "self.ffn({})"))
    for nname, call in subs:
        if pre:
            arg = f"self.{nname}(x)" if norm else "x"
            f_x = call.format(arg)
            w(f"        x = {'x + ' if cfg.residual else ''}{f_x}")
        else:
            f_x = call.format("x")
            summed = f"x + {f_x}" if cfg.residual else f_x
            w(f"        x = {f'self.{nname}({summed})' if norm else summed}")
    w("        return x")
    w("")
    w("")
    w("class Encoder(nn.Module):")
    w("    def __init__(self):")
    w("        super().__init__()")
    w("        self.embed = nn.Embedding(VOCAB_SIZE, D_MODEL)")
    if cfg.positional == "learned":
        w("        self.pos = nn.Parameter(torch.randn(MAX_LEN, D_MODEL) * 0.02)")
    elif cfg.positional == "sinusoidal":
        w('        self.register_buffer("pos", sinusoidal(MAX_LEN, D_MODEL), persistent=False)')
    if drop:
        w("        self.drop = nn.Dropout(DROPOUT)")
    w("        self.blocks = nn.ModuleList(EncoderBlock() for _ in range(N_LAYERS))")
    final = norm is not None and pre
    if final:
        w(f"        self.final_norm = {norm}")
    w("        self.head = nn.Linear(D_MODEL, VOCAB_SIZE)")
    w("")
    w("    def forward(self, tokens):  # (B, T) token ids -> (B, T, VOCAB_SIZE) logits")
    w("        x = self.embed(tokens)")
    if cfg.positional != "none":
        w("        x = x + self.pos[: tokens.shape[1]]")
    if drop:
        w("        x = self.drop(x)")
    w("        for block in self.blocks:")
    w("            x = block(x)")
    if final:
        w("        x = self.final_norm(x)")
    w("        return self.head(x)")
    w("")
    w("")
    if cfg.init == "xavier":
        w("def init_weights(model):")
        w('    """Xiong et al. (2020): Xavier-normal weights, zero biases. The fused q/k/v')
        w("    weight holds W_Q, W_K and W_V: each is initialised as its own D_MODEL x D_MODEL")
        w('    matrix (std sqrt(1 / D_MODEL)), not as one D_MODEL x 3 D_MODEL matrix."""')
        w("    with torch.no_grad():")
        w("        for name, m in model.named_modules():")
        w("            if isinstance(m, nn.Linear):")
        w('                parts = m.weight.chunk(3) if name.endswith("qkv") else (m.weight,)')
        w("                for weight in parts:")
        w("                    nn.init.xavier_normal_(weight)")
        w("                nn.init.zeros_(m.bias)")
        w("")
        w("")
    w("def build_model():")
    w('    """The same initial weights as resviz.build(config) for this configuration."""')
    w("    torch.manual_seed(SEED)")
    if cfg.init == "xavier":
        w("    model = Encoder()")
        w("    init_weights(model)")
        w("    return model")
    else:
        w("    return Encoder()")
    w("")
    w("")
    w('if __name__ == "__main__":')
    w("    model = build_model().eval()")
    w("    tokens = torch.randint(0, VOCAB_SIZE, (2, min(16, MAX_LEN)))")
    w("    print(model(tokens).shape)  # (2, T, VOCAB_SIZE)")
    return "\n".join(L) + "\n"


# ----------------------------------------------------------------------- views
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


def attention_frame(maps: np.ndarray, labels: Sequence[str], layer: int, head: int) -> pd.DataFrame:
    """One row per (query, key) of one head: ``query, key, weight`` (0-based layer, head)."""
    att = maps[layer, head]
    T = att.shape[0]
    q, k = np.meshgrid(range(T), range(T), indexing="ij")
    lab = np.asarray(labels, dtype=object)
    return pd.DataFrame(
        {
            "layer": layer + 1,
            "head": head + 1,
            "query": lab[q.ravel()],
            "key": lab[k.ravel()],
            "weight": att.ravel().astype(float),
        }
    )


def _token_norm(x: torch.Tensor) -> torch.Tensor:
    return x[0].double().norm(dim=-1)  # (T,)


def residual_stream(acts: Mapping[str, torch.Tensor], cfg: EncoderConfig) -> pd.DataFrame:
    """One row per sublayer (attention, FFN) of every layer.

    Columns: ``layer`` (1-based), ``sublayer`` (``attn``/``ffn``), ``index``
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
                    "layer": i + 1,
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


def final_share(acts: Mapping[str, torch.Tensor], cfg: EncoderConfig) -> pd.DataFrame:
    """Each component's share of the final stream ``x_L`` (before the final norm).

    Where the stream is additive (residuals on, Pre-LN or no norm),
    ``x_L = e + sum_l a_l + sum_l f_l``, and component ``c`` gets
    ``sum_t <c_t, x_t> / sum_t ||x_t||^2``; the shares sum to 1 (a share can be
    negative when a component points against the sum). Without residuals ``x_L``
    is the last sublayer's output (share 1, others 0). Post-LN renormalizes
    after every sum, so ``x_L`` is no sum of components: the frame is empty and
    ``frame.attrs["reason"]`` says why.

    Columns: ``component`` (``embedding``, ``L1 attn``, ``L1 ffn``, ...),
    ``layer`` (0 for the embedding), ``sublayer``, ``share``.
    """
    parts: list[tuple[str, int, str, torch.Tensor]] = [
        ("embedding", 0, "embedding", acts["blocks.0.resid_pre"][0].double())
    ]
    for i in range(cfg.n_layers):
        parts.append((f"L{i + 1} attn", i + 1, "attn", acts[f"blocks.{i}.attn_out"][0].double()))
        if cfg.use_ffn:
            parts.append((f"L{i + 1} ffn", i + 1, "ffn", acts[f"blocks.{i}.ffn_out"][0].double()))
    final = acts[f"blocks.{cfg.n_layers - 1}.resid_post"][0].double()
    cols = ["component", "layer", "sublayer", "share"]
    if not cfg.residual:
        rows = [(n, layer, s, 1.0 if k == len(parts) - 1 else 0.0) for k, (n, layer, s, _) in
                enumerate(parts)]  # fmt: skip
        return pd.DataFrame(rows, columns=cols)
    if not additive_stream(cfg):
        df = pd.DataFrame(columns=cols)
        df.attrs["reason"] = (
            "Post-LN normalizes after every residual sum, so the final vector is not a sum "
            "of sublayer outputs; the share is defined for Pre-LN or norm-free stacks."
        )
        return df
    denom = float((final * final).sum())
    rows = [(n, layer, s, float((c * final).sum()) / denom) for n, layer, s, c in parts]
    return pd.DataFrame(rows, columns=cols)


def rank_collapse(acts: Mapping[str, torch.Tensor], cfg: EncoderConfig) -> pd.DataFrame:
    """How far the token matrix is from rank one, after each layer (Dong et al. 2021).

    ``residual = ||X - 1 x^T||_F / ||X||_F`` with ``x`` the mean token (the best
    rank-one approximation of this form), and ``cosine``: the mean cosine
    between distinct tokens. Layer 0 is the input to the first block. Computed
    in float64 from the captured float32 stream.
    """
    rows = []
    for layer in range(cfg.n_layers + 1):
        key = "blocks.0.resid_pre" if layer == 0 else f"blocks.{layer - 1}.resid_post"
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
        rows.append({"layer": layer, "residual": resid, "cosine": cos})
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
    on the same tokens. Columns ``variant, shortcuts, layer, residual, cosine``."""
    frames = []
    for name, c in collapse_variants(cfg).items():
        acts = run_encoder(build(c, device), ids)
        frames.append(rank_collapse(acts, c).assign(variant=name, shortcuts=c.residual))
    return pd.concat(frames, ignore_index=True)[
        ["variant", "shortcuts", "layer", "residual", "cosine"]
    ]


def inspect(model: nn.Module, cfg: EncoderConfig, ids: Sequence[int]) -> dict[str, object]:
    """Every view of one model on one sequence from a single forward pass:
    ``attention`` (array), ``stream``, ``share`` and ``collapse`` (DataFrames)."""
    acts = run_encoder(model, ids)
    return {
        "attention": attention_maps(acts, cfg.n_layers),
        "stream": residual_stream(acts, cfg),
        "share": final_share(acts, cfg),
        "collapse": rank_collapse(acts, cfg),
    }


# -------------------------------------------------------------------- training
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
    ``sync_every`` steps, as in :func:`resviz.train_compare`.
    """
    if not variants:
        raise ValueError("train_masked needs at least one variant.")
    if len(ids) < 2:
        raise ValueError("the text needs at least 2 tokens to train on.")
    if max(ids) >= min(c.vocab_size for c in variants.values()):
        raise ValueError("a token id is outside a variant's vocabulary.")
    columns = ("variant", "step", "loss", "grad_norm", "diverged", "divergence")

    def curves(run: Trainer) -> pd.DataFrame:
        df = run.frame(columns)
        df["loss"] = df["loss"].astype(float)
        df["grad_norm"] = df["grad_norm"].astype(float)
        df.attrs = {k: run.attrs[k] for k in ("diverged", "divergence")}
        return df

    def progress(run: Trainer, done: int) -> None:
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
    )
    stream = torch.tensor(list(ids)[:TRAIN_MAX_TOKENS])
    seq_len = min(seq_len, min(c.max_len for c in run.configs.values()))
    # One generator serves every variant: batch t is the same for all of them.
    gen = torch.Generator().manual_seed(seed)
    for _ in run:
        x, y = masked_batch(stream, batch_size, seq_len, gen, mask_rate)
        x, y = x.to(run.device), y.to(run.device)
        for name, model in run.active():
            logits = model(x)  # (B, L, V)
            run.update(name, F.cross_entropy(logits.flatten(0, 1), y.flatten(), ignore_index=-100))
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
    from .config import ENCODER_PRESETS

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
) -> dict[str, dict[str, object]]:
    """:func:`inspect` on every trained model of ``run``, by name."""
    return {n: inspect(run.model(n, device), run.configs[n], ids) for n in run.configs}


def ratio_before_after(
    init_stream: pd.DataFrame, trained: Mapping[str, Mapping[str, object]]
) -> pd.DataFrame:
    """Update ratios of your model at init beside every trained model's.

    ``init_stream``: :func:`residual_stream` of your model at init; ``trained``:
    :func:`inspect_trained`. Columns ``model`` (``"your model, init"``,
    ``"<name>, trained"``), ``layer, sublayer, stream_norm, update_ratio`` and
    ``series`` (model and sublayer, one line each)."""
    ratio = pd.concat(
        [init_stream.assign(model="your model, init")]
        + [v["stream"].assign(model=f"{n}, trained") for n, v in trained.items()],  # type: ignore[union-attr]
        ignore_index=True,
    )
    ratio["series"] = ratio["model"] + " · " + ratio["sublayer"]
    return ratio[["model", "layer", "sublayer", "stream_norm", "update_ratio", "series"]]


def collapse_before_after(
    collapse: pd.DataFrame, trained: Mapping[str, Mapping[str, object]]
) -> pd.DataFrame:
    """Rank collapse at init (the variants of :func:`rank_collapse_compare` whose
    name starts with ``your model``: yours and its residual flipped) beside every
    trained model's. Columns ``variant, weights`` (``init``/``trained``), ``layer,
    residual, cosine`` and ``series`` (variant and weights)."""
    rc = pd.concat(
        [collapse[collapse["variant"].str.startswith("your model")].assign(weights="init")]
        + [v["collapse"].assign(variant=n, weights="trained") for n, v in trained.items()],  # type: ignore[union-attr]
        ignore_index=True,
    )
    rc["series"] = rc["variant"] + " · " + rc["weights"]
    return rc[["variant", "weights", "layer", "residual", "cosine", "series"]]


__all__ = [
    "DEFAULT_TEXT",
    "FLIPPED",
    "MASK",
    "PAD",
    "SPECIALS",
    "UNK",
    "MaskedRun",
    "Tokens",
    "Vocab",
    "additive_stream",
    "attention_frame",
    "attention_maps",
    "axis_labels",
    "batch_frame",
    "build_vocab",
    "clean_text",
    "collapse_before_after",
    "collapse_variants",
    "encode",
    "final_share",
    "forward_latency",
    "generate_code",
    "inspect",
    "inspect_trained",
    "mask_positions",
    "masked_batch",
    "masked_predictions",
    "model_card",
    "predict_masked",
    "rank_collapse",
    "rank_collapse_compare",
    "ratio_before_after",
    "residual_stream",
    "split_tokens",
    "token_table",
    "tokenize",
    "train_masked",
    "training_variants",
]
