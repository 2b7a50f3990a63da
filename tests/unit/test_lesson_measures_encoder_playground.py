"""The encoder playground's lesson measures: each answers from the numbers its
section shows, and each answer flips at a setting the page allows."""

import pytest

import resviz as rv
from resviz import playground as PG
from ui.lesson_measures import MEASURES, Measured
from ui.specs import encoder_playground as S

SMALL = {"layers": 2, "d_model": "32", "heads": "4", "d_ff": "64", "max_len": 12}


def _stream(settings: dict, seed: int = 0):
    """The Residual stream section's frame, built the way the page builds it."""
    v = {p.name: p.default for p in S.SPEC.params} | settings
    toks, vocab = PG.tokenize(v["text"], v["level"], v["max_len"], v["vocab"])
    cfg = rv.EncoderConfig(
        n_layers=v["layers"], d_model=int(v["d_model"]), n_heads=int(v["heads"]),
        d_ff=int(v["d_ff"]), vocab_size=len(vocab), max_len=v["max_len"],
        residual=v["residual"], norm=v["norm"], norm_position=v["place"],
        positional=v["pos"], use_ffn=v["ffn"], dropout=v["dropout"], activation=v["act"],
        seed=seed,
    )  # fmt: skip
    return PG.inspect(rv.build(cfg), cfg, toks.ids)["stream"]


def test_registered():
    for name in ("playground_stream_norm", "playground_update_ratio", "playground_rank_collapse"):
        assert name in MEASURES


@pytest.mark.parametrize(
    ("settings", "model", "answer"),
    [
        ({}, {}, "grows"),
        ({"residual": False}, {"residual": False}, "shrinks"),
        # The "No residuals" preset is Pre-LN with residual=False.
        ({"preset": "No residuals"}, {"residual": False}, "shrinks"),
    ],
)
def test_stream_norm_grows_with_residuals_and_shrinks_without(settings, model, answer):
    got = MEASURES["playground_stream_norm"](settings, 0)
    assert isinstance(got, Measured) and got.answer == answer
    stream = _stream(model)
    first, last = stream["input_norm"].iloc[0], stream["stream_norm"].iloc[-1]
    assert (last > first) == (answer == "grows")
    assert rv.format_number(first) in got.sentence and rv.format_number(last) in got.sentence


@pytest.mark.parametrize(
    ("settings", "answer"), [({}, "all below 1"), ({"residual": False}, "not all")]
)
def test_update_ratio_stays_below_one_only_with_residuals(settings, answer):
    got = MEASURES["playground_update_ratio"](settings, 0)
    assert got.answer == answer
    top = _stream(settings)["update_ratio"].max()
    assert (top < 1) == (answer == "all below 1")
    assert rv.format_number(top) in got.sentence


@pytest.mark.parametrize(
    ("settings", "answer"),
    [
        ({}, "not collapsed"),
        ({"residual": False}, "collapsed"),
        # One layer without shortcuts is not enough to collapse.
        ({"residual": False, "layers": 1}, "not collapsed"),
        ({**SMALL, "preset": "Attention only", "residual": False, "layers": 6}, "collapsed"),
    ],
)
def test_rank_collapse_without_shortcuts_after_a_few_layers(settings, answer):
    got = MEASURES["playground_rank_collapse"](settings, 0)
    assert got.answer == answer, got.sentence
    assert "distance from rank one" in got.sentence


def test_a_named_preset_fills_in_the_settings_the_step_leaves_out():
    # "Classic Post-LN": Post-LN renormalizes after every sum, learned positions.
    post = MEASURES["playground_stream_norm"]({"preset": "Classic Post-LN", "pos": "sinusoidal"}, 0)
    assert post.answer == "shrinks"  # sqrt(1.5 d) at the input, sqrt(d) after LayerNorm
    assert "after L6 ffn" in post.sentence


def test_seed_and_bad_settings():
    a = MEASURES["playground_update_ratio"]({}, 0).sentence
    assert MEASURES["playground_update_ratio"]({}, 0).sentence == a
    assert MEASURES["playground_update_ratio"]({}, 1).sentence != a
    with pytest.raises(ValueError, match="no tokens"):
        MEASURES["playground_stream_norm"]({"text": "   "}, 0)
    with pytest.raises(ValueError):
        MEASURES["playground_stream_norm"]({"heads": "3"}, 0)
