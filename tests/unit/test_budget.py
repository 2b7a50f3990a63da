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
    assert est.params == rv.train.parameter_count(model)
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


@pytest.mark.slow
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


def test_combine_adds_models_that_train_side_by_side():
    a = rv.estimate(rv.StackConfig(depth=3, width=16), batch=5, steps=10)
    b = rv.estimate(rv.StackConfig(depth=6, width=32), batch=5, steps=10)
    both = rv.budget.combine([a, b])
    assert both.params == a.params + b.params
    assert both.flops_total == a.flops_total + b.flops_total
    # Every model's weights, gradients and Adam moments live for the whole run; only
    # the model being stepped holds activations.
    assert both.memory_bytes == 4 * (a.param_bytes + b.param_bytes) + b.activation_bytes
    with pytest.raises(ValueError, match="same number of steps"):
        rv.budget.combine([a, rv.estimate(rv.StackConfig(), steps=3)])
    with pytest.raises(ValueError, match="at least one"):
        rv.budget.combine([])


def test_budget_refuses_what_does_not_fit_in_memory():
    """A 100 x 512 stack (26M parameters) fits at init; trained for 20 steps it is under
    the parameter, activation and compute limits, but its weights, gradients and two
    Adam moments (4 x 105 MB) do not fit in memory."""
    cfg = rv.StackConfig(depth=100, width=512)
    assert rv.Budget().check(rv.estimate(cfg, batch=32)) is None
    msg = rv.Budget().check(rv.estimate(cfg, batch=64, steps=20), "This training run")
    assert msg == (
        "This training run is over this server's budget: ~451 MB of memory (weights, "
        "gradients, optimizer state and activations) exceed the limit of 256 MB: reduce "
        "depth, width, the batch or the number of models."
    )
    small = rv.Budget.from_mapping({"RESVIZ_MAX_MEMORY_MB": "1"})
    assert small.max_memory_bytes == 2**20
    assert "of memory (weights and activations)" in small.check(
        rv.estimate(rv.StackConfig(depth=8, width=256))
    )


def _peak_increase(setup: str, work: str, env: dict[str, str] | None = None) -> int:
    """Bytes by which ``work`` raises a fresh interpreter's resident size at its peak,
    over its resident size just before (Linux: the high-water mark is reset first, so
    import-time peaks do not hide it). ``setup`` runs the same kind of work at a tiny
    size first, so imports and first-use allocations are not counted. One torch
    thread, as on the server. ``env`` adds environment variables."""
    import os
    import subprocess
    import sys

    code = f"""
import re
import resviz as rv
from resviz import gradients as G
from resviz import norms as N
rv.configure_threads()
{setup}
def kb(field):
    return int(re.search(field + r":\\s+(\\d+)", open("/proc/self/status").read()).group(1))
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # reset VmHWM to the current resident size
before = kb("VmRSS")
{work}
print(1024 * (kb("VmHWM") - before))
"""
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **(env or {})},
    )
    return int(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_layer_gradients_never_hold_a_second_copy_of_the_weights():
    """One backward pass measures every block's weight gradient, but drops each as soon as
    it is measured. A 100 x 512 stack has 100 MB of weights (125 MB with activations);
    with a fixed mmap threshold every tensor of 128 kB or more is returned to the system
    when freed, so the peak is what the code holds, not what glibc kept: 127-134 MB,
    against 227-233 MB when every gradient was held at once (the old code)."""
    inc = _peak_increase(
        "G.layer_gradients(rv.StackConfig(depth=2, width=8))",
        "G.layer_gradients(rv.StackConfig(depth=100, width=512))",
        env={"MALLOC_MMAP_THRESHOLD_": str(128 * 1024)},
    )
    # The measurement casts the stack to float64: its one copy of the weights is 8 bytes
    # a value (the float32 ones are freed as each is cast).
    est = rv.estimate(rv.StackConfig(depth=100, width=512), batch=32, bytes_per_value=8)
    assert inc < est.memory_bytes + est.param_bytes / 2, (inc / 2**20, est.describe())


def test_backward_with_streams_measures_weight_gradients_and_keeps_none():
    import torch

    from resviz.gradients import layers as G
    from resviz.train.compare import make_batch

    cfg = rv.StackConfig(depth=4, width=16, norm="layer", block="ffn", seed=3)
    x, y = make_batch(cfg, 8, 1, torch.Generator().manual_seed(1))
    model = rv.build(cfg)
    grads, loss, weight = G._backward_with_streams(model, x, y)
    assert all(p.grad is None for p in model.parameters())
    ref = rv.build(cfg)
    torch.nn.functional.mse_loss(ref(x), y).backward()
    expected = [float(G._first_weight(b).grad.norm()) for b in ref.blocks]
    assert weight == pytest.approx(expected, rel=1e-6)
    assert len(grads) == cfg.n_blocks + 1 and float(loss) > 0


@pytest.mark.slow
def test_norm_timing_cost_bounds_its_measured_peak():
    """The timing's own estimate (NORM_TIMING_COPIES float32 copies of its input) is an
    upper bound of what it actually holds, measured at a size the page allows."""
    from resviz import norms as N

    inc = _peak_increase("N.norm_timing(2, 4, 8, repeats=1)", "N.norm_timing(16, 128, 512)")
    cost = N.norm_timing_cost(16, 128, 512)
    assert 0 < inc <= cost.activation_bytes, (inc / 2**20, cost.activation_bytes / 2**20)
    # The page's largest size does not fit the default budget and is refused.
    assert "Timing" in rv.Budget().check(N.norm_timing_cost(16, 256, 1024), "Timing")
    assert rv.Budget().check(N.norm_timing_cost(16, 128, 512)) is None
