"""The CUDA path: same config, same numbers as on the CPU (runs where CUDA exists)."""

import pytest
import torch

import resviz as rv

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here"),
]


def test_gradient_norms_match_cpu():
    cfg = rv.StackConfig(activation="tanh", residual="none")
    cpu = rv.train.gradient_norms(cfg, device="cpu")["grad_norm"].to_numpy()
    gpu = rv.train.gradient_norms(cfg, device="cuda")["grad_norm"].to_numpy()
    assert gpu == pytest.approx(cpu, rel=1e-3, abs=1e-12)


def test_encoder_capture_matches_cpu():
    cfg = rv.EncoderConfig(n_layers=2, d_model=32, n_heads=4, d_ff=64)
    tokens = torch.randint(0, 1000, (2, 9), generator=torch.Generator().manual_seed(0))
    cpu = rv.capture(rv.build(cfg).eval(), tokens)
    gpu = rv.capture(rv.build(cfg, "cuda").eval(), tokens.cuda())
    for name, t in cpu.items():
        torch.testing.assert_close(gpu[name], t, rtol=1e-3, atol=1e-4, msg=name)
