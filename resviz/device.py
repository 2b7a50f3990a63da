"""Device choice, CPU fallback and the torch thread policy.

Thread policy: torch's intra-op pool is process-wide, shared by every session
of a Streamlit server. On a shared server, many sessions each asking for all
cores oversubscribe the machine, so :func:`configure_threads` caps the pool at
``RESVIZ_TORCH_THREADS`` (default: the number of CPUs, at most 4) and sets one
inter-op thread. Our models are small: beyond a few threads per op, the extra
threads only add contention between sessions.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from typing import Literal, TypeVar

import torch

DevicePreference = Literal["auto", "cuda", "mps", "cpu"]
T = TypeVar("T")

_threads_configured = False


def _mps_available() -> bool:
    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())


def available_devices() -> list[str]:
    """Device kinds usable here, best first; ``"cpu"`` is always last."""
    found = []
    if torch.cuda.is_available():
        found.append("cuda")
    if _mps_available():
        found.append("mps")
    return [*found, "cpu"]


def pick_device(preference: str = "auto") -> torch.device:
    """``"auto"`` picks CUDA, then MPS, then CPU. An explicit choice that is not
    available here falls back to CPU with a ``RuntimeWarning``."""
    pref = (preference or "auto").lower()
    avail = available_devices()
    if pref == "auto":
        return torch.device(avail[0])
    if pref not in ("cuda", "mps", "cpu"):
        warnings.warn(f"unknown device {preference!r}; using CPU.", RuntimeWarning, stacklevel=2)
        return torch.device("cpu")
    if pref not in avail:
        warnings.warn(f"{pref} is not available here; using CPU.", RuntimeWarning, stacklevel=2)
        return torch.device("cpu")
    return torch.device(pref)


def default_threads() -> int:
    """Intra-op threads for the app: ``RESVIZ_TORCH_THREADS``, else 1.

    torch's pool is process-wide, and every thread that calls into torch (one per
    session's script run, one per background run) leads its own OpenMP team of
    that size. With more than one thread per team, a few concurrent sessions
    oversubscribe the cores and OpenMP's spin-waiting made small-model training
    10x or more slower on a 2-core machine; the models here are small enough
    that one thread per session loses little when a user is alone
    (benchmarks/RESULTS.md has the measurements). A single-user machine can
    set ``RESVIZ_TORCH_THREADS`` higher.
    """
    env = os.environ.get("RESVIZ_TORCH_THREADS", "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    return 1


def configure_threads(n: int | None = None) -> int:
    """Apply the thread policy once per process; returns the intra-op thread count."""
    global _threads_configured
    n = n or default_threads()
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)
    if not _threads_configured:
        try:
            torch.set_num_interop_threads(1)
        except RuntimeError:  # already set, or parallel work already started
            pass
        _threads_configured = True
    return torch.get_num_threads()


def device_info(device: torch.device | None = None) -> dict[str, str]:
    """What the sidebar shows: device, its name, torch version, threads."""
    device = device or pick_device()
    name = "CPU"
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
    elif device.type == "mps":
        name = "Apple GPU (MPS)"
    return {
        "device": str(device),
        "name": name,
        "torch": torch.__version__,
        "threads": str(torch.get_num_threads()),
    }


def run_with_fallback(
    fn: Callable[[torch.device], T], device: torch.device
) -> tuple[T, str | None]:
    """Run ``fn(device)``; if it fails on an accelerator (out of memory, an op
    that is missing there), run ``fn(cpu)`` instead and return a notice saying so."""
    if device.type == "cpu":
        return fn(device), None
    try:
        return fn(device), None
    except (RuntimeError, NotImplementedError) as exc:  # torch.OutOfMemoryError is a RuntimeError
        if device.type == "cuda":
            torch.cuda.empty_cache()
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        notice = f"{device.type} failed ({first_line[:200]}); the result below was computed on CPU."
        return fn(torch.device("cpu")), notice
