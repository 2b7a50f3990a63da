"""Cost estimates against closed forms, and the budget's refusal message."""

import pytest

import resviz as rv


def test_stack_estimate_matches_closed_form():
    cfg = rv.StackConfig(depth=3, width=16, residual="add")
    est = rv.estimate(cfg, batch=5)
    # 3 linear blocks of 16x16 (+16 bias): parameters; 2 FLOPs per multiply-add per row.
    assert est.params == 3 * (16 * 16 + 16)
    assert est.flops_forward == 2 * 3 * 16 * 16 * 5
    assert (
        est.activation_bytes == 4 * 5 * 4 * 16 * 4
    )  # rows x 4 tensors x width x (input + 3 blocks) x 4 B
    trained = rv.estimate(cfg, batch=5, steps=10)
    assert trained.flops_total == 3 * est.flops_forward * 10
    assert trained.memory_bytes == 4 * est.param_bytes + est.activation_bytes


def test_encoder_estimate_counts_attention_products():
    cfg = rv.EncoderConfig(n_layers=2, d_model=8, n_heads=2, d_ff=16, vocab_size=10, max_len=6)
    est = rv.estimate(cfg, batch=3, seq_len=4)
    model = rv.build(cfg)
    linear = sum(m.weight.numel() for m in model.modules() if isinstance(m, rv.models.nn.Linear))
    assert est.params == rv.parameter_count(model)
    assert est.flops_forward == 2 * linear * 3 * 4 + 2 * 4 * 3 * 4 * 4 * 8


def test_budget_refuses_with_the_numbers_and_the_fix():
    big = rv.estimate(rv.StackConfig(depth=64, width=2048), batch=1)
    msg = rv.Budget().check(big)
    assert "over this server's budget" in msg and "269M parameters" in msg
    assert "limit of 30M" in msg and "reduce depth, width" in msg
    assert rv.Budget().check(rv.estimate(rv.StackConfig())) is None


@pytest.mark.parametrize(
    "env, field, value",
    [
        ({"RESVIZ_MAX_PARAMS": "1000"}, "max_params", 1000),
        ({"max_params": "2000"}, "max_params", 2000),
        ({"RESVIZ_MAX_ACTIVATION_MB": "2"}, "max_activation_bytes", 2 * 2**20),
        ({"RESVIZ_MAX_GFLOP": "5"}, "max_flops", 5e9),
        ({"RESVIZ_MAX_PARAMS": "nan"}, "max_params", 30_000_000),
        ({"RESVIZ_MAX_PARAMS": "-3"}, "max_params", 30_000_000),
        ({"RESVIZ_MAX_PARAMS": "lots"}, "max_params", 30_000_000),
    ],
)
def test_budget_limits_come_from_the_environment_or_fall_back(env, field, value):
    assert getattr(rv.Budget.from_mapping(env), field) == value


def test_estimates_never_import_torch_dynamo():
    """Counting on the meta device must not run torch's Python reference ops:
    their first use imports torch._dynamo (over a second and 70 MB on a server
    that compiles nothing). A fresh interpreter, every kind of block and encoder."""
    import subprocess
    import sys

    code = """
import itertools, sys
import resviz as rv
for norm, pos, act, res in itertools.product(
    ["layer", "rms", "batch", "none"], ["sinusoidal", "learned", "none"],
    ["gelu", "relu"], [True, False],
):
    rv.estimate(rv.EncoderConfig(norm=norm, positional=pos, activation=act, residual=res))
rv.estimate(rv.EncoderConfig(init="xavier"))
for init, residual, block in itertools.product(
    ["default", "kaiming", "xavier", "small"], ["none", "add", "scaled", "concat"],
    ["linear", "ffn"],
):
    rv.estimate(rv.StackConfig(init=init, residual=residual, block=block, norm="layer"))
rv.estimate(rv.StackConfig(widths=(25, 25, 43, 43, 54, 54), mismatch="project"))
print("torch._dynamo" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
