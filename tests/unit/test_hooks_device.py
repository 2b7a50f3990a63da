import warnings

import pytest
import torch

import resviz as rv


def _hook_count(model):
    return sum(len(m._forward_hooks) for m in model.modules())


def test_capture_names_follow_module_paths_and_are_detached_cpu():
    model = rv.build(rv.EncoderConfig(n_layers=2, d_model=16, n_heads=2, d_ff=32))
    acts = rv.capture(model, torch.randint(0, 1000, (1, 4)), grad=True)
    for i in range(2):
        for point in (
            "resid_pre",
            "attn_out",
            "resid_mid",
            "ffn_out",
            "resid_post",
            "attn_pattern",
        ):
            t = acts[f"blocks.{i}.{point}"]
            assert t.device.type == "cpu" and not t.requires_grad
    assert set(rv.hooks.hook_names(model)) <= set(acts)
    assert _hook_count(model) == 0


def test_capture_removes_hooks_even_when_forward_fails():
    model = rv.build(rv.EncoderConfig(n_layers=1, d_model=16, n_heads=2, d_ff=32, max_len=4))
    with pytest.raises(ValueError, match="longer than max_len"):
        rv.capture(model, torch.zeros(1, 9, dtype=torch.long))
    assert _hook_count(model) == 0


def test_capture_can_select_names():
    model = rv.build(rv.StackConfig(depth=3, width=8))
    acts = rv.capture(model, torch.randn(2, 8), names=["blocks.1.resid_post"])
    assert set(acts) == {"blocks.1.resid_post", "output"}


def test_pick_device_auto_and_fallback():
    assert rv.pick_device("cpu") == torch.device("cpu")
    assert rv.pick_device("auto").type == rv.available_devices()[0]
    if not torch.cuda.is_available():
        with pytest.warns(RuntimeWarning, match="not available"):
            assert rv.pick_device("cuda") == torch.device("cpu")
    with pytest.warns(RuntimeWarning, match="unknown device"):
        assert rv.pick_device("tpu") == torch.device("cpu")


def test_run_with_fallback_reruns_on_cpu_with_notice():
    calls = []

    def fn(device):
        calls.append(device.type)
        if device.type != "cpu":
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 1 GiB")
        return 42

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result, notice = rv.run_with_fallback(fn, torch.device("meta"))
    assert result == 42 and calls == ["meta", "cpu"]
    assert "out of memory" in notice and "CPU" in notice
    assert rv.run_with_fallback(fn, torch.device("cpu")) == (42, None)


def test_configure_threads_respects_env(monkeypatch):
    before = torch.get_num_threads()
    monkeypatch.setenv("RESVIZ_TORCH_THREADS", "1")
    try:
        assert rv.configure_threads() == 1
    finally:
        torch.set_num_threads(before)


def test_device_info_fields():
    info = rv.device_info(torch.device("cpu"))
    assert info["device"] == "cpu" and info["torch"] == torch.__version__


@pytest.mark.slow
def test_resviz_does_not_import_streamlit():
    import subprocess
    import sys

    code = "import sys, resviz, resviz.charts; print('streamlit' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
