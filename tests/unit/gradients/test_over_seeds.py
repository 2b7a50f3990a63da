"""Several seeds' per-layer gradients in one vectorised pass give each seed's own
numbers: resviz/gradients/over_seeds.py, resviz.models.reseed and
resviz.hooks.capture_grad_norms_over_states."""

import dataclasses
import itertools

import pandas as pd
import pytest
import torch

import resviz as rv
from resviz.gradients import layer_gradients, layer_gradients_over_seeds
from resviz.gradients.recipes import per_layer
from resviz.hooks import capture_grad_norms_over_states, capture_grads, stream_points
from resviz.models import reseed

CASES = list(
    itertools.product(
        ("tanh", "relu", "gelu"), ("none", "layer", "rms"), ("default", "small", "kaiming")
    )
)


@pytest.mark.parametrize(("act", "norm", "init"), CASES)
@pytest.mark.parametrize("residual", ["none", "add"])
def test_each_seeds_rows_are_its_own_layer_gradients(act, norm, init, residual):
    cfg = rv.StackConfig(
        depth=12, width=16, activation=act, norm=norm, init=init, residual=residual, seed=0
    )
    got = layer_gradients_over_seeds(cfg, [3, 4, 5])
    assert got is not None and list(got.columns)[0] == "seed"
    for s in (3, 4, 5):
        own = layer_gradients(dataclasses.replace(cfg, seed=s), seed=s)
        rows = got[got["seed"] == s].drop(columns="seed").reset_index(drop=True)
        pd.testing.assert_frame_equal(rows, own, rtol=1e-9, check_exact=False)


@pytest.mark.slow
def test_what_it_cannot_stand_in_for_is_left_to_the_per_seed_pass():
    # BatchNorm's batch statistics, and a gradient under 1e-280 (width 2 with a
    # LayerNorm reaches 1e-420 over 100 blocks: only the log-space pass holds it).
    assert (
        layer_gradients_over_seeds(rv.StackConfig(depth=3, width=8, norm="batch"), [0, 1]) is None
    )
    deep = rv.StackConfig(depth=100, width=2, norm="layer", residual="none")
    assert layer_gradients_over_seeds(deep, [0, 1]) is None
    # Seeds whose float64 weights together pass 32 MB run one at a time (3 x 22 MB).
    wide = rv.StackConfig(depth=20, width=370)
    assert layer_gradients_over_seeds(wide, [0]) is not None
    assert layer_gradients_over_seeds(wide, [0, 1, 2]) is None
    # The recipe then runs seed by seed, and says the same as one seed at a time.
    r = per_layer(depth=100, width=2, norm="layer", seeds=2, seed=0)
    for s, run in zip(r.seeds, r.runs, strict=True):
        pd.testing.assert_frame_equal(
            run.streams, per_layer.one(depth=100, width=2, norm="layer", seed=s).streams
        )
    assert r.streams["log10_act_grad"].min() < -308  # under float64's range


def test_the_recipe_over_seeds_is_each_seed_alone():
    r = per_layer(depth=20, width=32, seeds=5, seed=7)
    assert r.seeds == (7, 8, 9, 10, 11)
    for s, run in zip(r.seeds, r.runs, strict=True):
        one = per_layer.one(depth=20, width=32, seed=s)
        for k in one.frames:
            pd.testing.assert_frame_equal(
                run.frames[k], one.frames[k], rtol=1e-9, check_exact=False
            )
            rows = r.frames[k][r.frames[k]["seed"] == s].drop(columns="seed")
            pd.testing.assert_frame_equal(
                rows.reset_index(drop=True), one.frames[k], rtol=1e-9, check_exact=False
            )


@pytest.mark.parametrize(
    "cfg",
    [
        rv.StackConfig(depth=4, width=8),
        rv.StackConfig(depth=3, width=8, block="ffn", init="xavier", norm="layer"),
        rv.StackConfig(depth=3, width=8, widths=(8, 12, 6), residual="add", mismatch="project"),
        rv.StackConfig(depth=3, width=8, residual="concat", concat_project=True, init="kaiming"),
        rv.StackConfig(depth=2, width=8, residual="scaled", alpha=0.3, init="small"),
    ],
)
def test_reseed_draws_the_weights_build_draws(cfg):
    model = rv.build(dataclasses.replace(cfg, seed=0))
    before = torch.get_rng_state()
    for s in (1, 5):
        reseed(model, s)
        want = rv.build(dataclasses.replace(cfg, seed=s)).state_dict()
        got = model.state_dict()
        assert got.keys() == want.keys()
        for k in want:
            assert torch.equal(got[k], want[k]), k
    assert torch.equal(torch.get_rng_state(), before)  # the caller's RNG untouched


def test_vectorised_capture_matches_capture_grads():
    cfg = rv.StackConfig(depth=5, width=8, activation="gelu", norm="rms")
    torch.manual_seed(0)
    model = rv.build(cfg).double()
    x, y = torch.randn(2, 4, 8, dtype=torch.float64), torch.randn(2, 4, 8, dtype=torch.float64)
    states = [model.state_dict()]
    other = rv.build(dataclasses.replace(cfg, seed=1)).double()
    states.append(other.state_dict())
    names = stream_points(5)
    got = capture_grad_norms_over_states(
        model, states, x, y, torch.nn.functional.mse_loss, names, ["blocks.2.fc.weight"]
    )
    for i, m in enumerate((model, other)):
        cap = capture_grads(
            m,
            x[i],
            lambda out, i=i: torch.nn.functional.mse_loss(out, y[i]),
            names=names,
            params=["blocks.2.fc.weight"],
        )
        for k in names:
            assert float(got.grad_norms[k][i]) == pytest.approx(
                float(cap.grads[k].norm()), rel=1e-12
            )
            assert float(got.act_norms[k][i]) == pytest.approx(
                float(cap.acts[k].norm(dim=-1).mean()), rel=1e-12
            )
        assert float(got.param_grad_norms["blocks.2.fc.weight"][i]) == pytest.approx(
            cap.param_grad_norms["blocks.2.fc.weight"], rel=1e-12
        )
    assert not any(m._forward_hooks for m in model.modules())  # every hook removed
