"""The two mechanisms every experiment shares: rv.capture_grads (observe once) and
resviz.train.loop.Trainer (train once)."""

import math

import numpy as np
import pytest
import torch
from torch.nn import functional as F

import resviz as rv
from resviz.hooks import stream_points
from resviz.train.loop import Trainer


def _hooks(model):
    return sum(len(m._forward_hooks) for m in model.modules()) + sum(
        len(p._post_accumulate_grad_hooks or {}) for p in model.parameters()
    )


# ------------------------------------------------------------------- capture_grads


def test_capture_grads_equals_autograd_on_the_stream():
    cfg = rv.StackConfig(depth=3, width=8, block="ffn", norm="layer")
    x, y = rv.train.make_batch(cfg, 5, 1, torch.Generator().manual_seed(0))
    model = rv.build(cfg)
    names = stream_points(3)
    cap = rv.capture_grads(model, x, lambda out: F.mse_loss(out, y), names, ["blocks.1.fc1.weight"])
    # The same quantities by hand: retain_grad on every block's output.
    ref = rv.build(cfg)
    h = x.clone().requires_grad_(True)
    streams = [h]
    for block in ref.blocks:
        h = block(h)
        h.retain_grad()
        streams.append(h)
    loss = F.mse_loss(ref.head(h), y)
    loss.backward()
    for key, s in zip(names, streams, strict=True):
        torch.testing.assert_close(cap.acts[key], s.detach(), rtol=0, atol=0)
        torch.testing.assert_close(cap.grads[key], s.grad, rtol=0, atol=0)
    w = float(ref.blocks[1].fc1.weight.grad.norm())
    assert cap.param_grad_norms == {"blocks.1.fc1.weight": pytest.approx(w, rel=1e-6)}
    assert cap.loss == pytest.approx(float(loss.detach()))
    assert _hooks(model) == 0 and all(p.grad is None for p in model.parameters())


def test_capture_grads_leaves_gradients_and_hooks_as_they_were_even_on_error():
    model = rv.build(rv.StackConfig(depth=2, width=4))
    model(torch.randn(3, 4)).sum().backward()
    before = [p.grad.clone() for p in model.parameters()]
    with pytest.raises(RuntimeError, match="boom"):
        rv.capture_grads(
            model, torch.randn(3, 4), lambda out: (_ for _ in ()).throw(RuntimeError("boom"))
        )
    rv.capture_grads(model, torch.randn(3, 4), lambda out: out.sum())
    assert _hooks(model) == 0
    for p, g in zip(model.parameters(), before, strict=True):
        assert torch.equal(p.grad, g)


def test_patch_replaces_the_stream_at_a_hook_point():
    cfg = rv.EncoderConfig(n_layers=2, d_model=8, n_heads=2, d_ff=16, vocab_size=10)
    model = rv.build(cfg).eval()
    x = torch.randn(2, 5, 8, generator=torch.Generator().manual_seed(1))
    acts = rv.capture(model, torch.zeros(2, 5, dtype=torch.long), stream_points(2),
                      patch={"blocks.0.resid_pre": x})  # fmt: skip
    with torch.no_grad():
        want = model.blocks[1](model.blocks[0](x))
    torch.testing.assert_close(acts["blocks.0.resid_pre"], x, rtol=0, atol=0)
    torch.testing.assert_close(acts["blocks.1.resid_post"], want)
    assert set(acts) == {*stream_points(2), "output"} and _hooks(model) == 0


# ------------------------------------------------------------------------ Trainer

SMALL = rv.StackConfig(depth=2, width=8, activation="tanh")


def test_trainer_warm_up_blocks_and_frames():
    run = Trainer({"a": SMALL, "b": SMALL}, steps=6, seed=3, lr=0.1, warmup=4, blocks=True)
    gen = torch.Generator().manual_seed(0)
    for _ in run:
        x, y = rv.train.make_batch(SMALL, 4, 1, gen)
        for name, model in run.active():
            run.update(name, F.mse_loss(model(x), y))
    df = run.frame()
    assert df[df.variant == "a"]["lr"].tolist() == pytest.approx(
        [0.025, 0.05, 0.075, 0.1, 0.1, 0.1]
    )
    # Same seed, same batches: the two variants are one run twice.
    np.testing.assert_array_equal(df[df.variant == "a"]["loss"], df[df.variant == "b"]["loss"])
    blocks = run.block_frame()
    assert blocks["block"].tolist()[:2] == [1, 2] and "layer" not in blocks
    # ||g||^2 is the sum over blocks (the stack has no head): the block norms add up.
    a = (
        blocks[blocks.variant == "a"]
        .groupby("step")["grad_norm"]
        .apply(lambda g: math.sqrt((g**2).sum()))
    )
    np.testing.assert_allclose(a.to_numpy(), df[df.variant == "a"]["grad_norm"], rtol=1e-6)
    assert all(c.seed == 3 for c in run.configs.values())


def test_trainer_eager_mode_never_updates_a_diverged_model():
    run = Trainer({"v": SMALL}, steps=5, eager=True, first_step=1)
    before = {k: v.clone() for k, v in run.models["v"].state_dict().items()}
    x = torch.randn(4, 8)
    found = []
    for t in run:
        for name, model in run.active():
            loss = F.mse_loss(model(x), torch.zeros(4, 8)) * (math.nan if t == 0 else 1.0)
            found.append(run.update(name, loss))
    assert found[0] is not None and (found[0].step, found[0].reason) == (1, "nan")
    assert len(found) == 1 and run.diverged == {"v": 1}
    for k, v in run.models["v"].state_dict().items():
        assert torch.equal(v, before[k])
    assert run.frame()["diverged"].tolist() == [True]


def test_trainer_refuses_bad_arguments():
    for kw, match in [({"steps": 0}, "steps=0"), ({"steps": 3, "lr": 0}, "lr"),
                      ({"steps": 3, "warmup": -1}, "warmup"), ({"steps": 3, "sync_every": 0}, "sync_every")]:  # fmt: skip
        with pytest.raises(ValueError, match=match):
            Trainer({"v": SMALL}, **kw)
    with pytest.raises(ValueError, match="at least one variant"):
        Trainer({}, steps=3)
