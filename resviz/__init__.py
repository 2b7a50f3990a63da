"""resviz: measure what residual connections do inside transformers.

A small library a notebook can use; the Streamlit pages are thin views on it::

    import resviz as rv
    cfg = rv.StackConfig(depth=10, width=64, residual="none")
    rv.gradient_norms(cfg)          # tidy DataFrame, same numbers the page shows
"""

from . import playground
from .budget import Budget, Estimate, estimate
from .config import ENCODER_PRESETS, EncoderConfig, StackConfig, config_fields
from .device import (
    available_devices,
    configure_threads,
    device_info,
    pick_device,
    run_with_fallback,
)
from .experiments import (
    forward_signal,
    gradient_norms,
    make_batch,
    param_location,
    parameter_count,
    stream_norms,
    train_compare,
)
from .hooks import capture, hook_names
from .models import Encoder, HookPoint, Stack, build
from .playground import (
    generate_code,
    predict_masked,
    rank_collapse,
    rank_collapse_compare,
    residual_stream,
    tokenize,
    train_masked,
)
from .positional import sinusoidal_encoding
from .text import char_tokenize

__version__ = "0.1.0"

__all__ = [
    "Budget",
    "ENCODER_PRESETS",
    "Estimate",
    "Encoder",
    "EncoderConfig",
    "HookPoint",
    "Stack",
    "StackConfig",
    "available_devices",
    "build",
    "capture",
    "char_tokenize",
    "config_fields",
    "configure_threads",
    "device_info",
    "estimate",
    "forward_signal",
    "generate_code",
    "gradient_norms",
    "hook_names",
    "make_batch",
    "param_location",
    "parameter_count",
    "pick_device",
    "playground",
    "predict_masked",
    "rank_collapse",
    "rank_collapse_compare",
    "residual_stream",
    "run_with_fallback",
    "sinusoidal_encoding",
    "stream_norms",
    "tokenize",
    "train_compare",
    "train_masked",
]
