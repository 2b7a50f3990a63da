"""The skip-connections page's sentences (resviz.words.skip), each tested on a
setting that would make its claim false if it were stated for every setting."""

import pytest

import resviz as rv
from resviz.recipes import shortcuts as R
from resviz.words import skip as W

SEED_NET = {"preset": R.PRESETS[1]}


def _v(**kw):
    v = {k: d for k, d in rv.recipes.core.settings_of(R.stack).items() if k != "seed"}
    return {**v, **kw}


def test_table_caption_says_whether_widths_differ():
    r = R.stack(**_v())
    cap = W.shortcut_table_caption(r, _v())
    assert cap.startswith("16 of 16 blocks have a shortcut; 0 of them are projections.")
    assert "No block here changes the width" in cap and "decides" not in cap
    v = _v(**SEED_NET, mismatch="project")
    cap = W.shortcut_table_caption(R.stack(**v), v)
    assert cap.startswith("5 of 5 blocks have a shortcut; 2 of them are projections.")
    assert "2 of the 5 blocks change the width: *Where widths differ* decides" in cap
    v = _v(**SEED_NET, mode="concat", project=True)
    assert "(concat needs neither)" in W.shortcut_table_caption(R.stack(**v), v)


def test_signal_caption_states_the_rule_where_it_holds():
    # The seed network drops the shortcut where the width changes: the identity-shortcut
    # algebra holds in 3 of its 5 blocks, and the caption says so.
    v = _v(**SEED_NET)
    r = R.signal(**v)
    assert (r.terms["identity_share"] == 0).sum() == 2
    cap = W.signal_caption(r, v)
    assert "||y||^2 = ||x||^2 + ||u||^2 + 2<x, u>" in cap
    assert "That holds in the 3 of 5 blocks whose shortcut is the identity." in cap
    # Joined before the activation, the input is not passed on: no such rule.
    v = _v(join="before_act")
    cap = W.signal_caption(R.signal(**v), v)
    assert "||y||^2" not in cap and "the input is not passed on unchanged" in cap
    # Without a shortcut, one curve and no shortcut rule.
    v = _v(mode="none")
    cap = W.signal_caption(R.signal(**v), v)
    assert "||y||^2" not in cap and cap.count("the mean norm") == 1


def test_share_caption_rezero_claim_is_measured():
    """ "1 for ReZero at init, where u = 0": a = 0, learnable, gives exactly 1."""
    r = R.signal(**_v(mode="scaled", alpha=0.0, learnable=True))
    assert (r.terms["identity_share"] == 1.0).all()
    assert "Here identity_share is 1 everywhere." in W.share_caption(r)
    r = R.signal(**_v(mode="scaled", alpha=1.0, learnable=False))
    assert (r.terms["identity_share"] < 1.0).all()
    assert "Here identity_share ranges from" in W.share_caption(r)


def test_paths_caption_counts_the_blocks_that_can_be_skipped():
    r = R.paths(**_v(**SEED_NET))
    cap = W.paths_caption(r)
    assert "2^3 = 8 paths" in cap and "has length j + 2" in cap
    assert r.paths["length"].min() == 2  # no path is shorter than the 2 forced blocks
    cap = W.paths_caption(R.paths(**_v(mode="none", depth=5)))
    assert cap.startswith("No block has a shortcut: there is one path, through all 5 blocks.")
    assert "even the route that skips" in W.paths_caption(R.paths(**_v(join="before_act")))
    assert "must be passed through" not in W.paths_caption(R.paths(**_v()))


@pytest.mark.parametrize(
    ("settings", "noted"),
    [
        ({"act": "relu"}, True),
        ({"act": "relu", "mode": "scaled", "alpha": 0.5, "learnable": False}, True),
        ({"act": "tanh"}, False),
        ({"act": "relu", "join": "before_act"}, False),
    ],
)
def test_cosine_caption_non_negative_claim(settings, noted):
    """ "with ReLU joined after the activation ... the cosine cannot be negative at
    init": measured; where the note is left out, the cosine does go negative."""
    v = {**_v(), "lr": "0.003", **settings, "shallow": 1, "deep": 4, "steps": 20}
    v = {k: v[k] for k in rv.recipes.core.settings_of(R.degradation) if k != "seed"}
    r = R.degradation(**v)
    init = r.cosine[r.cosine["stage"] == "init"]["cosine"].dropna()
    cap = W.cosine_caption(r, v)
    assert ("cannot be negative there" in cap) == noted
    if noted:
        assert (init >= 0).all()
    elif settings["act"] == "tanh":
        assert (init < 0).any()


def test_intros_say_what_is_trained():
    dcfg = R.degradation_config(mode="concat", shallow=2, deep=5)
    intro = W.degradation_intro(dcfg)
    assert "four stacks of width 32" in intro and "2 and 5 blocks" in intro
    assert "with the shortcut (concat)" in intro and "projected back to the width" in intro
    assert "has no shortcut (the widths differ)" in W.degradation_intro(R.degradation_config())
    intro = W.lesion_intro(R.lesion_config(mode="none", l_depth=8), 2.0)
    assert "a residual stack of 8 blocks" in intro and "with the shortcut (add)" in intro
    assert "1 turn per arm, fewer than the Degradation section's 2 turns per arm" in intro
