"""Encoder playground page: its sections and URL settings.

The text, tokenizer and model settings are shared: every section runs the same
model on the same tokens, so each draws them (in full in "Model", folded in the
others). The model widgets' defaults are the "Pre-LN" preset's; a link that names
another preset and leaves a model setting out gets that preset's value for it (the
page fills it in on the first run), as links did before the page had sections.
"""

from . import PageSpec, Param

MODEL, ATTENTION, STREAM, COLLAPSE, TRAINING = (
    "Model",
    "Attention",
    "Residual stream",
    "Rank collapse",
    "Training",
)
# The same paragraph as resviz.playground.DEFAULT_TEXT (a test checks it); repeated
# here because this module must not import torch.
DEFAULT_TEXT = (
    "A residual connection lets each layer add to a running sum instead of replacing it. "
    "The input travels along the stream unchanged, every sublayer writes a small update, "
    "and the gradient finds a short path back to the first layer. Take the stream away "
    "and attention alone blurs the tokens together until every position looks the same."
)
# rv.ENCODER_PRESETS' names, in its order (a test checks it).
PRESETS = ("Classic Post-LN", "Pre-LN", "No residuals", "Attention only")
DEFAULT_PRESET = "Pre-LN"
HEAD_CHOICES = ("1", "2", "3", "4", "8", "16")
FLIPPED = "the same, residual flipped"
# Widget name -> EncoderConfig field: what a preset sets.
MODEL_FIELDS = {
    "layers": "n_layers",
    "d_model": "d_model",
    "heads": "n_heads",
    "d_ff": "d_ff",
    "act": "activation",
    "norm": "norm",
    "place": "norm_position",
    "pos": "positional",
    "residual": "residual",
    "ffn": "use_ffn",
    "dropout": "dropout",
}

SPEC = PageSpec(
    sections=(MODEL, ATTENTION, STREAM, COLLAPSE, TRAINING),
    params=(
        # Shared: the text and its tokens...
        Param("text", "text", DEFAULT_TEXT, limit=100_000),
        Param("level", "choice", "word", options=("word", "char")),
        Param("max_len", "int", 32, lo=4, hi=64),
        Param("vocab", "int", 256, lo=8, hi=512),
        # ...and the model (defaults: the Pre-LN preset).
        Param("preset", "choice", DEFAULT_PRESET, options=PRESETS),
        Param("layers", "int", 6, lo=1, hi=12),
        Param("d_model", "choice", "128", options=("32", "64", "128", "256")),
        Param("heads", "choice", "8", options=HEAD_CHOICES),
        Param("d_ff", "choice", "512", options=("64", "128", "256", "512", "1024")),
        Param("act", "choice", "gelu", options=("relu", "gelu", "tanh", "identity")),
        Param("dropout", "float", 0.0, lo=0.0, hi=0.5, step=0.05),
        Param("norm", "choice", "layer", options=("layer", "rms", "none")),
        Param("place", "choice", "pre", options=("pre", "post")),
        Param("pos", "choice", "sinusoidal", options=("sinusoidal", "learned", "none")),
        Param("residual", "bool", True),
        Param("ffn", "bool", True),
        # Which head to look at: the attention map, and the trained one under Training.
        Param("layer", "int", 1, lo=1, hi=12),
        Param("head", "int", 1, lo=1, hi=16),
        Param("against", "choice", FLIPPED, options=(FLIPPED, *PRESETS), section=TRAINING),
        # 80 steps (issue 37: a default view within seconds): at the default model
        # "your model" ends with a lower loss than the same without residuals at every
        # seed 0 to 9 (7-16% lower over the last 10 steps; after 100 steps 13-20%).
        Param("steps", "int", 80, lo=20, hi=400, step=10, section=TRAINING),
        Param("lr", "choice", "1e-3", options=("3e-4", "1e-3", "3e-3", "1e-2"), section=TRAINING),
    ),
    recipes={
        MODEL: "encoder.model",
        ATTENTION: "encoder.attention",
        STREAM: "encoder.stream",
        COLLAPSE: "encoder.collapse",
        TRAINING: "encoder.training",
    },
)
