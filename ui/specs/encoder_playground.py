"""Encoder playground page: its sections, each section's recipe, and the one setting
only the page uses (the preset that sets the model settings). The recipes' settings
are declared in resviz/encoder/settings.py.

The text, tokenizer and model settings are shared: every section runs the same
model on the same tokens, so each draws them (in full in "Model", folded in the
others). The model settings' defaults are the "Pre-LN" preset's; a link that names
another preset and leaves a model setting out gets that preset's value for it (the
page fills it in on the first run), as links did before the page had sections.
Which head to look at is shared too: Attention draws it, and Training on the
trained model.
"""

from dataclasses import dataclass

from resviz.config import ENCODER_PRESETS
from resviz.encoder.settings import DEFAULT_PRESET, Head
from resviz.settings import Settings, choice

from . import PageSpec

MODEL, ATTENTION, STREAM, COLLAPSE, TRAINING = (
    "Model",
    "Attention",
    "Residual stream",
    "Rank collapse",
    "Training",
)


@dataclass(frozen=True)
class Preset(Settings):
    """The preset whose values the model settings take when it is chosen."""

    preset: str = choice(DEFAULT_PRESET, tuple(ENCODER_PRESETS), label="Preset")


SPEC = PageSpec(
    sections=(MODEL, ATTENTION, STREAM, COLLAPSE, TRAINING),
    recipes={
        MODEL: "encoder.model",
        ATTENTION: "encoder.attention",
        STREAM: "encoder.stream",
        COLLAPSE: "encoder.collapse",
        TRAINING: "encoder.training",
    },
    # Training draws the head it shows of the trained model as Attention does.
    groups={None: (Preset,), TRAINING: (Head,)},
)
