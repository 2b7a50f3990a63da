"""The old page-shaped module names, kept as documented aliases.

resviz's modules are named by concept (``gradients``, ``shattered``, ...). The names
the pages and notebooks used before, ``rv.gradflow.layer_gradients`` or
``from resviz import skip as S``, keep working through these namespaces: each
exposes every public name (``__all__``) of the concept modules it lists, the same
objects. They are not modules: ``import resviz.gradflow`` does not work; import the
concept module for new code.
"""

from __future__ import annotations

import types


def alias(name: str, *modules: types.ModuleType, **extra: object) -> types.SimpleNamespace:
    """A namespace named ``resviz.{name}`` holding every name in each module's ``__all__``,
    and the ``extra`` names an old module had under another name."""
    names: dict[str, object] = {}
    for module in modules:
        for n in module.__all__:
            value = getattr(module, n)
            if n in names and names[n] is not value:
                raise ValueError(f"alias {name!r}: {n!r} is defined twice.")
            names[n] = value
    names.update(extra)
    ns = types.SimpleNamespace(**names)
    ns.__name__ = f"resviz.{name}"
    ns.__doc__ = f"Alias: the public names of {', '.join(m.__name__ for m in modules)}."
    return ns


# ---- skip and gradflow (issue 14, split mA) ----
from . import (  # noqa: E402
    codegen_stack,
    data,
    decomposition,
    degradation,
    gradient_training,
    gradients,
    lesion_study,
    shattered,
    shortcuts,
)

# The skip-connections page's module: shortcuts, decomposition, degradation, lesion_study, the stack
# code generator, and spirals (its built-in task, from resviz.data).
skip = alias("skip", shortcuts, decomposition, degradation, lesion_study, codegen_stack)
skip.spirals = data.spirals
# The gradient-flow page's module; teacher_batch (resviz.data) was importable from it.
gradflow = alias("gradflow", gradients, gradient_training, shattered)
gradflow.teacher_batch = data.teacher_batch
# ---- end skip and gradflow ----


# --- encoder playground and normalization page (issue 14 phase 2, m-mB) -----------------
from . import (  # noqa: E402
    codegen_encoder,
    data,
    encoder_inspect,
    masked_training,
    model_card,
    norm_cost,
    norm_invariance,
    norm_training,
    normalization,
    prepost,
)

# ``rv.playground``: tokenizers (resviz.data), the views, masked training, the model
# card and the encoder's generated code.
playground = alias(
    "playground", data, encoder_inspect, masked_training, model_card, codegen_encoder
)
# ``rv.norms``: the norm layers measured, their invariances, Post-LN versus Pre-LN, training
# with a norm, and their cost.
norms = alias("norms", normalization, norm_invariance, prepost, norm_training, norm_cost)
# --- end m-mB ------------------------------------------------------------------------------


# --- findings_stack (issue 14 phase 2, mC): merged into findings + findings_runs -----
# (findings exports findings_words' names too, so the two modules cover all three.)
from . import findings, findings_runs  # noqa: E402

# Its ``num`` (three significant digits) is now findings.format_number, the one format.
findings_stack = alias("findings_stack", findings, findings_runs, num=findings.format_number)
# --- end findings_stack ------------------------------------------------------------
