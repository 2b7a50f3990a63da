"""Who writes what: each block's attention and MLP write at one position, and its direct
contribution to one token's logit through the frozen final norm.

In a Pre-LN decoder (GPT-2, Pythia, Llama) the residual stream is a plain sum:
``x_L = x_0 + sum_l (attn_l + mlp_l)``. The final norm is not linear, but with its scale
computed once from the real ``x_L`` ("frozen") it is: LayerNorm
``f(v) = w * (v - mean(v)) / sqrt(var(x_L) + eps)``, RMSNorm
``f(v) = w * v / sqrt(mean(x_L^2) + eps)``; the norm's bias ``b`` is a part of its
own. So ``logit_k = sum over parts of U_k . f(part) + (U_k . b + head bias_k)``
exactly, and each part's term is its direct contribution to the logit. Where the
family exposes the heads' outputs (the attention's output projection reads the
heads' concatenated results), each head's write is its slice through that projection;
the projection's bias is shared by the heads.

Post-LN encoders (BERT, RoBERTa) normalise after every sum, ``h = LN(x + attn(x))``,
so the stream is not a sum of writes and no part has a linear path to the logit. What
holds there is each write's share of the sum it enters before the norm:
``share = a . (x + a) / ||x + a||^2`` (the input's share is ``1 - share``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any, cast

import pandas as pd
import torch
from torch import nn

from resviz.pretrained.families import Args, Kwargs, first
from resviz.pretrained.loading import Pretrained, PretrainedError
from resviz.pretrained.observe import Trace, stream_hooks

# A family's attention output projection (it reads the heads' concatenated results),
# from the block's attention module.
PROJECTIONS = {
    "GPT-2": "c_proj",
    "GPT-NeoX (Pythia)": "dense",
    "Llama-like decoder": "o_proj",
    "BERT-like encoder": "output.dense",
}
PART_COLUMNS = [
    "label", "block", "part", "norm", "cos_stream", "share", "logit", "logit_diff",
    "logit_centred", "cumulative",
]  # fmt: skip
HEAD_COLUMNS = ["block", "head", "norm", "cos_stream", "logit", "logit_diff", "logit_centred"]


@dataclass(eq=False)
class Attribution:
    """:func:`logit_attribution`'s answer: the parts, the heads and what they add up to."""

    parts: pd.DataFrame
    heads: pd.DataFrame
    position: int  # from 0
    position_token: str
    token: str | None  # the token whose logit is split (None: no head)
    versus: str | None
    logit: float  # the model's own logit of ``token`` at ``position`` (NaN without a head)
    logit_diff: float  # the model's logit(token) - logit(versus)
    linear: bool  # True where the stream is a sum of writes with a frozen final norm
    rest: float  # ||x_L - (x_0 + every write)|| (decoders: rounding; NaN for Post-LN)


def _get(obj: Any, path: str) -> Any:
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def token_id(p: Pretrained, text: str, what: str = "The token") -> int:
    """The id of ``text`` as one token of the model's vocabulary, or a message saying
    why not (never repeating the user's text beyond a short quote)."""
    if not text:
        raise PretrainedError(
            f"{what} is empty: type one token, or leave it for the default.", "text"
        )
    ids = p.tokenizer(text, add_special_tokens=False)["input_ids"]
    if len(ids) == 1:
        return int(ids[0])
    quoted = repr(text[:20] + ("..." if len(text) > 20 else ""))
    hint = ""
    if not text.startswith(" "):
        spaced = p.tokenizer(" " + text, add_special_tokens=False)["input_ids"]
        if len(spaced) == 1:
            hint = " With a leading space it is one token: try that."
    raise PretrainedError(
        f"{what} {quoted} is not one token of this model's vocabulary: the tokenizer "
        f"makes {len(ids)} tokens of it.{hint}",
        "text",
    )


def check_position(position: int, n_tokens: int) -> int:
    """``position`` (from 0; negative counts from the end, -1 the last) as an index."""
    if not -n_tokens <= position < n_tokens:
        raise PretrainedError(
            f"Position {position} is outside this text's {n_tokens} tokens: give 0 to "
            f"{n_tokens - 1}, or -1 for the last.",
            "text",
        )
    return position % n_tokens


@contextmanager
def _writes(p: Pretrained, into: dict[str, list[Any]]) -> Iterator[None]:
    """Record each block's attention write, MLP write, the heads' concatenated results
    (the output projection's input) and, for Post-LN, the input each write is added to."""
    n = p.n_layers
    for k in ("attn", "mlp", "heads", "attn_in", "mlp_in"):
        into[k] = [None] * n
    fam = p.family
    proj_path = PROJECTIONS.get(fam.name)

    def out_hook(key: str, i: int) -> Callable[[nn.Module, Args, Kwargs, Any], None]:
        def hook(_m: nn.Module, _a: Args, _k: Kwargs, out: Any) -> None:
            into[key][i] = first(out).detach()[0].double().clone()

        return hook

    def in_hook(
        key: str, i: int, name: str = "hidden_states", index: int = 0
    ) -> Callable[[nn.Module, Args, Kwargs], None]:
        def hook(_m: nn.Module, args: Args, kwargs: Kwargs) -> None:
            x = args[index] if len(args) > index else kwargs[name]
            into[key][i] = x.detach()[0].double().clone()

        return hook

    with ExitStack() as stack:
        for i, block in enumerate(p.blocks):
            attn, mlp = _get(block, fam.attention), _get(block, fam.mlp)
            hooks = []
            if fam.decoder:
                hooks += [
                    attn.register_forward_hook(out_hook("attn", i), with_kwargs=True),
                    mlp.register_forward_hook(out_hook("mlp", i), with_kwargs=True),
                ]
            else:  # BertSelfOutput / BertOutput: LN(dense(h) + input_tensor)
                out = _get(attn, "output")
                hooks += [
                    out.dense.register_forward_hook(out_hook("attn", i), with_kwargs=True),
                    out.register_forward_pre_hook(
                        in_hook("attn_in", i, "input_tensor", 1), with_kwargs=True
                    ),
                    mlp.dense.register_forward_hook(out_hook("mlp", i), with_kwargs=True),
                    mlp.register_forward_pre_hook(
                        in_hook("mlp_in", i, "input_tensor", 1), with_kwargs=True
                    ),
                ]
            if proj_path is not None:
                proj = _get(attn, proj_path)
                hooks.append(proj.register_forward_pre_hook(in_hook("heads", i), with_kwargs=True))
            for h in hooks:
                stack.callback(h.remove)
        yield


def _projection(p: Pretrained, block: nn.Module) -> tuple[torch.Tensor, torch.Tensor | None] | None:
    """The attention output projection as (in, out) weights and its bias, or None."""
    path = PROJECTIONS.get(p.family.name)
    if path is None:
        return None
    proj = _get(_get(block, p.family.attention), path)
    w = proj.weight.detach().double()
    w = w if type(proj).__name__ == "Conv1D" else w.T  # Conv1D keeps (in, out)
    b = getattr(proj, "bias", None)
    return w, None if b is None else b.detach().double()


def frozen_norm(p: Pretrained, x_last: torch.Tensor) -> tuple[Any, torch.Tensor]:
    """The final norm frozen at the real final stream ``x_last`` (C,): a linear map
    ``f`` of a part (..., C) and the norm's bias (zeros where it has none). Checked
    against the model's own norm of ``x_last``."""
    norm = p.final_norm
    x = x_last.double()
    zero = torch.zeros_like(x)
    if norm is None:
        return (lambda v: v), zero
    w = cast(torch.Tensor, norm.weight).detach().double()  # nn.Module types it Tensor | Module
    if isinstance(norm, nn.LayerNorm):
        scale = 1 / torch.sqrt(x.var(unbiased=False) + norm.eps)
        bias = zero if norm.bias is None else norm.bias.detach().double()

        def f(v: torch.Tensor) -> torch.Tensor:
            return (v - v.mean(-1, keepdim=True)) * scale * w

    elif hasattr(norm, "variance_epsilon"):  # Llama, Mistral, Qwen2 RMSNorm
        scale = 1 / torch.sqrt(x.pow(2).mean() + cast(float, norm.variance_epsilon))
        bias = zero

        def f(v: torch.Tensor) -> torch.Tensor:
            return v * scale * w

    else:
        raise PretrainedError(
            f"Logit attribution does not know this model's final norm ({type(norm).__name__}).",
            "architecture",
        )
    with torch.inference_mode():
        real = norm(x_last[None].float())[0].double()
    if not torch.allclose(f(x) + bias, real, rtol=1e-4, atol=1e-4):
        raise PretrainedError(
            f"The final norm ({type(norm).__name__}) is not the LayerNorm or RMSNorm "
            "logit attribution freezes.",
            "architecture",
        )
    return f, bias


def _share(write: torch.Tensor, into: torch.Tensor) -> float:
    """``write``'s share of the sum ``into + write``: its projection on the sum over
    the sum's squared norm (the two shares add up to 1)."""
    total = into + write
    sq = float(total.pow(2).sum())
    return float(write @ total) / sq if sq > 0 else float("nan")


def _cos(a: torch.Tensor, b: torch.Tensor) -> float:
    return float(torch.nn.functional.cosine_similarity(a, b, dim=-1, eps=1e-300))


def logit_attribution(
    tr: Trace, position: int = -1, token: str | None = None, versus: str | None = None
) -> Attribution:
    """Each part of the stream at ``position`` and its direct contribution to a logit.

    ``token``: the token whose logit is split (one token of the vocabulary; default
    the model's top prediction there); ``versus``: a second token for the logit
    difference (default the model's runner-up). One forward pass with hooks on every
    block's attention, MLP and attention output projection.

    Frame ``parts``, one row per part in stream order: ``label``, ``block`` (0 the
    embeddings, L + 1 the final norm's bias), ``part`` (``embeddings``,
    ``attention``, ``mlp``, ``bias``), ``norm`` (``||part||``), ``cos_stream``
    (cosine to the final stream ``x_L`` there), ``share`` (decoders: ``part . x_L /
    ||x_L||^2``, which sums to 1 over the parts; Post-LN encoders: the write's share
    of the sum it enters before the norm), ``logit`` and ``logit_diff`` (its direct
    contribution through the frozen final norm and the head; the bias row holds
    ``U . b`` plus the head's bias), ``logit_centred`` (the same through the centred
    unembedding, each token's row less the mean row, as TransformerLens's
    ``center_unembed``, its default: it sums to the logit less its mean over the
    vocabulary; a difference of two tokens is the same either way) and ``cumulative``
    (the running sum of ``logit``: the last row is the model's logit). Frame ``heads``: ``block``,
    ``head`` (from 1; head 0 is the output projection's bias, shared by the heads,
    where it has one) with the same measures; a block's heads add up to its attention
    row. Post-LN encoders and models without a head have NaN logits
    (``linear``/``token`` say why).
    """
    p = tr.model
    t = check_position(position, tr.n_tokens)
    head = p.unembedding
    linear = p.decoder and head is not None
    into: dict[str, list[Any]] = {}
    stream: list[torch.Tensor | None] = [None] * (p.n_layers + 1)
    with p.lock, torch.inference_mode(), stream_hooks(p, stream), _writes(p, into):
        extra = {"use_cache": False} if p.decoder else {}
        out = p.model(input_ids=tr.ids[None], **extra)
    logits = getattr(out, "logits", None)
    x = torch.stack(stream)[:, t].double()  # type: ignore[arg-type]  # (L + 1, C)
    x_last = x[-1]

    tok = vs = None
    k = k2 = None
    model_logit = model_diff = float("nan")
    if logits is not None:
        row = logits[0, t].double()
        order = row.argsort(descending=True)
        k = int(order[0]) if token is None or token == "" else token_id(p, token)
        if versus is None or versus == "":
            k2 = int(order[1]) if int(order[0]) == k else int(order[0])  # the best other token
        else:
            k2 = token_id(p, versus, "The second token")
        tok, vs = p.tokenizer.decode([k]), p.tokenizer.decode([k2])
        model_logit, model_diff = float(row[k]), float(row[k] - row[k2])

    parts: list[tuple[str, int, str, torch.Tensor, float]] = [
        ("embeddings", 0, "embeddings", x[0], float("nan"))
    ]
    for i in range(p.n_layers):
        a, m = into["attn"][i][t], into["mlp"][i][t]
        sa = sm = float("nan")
        if not p.decoder:
            sa = _share(a, into["attn_in"][i][t])
            sm = _share(m, into["mlp_in"][i][t])
        parts += [
            (f"block {i + 1} attention", i + 1, "attention", a, sa),
            (f"block {i + 1} MLP", i + 1, "mlp", m, sm),
        ]

    if linear and head is not None:  # (linear: a decoder with a head)
        f, bias = frozen_norm(p, x_last)
        W = cast(torch.Tensor, head.weight).detach().double()
        u, u_diff = W[k], W[k] - W[k2]
        u_centred = u - W.mean(0)
        hb = getattr(head, "bias", None)
        head_bias = 0.0 if hb is None else float(hb[k])
        head_bias_diff = 0.0 if hb is None else float(hb[k] - hb[k2])
        head_bias_centred = 0.0 if hb is None else float(hb[k] - hb.double().mean())

        def direct(v: torch.Tensor) -> tuple[float, float, float]:
            fv = f(v)
            return float(fv @ u), float(fv @ u_diff), float(fv @ u_centred)

    xl2 = float(x_last.pow(2).sum())
    rows = []
    nan3 = (float("nan"),) * 3
    for label, block, part, v, share in parts:
        lg, ld, lc = direct(v) if linear else nan3
        if p.decoder:
            share = float(v @ x_last) / xl2 if xl2 > 0 else float("nan")
        rows.append(
            {
                "label": label, "block": block, "part": part, "norm": float(v.norm()),
                "cos_stream": _cos(v, x_last),
                "share": share,
                "logit": lg, "logit_diff": ld, "logit_centred": lc,
            }
        )  # fmt: skip
    if linear:
        rows.append(
            {
                "label": "final norm bias", "block": p.n_layers + 1, "part": "bias",
                "norm": float(bias.norm()), "cos_stream": float("nan"), "share": float("nan"),
                "logit": float(bias @ u) + head_bias,
                "logit_diff": float(bias @ u_diff) + head_bias_diff,
                "logit_centred": float(bias @ u_centred) + head_bias_centred,
            }
        )  # fmt: skip
    frame = pd.DataFrame(rows)
    frame["cumulative"] = frame["logit"].cumsum()
    frame = frame[PART_COLUMNS]

    head_rows = []
    for i, module in enumerate(p.blocks):
        z, proj = into["heads"][i], _projection(p, module)
        if z is None or proj is None:
            continue
        w, b = proj
        n_heads = p.n_heads
        dh = w.shape[0] // n_heads
        zt = z[t]
        writes = [
            (h + 1, zt[h * dh : (h + 1) * dh] @ w[h * dh : (h + 1) * dh]) for h in range(n_heads)
        ]
        if b is not None:
            writes.append((0, b))
        for h, v in writes:
            lg, ld, lc = direct(v) if linear else nan3
            head_rows.append(
                {
                    "block": i + 1, "head": h, "norm": float(v.norm()),
                    "cos_stream": _cos(v, x_last), "logit": lg, "logit_diff": ld,
                    "logit_centred": lc,
                }
            )  # fmt: skip
    heads = pd.DataFrame(head_rows, columns=HEAD_COLUMNS)
    return Attribution(
        parts=frame,
        heads=heads,
        position=t,
        position_token=tr.tokens[t],
        token=tok,
        versus=vs,
        logit=model_logit,
        logit_diff=model_diff,
        linear=linear,
        rest=float((x_last - sum(v for *_, v, _ in parts)).norm()) if p.decoder else float("nan"),
    )
