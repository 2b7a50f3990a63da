"""Lesson measures: a lesson's prediction answered from the data its page shows.

A lesson step may ask a question before the page is shown (``[steps.predict]`` in
``ui/lessons.py``); its ``measure`` names a function here that computes the answer:
``fn(settings, seed) -> Measured``. ``settings`` are the step's URL settings by name
(typed as ``ui/specs`` checks them), over the page's declared defaults; the function
makes the same library calls as the section that shows the data, so the answer is
the one on screen. ``answer`` is one of the question's choice labels (each
function's docstring lists its choices) and ``sentence`` states the measured numbers.
Register each function in ``MEASURES``. Nothing here imports streamlit; torch is
imported when a measure runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch

import resviz as rv
from resviz import norms as N

from .specs.pages import spec_of


@dataclass(frozen=True)
class Measured:
    answer: str
    sentence: str


Measure = Callable[[Mapping[str, Any], int], Measured]


def _with_defaults(page: str, settings: Mapping[str, Any]) -> dict[str, Any]:
    """The page's declared defaults, overridden by ``settings`` (names it declares)."""

    values = {p.name: p.default for p in spec_of(page).params}
    values.update({k: v for k, v in settings.items() if k in values})
    return values


# ------------------------------------------------------------------- gradient_flow
def _gradflow_stack(v: Mapping[str, Any], seed: int):  # noqa: ANN202 - rv.StackConfig
    import resviz as rv

    return rv.StackConfig(
        depth=v["depth"],
        width=v["width"],
        activation=v["act"],
        init=v["init"],
        norm=v["norm"],
        seed=seed,
    )


def _num(x: float) -> str:
    from resviz.findings import format_number

    return format_number(x)


def gradflow_input_gradient(settings: Mapping[str, Any], seed: int) -> Measured:
    """Gradient flow, Per layer: which stack passes the larger gradient back to its
    input, relative to its output (``||dL/dx_0|| / ||dL/dx_L||`` at init)?

    Choices: ``"plain"`` (the plain stack's ratio is strictly larger) or
    ``"residual"``. Residual at the defaults (tanh, 10 blocks); plain with LayerNorm
    before deep ReLU blocks (``depth=50, act="relu", norm="layer"``), where the plain
    stack's gradient grows towards the input."""
    from resviz import gradflow as G

    v = _with_defaults("gradient_flow", settings)
    gains = {
        name: float(G.layer_gradients(cfg, seed=seed)["gain"].iloc[0])
        for name, cfg in G.plain_and_residual(_gradflow_stack(v, seed)).items()
    }
    plain, resid = gains[G.PLAIN], gains[G.RESIDUAL]
    answer = "plain" if plain > resid else "residual"
    return Measured(
        answer,
        f"||dL/dx_0|| / ||dL/dx_L|| is {_num(plain)} in the plain stack and {_num(resid)} in "
        f"the residual one ({v['depth']} blocks of width {v['width']}, {v['act']}, "
        f"init {v['init']}, norm {v['norm']}, seed {seed}).",
    )


def gradflow_scaled_shortcut(settings: Mapping[str, Any], seed: int) -> Measured:
    """Gradient flow, Derivation: through L blocks of ``l·x + f(x)``, does the gradient
    reaching the input shrink or grow (the measured ``||dL/dx_0|| / ||dL/dx_L||``)?

    Choices: ``"shrinks"`` (the ratio is below 1, or NaN: no gradient at the output)
    or ``"grows"`` (1 or more). Shrinks at the default ``l = 0.5``; grows at
    ``l = 1.5``, where the identity term l^L explodes."""
    import dataclasses
    import math

    from resviz import gradflow as G

    v = _with_defaults("gradient_flow", settings)
    base = _gradflow_stack(v, seed)
    cfg = dataclasses.replace(
        base,
        depth=v["L"],
        identity_scale=v["l"],
        init="small" if v["small"] else base.init,
    )
    ratio = G.identity_ratio(cfg, seed=seed)
    measured = float(ratio["measured"].iloc[0])
    theory = float(ratio["identity_term"].iloc[0])
    answer = "grows" if measured >= 1 else "shrinks"
    shown = _num(measured) if math.isfinite(measured) else "not a number"
    return Measured(
        answer,
        f"With l = {v['l']:g} and L = {v['L']} the measured ||dL/dx_0|| / ||dL/dx_L|| is "
        f"{shown}; the identity term l^L is {_num(theory)}.",
    )


def gradflow_plain_shattered(settings: Mapping[str, Any], seed: int) -> Measured:
    """Gradient flow, Shattered: is the deepest plain net's ``df/dx`` still smooth
    between neighbouring inputs (lag-1 autocorrelation at least 0.5)?

    Choices: ``"smooth"`` (at least 0.5, or undefined: a constant gradient) or
    ``"shattered"`` (below 0.5, towards white noise). Shattered with batch
    normalization (the default); smooth without it, where df/dx is a step function."""
    import math

    from resviz import gradflow as G

    from .specs.gradient_flow import SHATTERED_DEPTHS, SHATTERED_WIDTH

    v = _with_defaults("gradient_flow", settings)
    norm = "batch" if v["bn"] else "none"
    _, acf = G.shattered_summary(SHATTERED_DEPTHS, width=SHATTERED_WIDTH, norm=norm, seed=seed)
    deepest = max(SHATTERED_DEPTHS)
    lag1 = G.lag_table(acf).set_index("depth").loc[deepest, "plain lag-1 autocorrelation"]
    corr = float(lag1)
    answer = "shattered" if corr < 0.5 else "smooth"
    shown = _num(corr) if math.isfinite(corr) else "undefined (the gradient is constant)"
    return Measured(
        answer,
        f"The plain {deepest}-block net's lag-1 autocorrelation of df/dx is {shown}, "
        f"{'with' if v['bn'] else 'without'} batch normalization (seed {seed}).",
    )


def _rv():  # noqa: ANN202 - the resviz module, imported when a measure runs
    import resviz

    return resviz


def _torch():  # noqa: ANN202

    return torch


# ------------------------------------------------------------- sinusoidal_encoding
def offset_only(settings: Mapping[str, Any], seed: int) -> Measured:
    """Choices: "only on p - q", "on p too". Whether PE(p).PE(q) depends on the
    offset alone, over the positions shown (float64)."""
    s = _with_defaults("sinusoidal_encoding", settings)
    pe = _rv().sinusoidal_encoding(
        int(s["positions"]), int(s["d_model"]), float(s["base"]), dtype=_torch().float64
    )
    err = _rv().positional.offset_dependence(pe)
    scale = int(s["d_model"]) / 2  # PE(p).PE(p) = d/2
    answer = "only on p - q" if err <= 1e-9 * scale else "on p too"
    return Measured(
        answer,
        f"Largest gap between PE(p).PE(q) and PE(0).PE(|p-q|) over {s['positions']} positions: "
        f"{err:.2e} (the dot product itself is up to {scale:g}).",
    )


def similarity_monotone(settings: Mapping[str, Any], seed: int) -> Measured:
    """Choices: "falls steadily", "rises again somewhere". Whether PE(0).PE(k) falls
    with every step of k over the positions shown."""
    s = _with_defaults("sinusoidal_encoding", settings)
    pe = _rv().sinusoidal_encoding(
        int(s["positions"]), int(s["d_model"]), float(s["base"]), dtype=_torch().float64
    )
    by = _rv().positional.similarity_by_offset(pe)
    rises = by["offset"][by["dot"].diff() > 1e-9].tolist()
    if rises:
        return Measured(
            "rises again somewhere",
            f"Over offsets 0 to {len(by) - 1}, PE(0).PE(k) rises again at {len(rises)} offsets, "
            f"first at k = {rises[0]}.",
        )
    return Measured(
        "falls steadily",
        f"Over offsets 0 to {len(by) - 1}, PE(0).PE(k) falls at every step, from "
        f"{_num(float(by['dot'].iloc[0]))} to {_num(float(by['dot'].iloc[-1]))}.",
    )


# ------------------------------------------------------------------- normalization
def _norm_input(s: Mapping[str, Any], seed: int) -> Any:
    """The normalization page's input batch (its first three sections), as shown."""
    return N.scaled_batch(
        int(s["batch"]), int(s["tokens"]), int(s["d"]), float(s["big"]), float(s["small"]), seed
    )


def layernorm_keeps_halves(settings: Mapping[str, Any], seed: int) -> Measured:
    """Choices: "yes", "no". Whether, after LayerNorm, the first half of the features
    (multiplied by "first half x") is still more than twice as large as the second
    half: mean |value| in sample 0, as the Four views caption measures it."""
    s = _with_defaults("normalization", settings)
    frame = N.norm_views(N.apply_norms(_norm_input(s, seed)), 0)
    raw, ln = N.half_means(frame, "raw"), N.half_means(frame, "LayerNorm")
    ratio = ln[0] / ln[1]
    return Measured(
        "yes" if ratio > 2 else "no",
        f"Mean |value| of the first half over the second half's, in sample 0: "
        f"{rv.format_number(raw[0] / raw[1])} raw, {rv.format_number(ratio)} after LayerNorm "
        f"(halves x{float(s['big']):g} and x{float(s['small']):g}).",
    )


def textbook_gap_large(settings: Mapping[str, Any], seed: int) -> Measured:
    """Choices: "yes", "no". Whether the hand-written LayerNorm (unbiased std, eps on
    the std) differs from torch's somewhere by more than 0.05: the largest
    |textbook - torch| over every token of the batch, as the Textbook LayerNorm
    section measures it. Its cause, the factor sqrt((d-1)/d), matters at small d."""
    s = _with_defaults("normalization", settings)
    gap = N.layernorm_gap(_norm_input(s, seed))
    d = int(s["d"])
    largest = float(gap["measured"].max())
    return Measured(
        "yes" if largest > 0.05 else "no",
        f"Largest |textbook - torch| over {len(gap)} tokens of d = {d} features: "
        f"{rv.format_number(largest)} (the formulas predict "
        f"{rv.format_number(float(gap['predicted'].max()))}; sqrt((d-1)/d) = "
        f"{rv.format_number(((d - 1) / d) ** 0.5)}).",
    )


def preln_stream_doubles(settings: Mapping[str, Any], seed: int) -> Measured:
    """Choices: "yes", "no". Whether the Pre-LN stream's ||x_l||²/d at the last layer
    is more than twice its value at the input, at init (the Pre-LN vs Post-LN
    section's stream chart). Xavier's larger weights make it grow faster than
    PyTorch's default init."""
    s = _with_defaults("normalization", settings)
    layers = int(s["layers"])
    stream = N.prepost_stream(layers, int(s["d_model"]), seed, str(s["init"]))
    pre = stream[stream["variant"] == "Pre-LN"].sort_values("block")["sq_norm_per_dim"]
    first, last = float(pre.iloc[0]), float(pre.iloc[-1])
    return Measured(
        "yes" if last > 2 * first else "no",
        f"Pre-LN's ||x_l||²/d goes from {rv.format_number(first)} at the input to "
        f"{rv.format_number(last)} after layer {layers} ({rv.format_number(last / first)} "
        f"times; {s['init']} init, d = {s['d_model']}).",
    )


MEASURES: dict[str, Measure] = {
    # gradient_flow
    "gradflow_input_gradient": gradflow_input_gradient,
    "gradflow_scaled_shortcut": gradflow_scaled_shortcut,
    "gradflow_plain_shattered": gradflow_plain_shattered,
    # sinusoidal_encoding
    "offset_only": offset_only,
    "similarity_monotone": similarity_monotone,
    "layernorm_keeps_halves": layernorm_keeps_halves,
    "textbook_gap_large": textbook_gap_large,
    "preln_stream_doubles": preln_stream_doubles,
}


# ------------------------------------------------------------------ skip_connections
def _skip_signal(settings: Mapping[str, Any], seed: int) -> tuple[Any, Any]:
    """The Signal section's stack and frame for these settings (``rv.skip.compare_signal``,
    the page's call), the page's defaults under them (``ui.skip_configs``, checked as
    the page checks its URL)."""
    from . import skip_configs

    cfg = skip_configs.stack_config(skip_configs.defaults(settings), seed)
    return cfg, _rv().skip.compare_signal(cfg, seed=cfg.seed)


def skip_norm_trend(settings: Mapping[str, Any], seed: int) -> Measured:
    """Choices: "grows", "shrinks", "stays the same". Skip connections, Signal: from
    block 1 to the last block, whether the mean norm of the stack as set (the
    ``shortcut: <mode>`` curve) grows or shrinks; "stays the same" when equal to 1e-9,
    as with ReZero at init, where every block is exactly the identity."""
    cfg, signal = _skip_signal(settings, seed)
    rows = signal[signal["variant"] != "plain"]
    first, last = float(rows["norm"].iloc[0]), float(rows["norm"].iloc[-1])
    if abs(last - first) <= 1e-9 * max(abs(first), abs(last)):
        answer = "stays the same"
    else:
        answer = "grows" if last > first else "shrinks"
    return Measured(
        answer,
        f"With shortcut {cfg.residual}, the mean norm is {_num(first)} at "
        f"block 1 and {_num(last)} at block {int(rows['block'].iloc[-1])}: "
        f"it {answer}.",
    )


def skip_last_block_term(settings: Mapping[str, Any], seed: int) -> Measured:
    """Choices: "shortcut", "update". Skip connections, Signal: in the last block's
    output y = s + u, which term holds most of it: "shortcut" when identity_share is
    above 1/2, else "update" (identity_share is 0 without a shortcut)."""
    num = _num
    _, signal = _skip_signal(settings, seed)
    last = _rv().skip.shortcut_terms(signal).iloc[-1]
    share = float(last["identity_share"])
    answer = "shortcut" if share > 0.5 else "update"
    return Measured(
        answer,
        f"At block {int(last['block'])}, identity_share = {num(share)} "
        f"(mean ||s|| {num(last['shortcut_norm'])}, mean ||u|| {num(last['update_norm'])}): "
        f"most of the output is the {answer}.",
    )


def skip_residual_lesion(settings: Mapping[str, Any], seed: int) -> Measured:
    """Choices: "barely changes", "suffers", "did not learn". Skip connections, Lesion:
    deleting one block of the trained residual stack, judged as the section's caption
    judges it (``rv.lesion_caption``): it learned the task (accuracy halfway from
    chance to perfect) and loses at most ``LESION_SMALL_DROP`` (5 points) on average.
    Trains the section's two stacks (seconds at the defaults)."""
    from resviz.lesion_study import LESION_SMALL_DROP

    from . import skip_configs

    lcfg = skip_configs.lesion_config(skip_configs.defaults(settings))
    result = _rv().train_lesion(lcfg, seed)
    summary = _rv().lesion_summary(result.lesion, lcfg.classes)
    res = summary[summary["kind"] == "residual"].iloc[0]
    plain = summary[summary["kind"] == "plain"].iloc[0]
    if not res["learned"]:
        answer = "did not learn"
    elif res["mean_drop"] <= LESION_SMALL_DROP:
        answer = "barely changes"
    else:
        answer = "suffers"
    return Measured(
        answer,
        f"The residual stack ({lcfg.depth} blocks, accuracy {res['intact']:.2f} intact) "
        f"loses {100 * res['mean_drop']:.1f} accuracy points on average when one block is "
        f"deleted, the plain one (accuracy {plain['intact']:.2f}) "
        f"{100 * plain['mean_drop']:.1f}: the residual stack {answer}.",
    )


MEASURES.update(
    {
        "skip_norm_trend": skip_norm_trend,
        "skip_last_block_term": skip_last_block_term,
        "skip_residual_lesion": skip_residual_lesion,
    }
)
# ------------------------------------------------------------ end skip_connections


# --------------------------------------------------------------- encoder_playground
def _playground(settings: Mapping[str, Any], seed: int):  # noqa: ANN202 - (Tokens, config)
    """The tokens and the encoder the playground's sections run, from the step's settings.

    As on the page, a step that names a preset gets that preset's value for every
    model setting it leaves out. Raises ``ValueError`` where the page shows a message
    instead (no tokens, heads that do not divide d_model)."""
    import resviz as rv
    from resviz import playground as PG

    from .specs import encoder_playground as S

    v = _with_defaults("encoder_playground", settings)
    if "preset" in settings:
        base = rv.ENCODER_PRESETS[v["preset"]]
        for name, field in S.MODEL_FIELDS.items():
            if name not in settings:
                v[name] = getattr(base, field)
    toks, vocab = PG.tokenize(v["text"], v["level"], int(v["max_len"]), int(v["vocab"]))
    if not toks.ids:
        raise ValueError("the text has no tokens to run.")
    cfg = rv.EncoderConfig(
        n_layers=int(v["layers"]),
        d_model=int(v["d_model"]),
        n_heads=int(v["heads"]),
        d_ff=int(v["d_ff"]),
        vocab_size=len(vocab),
        max_len=int(v["max_len"]),
        residual=bool(v["residual"]),
        norm=v["norm"],
        norm_position=v["place"],
        positional=v["pos"],
        use_ffn=bool(v["ffn"]),
        dropout=float(v["dropout"]),
        activation=v["act"],
        seed=seed,
    )
    return toks, cfg


def _playground_stream(settings: Mapping[str, Any], seed: int):  # noqa: ANN202 - DataFrame
    """The Residual stream section's frame (``resviz.playground.inspect``, at init)."""
    import resviz as rv
    from resviz import playground as PG

    toks, cfg = _playground(settings, seed)
    return PG.inspect(rv.build(cfg), cfg, toks.ids)["stream"]


def playground_stream_norm(settings: Mapping[str, Any], seed: int) -> Measured:
    """Encoder playground, Residual stream: "From the input to the last sublayer, does
    the stream's mean token norm grow or shrink?" Choices: "grows", "shrinks".

    Compares the first and last points of the section's norm chart. At the defaults
    (Pre-LN, residuals on) it grows; with residuals off each sublayer's output replaces
    the stream and it shrinks (and Post-LN renormalizes it after every sum)."""
    stream = _playground_stream(settings, seed)
    first, last = float(stream["input_norm"].iloc[0]), float(stream["stream_norm"].iloc[-1])
    r = stream.iloc[-1]
    answer = "grows" if last > first else "shrinks"
    return Measured(
        answer,
        f"The mean token norm {answer}: {_num(first)} at the input, {_num(last)} after "
        f"L{r['block']} {r['sublayer']} (a factor of {_num(last / first)}).",
    )


def playground_update_ratio(settings: Mapping[str, Any], seed: int) -> Measured:
    """Encoder playground, Residual stream: "Does every sublayer write an output
    smaller than its input (||f(x)|| / ||x|| below 1)?" Choices: "all below 1",
    "not all".

    The largest update ratio on the section's ratio chart. With residuals the
    sublayers nudge the stream (ratios of 0.1-0.3 at init); without them, several
    layers deep, some sublayer's output exceeds its input."""
    stream = _playground_stream(settings, seed)
    top = stream.loc[stream["update_ratio"].idxmax()]
    ratio = float(top["update_ratio"])
    answer = "all below 1" if ratio < 1 else "not all"
    return Measured(
        answer,
        f"The largest ratio ||f(x)|| / ||x|| is {_num(ratio)}, at L{top['block']} "
        f"{top['sublayer']}; the smallest is {_num(float(stream['update_ratio'].min()))}.",
    )


def playground_rank_collapse(settings: Mapping[str, Any], seed: int) -> Measured:
    """Encoder playground, Rank collapse: "After the last layer, has your model's token
    matrix collapsed to rank one?" Choices: "collapsed", "not collapsed".

    "Collapsed": the section's distance ||X - 1 x^T|| / ||X|| of your model after its
    last layer is below 0.01 (the tokens are one vector to within 1%). With
    shortcuts it stays near 1 at init; without them a few layers of attention bring
    it to about 1e-7 (one layer is not enough)."""
    from resviz import playground as PG

    toks, cfg = _playground(settings, seed)
    collapse = PG.rank_collapse_compare(cfg, toks.ids)
    mine = collapse[collapse["variant"] == collapse["variant"].iloc[0]]
    dist = float(mine["residual"].iloc[-1])
    cos = float(mine["cosine"].iloc[-1])
    answer = "collapsed" if dist < 0.01 else "not collapsed"
    tokens = "" if len(toks) > 1 else " (a single token is its own mean)"
    return Measured(
        answer,
        f"After layer {cfg.n_layers} the distance from rank one is {_num(dist)}{tokens}, "
        f"from {_num(float(mine['residual'].iloc[0]))} at the input; the mean cosine "
        f"between tokens is {_num(cos)}.",
    )


MEASURES.update(
    {
        "playground_stream_norm": playground_stream_norm,
        "playground_update_ratio": playground_update_ratio,
        "playground_rank_collapse": playground_rank_collapse,
    }
)


# ---------------------------------------------------------------------- pretrained
def pretrained_rank_collapse(settings: Mapping[str, Any], seed: int) -> Measured:
    """Pretrained models, Rank collapse: "With its shortcuts taken out, does the real
    trained model's stream collapse toward rank one, as the toy encoder's did?"
    Choices: "collapses too", "does not".

    "Collapses too": after the last block, the distance from rank one without
    shortcuts (``rv.pretrained.rank_collapse``, the section's recipe) is below a tenth
    of the distance with them. The step's model is the page's picker value (the
    Sonnets GPT-2 shipped in the package, or the demo encoder); ``seed`` is unused:
    the weights are trained and the text is fixed."""
    from resviz import pretrained as P
    from ui.specs import pretrained as S

    v = _with_defaults("pretrained", settings)
    folder = P.demo_model_path() if v["model"] == S.DEMO else P.tiny_gpt2_path()
    if folder is None:
        raise ValueError("the step's model is not installed here")
    m = P.load(folder)
    tr = P.trace(m, v["text"])
    rc = P.rank_collapse(tr)
    last = rc[rc["block"] == m.n_layers].set_index("variant")["residual"]
    with_s, without = float(last["with shortcuts"]), float(last["no shortcuts"])
    answer = "collapses too" if without < 0.1 * with_s else "does not"
    return Measured(
        answer,
        f"{m.architecture}, {m.n_layers} blocks: after the last block the distance from rank "
        f"one is {_num(with_s)} with its shortcuts and {_num(without)} without them"
        + (" (a single token is its own mean)." if tr.n_tokens == 1 else "."),
    )


MEASURES["pretrained_rank_collapse"] = pretrained_rank_collapse
