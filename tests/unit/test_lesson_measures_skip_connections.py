"""The skip-connections page's workshop measures: each answer on both sides of its flip,
computed from the same library calls as the page, at settings the page allows."""

import pytest

import resviz as rv
from ui import skip_configs
from ui.lesson_measures import MEASURES, Measured
from ui.specs import InvalidParam


def _measure(name, settings, seed=0) -> Measured:
    return MEASURES[name](settings, seed)


@pytest.mark.parametrize(
    ("settings", "answer"),
    [
        ({}, "grows"),  # x + relu(Wx + b): every block adds to the stream
        ({"mode": "none"}, "shrinks"),  # PyTorch's default init shrinks a plain relu stack
        ({"mode": "scaled", "alpha": 0.0}, "stays the same"),  # ReZero: the identity at init
    ],
)
def test_norm_trend(settings, answer):
    got = _measure("skip_norm_trend", settings)
    assert got.answer == answer
    # The numbers in the sentence are the Signal section's.
    cfg = skip_configs.stack_config(skip_configs.defaults(settings), 0)
    signal = rv.skip.compare_signal(cfg, seed=0)
    rows = signal[signal["variant"] != "plain"]
    assert f"is {rv.format_number(rows['norm'].iloc[0])} at block 1" in got.sentence
    assert f"at block {len(rows)}: it {answer}." in got.sentence


@pytest.mark.parametrize(
    ("settings", "answer"),
    [
        ({}, "shortcut"),
        # a = 2, fixed, on Kaiming-initialised branches: the update outweighs the input.
        ({"mode": "scaled", "alpha": 2.0, "learnable": False, "init": "kaiming"}, "update"),
        ({"mode": "none"}, "update"),
    ],
)
def test_last_block_term(settings, answer):
    got = _measure("skip_last_block_term", settings)
    assert got.answer == answer
    assert got.sentence.startswith("At block 16, identity_share = ")


@pytest.mark.parametrize(
    ("settings", "answer"),
    [
        ({}, "barely changes"),  # the defaults: 16 blocks, 400 steps
        ({"l_depth": 4, "l_steps": 100}, "suffers"),
        ({"l_depth": 16, "l_steps": 100, "act": "sigmoid"}, "did not learn"),
    ],
)
def test_residual_lesion(settings, answer):
    got = _measure("skip_residual_lesion", settings)
    assert got.answer == answer, got.sentence
    assert got.sentence.endswith(f"the residual stack {answer}.")


def test_measures_refuse_settings_the_page_would_refuse():
    with pytest.raises(InvalidParam):
        _measure("skip_norm_trend", {"depth": 65})
    with pytest.raises(ValueError, match="no setting"):
        _measure("skip_norm_trend", {"bogus": 1})
