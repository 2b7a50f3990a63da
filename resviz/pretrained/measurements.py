"""The measurements on a real model, one recipe per section, each a tidy frame.

Numbering follows the rest of resviz: a per-block frame has ``block`` counted from
1 (``blocks[0]`` is block 1); a frame over the stream ``x_0 .. x_L`` numbers each
row by the block that wrote it, 0 being the embeddings. Quantities that can
underflow are computed in float64 (probabilities, cosines, ratios).

- :func:`stream_norms`: ``||x_l||`` per block, raw and with the final norm applied.
- :func:`block_influence`: ``cos(x_{l-1}, x_l)`` and ShortGPT's ``1 - cos``.
- :func:`layer_similarity`: the cosine between every pair of stream states.
- :func:`layer_deletion`: each block skipped in turn (Lad et al. 2024).
- :func:`logit_lens`: the stream decoded after every block (nostalgebraist 2020).
- :func:`rank_collapse`: distance from rank one, with and without shortcuts (Dong et al. 2021).
- :func:`attention_sinks` and :func:`massive_activations`: the first token's share of
  attention (Xiao et al. 2023) and the largest activation per block (Sun et al. 2024).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from resviz.pretrained.loading import Pretrained, PretrainedError
from resviz.pretrained.observe import Trace, forward, skipping, token_texts
from resviz.pretrained.stream.heal import held_out_loss

Progress = Callable[[int, int], None]
ShouldStop = Callable[[], bool]


def _norm_stream(p: Pretrained, x: torch.Tensor) -> torch.Tensor:
    """The final norm applied to every state in ``x`` (..., C), as the model applies it."""
    norm = p.final_norm
    if norm is None:
        return x
    with torch.inference_mode():
        return norm(x)


def stream_norms(tr: Trace) -> pd.DataFrame:
    """``||x_l||`` over tokens, per stream state.

    Columns ``block`` (0 = embeddings), ``variant`` (``"stream"``; ``"final norm
    applied"`` too where the family has a final norm), ``mean_norm``,
    ``median_norm`` (over tokens; robust to one outlying token) and
    ``first_token_norm``.
    """
    p = tr.model
    variants = {"stream": tr.stream}
    if p.final_norm is not None:
        variants["final norm applied"] = _norm_stream(p, tr.stream)
    rows = []
    for variant, x in variants.items():
        norms = x.double().norm(dim=-1)  # (L + 1, T)
        for b in range(norms.shape[0]):
            rows.append(
                {
                    "block": b,
                    "variant": variant,
                    "mean_norm": float(norms[b].mean()),
                    "median_norm": float(norms[b].median()),
                    "first_token_norm": float(norms[b, 0]),
                }
            )
    return pd.DataFrame(rows)


def norm_growth(norms: pd.DataFrame, column: str = "median_norm") -> float:
    """The geometric growth of the raw stream's norm per block: ``exp`` of the slope of a
    least-squares line through ``log norm`` against block, over blocks 1..L (the
    embeddings, block 0, are left out: their scale is set apart from the blocks')."""
    s = norms[(norms["variant"] == "stream") & (norms["block"] >= 1)]
    if len(s) < 2:
        return float("nan")
    slope = np.polyfit(s["block"].to_numpy(float), np.log(s[column].to_numpy(float)), 1)[0]
    return float(math.exp(slope))


def _cos(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Cosine along the last axis, in float64."""
    return F.cosine_similarity(a.double(), b.double(), dim=-1, eps=1e-300)


def block_influence(tr: Trace) -> pd.DataFrame:
    """How much each block turns the stream.

    Columns ``block`` (1..L), ``cos``: mean over tokens of ``cos(x_{l-1}, x_l)`` (the
    block's input and output), ``influence``: ``1 - cos`` (ShortGPT's Block
    Influence, Men et al. 2024), ``angular``: mean of ``arccos(cos) / pi`` (Gromov
    et al. 2024's angular distance between neighbouring states).
    """
    x = tr.stream
    c = _cos(x[:-1], x[1:])  # (L, T)
    ang = torch.arccos(c.clamp(-1, 1)) / math.pi
    return pd.DataFrame(
        {
            "block": np.arange(1, x.shape[0]),
            "cos": c.mean(-1).numpy(),
            "influence": (1 - c).mean(-1).numpy(),
            "angular": ang.mean(-1).numpy(),
        }
    )


def layer_similarity(tr: Trace) -> pd.DataFrame:
    """Every pair of stream states, over tokens.

    Long form: ``block_a``, ``block_b`` (0..L each), ``cos`` (mean of
    ``cos(x_a[t], x_b[t])``) and ``angular`` (mean of ``arccos(cos) / pi``: Gromov et
    al.'s angular distance; in a decoder each position is the last token of the
    prefix ending there, so its mean is theirs averaged over the text's prefixes) and
    ``angular_last`` (the last position's alone: theirs for the whole text as one
    sequence).
    """
    x = tr.stream.double()
    xn = x / x.norm(dim=-1, keepdim=True).clamp_min(1e-300)
    per = torch.einsum("atc,btc->abt", xn, xn)  # (L + 1, L + 1, T)
    sim = per.mean(-1)
    ang_t = torch.arccos(per.clamp(-1, 1)) / math.pi
    ang, last = ang_t.mean(-1), ang_t[..., -1]
    n = sim.shape[0]
    a, b = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    return pd.DataFrame(
        {
            "block_a": a.ravel(),
            "block_b": b.ravel(),
            "cos": sim.numpy().ravel(),
            "angular": ang.numpy().ravel(),
            "angular_last": last.numpy().ravel(),
        }
    )


def _require_head(p: Pretrained, what: str) -> torch.nn.Module:
    head = p.unembedding
    if head is None:
        raise PretrainedError(
            f"{what} needs a model with an output head; {p.architecture} has none.", "architecture"
        )
    return head


def logit_lens(tr: Trace) -> pd.DataFrame:
    """The stream decoded after every block (:func:`logit_lens_tops`'s frame)."""
    return logit_lens_tops(tr)[0]


def logit_lens_tops(tr: Trace) -> tuple[pd.DataFrame, torch.Tensor]:
    """The stream after every block, decoded by the model's own head at the last position.

    ``logits_l = unembed(final_norm(x_l))``, so row L is the model's output exactly.
    The final answer is the model's top token at the last position. Columns
    ``block`` (0..L), ``top_token``, ``top_prob``, ``answer_token``,
    ``answer_rank`` (1 = the top token), ``answer_prob`` (float64 softmax, never
    rounded to 0) and ``agreement``: the share of all positions whose top token
    equals the model's final top token there. Decoders only. With it, the decoded
    top token of every state at every position, (L + 1, T).
    """
    p = tr.model
    if not p.decoder:
        raise PretrainedError(
            "The logit lens reads next-token predictions: it needs a decoder (GPT-2, "
            "Pythia, Llama), not an encoder.",
            "architecture",
        )
    head = _require_head(p, "The logit lens")
    # One state at a time: (L + 1) x T x V logits at once would be 0.7 GB in float64 for
    # GPT-2 small on 128 tokens; per state it is T x V in float32.
    tops, lasts = [], []
    with torch.inference_mode():
        for x in tr.stream:
            logits = head(_norm_stream(p, x))  # (T, V)
            tops.append(logits.argmax(-1))
            lasts.append(torch.log_softmax(logits[-1].double(), dim=-1))
    final_top = tops[-1]  # (T,)
    answer = int(final_top[-1])
    last = torch.stack(lasts)  # (L + 1, V), log-probabilities at the last position
    top = last.argmax(-1)
    ranks = 1 + (last > last[:, answer : answer + 1]).sum(-1)
    agree = torch.stack([(t == final_top).double().mean() for t in tops])
    answer_text = token_texts(p, torch.tensor([answer]))[0]
    frame = pd.DataFrame(
        {
            "block": np.arange(len(tops)),
            "top_token": token_texts(p, top),
            "top_prob": last.gather(-1, top[:, None])[:, 0].exp().numpy(),
            "answer_token": answer_text,
            "answer_rank": ranks.numpy().astype(int),
            "answer_prob": last[:, answer].exp().numpy(),
            "agreement": agree.numpy(),
        }
    )
    return frame, torch.stack(tops)


def _loss_and_top(
    p: Pretrained, logits: torch.Tensor | None, ids: torch.Tensor
) -> tuple[float, Any, Any]:
    """Mean cross-entropy (nats), top-1 tokens and whether each prediction is right. Decoders: next-token loss on
    positions 0..T-2; encoders: the head's loss on the (unmasked) input tokens."""
    if logits is None:
        return float("nan"), None, None
    logp = torch.log_softmax(logits.double(), dim=-1)
    top = logits.argmax(-1)
    if p.decoder:
        target, lp, pred = ids[1:], logp[:-1], top[:-1]
    else:
        target, lp, pred = ids, logp, top
    loss = float(-lp.gather(-1, target[:, None]).mean()) if target.numel() else float("nan")
    return loss, top, (pred == target).numpy()


def layer_deletion(
    tr: Trace, progress: Progress | None = None, should_stop: ShouldStop | None = None
) -> pd.DataFrame:
    """Each block skipped in turn (:func:`layer_deletion_correct`'s frame)."""
    return layer_deletion_correct(tr, progress, should_stop)[0]


def layer_deletion_correct(
    tr: Trace, progress: Progress | None = None, should_stop: ShouldStop | None = None
) -> tuple[pd.DataFrame, np.ndarray | None]:
    """Each block skipped in turn (a hook returns its input as its output), on the same text.

    Columns ``block`` (1..L), ``top1_agreement`` (share of positions whose top token
    equals the full model's), ``loss`` and ``loss_change`` (minus the full model's;
    decoders: next-token cross-entropy in nats; encoders with a masked-LM head: the
    head's cross-entropy of the input tokens), ``accuracy`` (top token equals the
    text's next token, decoders; the input token, encoders), ``accuracy_kept``
    (``accuracy`` over the full model's, Lad et al.'s measure) and ``output_cos``
    (mean cosine between the model's output states with and without the block).
    Head-dependent columns are NaN for a model without a head. ``progress(done,
    total)`` is called after each block; when ``should_stop()`` turns true the rows
    done so far are returned. With the frame, whether each prediction is right: row 0
    the full model, row b with block b deleted (bool, (1 + blocks done, positions));
    None without a head.
    """
    p = tr.model
    full = tr.run
    loss0, top0, right0 = _loss_and_top(p, full.logits, tr.ids)
    acc0 = _mean(right0)
    rows, right = [], [right0]
    n = p.n_layers
    for b in range(1, n + 1):
        if should_stop is not None and should_stop():
            break
        with skipping(p, b):
            run = forward(p, tr.ids)
        loss, top, ok = _loss_and_top(p, run.logits, tr.ids)
        acc = _mean(ok)
        right.append(ok)
        rows.append(
            {
                "block": b,
                "top1_agreement": float("nan")
                if top is None
                else float((top == top0).double().mean()),
                "loss": loss,
                "loss_change": loss - loss0,
                "accuracy": acc,
                "accuracy_kept": acc / acc0 if acc0 else float("nan"),
                "output_cos": float(_cos(run.last_hidden, full.last_hidden).mean()),
            }
        )
        if progress is not None:
            progress(b, n)
    cols = ["block", "top1_agreement", "loss", "loss_change", "accuracy", "accuracy_kept"]
    frame = pd.DataFrame(rows, columns=[*cols, "output_cos"])
    return frame, None if right0 is None else np.stack(right)


def _mean(right: np.ndarray | None) -> float:
    return float(right.mean()) if right is not None and right.size else float("nan")


def collapse_measures(x: torch.Tensor) -> tuple[float, float]:
    """For a token matrix ``X`` (T, C): ``||X - 1 mean^T||_F / ||X||_F`` (0 = rank one of
    that form) and the mean cosine between distinct tokens, in float64, as
    :func:`resviz.rank_collapse` defines them for the toy encoder."""
    X = x.double()
    total = float(X.norm())
    if not math.isfinite(total):
        return float("nan"), float("nan")
    resid = float((X - X.mean(0, keepdim=True)).norm()) / total if total > 0 else 0.0
    T = X.shape[0]
    if T < 2:
        return resid, float("nan")
    Xn = X / X.norm(dim=-1, keepdim=True).clamp_min(1e-300)
    C = Xn @ Xn.T
    return resid, float((C.sum() - C.diagonal().sum()) / (T * (T - 1)))


def without_shortcuts(tr: Trace) -> torch.Tensor:
    """The stream x_0..x_L (L + 1, T, C) with every block's shortcuts removed
    (:meth:`Family.without_shortcuts`)."""
    p = tr.model
    with p.lock, p.family.without_shortcuts(p.model):
        return forward(p, tr.ids).stream


def rank_collapse(tr: Trace, cut: torch.Tensor | None = None) -> pd.DataFrame:
    """Distance of the token matrix from rank one after every block, the model as it is
    and with every block's shortcuts removed (:meth:`Family.without_shortcuts`: the
    identity paths around attention and around the MLP, taken out through hooks on the
    model's own sub-layers; weights, norms and embeddings unchanged).

    Columns ``variant``, ``shortcuts`` (bool), ``block`` (0..L), ``residual`` and
    ``cosine`` (:func:`collapse_measures`). ``cut``: :func:`without_shortcuts`'s
    stream, when it is at hand.
    """
    if cut is None:
        cut = without_shortcuts(tr)
    rows = []
    for variant, stream, on in (("with shortcuts", tr.stream, True), ("no shortcuts", cut, False)):
        for b in range(stream.shape[0]):
            resid, cos = collapse_measures(stream[b])
            rows.append(
                {"variant": variant, "shortcuts": on, "block": b, "residual": resid, "cosine": cos}
            )
    return pd.DataFrame(rows)


def attention_sinks(tr: Trace) -> pd.DataFrame:
    """The first token's share of each head's attention.

    Columns ``block`` (1..L), ``head`` (from 1), ``first_token_share``: the mean over
    query positions 1..T-1 of the attention weight on position 0 (position 0
    attending to itself is left out: in a decoder it has nowhere else to look), and
    ``uniform_share``: the same mean for attention spread evenly over every key a
    query may see (1/(q+1) in a decoder, 1/T in an encoder).
    """
    att = tr.run.attentions
    if att is None or tr.n_tokens < 2:
        raise PretrainedError("Attention sinks need a text of at least two tokens.", "text")
    L, H, T, _ = att.shape
    share = att[:, :, 1:, 0].double().mean(-1)  # (L, H)
    q = torch.arange(1, T, dtype=torch.float64)
    uniform = float((1 / (q + 1)).mean()) if tr.model.decoder else 1 / T
    blocks, heads = np.meshgrid(np.arange(1, L + 1), np.arange(1, H + 1), indexing="ij")
    return pd.DataFrame(
        {
            "block": blocks.ravel(),
            "head": heads.ravel(),
            "first_token_share": share.numpy().ravel(),
            "uniform_share": uniform,
        }
    )


def massive_activations(tr: Trace) -> pd.DataFrame:
    """The largest activation in each stream state (Sun et al. 2024).

    Columns ``block`` (0..L), ``max_abs`` (largest ``|x_l[t, c]|``), ``position``
    (its token, from 0), ``token``, ``dim``, ``median_abs`` (median of ``|x_l|``) and
    ``ratio`` (``max_abs / median_abs``).
    """
    x = tr.stream.double().abs()
    L1, T, C = x.shape
    flat = x.reshape(L1, -1)
    mx, where = flat.max(-1)
    med = flat.median(-1).values
    pos = (where // C).numpy()
    return pd.DataFrame(
        {
            "block": np.arange(L1),
            "max_abs": mx.numpy(),
            "position": pos,
            "token": [tr.tokens[i] for i in pos],
            "dim": (where % C).numpy(),
            "median_abs": med.numpy(),
            "ratio": (mx / med.clamp_min(1e-300)).numpy(),
        }
    )


def text_loss(p: Pretrained, text: str, window: int | None = None) -> float:
    """Mean next-token cross-entropy (nats per token) of a decoder on a whole text:
    the text's tokens cut into consecutive windows of ``window`` tokens (default: the
    model's context), each token after the first of its window predicted once, the
    mean taken over every predicted token. In float64 from the float32 logits."""
    if not p.decoder:
        raise PretrainedError("Next-token loss needs a decoder.", "architecture")
    ids = torch.tensor(p.tokenizer(text)["input_ids"], dtype=torch.long)
    return held_out_loss(p, ids, window)
