"""resviz.shortcuts.settings: the page's groups of settings and the configs they become."""

import pandas as pd
import pytest

import resviz as rv
from resviz.shortcuts import recipes as R
from resviz.shortcuts import settings as SS


def test_the_stack_is_the_block_and_its_shape():
    stack = SS.Stack(mode="scaled", alpha=0.5, learnable=False, act="tanh", depth=5, width=8)
    assert isinstance(stack, SS.Block)
    cfg = stack.config(seed=3)
    assert (cfg.residual, cfg.alpha, cfg.alpha_learnable, cfg.activation) == (
        "scaled",
        0.5,
        False,
        "tanh",
    )
    assert (cfg.n_blocks, cfg.width, cfg.seed) == (5, 8, 3)
    seed_net = SS.Stack(preset=SS.PRESETS[1], mismatch="project").config()
    assert seed_net.widths == SS.SEED_WIDTHS and seed_net.mismatch == "project"
    with pytest.raises(ValueError, match="preset must be one of"):
        SS.Stack(preset="nine blocks").config()
    with pytest.raises(ValueError, match="cannot be combined"):
        SS.Stack(mode="concat", join="before_act").config()


def test_the_trained_runs_train_add_where_the_shortcut_is_none():
    assert SS.Block(mode="none").trained_residual == "add"
    assert SS.Block(mode="concat").trained_residual == "concat"
    dcfg = SS.DegradationRun(shallow=2, deep=5, lr="0.01").config(SS.Block(mode="none"))
    assert (dcfg.shallow, dcfg.deep, dcfg.width, dcfg.lr) == (2, 5, SS.DEGRADATION_WIDTH, 0.01)
    assert dcfg.residual == "add"
    lcfg = SS.LesionRun(l_depth=8, l_steps=100).config(SS.Block(act="gelu", alpha=1.0))
    assert (lcfg.depth, lcfg.steps, lcfg.activation, lcfg.alpha) == (8, 100, "gelu", 1.0)
    with pytest.raises(ValueError, match="larger than shallow"):
        SS.DegradationRun(shallow=8, deep=8).config()


def test_a_recipe_takes_its_groups_or_their_fields_by_name():
    """A notebook passes the groups (``rv.shortcuts.Stack``, exported with the topic);
    a lesson and the URL name the fields: the same call."""
    assert rv.shortcuts.Stack is SS.Stack and rv.shortcuts.LesionRun is SS.LesionRun
    by_group = R.paths(rv.shortcuts.Stack(depth=5, mode="scaled"), seed=0)
    by_name = R.paths(depth=5, mode="scaled", seed=0)
    pd.testing.assert_frame_equal(by_group.paths, by_name.paths, check_exact=True)
    assert by_group.values == by_name.values
    assert R.stack(stack=SS.Stack(width=8)).values == R.stack(width=8).values
