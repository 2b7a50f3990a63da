"""One colour and dash per variant on every chart, and legends that name every series
whole: the names the library gives its series, drawn as the pages draw them."""

import itertools

import numpy as np
import pandas as pd
import pytest

import resviz as rv
from resviz.charts import (
    DASHES,
    LABEL_LIMIT,
    PALETTE,
    VARIANT_COLOURS,
    series_styles,
    text_px,
    variant_of,
)
from resviz.gradients.training import training_variants as gradient_training_variants
from resviz.norms.training import stability_variants, warmup_variants
from resviz.shortcuts.decomposition import signal_variants
from resviz.shortcuts.degradation import DegradationConfig, LesionConfig
from tests.readable import problems

STACK = rv.StackConfig(depth=4, width=8)
ENCODER = rv.EncoderConfig(n_layers=2, d_model=16, n_heads=2, d_ff=32, vocab_size=32)


def _stability_sets() -> list[list[str]]:
    out = []
    for norm, pos in itertools.product(("layer", "rms", "batch"), ("pre", "post")):
        others = tuple(n for n in ("layer", "rms", "batch") if n != norm)
        out.append(list(stability_variants(norm, pos, extra=(*others, "other placement"))))
    return out


# Every set of series one chart of the app draws together, by the library's names.
SERIES_SETS = {
    "per layer": ["plain: f(x)", "residual: x + f(x)"],
    "signal": list(signal_variants(STACK)),
    "training": list(gradient_training_variants(STACK, 0.5)),
    "degradation": list(DegradationConfig().variants(0)),
    "degradation signal": [
        f"{v}, {s}" for v in DegradationConfig().variants(0) for s in ("init", "trained")
    ],
    "lesion": list(LesionConfig().variants(0)),
    "shattered": [f"{v}, depth {d}" for v in ("plain", "residual") for d in (2, 10, 50)],
    "spectrum": ["plain, branch J", "residual, I + J", "residual, branch J"],
    "identity ratio": ["measured ||dL/dx_l|| / ||dL/dx_L||", "identity term λ^(L-l)"],
    "pre/post": ["Post-LN", "Pre-LN", "1/sqrt(L)"],
    "warm-up": [f"{v}{s}" for v in warmup_variants() for s in (", no warm-up", ", warm-up 100")],
    **{f"stability {i}": names for i, names in enumerate(_stability_sets())},
    "collapse": list(rv.encoder.views.collapse_variants(ENCODER)),
    "encoder training": list(rv.encoder.masked.training_variants(ENCODER)),
}


def test_each_kind_of_series_has_one_colour_on_every_chart():
    assert variant_of("Post-LN") == "Post-LN" and variant_of("Pre-LN, warm-up 100") == "Pre-LN"
    assert variant_of("plain, depth 50") == variant_of("neither") == "without shortcuts"
    assert variant_of("LayerNorm only (pre)") == "without shortcuts"
    assert variant_of("your model, no shortcuts") == "without shortcuts"
    assert variant_of("residual only") == variant_of("shortcut: add") == "with shortcuts"
    assert variant_of("attention only, shortcuts") == "with shortcuts"
    assert variant_of("scaled: 0.5·x + f(x)") == "with shortcuts"
    assert variant_of("1/sqrt(L)") == variant_of("identity term λ^(L-l)") == "reference"
    assert variant_of("attn") is None and variant_of("your model") is None
    # Post-LN keeps its colour whatever else a chart draws (it once took the first
    # colour of whichever list it fell in).
    alone = series_styles(["Post-LN", "Pre-LN"])
    beside = series_styles(["1/sqrt(L)", "Post-LN", "Pre-LN"])
    assert alone["Post-LN"][0] == beside["Post-LN"][0] == VARIANT_COLOURS["Post-LN"]
    assert alone["Pre-LN"][0] == beside["Pre-LN"][0] == VARIANT_COLOURS["Pre-LN"]
    assert set(VARIANT_COLOURS.values()) <= set(PALETTE)
    # Beside a kind's series no other series wears a kind's colour.
    mine = series_styles(["your model", "your model, no shortcuts", "Post-LN"])["your model"]
    assert mine[0] not in VARIANT_COLOURS.values()


@pytest.mark.parametrize("name", sorted(SERIES_SETS))
def test_no_two_series_of_a_chart_look_alike_and_every_label_fits(name):
    names = SERIES_SETS[name]
    styles = series_styles(names)
    assert list(styles) == list(dict.fromkeys(names))
    assert len(set(styles.values())) == len(styles), styles
    # Every line has a dash of its own (told apart without colour), and every kind keeps
    # its colour.
    assert len({dash for _, dash in styles.values()}) == len(styles), styles
    for n, (colour, dash) in styles.items():
        assert dash in DASHES
        kind = variant_of(n)
        if kind:
            assert colour == VARIANT_COLOURS[kind], n
    cut = [n for n in names if text_px(n) > LABEL_LIMIT]
    assert not cut, f"legend labels longer than {LABEL_LIMIT} px: {cut}"


@pytest.mark.parametrize("name", sorted(SERIES_SETS))
def test_a_line_chart_of_the_set_names_every_series_and_fits_a_phone(name):
    names = SERIES_SETS[name]
    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        [
            {"variant": v, "step": s, "loss": float(rng.uniform(0.1, 1))}
            for v in names
            for s in range(3)
        ]
    )
    spec = rv.charts.line(df, x="step", y="loss", color="variant", log_y=True).to_dict()
    assert not problems(spec), problems(spec)
    layers = spec.get("layer", [spec])
    enc = next(ly["encoding"] for ly in layers if "strokeDash" in ly.get("encoding", {}))
    assert enc["color"]["scale"]["domain"] == enc["strokeDash"]["scale"]["domain"] == names


def test_checks_catch_what_issue_37_saw():
    """The checks fail on the charts the issue found: a legend too wide to show its
    entries, a label cut, a y title longer than its plot, a series not in the legend."""
    six = SERIES_SETS["shattered"]
    wide = {
        "mark": "line",
        "data": {"values": [{"curve": c, "lag": 0, "corr": 1.0} for c in six]},
        "encoding": {
            "color": {"field": "curve", "type": "nominal", "legend": {"orient": "bottom"}},
            "y": {
                "field": "corr",
                "type": "quantitative",
                "title": "||dL/dW2 last layer|| (relative to the shallowest)",
            },  # fmt: skip
        },
    }
    found = " ".join(problems(wide))
    assert "legend" in found and "px wide" in found
    assert "y title too long" in found and "colour alone" in found
    short = {**wide, "encoding": {"color": {**wide["encoding"]["color"], "scale": {
        "domain": six[:4]}}}}  # fmt: skip
    assert "drawn but not in the legend" in " ".join(problems(short))
