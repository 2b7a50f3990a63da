"""Gradient flow page: its sections, each section's recipe, and the one setting only
the page uses (which quantity the depth sweep draws). The recipes' settings are
declared in resviz/gradients/settings.py."""

from dataclasses import dataclass

from resviz.settings import Settings, choice

from . import PageSpec

PER_LAYER, DERIVATION, SWEEP, TRAINING, SHATTERED = (
    "Per layer",
    "Derivation",
    "Depth sweep",
    "Training",
    "Shattered",
)
MEASURES = ("||dL/dx_0|| / ||dL/dx_L||", "||dL/dW_1||")


@dataclass(frozen=True)
class SweepView(Settings):
    """Which quantity the depth sweep's charts draw."""

    measure: str = choice(MEASURES[0], MEASURES, label="Measure", radio=True)


SPEC = PageSpec(
    sections=(PER_LAYER, DERIVATION, SWEEP, TRAINING, SHATTERED),
    recipes={
        PER_LAYER: "gradients.per_layer",
        DERIVATION: "gradients.derivation",
        SWEEP: "gradients.depth_sweep",
        TRAINING: "gradients.training",
        SHATTERED: "gradients.shattered",
    },
    groups={SWEEP: (SweepView,)},
)
