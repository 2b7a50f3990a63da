"""The normalization page's lesson measures: each reads its section's recipe, each
answer flips at a setting the page allows, and each sentence quotes the numbers the
section shows (computed here directly from the library)."""

import re

import pandas as pd
import pytest

from resviz import norms as N
from resviz.core import Result
from resviz.norms import recipes as R
from resviz.recipes import MEASURES, Answer
from resviz.words.seeds import SEEDS_DISAGREE, seeds_answer
from tests.margins import AT_INIT, assert_clear, printed
from ui.specs.normalization import SPEC

NUM = r"(-?\d+(?:\.\d+)?(?:e-?\d+)?)"


pytestmark = pytest.mark.usefixtures("one_thread")


def _measure(name: str, seed: int = 0, **settings: object) -> Answer:
    for k, v in settings.items():  # each setting is one the page's widget could hold
        SPEC.param(k).check(v)
    got = MEASURES[name].at(settings, seed)
    assert isinstance(got, Answer) and got.answer in (*MEASURES[name].choices, SEEDS_DISAGREE)
    return got


def test_each_measure_reads_its_sections_recipe():
    assert MEASURES["layernorm_keeps_halves"].recipe is R.four_views
    assert MEASURES["textbook_gap_large"].recipe is R.textbook
    assert MEASURES["preln_stream_doubles"].recipe is R.prepost_ln
    assert SPEC.recipes["Four views"] == "norms.four_views"


def _ln_ratios(**settings: object) -> list[float]:
    """Each seed's LayerNorm halves ratio in sample 0 (the measure's value)."""
    r = R.four_views(**settings)
    return [float(x.halves.set_index("view").loc["LayerNorm", "ratio"]) for x in r.per_seed]


def test_layernorm_keeps_the_larger_half_only_when_the_halves_differ():
    # At init (no training), each seed's ratio at least 5% clear of the 2 that decides
    # (tests/margins.py): 9.97-12.4 with halves x10 and x0.1, 0.99-1.02 with both x1.
    for q in _ln_ratios(seed=0):
        assert_clear(q, 2, side="above", margin=AT_INIT, kind="factor", what="LN halves ratio")
    for q in _ln_ratios(seed=0, big="1", small="1"):
        assert_clear(q, 2, side="below", margin=AT_INIT, kind="factor", what="LN halves ratio")
    got = _measure("layernorm_keeps_halves")  # halves x10 and x0.1
    assert got.answer == "yes"
    frame = N.norm_views(N.apply_norms(N.scaled_batch(8, 16, 64, 10.0, 0.1, 0)), 0)
    first, second = N.half_means(frame, "LayerNorm")
    m = re.search(rf"{NUM} after LayerNorm", got.sentence)
    assert m and float(m[1]) == printed(first / second)
    assert first / second > 2
    same = _measure("layernorm_keeps_halves", big="1", small="1")
    assert same.answer == "no"
    m = re.search(rf"sample 0: {NUM} raw, {NUM} after LayerNorm", same.sentence)
    assert m and 0.5 < float(m[1]) < 2 and float(m[2]) < 2


def test_textbook_gap_is_large_at_small_d_only():
    # At init, each seed's largest gap at least 5% clear of the 0.05 that decides:
    # 0.105-0.110 at d = 16, 0.036-0.039 at d = 64, 0.020-0.022 at d = 128 (seeds 2-4).
    for d, seed, side in (("16", 0, "above"), ("64", 0, "below"), ("128", 2, "below")):
        for x in R.textbook(d=d, seed=seed).per_seed:
            what = f"largest |textbook - torch| at d = {d}"
            assert_clear(x.measured_max, 0.05, side=side, margin=AT_INIT, kind="factor", what=what)
    small_d = _measure("textbook_gap_large", d="16")
    assert small_d.answer == "yes"
    gap = N.layernorm_gap(N.scaled_batch(8, 16, 16, 10.0, 0.1, 0))["measured"].max()
    m = re.search(rf"over 128 tokens of d = 16 features: {NUM}", small_d.sentence)
    assert m and float(m[1]) == printed(float(gap))
    assert "sqrt((d-1)/d) = 0.968" in small_d.sentence  # sqrt(15/16)
    assert _measure("textbook_gap_large").answer == "no"  # d = 64
    assert _measure("textbook_gap_large", d="128", seed=2).answer == "no"


def _growth(r) -> list[float]:  # noqa: ANN001 - a prepost_ln Result
    """Each seed's Pre-LN ||x_L||^2/d over its input's, the measure's value."""
    out = []
    for x in r.per_seed:
        pre = x.stream[x.stream["variant"] == "Pre-LN"]["sq_norm_per_dim"]
        out.append(float(pre.iloc[-1] / pre.iloc[0]))
    return out


def _doubles(side: str, **settings: object) -> Answer:
    """The measure over the recipe's seeds (0-2), each seed's growth first checked at
    least 5% clear of the 2 that decides (at init: tests/margins.py)."""
    r = R.prepost_ln(**settings)
    for q in _growth(r):
        what = f"Pre-LN stream growth at {settings}"
        assert_clear(q, 2, side=side, margin=AT_INIT, kind="factor", what=what)
    return MEASURES["preln_stream_doubles"].over(r)


@pytest.mark.slow
def test_preln_stream_doubles_under_xavier_not_under_the_default_init():
    # Each seed's growth: 5.8-6.5 (xavier, 8 layers), 1.63-1.74 (default, 8), 3.02-3.45
    # (default, 24), 1.39-1.44 (xavier, 1 layer).
    xavier = _doubles("above")  # 8 layers, d = 64, xavier
    assert xavier.answer == "yes"
    stream = N.prepost_stream(8, 64, 0, "xavier")
    pre = stream[stream["variant"] == "Pre-LN"]["sq_norm_per_dim"].tolist()
    m = re.search(rf"from {NUM} at the input to {NUM} after layer 8", xavier.sentence)
    assert m and float(m[2]) == printed(pre[-1])
    assert _doubles("below", init="default").answer == "no"
    deep = _doubles("above", init="default", layers=24)
    assert deep.answer == "yes" and "after layer 24" in deep.sentence
    one = _doubles("below", layers=1)
    assert one.answer == "no" and "after layer 1 " in one.sentence


def test_a_measure_takes_the_settings_as_the_page_holds_them_or_typed():
    # The URL holds choices as text ("16"); a notebook passes numbers (16).
    text = MEASURES["textbook_gap_large"].at({"d": "16", "big": "10"}, 1)
    typed = MEASURES["textbook_gap_large"].at({"d": 16, "big": 10.0}, 1)
    assert text == typed


@pytest.mark.slow
def test_preln_stream_doubles_over_seeds_agree_and_split():
    # Xavier, 8 layers: every seed's stream more than doubles.
    agree = _measure("preln_stream_doubles")
    assert agree.sentence.startswith(seeds_answer(["yes"] * 3, [""] * 3, (0, 1, 2))[1])
    # PyTorch's default init at 11 layers of d = 32, seeds 4-6: seeds 4 and 5 grow 2.77
    # and 2.32 times, seed 6 1.82 times (each at least 5% clear of 2; at 12 layers of
    # d = 64, seeds 0-2 grew 2.005, 2.075 and 1.996 times, too near 2 to pin a split).
    # Two of three is not agreement (the captions' rule): no answer, and the split.
    settings = {"layers": 11, "d_model": "32", "init": "default"}
    r = R.prepost_ln(**settings, seed=4)
    growth = _growth(r)
    for seed, q, side in zip(r.seeds, growth, ("above", "above", "below"), strict=True):
        what = f"Pre-LN stream growth, default init, 11 layers of d = 32, seed {seed}"
        assert_clear(q, 2, side=side, margin=AT_INIT, kind="factor", what=what)
    split = MEASURES["preln_stream_doubles"].over(r)
    assert split == _measure("preln_stream_doubles", seed=4, **settings)  # as the lesson runs it
    assert split.answer == SEEDS_DISAGREE
    each = [MEASURES["preln_stream_doubles"].read(run) for run in r.per_seed]
    assert [a.answer for a in each] == ["yes", "yes", "no"]  # seeds 4-6
    assert (split.answer, split.sentence) == seeds_answer(
        [a.answer for a in each], [a.sentence for a in each], r.seeds
    )
    one = MEASURES["preln_stream_doubles"].at({**settings, "seeds": 1}, 6)
    assert one.answer == "no"
    m = re.search(rf"after layer 11 \({NUM} times\)", one.sentence)
    assert m and float(m[1]) == pytest.approx(growth[2], rel=5e-4)


def test_preln_stream_doubles_never_rounds_a_ratio_up_to_2():
    """A ratio just under 2 (scripted: 1.9961, what seed 2 measured at 12 layers of
    d = 64) answers no, and its sentence shows it under 2, never as "2 times"."""
    stream = pd.DataFrame(
        {"variant": "Pre-LN", "block": [0, 6, 12], "sq_norm_per_dim": [1.0, 1.5, 1.9961]}
    )
    one = MEASURES["preln_stream_doubles"].read(Result({"stream": stream}))
    assert one.answer == "no"
    m = re.search(rf"after layer 12 \({NUM} times\)", one.sentence)
    assert m and 1.99 < float(m[1]) < 2, one.sentence
