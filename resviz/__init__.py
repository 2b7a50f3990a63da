"""resviz: measure what residual connections do inside transformers.

A small library a notebook can use; the Streamlit pages are thin views on it::

    import resviz as rv
    cfg = rv.StackConfig(depth=10, width=64, residual="none")
    rv.layer_gradients(cfg)  # tidy DataFrame: the gradient-flow page's plain curve at seed 0
"""

from . import (
    charts,
    codegen_encoder,
    codegen_stack,
    data,
    decomposition,
    degradation,
    encoder_inspect,
    findings,
    findings_runs,
    findings_words,
    gradient_training,
    gradients,
    lesion_study,
    masked_training,
    model_card,
    norm_cost,
    norm_invariance,
    norm_training,
    normalization,
    positional,
    prepost,
    pretrained,
    raster,
    recipes,  # noqa: E402, F401  (the section recipes, built on everything above)
    shattered,
    shortcuts,
    train,
)
from ._version import __version__ as __version__
from .aliases import findings_stack, gradflow, norms, playground, skip
from .budget import Budget, Estimate, combine, estimate
from .codegen import generate_code
from .config import ENCODER_PRESETS, EncoderConfig, StackConfig, config_fields
from .data import spirals, tokenize
from .decomposition import forward_decomposition, layer_decomposition
from .degradation import (
    DegradationConfig,
    DegradationResult,
    LesionConfig,
    SpiralStacksConfig,
    train_degradation,
    train_lesion,
)
from .device import (
    available_devices,
    configure_threads,
    device_info,
    pick_device,
    run_with_fallback,
)
from .divergence import DIVERGENCE_FACTOR, Divergence, first_divergence
from .encoder_inspect import rank_collapse, rank_collapse_compare, residual_stream
from .experiments import (
    forward_signal,
    gradient_norms,
    make_batch,
    param_location,
    parameter_count,
    stream_norms,
    train_compare,
)
from .findings import (
    change,
    compare,
    crossing,
    crossing_words,
    format_number,
    lower_words,
    order,
    ratio_words,
    share_of,
    spread_vs,
    trend,
    trend_words,
    value_range,
)
from .findings_runs import (
    degradation_summary,
    depth_effect,
    encoder_stream_rule,
    first_vs_last_block,
    loss_race,
    stack_norm_rule,
    stage_change,
)
from .gradient_training import GradTrace, train_layer_grads
from .gradients import block_jacobian, depth_sweep, identity_ratio, layer_gradients
from .hooks import GradCapture, capture, capture_grads, delete_block, hook_names
from .lesion_study import lesion, lesion_caption, lesion_summary
from .masked_training import predict_masked, train_masked
from .models import Encoder, HookPoint, Stack, build
from .norm_cost import norm_timing
from .norm_invariance import invariance_table
from .norm_training import train_warmup
from .normalization import layernorm_gap, scaled_batch, textbook_layernorm
from .positional import sinusoidal_encoding
from .prepost import last_layer_grad, prepost_stream
from .shattered import autocorrelation, shattered_gradients, shattered_summary
from .shortcuts import block_formula, path_lengths, shortcut_table
from .text import char_tokenize

__all__ = [
    "gradflow",
    "skip",
    "codegen_stack",
    "degradation",
    "gradient_training",
    "gradients",
    "lesion_study",
    "shattered",
    "shortcuts",
    "decomposition",
    "codegen_encoder",
    "encoder_inspect",
    "masked_training",
    "model_card",
    "norm_cost",
    "norm_invariance",
    "norm_training",
    "normalization",
    "prepost",
    "pretrained",
    "raster",
    "positional",
    "charts",
    "data",
    "train",
    "DIVERGENCE_FACTOR",
    "Budget",
    "DegradationConfig",
    "DegradationResult",
    "Divergence",
    "ENCODER_PRESETS",
    "Encoder",
    "EncoderConfig",
    "Estimate",
    "GradCapture",
    "GradTrace",
    "HookPoint",
    "LesionConfig",
    "SpiralStacksConfig",
    "Stack",
    "StackConfig",
    "autocorrelation",
    "available_devices",
    "block_formula",
    "block_jacobian",
    "build",
    "capture",
    "capture_grads",
    "change",
    "char_tokenize",
    "compare",
    "combine",
    "config_fields",
    "configure_threads",
    "crossing",
    "degradation_summary",
    "delete_block",
    "depth_effect",
    "crossing_words",
    "depth_sweep",
    "device_info",
    "encoder_stream_rule",
    "first_vs_last_block",
    "estimate",
    "findings_stack",
    "findings",
    "findings_runs",
    "findings_words",
    "format_number",
    "first_divergence",
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
