import dataclasses

import pytest

import resviz as rv


def test_configs_are_frozen_and_hashable():
    cfg = rv.StackConfig()
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.depth = 3
    assert hash(cfg) == hash(rv.StackConfig())
    assert dataclasses.replace(cfg, depth=3) != cfg
    assert {rv.EncoderConfig(): 1}[rv.EncoderConfig()] == 1


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"n_heads": 3, "d_model": 64}, "does not divide d_model=64"),
        ({"norm": "group"}, "norm='group' is not one of"),
        ({"n_layers": 0}, "n_layers=0 is out of range"),
        ({"dropout": float("nan")}, "dropout=nan is out of range"),
        ({"d_model": 63, "n_heads": 1}, "even d_model"),
        ({"residual": "yes"}, "residual must be True or False"),
        ({"n_layers": 2.5}, "whole number"),
        ({"init": "kaiming"}, "init='kaiming' is not one of 'default', 'xavier'"),
    ],
)
def test_encoder_config_rejects_with_actionable_message(kwargs, needle):
    with pytest.raises(ValueError, match=needle.replace("(", r"\(").replace("[", r"\[")):
        rv.EncoderConfig(**kwargs)


def test_heads_message_lists_valid_choices():
    with pytest.raises(ValueError) as err:
        rv.EncoderConfig(d_model=12, n_heads=5)
    assert "[1, 2, 3, 4, 6, 12]" in str(err.value)


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"depth": 0}, "depth=0 is out of range"),
        ({"activation": "swish"}, "activation='swish'"),
        ({"block": "ffn", "join": "before_act"}, "join='before_act' needs block='linear'"),
        ({"widths": (25,)}, "at least two layer sizes"),
        ({"widths": (25, 0)}, "every width"),
        ({"alpha": float("inf")}, "alpha=inf is out of range"),
    ],
)
def test_stack_config_rejects(kwargs, needle):
    with pytest.raises(ValueError, match=needle):
        rv.StackConfig(**kwargs)


def test_widths_override_depth():
    cfg = rv.StackConfig(widths=(25, 25, 43, 43, 54, 54))
    assert cfg.n_blocks == 5
    assert cfg.in_dim == 25


def test_presets_are_valid_and_match_seed_model():
    classic = rv.ENCODER_PRESETS["Classic Post-LN"]
    assert (classic.n_layers, classic.d_model, classic.vocab_size) == (6, 128, 1000)
    assert classic.norm_position == "post" and classic.positional == "learned"
    assert rv.ENCODER_PRESETS["Attention only"].use_ffn is False
    assert rv.ENCODER_PRESETS["No residuals"].residual is False
