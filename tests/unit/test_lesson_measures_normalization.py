"""The normalization page's lesson measures: each answer flips at a setting the page
allows, and each sentence quotes the numbers the section shows."""

import re

import pytest
import torch

from resviz import norms as N
from ui.lesson_measures import MEASURES, Measured
from ui.specs.normalization import SPEC

NUM = r"(-?\d+(?:\.\d+)?(?:e-?\d+)?)"


@pytest.fixture(autouse=True)
def one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def _measure(name: str, seed: int = 0, **settings: object) -> Measured:
    for k, v in settings.items():  # each setting is one the page's widget could hold
        SPEC.param(k).check(v)
    got = MEASURES[name](settings, seed)
    assert isinstance(got, Measured) and got.answer in ("yes", "no")
    return got


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
    assert "halves x1 and x1" in same.sentence


def test_textbook_gap_is_large_at_small_d_only():
    small_d = _measure("textbook_gap_large", d="16")
    assert small_d.answer == "yes"
    gap = N.layernorm_gap(N.scaled_batch(8, 16, 16, 10.0, 0.1, 0))["measured"].max()
    m = re.search(rf"tokens of d = 16 features: {NUM}", small_d.sentence)
    assert m and float(m[1]) == pytest.approx(float(gap), rel=5e-3)
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
    assert _measure("preln_stream_doubles", init="default", layers=24).answer == "yes"
    assert _measure("preln_stream_doubles", layers=1).answer == "no"
