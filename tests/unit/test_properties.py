"""Property tests: any accepted config builds and runs; any rejected one says why.

Hypothesis draws configs from ranges wider than the valid ones (negative,
zero, huge, wrong types, unknown strings) so both outcomes are exercised. Sizes
that pass validation but would be slow to build are kept small by drawing from
small ranges for the valid side; the budget estimate is checked for every
accepted config without building it.
"""

import math

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import resviz as rv
from tests.examples import examples

SETTINGS = settings(
    max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
ANY_SCALAR = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-10, 10),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=5),
)


def small_int(lo: int, hi: int):
    """Mostly valid small values, sometimes out of range or of the wrong type."""
    return st.one_of(st.integers(lo, hi), st.integers(-3, 0), st.just(10**9), ANY_SCALAR)


def choice(options):
    return st.one_of(st.sampled_from(options), st.sampled_from(["", "LAYER", "relu6", "🙂"]))


STACK_KW = st.fixed_dictionaries(
    {},
    optional={
        "depth": small_int(1, 6),
        "width": small_int(1, 24),
        "widths": st.one_of(
            st.none(),
            st.lists(st.integers(1, 24), min_size=2, max_size=5).map(tuple),
            st.lists(st.integers(-2, 24), min_size=0, max_size=3).map(tuple),
            st.lists(st.integers(1, 24), min_size=2, max_size=3),  # a list, not a tuple
        ),
        "block": choice(["linear", "ffn"]),
        "ffn_mult": small_int(1, 4),
        "activation": choice(["relu", "gelu", "tanh", "sigmoid", "identity"]),
        "residual": choice(["none", "add", "scaled", "concat"]),
        "alpha": st.one_of(st.floats(-2, 2), ANY_SCALAR),
        "alpha_learnable": st.one_of(st.booleans(), ANY_SCALAR),
        "identity_scale": st.one_of(st.floats(-2, 2), ANY_SCALAR),
        "join": choice(["after_act", "before_act"]),
        "concat_project": st.one_of(st.booleans(), ANY_SCALAR),
        "mismatch": choice(["skip", "project"]),
        "norm": choice(["none", "layer", "rms", "batch"]),
        "norm_position": choice(["pre", "post"]),
        "init": choice(["default", "kaiming", "xavier", "small"]),
        "out_dim": st.one_of(st.none(), small_int(1, 8)),
        "seed": st.one_of(st.integers(0, 2**31 - 1), ANY_SCALAR),
    },
)

ENCODER_KW = st.fixed_dictionaries(
    {},
    optional={
        "n_layers": small_int(1, 3),
        "d_model": small_int(1, 32),
        "n_heads": small_int(1, 8),
        "d_ff": small_int(1, 48),
        "vocab_size": small_int(2, 50),
        "max_len": small_int(1, 16),
        "residual": st.one_of(st.booleans(), ANY_SCALAR),
        "norm": choice(["none", "layer", "rms", "batch"]),
        "norm_position": choice(["pre", "post"]),
        "positional": choice(["sinusoidal", "learned", "none"]),
        "use_ffn": st.one_of(st.booleans(), ANY_SCALAR),
        "dropout": st.one_of(st.floats(0, 0.9), ANY_SCALAR),
        "activation": choice(["relu", "gelu", "tanh", "sigmoid", "identity"]),
        "init": choice(["default", "xavier"]),
        "seed": st.one_of(st.integers(0, 2**31 - 1), ANY_SCALAR),
    },
)


def _accept_or_explain(factory, kw):
    try:
        return factory(**kw)
    except ValueError as exc:
        assert str(exc).strip(), "a rejection must say why"
        return None


@SETTINGS
@given(STACK_KW)
def test_any_stack_config_builds_and_runs_or_is_rejected_with_a_message(kw):
    cfg = _accept_or_explain(rv.StackConfig, kw)
    if cfg is None:
        return
    est = rv.estimate(cfg, batch=3)
    if est.params > 2_000_000:  # valid but too big to build in a unit test
        return
    model = rv.build(cfg)
    assert rv.train.parameter_count(model) == est.params
    y = model(torch.randn(3, cfg.in_dim))
    assert y.shape == (3, cfg.out_dim or cfg.out_width)
    df = rv.train.gradient_norms(cfg, batch_size=3)
    assert len(df) and (df["grad_norm"] >= 0).all() | df["grad_norm"].isna().any()


@SETTINGS
@given(ENCODER_KW, st.integers(1, 16))
def test_any_encoder_config_builds_and_runs_or_is_rejected_with_a_message(kw, seq):
    cfg = _accept_or_explain(rv.EncoderConfig, kw)
    if cfg is None:
        return
    seq = min(seq, cfg.max_len)
    est = rv.estimate(cfg, batch=2, seq_len=seq)
    model = rv.build(cfg).eval()
    assert rv.train.parameter_count(model) == est.params
    tokens = torch.randint(0, cfg.vocab_size, (2, seq))
    acts = rv.capture(model, tokens)
    pattern = acts["blocks.0.attn_pattern"]
    assert torch.allclose(pattern.sum(-1), torch.ones(()), atol=1e-5)
    assert model(tokens).shape == (2, seq, cfg.vocab_size)


@SETTINGS
@given(
    st.one_of(st.integers(-5, 5), st.floats(allow_nan=True), st.text(max_size=3)),
    st.one_of(st.integers(-5, 200_001), st.floats(allow_nan=True)),
)
def test_train_compare_arguments_accept_or_raise_value_error(steps, warmup):
    try:
        df = rv.train_compare(
            {"a": rv.StackConfig(depth=1, width=4)},
            steps=steps,
            warmup=warmup,
            batch_size=2,
            seq_len=2,
        )
    except ValueError as exc:
        assert str(exc)
        return
    except TypeError:
        pytest.fail(f"train_compare raised TypeError for steps={steps!r}, warmup={warmup!r}")
    assert len(df) == steps and math.isfinite(df["loss"].iloc[-1])


@SETTINGS
@given(
    st.integers(-3, 5),
    st.one_of(st.none(), st.integers(-3, 40)),
    st.integers(-2, 3),
)
def test_estimate_accepts_or_raises_value_error(batch, seq_len, steps):
    cfg = rv.EncoderConfig(n_layers=1, d_model=8, n_heads=2, d_ff=8, vocab_size=10, max_len=16)
    try:
        est = rv.estimate(cfg, batch=batch, seq_len=seq_len, steps=steps)
    except ValueError as exc:
        assert str(exc)
        return
    assert est.params > 0 and est.flops_forward > 0 and est.activation_bytes > 0
