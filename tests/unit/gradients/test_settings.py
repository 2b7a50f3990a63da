"""The gradient-flow page's groups of settings (resviz/gradients/settings.py)."""

import pandas as pd
import pytest

from resviz.core import settings_of
from resviz.gradients import recipes as R
from resviz.gradients.settings import Derivation, Scale, Stack


def test_a_stack_is_the_config_it_names():
    cfg = Stack(depth=7, width=16, act="relu", init="xavier", norm="layer").config(3)
    assert (cfg.depth, cfg.width, cfg.activation, cfg.init, cfg.norm) == (
        7, 16, "relu", "xavier", "layer"
    )  # fmt: skip
    assert (cfg.seed, cfg.residual) == (3, "add")
    assert Stack().config(0, residual="none").residual == "none"


def test_each_section_takes_its_groups_and_names_them_as_the_url():
    assert list(settings_of(R.derivation)) == [
        "depth", "width", "act", "init", "norm", "block", "L", "small", "l", "seeds", "seed"
    ]  # fmt: skip
    assert list(settings_of(R.shattered)) == ["bn", "seeds", "seed"]


def test_groups_and_names_give_the_same_derivation():
    a = R.derivation(Stack(depth=4, width=8), Derivation(block=2, L=5), Scale(l=0.8), seeds=1)
    b = R.derivation(depth=4, width=8, block=2, L=5, l=0.8, seeds=1)
    for name in a.frames:
        pd.testing.assert_frame_equal(a.frames[name], b.frames[name])
    # The scaled stack's identity term is λ^L = 0.8^5, from the groups' L and λ.
    assert a.block == 2 and a.identity_term == pytest.approx(0.8**5, rel=1e-12)
