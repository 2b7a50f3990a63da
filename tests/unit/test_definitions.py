"""One definition per measured quantity, and weights that follow the seed (issue 13, item 4)."""

import dataclasses
import math

import pandas as pd
import pytest
import torch

import resviz as rv
from resviz import gradients as G

# Every way a block can join its shortcut and its update.
JOINS = {
    "scaled a=0.5 (issue 13)": rv.StackConfig(
        depth=6, width=64, activation="tanh", residual="scaled", alpha=0.5
    ),
    "ReZero": rv.StackConfig(depth=4, width=16, residual="scaled", alpha=0.0, alpha_learnable=True),
    "scaled before act": rv.StackConfig(
        depth=4, width=16, residual="scaled", alpha=0.3, join="before_act"
    ),
    "identity_scale 0.5": rv.StackConfig(depth=4, width=16, identity_scale=0.5),
    "identity_scale before act": rv.StackConfig(
        depth=4, width=16, identity_scale=1.5, join="before_act", activation="relu"
    ),
    "concat": rv.StackConfig(depth=3, width=8, residual="concat"),
    "concat + projection": rv.StackConfig(depth=3, width=8, residual="concat", concat_project=True),
    "projection shortcuts": rv.StackConfig(widths=(25, 25, 43, 43, 54, 54), mismatch="project"),
    "ffn, post-norm": rv.StackConfig(
        depth=3, width=16, block="ffn", norm="layer", norm_position="post", activation="gelu"
    ),
    "plain": rv.StackConfig(depth=4, width=16, residual="none"),
}


@pytest.mark.parametrize("name", list(JOINS))
def test_forward_decomposition_is_layer_decomposition_on_the_seeded_batch(name):
    cfg = JOINS[name]
    a = rv.shortcuts.forward_decomposition(cfg, seed=3, batch_size=64)
    x = torch.randn(64, cfg.in_dim, generator=torch.Generator().manual_seed(3))
    pd.testing.assert_frame_equal(a, rv.shortcuts.layer_decomposition(rv.build(cfg).eval(), x))


def test_identity_share_counts_the_update_after_alpha():
    # The stack: the old forward_signal said 0.82 (branch before alpha), forward_decomposition
    # 0.95 (after). The block sums x + 0.5 f(x), so the share is taken from those two terms.
    cfg = JOINS["scaled a=0.5 (issue 13)"]
    model = rv.build(cfg).eval()
    x = torch.randn(256, 64, generator=torch.Generator().manual_seed(0))
    acts = rv.capture(model, x)
    df = rv.shortcuts.forward_decomposition(cfg)
    for i in range(cfg.depth):
        s = acts[f"blocks.{i}.resid_pre"].double()
        f = acts[f"blocks.{i}.branch_out"].double()
        s2, u2 = float(s.pow(2).sum()), float((0.5 * f).pow(2).sum())
        assert df.loc[i, "identity_share"] == pytest.approx(s2 / (s2 + u2), rel=1e-12)
        assert df.loc[i, "branch_norm"] == pytest.approx(2 * df.loc[i, "update_norm"], rel=1e-6)
    assert 0.94 < df["identity_share"].min() and df["identity_share"].max() < 0.96


def test_hooks_sit_on_the_terms_the_block_sums():
    for name in ("scaled a=0.5 (issue 13)", "identity_scale 0.5", "concat"):
        cfg = JOINS[name]
        model = rv.build(cfg)
        acts = rv.capture(model, torch.randn(8, cfg.in_dim))
        for i in range(cfg.n_blocks):
            s, u = acts[f"blocks.{i}.shortcut_term"], acts[f"blocks.{i}.update_term"]
            y = acts[f"blocks.{i}.resid_post"]
            joined = torch.cat([s, u], dim=-1) if cfg.residual == "concat" else s + u
            assert torch.equal(y, joined)
        assert {"shortcut_term", "update_term"} <= {
            n.split(".")[-1] for n in rv.hooks.hook_names(model)
        }


def _one_linear_block(c: float, **kw) -> rv.StackConfig:
    """A single linear block with identity activation and W = c I, b = 0: f(x) = c x."""
    return rv.StackConfig(depth=1, width=8, activation="identity", **kw)


def _decompose(cfg: rv.StackConfig, c: float) -> pd.Series:
    model = rv.build(cfg).eval()
    with torch.no_grad():
        model.blocks[0].fc.weight.copy_(c * torch.eye(8))
        model.blocks[0].fc.bias.zero_()
    x = torch.randn(32, 8, generator=torch.Generator().manual_seed(1))
    return rv.shortcuts.layer_decomposition(model, x).iloc[0]


@pytest.mark.parametrize(
    ("kw", "share"),
    [
        # s = l x, u = c x: share = l^2 / (l^2 + c^2)
        ({"residual": "add"}, 1 / (1 + 2.0**2)),
        ({"residual": "add", "identity_scale": 0.5}, 0.25 / (0.25 + 4.0)),
        ({"residual": "add", "join": "before_act"}, 1 / 5),
        # s = x, u = a c x: share = 1 / (1 + a^2 c^2); a c = 1 here
        ({"residual": "scaled", "alpha": 0.5}, 0.5),
        ({"residual": "scaled", "alpha": 0.5, "join": "before_act"}, 0.5),
        # [x, c x] side by side: the share of the energy is 1 / (1 + c^2)
        ({"residual": "concat"}, 1 / 5),
        ({"residual": "concat", "concat_project": True}, 1 / 5),
        ({"residual": "none"}, 0.0),
    ],
)
def test_identity_share_closed_form(kw, share):
    row = _decompose(_one_linear_block(2.0, **kw), 2.0)
    assert row["identity_share"] == pytest.approx(share, rel=1e-12)
    if kw["residual"] in ("add", "scaled"):
        assert row["cosine"] == pytest.approx(1.0, rel=1e-12)  # u is a positive multiple of s
        ratio = row["update_norm"] / row["shortcut_norm"]
        assert ratio == pytest.approx(math.sqrt((1 - share) / share), rel=1e-6)
    else:
        assert math.isnan(row["cosine"])  # no shortcut, or terms never added (concat)


def test_zero_update_means_share_one():
    # A zero branch and a ReZero block (alpha = 0) both pass the input on unchanged.
    zero = _decompose(_one_linear_block(0.0, residual="add"), 0.0)
    rezero = rv.shortcuts.forward_decomposition(JOINS["ReZero"])
    for share in [zero["identity_share"], *rezero["identity_share"]]:
        assert share == 1.0
    assert (rezero["update_norm"] == 0.0).all() and (rezero["branch_norm"] > 0).all()
    # cos(s, 0) is undefined: NaN, not 0.
    assert math.isnan(zero["cosine"]) and rezero["cosine"].isna().all()


# ------------------------------------------------------------------ the seed


def test_weights_follow_the_config_seed():
    """Same data seed, different config seeds: different weights, different gradients."""
    base = rv.StackConfig(residual="none")
    runs = {s: G.layer_gradients(dataclasses.replace(base, seed=s), seed=0) for s in (0, 1)}
    assert not runs[0]["act_grad"].equals(runs[1]["act_grad"])
    again = G.layer_gradients(dataclasses.replace(base, seed=1), seed=0)
    pd.testing.assert_frame_equal(runs[1], again, check_exact=True)
    sig = {s: rv.shortcuts.forward_decomposition(dataclasses.replace(base, seed=s)) for s in (0, 1)}
    assert not sig[0]["norm"].equals(sig[1]["norm"])
