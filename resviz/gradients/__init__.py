"""Gradients through plain and residual stacks: dL/dx per layer, the block Jacobian I + J (He et al. 2016), gradients during training, and shattered gradients (Balduzzi et al. 2017)."""

from resviz.gradients.jacobian import block_jacobian, jacobian_norms, jacobian_spectrum
from resviz.gradients.layers import (
    DEFAULT_DEPTHS,
    PLAIN,
    RESIDUAL,
    depth_sweep,
    identity_ratio,
    identity_ratio_long,
    input_gain_frame,
    layer_gradients,
    plain_and_residual,
    stream_gradient_frame,
    weight_gradient_frame,
    with_variant,
)
from resviz.gradients.over_seeds import layer_gradients_over_seeds
from resviz.gradients.settings import Derivation, Scale, Shattered, Stack, Training
from resviz.gradients.shattered import (
    acf_curves,
    autocorrelation,
    lag_table,
    shattered_gradients,
    shattered_summary,
)
from resviz.gradients.training import (
    GradTrace,
    Heatmaps,
    layer_heatmap,
    layer_heatmaps,
    scaled_label,
    train_layer_grads,
    training_variants,
)

__all__ = [
    "Derivation",
    "Scale",
    "Shattered",
    "Stack",
    "Training",
    "DEFAULT_DEPTHS",
    "GradTrace",
    "Heatmaps",
    "PLAIN",
    "RESIDUAL",
    "acf_curves",
    "autocorrelation",
    "block_jacobian",
    "depth_sweep",
    "identity_ratio",
    "identity_ratio_long",
    "input_gain_frame",
    "jacobian_norms",
    "jacobian_spectrum",
    "lag_table",
    "layer_gradients",
    "layer_gradients_over_seeds",
    "layer_heatmap",
    "layer_heatmaps",
    "plain_and_residual",
    "scaled_label",
    "shattered_gradients",
    "shattered_summary",
    "stream_gradient_frame",
    "train_layer_grads",
    "training_variants",
    "weight_gradient_frame",
    "with_variant",
]
