"""The encoder playground's groups of settings (resviz/encoder/settings.py): a preset
sets the model settings to values their widgets can hold, and what the settings make
is the same whether they come as groups or by name."""

import pytest

import resviz as rv
from resviz.config import config_fields
from resviz.encoder import settings as ES

MODEL_FIELDS = ("n_layers", "d_model", "n_heads", "d_ff", "activation", "dropout", "norm")
MODEL_FIELDS += ("norm_position", "positional", "residual", "use_ffn")


def test_the_model_defaults_are_the_default_presets():
    assert ES.Model() == ES.Model.of(rv.ENCODER_PRESETS[ES.DEFAULT_PRESET])


@pytest.mark.parametrize("name", list(rv.ENCODER_PRESETS))
def test_a_preset_sets_values_the_widgets_hold_and_makes_its_model(name):
    preset = rv.ENCODER_PRESETS[name]
    model = ES.Model.of(preset)
    for d in ES.Model.declared():  # each value as its widget (and the URL) would take it
        assert d.setting.check(getattr(model, d.name)) == getattr(model, d.name), d.name
    cfg = model.config(vocab_size=50, max_len=16, seed=3)
    want, got = config_fields(preset), config_fields(cfg)
    assert {k: got[k] for k in MODEL_FIELDS} == {k: want[k] for k in MODEL_FIELDS}
    assert (cfg.vocab_size, cfg.max_len, cfg.seed) == (50, 16, 3)


def test_setup_takes_groups_or_names_alike():
    by_group = ES.setup(ES.Text(text="the cat sat", level="char"), ES.Model(layers=2), seed=4)
    by_name = ES.setup(text="the cat sat", level="char", layers=2, seed=4)
    assert by_group == by_name
    assert by_group.cfg.n_layers == 2 and by_group.cfg.seed == 4 and by_group.vocab.level == "char"
    with pytest.raises(ValueError, match="does not divide"):
        ES.setup(heads="3")


def test_head_is_clamped_to_the_model_and_training_reads_its_rate():
    s = ES.setup(layers=2, d_model="32", heads="4")
    assert ES.head_of(s, ES.Head(layer=12, head=16)) == (2, 4)
    assert ES.head_of(s, ES.Head()) == (1, 1)
    assert ES.Training(lr="3e-3").rate == 3e-3
    assert set(ES.Training.declared()[0].setting.options) == {
        rv.encoder.FLIPPED,
        *rv.ENCODER_PRESETS,
    }
