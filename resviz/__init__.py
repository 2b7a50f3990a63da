"""resviz: measure what residual connections do inside transformers.

A small library a notebook can use; the Streamlit pages are thin views on it::

    import resviz as rv
    cfg = rv.StackConfig(depth=10, width=64, residual="none")
    rv.gradient_norms(cfg)          # tidy DataFrame, same numbers the page shows
"""

from . import norms, playground
from .budget import Budget, Estimate, combine, estimate
from .codegen import generate_code
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
from .gradflow import (
    GradTrace,
    autocorrelation,
    block_jacobian,
    depth_sweep,
    identity_ratio,
    layer_gradients,
    shattered_gradients,
    shattered_summary,
    train_layer_grads,
)
from .hooks import capture, hook_names
from .models import Encoder, HookPoint, Stack, build
from .norms import (
    invariance_table,
    last_layer_grad,
    layernorm_gap,
    norm_timing,
    prepost_stream,
    scaled_batch,
    textbook_layernorm,
    train_warmup,
)
from .playground import (
    predict_masked,
    rank_collapse,
    rank_collapse_compare,
    residual_stream,
    tokenize,
    train_masked,
)
from .positional import sinusoidal_encoding
from .skip import (
    DegradationConfig,
    DegradationResult,
    block_formula,
    forward_decomposition,
    layer_decomposition,
    lesion,
    path_lengths,
    shortcut_table,
    spirals,
    train_degradation,
)
from .text import char_tokenize

__version__ = "0.1.0"

__all__ = [
    "Budget",
    "DegradationConfig",
    "DegradationResult",
    "ENCODER_PRESETS",
    "Encoder",
    "EncoderConfig",
    "Estimate",
    "GradTrace",
    "HookPoint",
    "Stack",
    "StackConfig",
    "autocorrelation",
    "available_devices",
    "block_formula",
    "block_jacobian",
    "build",
    "capture",
    "char_tokenize",
    "combine",
    "config_fields",
    "configure_threads",
    "depth_sweep",
    "device_info",
    "estimate",
    "forward_decomposition",
    "forward_signal",
    "generate_code",
    "gradient_norms",
    "hook_names",
    "identity_ratio",
    "invariance_table",
    "last_layer_grad",
    "layer_decomposition",
    "layer_gradients",
    "layernorm_gap",
    "lesion",
    "make_batch",
    "norm_timing",
    "norms",
    "param_location",
    "parameter_count",
    "path_lengths",
    "pick_device",
    "playground",
    "predict_masked",
    "prepost_stream",
    "rank_collapse",
    "rank_collapse_compare",
    "residual_stream",
    "run_with_fallback",
    "scaled_batch",
    "shattered_gradients",
    "shattered_summary",
    "shortcut_table",
    "sinusoidal_encoding",
    "spirals",
    "stream_norms",
    "textbook_layernorm",
    "tokenize",
    "train_compare",
    "train_degradation",
    "train_layer_grads",
    "train_masked",
    "train_warmup",
]
