"""The library options behind the normalization page's computed sentences."""

import pytest
import torch

from resviz import norms as N


def test_prepost_stream_raw_input_is_embedding_plus_positions():
    # N(0, 1) embedding (E||e||^2 = d) plus sinusoidal positions (||p||^2 = d/2 exactly).
    raw = N.prepost_stream(2, 64, 0, "default", batch_size=16, seq_len=32, standardize=False)
    std = N.prepost_stream(2, 64, 0, "default", batch_size=16, seq_len=32)
    first = raw[raw["block"] == 0]["sq_norm_per_dim"]
    assert first.to_numpy() == pytest.approx(1.5, abs=0.05)
    # Standardized per feature over batch and tokens: the mean of ||x||^2/d is 1 exactly.
    assert std[std["block"] == 0]["sq_norm_per_dim"].to_numpy() == pytest.approx(1.0, abs=1e-5)
    # Post-LN ends each layer with a LayerNorm whatever the input.
    post = raw[(raw["variant"] == "Post-LN") & (raw["block"] > 0)]["sq_norm_per_dim"]
    assert post.to_numpy() == pytest.approx(1.0, abs=1e-3)


def test_invariance_table_uses_the_given_scales():
    a = N.invariance_table(4, 8, 16, seed=0, big=1.0, small=1.0)
    b = N.invariance_table(4, 8, 16, seed=0)
    assert not (a["max_abs_change"].to_numpy() == b["max_abs_change"].to_numpy()).all()
    # LayerNorm's exact invariances hold at any scale (eps aside).
    ln = a[(a["norm"] == "LayerNorm") & a["transformation"].str.startswith("add")]
    assert (ln["max_abs_change"] < 1e-9).all()
    # With equal scales h = x W^T is one Gaussian batch: both halves alike.
    x = N.scaled_batch(4, 8, 16, 1.0, 1.0, 0)
    assert torch.equal(x, torch.randn(4, 8, 16, generator=torch.Generator().manual_seed(0)))
