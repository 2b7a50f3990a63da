"""resviz: measure what residual connections do inside transformers.

A small library a notebook can use; the Streamlit pages are thin views on it::

    import resviz as rv
    cfg = rv.StackConfig(depth=10, width=64, residual="none")
    r = rv.recipes.gradients.per_layer(rv.gradients.Stack(depth=10), seed=0)  # a section's data
    rv.gradients.layer_gradients(cfg)  # one stack's gradient per layer, as a tidy frame

The top level holds what a notebook needs first; everything else lives in a topic
package, reached as ``rv.<topic>.<name>``: ``shortcuts``, ``gradients``, ``norms``,
``positional``, ``encoder``, ``pretrained``. Each holds its measurements, its section
recipes (``rv.<topic>.recipes``, gathered as ``rv.recipes.<topic>``), its sentences
(``rv.<topic>.words``) and its headlines (``rv.<topic>.headline``). Below them:
``core`` (``Result``, ``@recipe``), ``words`` (numbers into words, seed agreement),
``train``, ``charts``, ``data``, ``codegen``.
"""

from resviz import (
    charts,
    codegen,
    data,
    encoder,
    gradients,
    norms,
    positional,
    pretrained,
    recipes,
    shortcuts,
    train,
    words,
)
from resviz._version import __version__ as __version__
from resviz.budget import Budget, estimate
from resviz.codegen import generate_code
from resviz.config import ENCODER_PRESETS, EncoderConfig, StackConfig
from resviz.device import (
    available_devices,
    configure_threads,
    device_info,
    pick_device,
    run_with_fallback,
)
from resviz.hooks import capture, capture_grads
from resviz.models import build
from resviz.positional import sinusoidal_encoding
from resviz.train import first_divergence, train_compare
from resviz.words import format_number

__all__ = [
    "ENCODER_PRESETS",
    "Budget",
    "EncoderConfig",
    "StackConfig",
    "available_devices",
    "build",
    "capture",
    "capture_grads",
    "charts",
    "codegen",
    "configure_threads",
    "data",
    "device_info",
    "encoder",
    "estimate",
    "first_divergence",
    "format_number",
    "generate_code",
    "gradients",
    "norms",
    "pick_device",
    "positional",
    "pretrained",
    "recipes",
    "run_with_fallback",
    "shortcuts",
    "sinusoidal_encoding",
    "train",
    "train_compare",
    "words",
]
