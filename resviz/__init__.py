"""resviz: measure what residual connections do inside transformers.

A small library a notebook can use; the Streamlit pages are thin views on it::

    import resviz as rv
    cfg = rv.StackConfig(depth=10, width=64, residual="none")
    rv.layer_gradients(cfg)  # tidy DataFrame: the gradient-flow page's plain curve at seed 0
"""

from . import findings, findings_stack, norms, playground
from .budget import Budget, Estimate, estimate
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
from .findings import crossing_words, format_number, lower_words, ratio_words, trend_words
from .findings_stack import (
    change,
    compare,
    crossing,
    degradation_summary,
    depth_effect,
    encoder_stream_rule,
    loss_race,
    order,
    share_of,
    spread_vs,
    stack_norm_rule,
    stage_change,
    trend,
    value_range,
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
    LesionConfig,
    block_formula,
    forward_decomposition,
    layer_decomposition,
    lesion,
    lesion_caption,
    lesion_summary,
    path_lengths,
    shortcut_table,
    spirals,
    train_degradation,
    train_lesion,
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
    "LesionConfig",
    "Stack",
    "StackConfig",
    "autocorrelation",
    "available_devices",
    "block_formula",
    "block_jacobian",
    "build",
    "capture",
    "change",
    "char_tokenize",
    "compare",
    "config_fields",
    "configure_threads",
    "crossing",
    "degradation_summary",
    "depth_effect",
    "crossing_words",
    "depth_sweep",
    "device_info",
    "encoder_stream_rule",
    "estimate",
    "findings_stack",
    "findings",
    "format_number",
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
    "loss_race",
    "lower_words",
    "lesion_caption",
    "lesion_summary",
    "make_batch",
    "norm_timing",
    "norms",
    "order",
    "param_location",
    "parameter_count",
    "path_lengths",
    "pick_device",
    "playground",
    "predict_masked",
    "prepost_stream",
    "rank_collapse",
    "rank_collapse_compare",
    "ratio_words",
    "residual_stream",
    "run_with_fallback",
    "scaled_batch",
    "share_of",
    "shattered_gradients",
    "shattered_summary",
    "shortcut_table",
    "sinusoidal_encoding",
    "spirals",
    "spread_vs",
    "stack_norm_rule",
    "stage_change",
    "stream_norms",
    "textbook_layernorm",
    "tokenize",
    "train_compare",
    "train_degradation",
    "train_layer_grads",
    "train_lesion",
    "train_masked",
    "train_warmup",
    "trend",
    "value_range",
    "trend_words",
]
