"""The normalization page's lesson measures: each reads its section's recipe, each
answer flips at a setting the page allows, and each sentence quotes the numbers the
section shows (computed here directly from the library)."""

import re

import pytest

from resviz import norms as N
from resviz.recipes import MEASURES, Answer
from resviz.recipes import norms as R
from ui.specs.normalization import SPEC

NUM = r"(-?\d+(?:\.\d+)?(?:e-?\d+)?)"


pytestmark = pytest.mark.usefixtures("one_thread")


def _measure(name: str, seed: int = 0, **settings: object) -> Answer:
    for k, v in settings.items():  # each setting is one the page's widget could hold
        SPEC.param(k).check(v)
    got = MEASURES[name].at(settings, seed)
    assert isinstance(got, Answer) and got.answer in MEASURES[name].choices
    return got


def test_each_measure_reads_its_sections_recipe():
    assert MEASURES["layernorm_keeps_halves"].recipe is R.four_views
    assert MEASURES["textbook_gap_large"].recipe is R.textbook
    assert MEASURES["preln_stream_doubles"].recipe is R.prepost_ln
    assert SPEC.recipes["Four views"] == "norms.four_views"


def test_layernorm_keeps_the_larger_half_only_when_the_halves_differ():
    got = _measure("layernorm_keeps_halves")  # halves x10 and x0.1
    assert got.answer == "yes"
    frame = N.norm_views(N.apply_norms(N.scaled_batch(8, 16, 64, 10.0, 0.1, 0)), 0)
    first, second = N.half_means(frame, "LayerNorm")
    m = re.search(rf"{NUM} after LayerNorm", got.sentence)
    assert m and float(m[1]) == pytest.approx(first / second, rel=5e-3)
    assert first / second > 2
    same = _measure("layernorm_keeps_halves", big="1", small="1")
    assert same.answer == "no"
    m = re.search(rf"sample 0: {NUM} raw, {NUM} after LayerNorm", same.sentence)
    assert m and 0.5 < float(m[1]) < 2 and float(m[2]) < 2


def test_textbook_gap_is_large_at_small_d_only():
    small_d = _measure("textbook_gap_large", d="16")
    assert small_d.answer == "yes"
    gap = N.layernorm_gap(N.scaled_batch(8, 16, 16, 10.0, 0.1, 0))["measured"].max()
    m = re.search(rf"over 128 tokens of d = 16 features: {NUM}", small_d.sentence)
    assert m and float(m[1]) == pytest.approx(float(gap), rel=5e-3)
    assert "sqrt((d-1)/d) = 0.968" in small_d.sentence  # sqrt(15/16)
    assert _measure("textbook_gap_large").answer == "no"  # d = 64
    assert _measure("textbook_gap_large", d="128", seed=2).answer == "no"


def test_preln_stream_doubles_under_xavier_not_under_the_default_init():
    xavier = _measure("preln_stream_doubles")  # 8 layers, d = 64, xavier
    assert xavier.answer == "yes"
    stream = N.prepost_stream(8, 64, 0, "xavier")
    pre = stream[stream["variant"] == "Pre-LN"]["sq_norm_per_dim"].tolist()
    m = re.search(rf"from {NUM} at the input to {NUM} after layer 8", xavier.sentence)
    assert m and float(m[2]) == pytest.approx(pre[-1], rel=5e-3)
    assert _measure("preln_stream_doubles", init="default").answer == "no"
    deep = _measure("preln_stream_doubles", init="default", layers=24)
    assert deep.answer == "yes" and "after layer 24" in deep.sentence
    one = _measure("preln_stream_doubles", layers=1)
    assert one.answer == "no" and "after layer 1 " in one.sentence


def test_a_measure_takes_the_settings_as_the_page_holds_them_or_typed():
    # The URL holds choices as text ("16"); a notebook passes numbers (16).
    text = MEASURES["textbook_gap_large"].at({"d": "16", "big": "10"}, 1)
    typed = MEASURES["textbook_gap_large"].at({"d": 16, "big": 10.0}, 1)
    assert text == typed


def test_preln_stream_doubles_over_seeds_agree_and_split():
    # Xavier, 8 layers: every seed's stream more than doubles.
    agree = _measure("preln_stream_doubles")
    assert agree.sentence.startswith("In 3 of 3 seeds: yes. Seed 0: ")
    # PyTorch's default init at 12 layers sits on the threshold: seeds 0 and 1 grow
    # 2.01 and 2.07 times, seed 2 just under 2 (pinned split). The answer is the
    # majority, with its count; seed 2's own sentence shows the ratio below 2, never
    # rounded up to "2 times".
    split = _measure("preln_stream_doubles", layers=12, init="default")
    assert split.answer == "yes" and split.sentence.startswith("In 2 of 3 seeds: yes.")
    one = MEASURES["preln_stream_doubles"].at({"layers": 12, "init": "default", "seeds": 1}, 2)
    assert one.answer == "no"
    m = re.search(rf"after layer 12 \({NUM} times\)", one.sentence)
    assert m and 1.99 < float(m[1]) < 2
