import math

import pandas as pd
import pytest

import resviz as rv
from tests.margins import AT_INIT, assert_clear, assert_far_past_divergence


def _weight_norms(cfg, seed=0):
    df = rv.train.gradient_norms(cfg, seed=seed)
    w = df[df["param"].str.endswith("fc.weight")].sort_values("block")
    return w["grad_norm"].to_numpy()


def test_gradient_norms_columns_and_locations():
    df = rv.train.gradient_norms(rv.EncoderConfig(n_layers=2, d_model=16, n_heads=2, d_ff=32))
    assert {"block", "sublayer", "param", "grad_norm"} <= set(df.columns)
    assert "layer" not in df
    # Blocks count from 1; the embeddings are 0 and the head n + 1.
    loc = df.set_index("param")[["block", "sublayer"]]
    assert tuple(loc.loc["embed.weight"]) == (0, "embed")
    assert tuple(loc.loc["blocks.1.attn.qkv.weight"]) == (2, "attn")
    assert tuple(loc.loc["blocks.0.ffn.fc1.weight"]) == (1, "ffn")
    assert tuple(loc.loc["blocks.0.norm2.weight"]) == (1, "norm")
    assert tuple(loc.loc["head.weight"]) == (3, "head")
    assert (df["grad_norm"] > 0).all()


@pytest.mark.parametrize("activation", ["tanh", "sigmoid"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_plain_saturating_stacks_vanish(activation, seed):
    # The seed notebook's comparison: 10 layers, width 64, batch 32.
    plain = _weight_norms(rv.StackConfig(activation=activation, residual="none", seed=seed), seed)
    # At init: 1.9-2.5 times under a tenth (tanh), 7e6 times (sigmoid); checked 5% clear.
    assert_clear(
        plain[0],
        plain[-1] / 10,
        side="below",
        margin=AT_INIT,
        kind="factor",
        what="first block's weight gradient against a tenth of the last's",
    )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_residual_tanh_stack_keeps_its_gradient(seed):
    res = _weight_norms(rv.StackConfig(activation="tanh", residual="add", seed=seed), seed)
    # At init: 12-13 times over a tenth of the last block's; checked 5% clear.
    assert_clear(
        res[0],
        res[-1] / 10,
        side="above",
        margin=AT_INIT,
        kind="factor",
        what="first block's weight gradient against a tenth of the last's",
    )


def test_same_seed_same_numbers():
    cfg = rv.StackConfig(depth=4, width=16)
    pd.testing.assert_frame_equal(
        rv.train.gradient_norms(cfg, seed=5), rv.train.gradient_norms(cfg, seed=5)
    )
    a = rv.train.gradient_norms(cfg, seed=5)["grad_norm"]
    b = rv.train.gradient_norms(cfg, seed=6)["grad_norm"]
    assert not a.equals(b)


def test_stream_norms_pre_ln_grows_post_ln_flat():
    base = dict(n_layers=8, d_model=64, n_heads=4, d_ff=256)
    pre = rv.train.stream_norms(rv.EncoderConfig(**base, norm_position="pre"))
    post = rv.train.stream_norms(rv.EncoderConfig(**base, norm_position="post"))
    # Pre-LN: every sublayer adds to the stream, so its norm rises layer after layer.
    at_layers = pre[pre["point"] == "resid_pre"]["norm"].to_numpy()
    assert (at_layers[1:] > at_layers[:-1]).all()
    assert pre["norm"].iloc[-1] > 1.1 * pre["norm"].iloc[0]
    inner = post[post["sublayer_index"] > 0]["norm"]
    # LayerNorm output with unit gain has norm sqrt(d) = 8 for every token.
    assert inner.max() / inner.min() < 1.01
    assert math.isclose(inner.mean(), 8.0, rel_tol=1e-2)


SMALL = dict(depth=2, width=16, block="ffn", activation="gelu")


def test_train_compare_same_batches_same_losses():
    cfg = rv.StackConfig(**SMALL)
    df = rv.train_compare({"a": cfg, "b": cfg}, steps=12, batch_size=4, seq_len=3)
    a = df[df.variant == "a"]["loss"].to_numpy()
    b = df[df.variant == "b"]["loss"].to_numpy()
    assert len(a) == 12 and (a == b).all()
    again = rv.train_compare({"a": cfg}, steps=12, batch_size=4, seq_len=3)
    assert (again["loss"].to_numpy() == a).all()
    assert set(df.columns) >= {"variant", "step", "loss", "grad_norm"}


def test_train_compare_reduces_loss_on_learnable_task():
    cfg = rv.EncoderConfig(n_layers=1, d_model=32, n_heads=2, d_ff=64, vocab_size=20)
    df = rv.train_compare({"enc": cfg}, steps=60, task="copy", lr=3e-3, batch_size=8, seq_len=8)
    # Measured: from 3.13 to 0.094 (0.03 of the start), 17 times under half of it;
    # checked a factor of 4 clear.
    assert_clear(
        df["loss"].iloc[-1],
        0.5 * df["loss"].iloc[0],
        side="below",
        margin=4,
        kind="factor",
        what="last loss against half the first",
    )


def test_train_compare_stops_and_reports_progress():
    seen = []
    df = rv.train_compare(
        {"a": rv.StackConfig(**SMALL)},
        steps=50,
        batch_size=2,
        seq_len=2,
        sync_every=5,
        callback=lambda frame, step, total: seen.append((len(frame), step, total)),
        should_stop=lambda: len(seen) >= 2,
    )
    assert seen == [(5, 5, 50), (10, 10, 50)]
    assert len(df) == 10 and df.attrs["stopped"] is True


def test_train_compare_marks_divergence_with_its_step():
    bad = rv.StackConfig(depth=2, width=16, activation="relu", residual="none", alpha=1.0)
    df = rv.train_compare(
        {"ok": rv.StackConfig(**SMALL), "boom": bad}, steps=30, lr=1e30, batch_size=4, seq_len=2
    )
    boom = df[df.variant == "boom"]
    step = df.attrs["diverged"]["boom"]
    assert boom["diverged"].sum() == 1 and boom["step"].max() == step
    # The step is the definition's (NaN/Inf or a blow-up past the factor), whichever
    # comes first on this machine's kernels.
    found = rv.first_divergence(boom["loss"], boom["grad_norm"])
    # Far past the line on any CPU: lr 1e30 takes the loss to Inf at step 1 (a finite
    # blow-up would have to be 1,000 times past the factor).
    assert_far_past_divergence(found)
    mine = df.attrs["divergence"]["boom"]
    assert (mine.step, mine.reason, mine.quantity) == (found.step, found.reason, found.quantity)
    assert found.step == step


def test_train_compare_rejects_bad_arguments():
    with pytest.raises(ValueError, match="at least one variant"):
        rv.train_compare({}, steps=3)
    with pytest.raises(ValueError, match="steps=0"):
        rv.train_compare({"a": rv.StackConfig()}, steps=0)
