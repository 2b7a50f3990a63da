"""Gradient flow page: its sections and URL settings."""

from . import PageSpec, Param

PER_LAYER, DERIVATION, SWEEP, TRAINING, SHATTERED = (
    "Per layer",
    "Derivation",
    "Depth sweep",
    "Training",
    "Shattered",
)
ACTIVATIONS = ("tanh", "relu", "gelu", "sigmoid")
INITS = ("default", "kaiming", "xavier", "small")
NORMS = ("none", "layer", "rms", "batch")
MEASURES = ("||dL/dx_0|| / ||dL/dx_L||", "||dL/dW_1||")
LEARNING_RATES = ("1e-4", "3e-4", "1e-3", "3e-3", "1e-2")

SPEC = PageSpec(
    sections=(PER_LAYER, DERIVATION, SWEEP, TRAINING, SHATTERED),
    params=(
        # The stack, shared by every section but the shattered gradients (the sweep
        # draws width, init and norm: it sets depth and activation itself).
        Param("depth", "int", 10, lo=1, hi=100),
        Param("width", "int", 64, lo=2, hi=512),
        Param("act", "choice", "tanh", options=ACTIVATIONS),
        Param("init", "choice", "default", options=INITS),
        Param("norm", "choice", "none", options=NORMS),
        # The shortcut scale of λ·x + f(x): measured in the derivation, trained beside
        # the plain and residual stacks on request.
        Param("l", "float", 0.5, lo=0.0, hi=1.5, step=0.05),
        Param("block", "int", 1, lo=1, hi=100, section=DERIVATION),
        Param("L", "int", 30, lo=1, hi=100, section=DERIVATION),
        Param("small", "bool", True, section=DERIVATION),
        Param("measure", "choice", MEASURES[0], options=MEASURES, section=SWEEP),
        Param("steps", "int", 200, lo=20, hi=1000, step=10, section=TRAINING),
        Param("lr", "choice", "1e-3", options=LEARNING_RATES, section=TRAINING),
        Param("train_scaled", "bool", False, section=TRAINING),
        Param("bn", "bool", True, section=SHATTERED),
    ),
    recipes={
        PER_LAYER: "gradients.per_layer",
        DERIVATION: "gradients.derivation",
        SWEEP: "gradients.depth_sweep",
        TRAINING: "gradients.training",
        SHATTERED: "gradients.shattered",
    },
)
