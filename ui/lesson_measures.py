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


@dataclass(frozen=True)
class Measured:
    answer: str
    sentence: str


Measure = Callable[[Mapping[str, Any], int], Measured]


def _with_defaults(page: str, settings: Mapping[str, Any]) -> dict[str, Any]:
    """The page's declared defaults, overridden by ``settings`` (names it declares)."""
    from .specs.pages import spec_of

    values = {p.name: p.default for p in spec_of(page).params}
    values.update({k: v for k, v in settings.items() if k in values})
    return values


MEASURES: dict[str, Measure] = {}


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
        f"The mean token norm {answer}: {_pg_num(first)} at the input, {_pg_num(last)} after "
        f"L{r['layer']} {r['sublayer']} (a factor of {_pg_num(last / first)}).",
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
        f"The largest ratio ||f(x)|| / ||x|| is {_pg_num(ratio)}, at L{top['layer']} "
        f"{top['sublayer']}; the smallest is {_pg_num(float(stream['update_ratio'].min()))}.",
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
        f"After layer {cfg.n_layers} the distance from rank one is {_pg_num(dist)}{tokens}, "
        f"from {_pg_num(float(mine['residual'].iloc[0]))} at the input; the mean cosine "
        f"between tokens is {_pg_num(cos)}.",
    )


def _pg_num(x: float) -> str:
    from resviz.findings import format_number

    return format_number(x)


MEASURES.update(
    {
        "playground_stream_norm": playground_stream_norm,
        "playground_update_ratio": playground_update_ratio,
        "playground_rank_collapse": playground_rank_collapse,
    }
)
