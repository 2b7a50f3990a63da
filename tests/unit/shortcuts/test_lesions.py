"""The lesion study as an intervention at the hook points (Veit et al. 2016): deleting
block l (counted from 1) is ``patch=delete_block(l)`` (``x_l = x_{l-1}``), with the numbers of the
by-hand loop that skips the block."""

import pandas as pd
import pytest
import torch
from torch.nn import functional as F

import resviz as rv
from resviz.hooks import delete_block, stream_points, tap
from resviz.shortcuts.lesions import LESION_COLUMNS, deletable_blocks, lesion


def _hooks(model):
    return sum(len(m._forward_hooks) for m in model.modules())


@torch.no_grad()
def _lesion_by_hand(model, x, y):
    """What resviz.lesion computed before it used the hooks: re-run the blocks, skipping
    the deleted one, wherever its input and output widths match."""
    model.eval()
    base_err = float((model(x).argmax(-1) != y).float().mean())
    rows = []
    for i in range(len(model.blocks)):
        w_in = x.shape[-1] if i == 0 else model.blocks[i - 1].out_width
        if model.blocks[i].out_width != w_in:
            continue
        h = x
        for j, block in enumerate(model.blocks):
            if j != i:
                h = block(h)
        logits = model.head(h)
        rows.append(
            {
                "block": i + 1,
                "loss": float(F.cross_entropy(logits, y)),
                "accuracy": float((logits.argmax(-1) == y).float().mean()),
                "base_accuracy": 1.0 - base_err,
            }
        )
    return pd.DataFrame(rows, columns=list(LESION_COLUMNS))


CONFIGS = {
    # The spirals' stacks: block 1 maps 2 -> 8 and cannot be deleted.
    "residual": dict(widths=(2, 8, 8, 8, 8), residual="add", out_dim=3),
    "plain": dict(widths=(2, 8, 8, 8, 8), residual="none", out_dim=3),
    "scaled, ffn, pre-norm": dict(widths=(2, 8, 8, 8), residual="scaled", alpha=0.3,
                                  block="ffn", norm="layer", norm_position="pre", out_dim=3),
    "concat, projected, post-norm": dict(widths=(2, 8, 8, 8), residual="concat",
                                         concat_project=True, norm="rms", norm_position="post",
                                         out_dim=3),
    # A width change mid-stack (8 -> 16, shortcut projected): block 3 is not deletable.
    "widening": dict(widths=(2, 8, 8, 16, 16), residual="add", mismatch="project", out_dim=3),
}  # fmt: skip


@pytest.mark.parametrize("seed", [0, 3])
@pytest.mark.parametrize("name", CONFIGS)
def test_lesion_through_hooks_equals_the_by_hand_loop_bit_for_bit(name, seed):
    cfg = rv.StackConfig(**CONFIGS[name], seed=seed)
    x, y = rv.data.spirals(120, 3, seed=seed)
    model = rv.build(cfg)
    got = lesion(model, x, y)
    want = _lesion_by_hand(model, x, y)
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    assert list(got.columns) == ["block", "loss", "accuracy", "base_accuracy"]
    first = min(deletable_blocks(model, 2))
    assert first == 2 and 1 not in got["block"].tolist()  # the 2 -> 8 block stays
    if name == "widening":
        assert got["block"].tolist() == [2, 4]
    assert _hooks(model) == 0


def test_delete_block_passes_the_block_input_on():
    cfg = rv.EncoderConfig(n_layers=3, d_model=8, n_heads=2, d_ff=16, vocab_size=10)
    model = rv.build(cfg).eval()
    tokens = torch.randint(0, 10, (2, 5), generator=torch.Generator().manual_seed(0))
    # Block 2 (counted from 1) is module blocks.1.
    assert delete_block(2) == {"blocks.1.resid_post": "blocks.1.resid_pre"}
    for bad in (0, -1, 1.0, True):
        with pytest.raises(ValueError, match="counted from 1"):
            delete_block(bad)
    acts = rv.capture(model, tokens, stream_points(3), patch=delete_block(2))
    intact = rv.capture(model, tokens, stream_points(3))
    # x_2 = x_1: the block's output is its input; the blocks before it are untouched.
    assert torch.equal(acts["blocks.1.resid_post"], acts["blocks.0.resid_post"])
    assert torch.equal(acts["blocks.0.resid_post"], intact["blocks.0.resid_post"])
    with torch.no_grad():
        x1 = model.blocks[0](model.drop(model.embed(tokens) + model.pos[:5]))
        want = model.head(model.final_norm(model.blocks[2](x1)))
    torch.testing.assert_close(acts["output"], want, rtol=0, atol=0)
    # The patch's source is hooked (to be passed on) but kept only when asked for.
    assert set(acts) == {*stream_points(3), "output"} and _hooks(model) == 0


def test_patch_hooks_are_removed_even_on_error():
    model = rv.build(rv.StackConfig(depth=3, width=4)).eval()
    x = torch.randn(2, 4)
    # An error inside the with block.
    with pytest.raises(RuntimeError, match="boom"), tap(model, (), patch=delete_block(2)):
        assert _hooks(model) == 2
        model(x)
        raise RuntimeError("boom")
    assert _hooks(model) == 0
    # A patch whose source never runs before its target: said so, hooks gone.
    with pytest.raises(ValueError, match="has not run before"):
        rv.capture(model, x, patch={"blocks.0.resid_post": "blocks.2.resid_pre"})
    assert _hooks(model) == 0
    # The same model, intact again.
    with torch.no_grad():
        torch.testing.assert_close(rv.capture(model, x)["output"], model(x), rtol=0, atol=0)
