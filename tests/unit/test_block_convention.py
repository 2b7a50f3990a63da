"""One numbering for blocks in every frame resviz returns (issue 14).

A per-block frame has a ``block`` column that counts a model's blocks from 1 at
the input side (``blocks.0`` is block 1), and no ``layer`` column beside it. A
frame over the residual stream ``x_0 .. x_L`` numbers each row by the block that
wrote it, so ``block`` 0 is the input. Each case below checks the values, not
just the column's name.
"""

from __future__ import annotations

import pandas as pd
import pytest
import torch

import resviz as rv
from resviz import encoder as PG
from resviz import gradients as G

STACK = rv.StackConfig(depth=3, width=8, seed=1)
ENCODER = rv.EncoderConfig(n_layers=2, d_model=16, n_heads=2, d_ff=32, vocab_size=20, max_len=8)
IDS = [3, 4, 5, 6, 3]


def _acts():
    return PG.run_encoder(rv.build(ENCODER), IDS)


def _grads():
    return {n: G.layer_gradients(c, seed=2) for n, c in G.plain_and_residual(STACK).items()}


# name -> (frame, the block numbers it must hold, in order of first appearance)
BLOCKS = [1, 2, 3]
STREAM = [0, 1, 2, 3]
CASES = {
    "layer_decomposition": (lambda: rv.shortcuts.forward_decomposition(STACK), BLOCKS),
    "compare_signal": (lambda: rv.shortcuts.compare_signal(STACK, batch_size=8), BLOCKS),
    "shortcut_table": (lambda: rv.shortcuts.shortcut_table(STACK), BLOCKS),
    "gradient_norms (stack)": (lambda: rv.train.gradient_norms(STACK), BLOCKS),
    "gradient_norms (encoder)": (lambda: rv.train.gradient_norms(ENCODER, seq_len=8), [0, 1, 2, 3]),
    "stream_norms": (lambda: rv.train.stream_norms(ENCODER, seq_len=4), [1, 2]),
    "layer_gradients": (lambda: G.layer_gradients(STACK), STREAM),
    "identity_ratio": (lambda: G.identity_ratio(STACK), STREAM),
    "weight_gradient_frame": (lambda: G.weight_gradient_frame(_grads()), BLOCKS),
    "stream_gradient_frame": (lambda: G.stream_gradient_frame(_grads()), STREAM),
    "train_layer_grads": (
        lambda: G.train_layer_grads({"a": STACK}, steps=2, batch_size=4).layers,
        BLOCKS,
    ),
    "attention_frame": (
        lambda: PG.attention_frame(PG.attention_maps(_acts(), 2), [str(i) for i in IDS], 2, 1),
        [2],
    ),
    "residual_stream": (lambda: PG.residual_stream(_acts(), ENCODER), [1, 2]),
    "final_share": (lambda: PG.final_share(_acts(), ENCODER), [0, 1, 2]),
    "rank_collapse": (lambda: PG.rank_collapse(_acts(), ENCODER), [0, 1, 2]),
    "rank_collapse_compare": (lambda: PG.rank_collapse_compare(ENCODER, IDS), [0, 1, 2]),
    "lesion": (
        lambda: rv.shortcuts.lesion(
            rv.build(rv.StackConfig(widths=(2, 8, 8, 8), out_dim=3)), *rv.data.spirals(30)
        ),
        [2, 3],
    ),
    "prepost_stream": (lambda: rv.norms.prepost_stream(2, 16, batch_size=2, seq_len=4), [0, 1, 2]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_every_per_block_frame_counts_blocks_from_1(name):
    make, want = CASES[name]
    torch.manual_seed(0)
    df = make()
    assert isinstance(df, pd.DataFrame)
    assert "layer" not in df.columns
    assert list(dict.fromkeys(df["block"].tolist())) == want
    assert pd.api.types.is_integer_dtype(df["block"])


def test_the_stream_frame_puts_each_block_weight_on_the_row_it_writes():
    # Row l is x_l: block l wrote it, so block l's weight gradient sits there, and
    # the input row (block 0) has none.
    df = G.layer_gradients(STACK)
    assert df["weight_grad"].isna().tolist() == [True, False, False, False]
    names = rv.train.gradient_norms(STACK).set_index("block")
    first = names[names["param"].str.endswith(".fc.weight")]["grad_norm"]
    assert df.set_index("block")["weight_grad"].loc[1:].tolist() == pytest.approx(
        first.tolist(), rel=1e-6
    )
