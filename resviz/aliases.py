"""The old page-shaped module names, kept as documented aliases.

Modules are named by concept; a page's notebooks and older code still say
``rv.playground.inspect`` or ``from resviz import norms as N``. Each alias is a
namespace exposing every public name (``__all__``) of the concept modules that
replaced the page-shaped one; it holds no code of its own.
"""

from __future__ import annotations

import types


def alias(name: str, *modules: types.ModuleType) -> types.SimpleNamespace:
    """A namespace named ``name`` with every name in each module's ``__all__``.

    Two modules giving one name to different objects is an error, not a silent pick.
    """
    names: dict[str, object] = {}
    for module in modules:
        for key in module.__all__:
            value = getattr(module, key)
            if key in names and names[key] is not value:
                raise ValueError(f"alias {name!r}: {key!r} is defined by two modules.")
            names[key] = value
    ns = types.SimpleNamespace(**names)
    ns.__name__ = f"resviz.{name}"
    ns.__doc__ = f"Alias of {', '.join(m.__name__ for m in modules)}."
    return ns


# --- encoder playground and normalization page (issue 14 phase 2, m-mB) -----------------
from . import (  # noqa: E402
    codegen_encoder,
    data,
    encoder_inspect,
    masked_training,
    model_card,
    norm_cost,
    normalization,
    prepost,
)

# ``rv.playground``: tokenizers (resviz.data), the views, masked training, the model
# card and the encoder's generated code.
playground = alias(
    "playground", data, encoder_inspect, masked_training, model_card, codegen_encoder
)
# ``rv.norms``: the norm layers measured, Post-LN versus Pre-LN, and their cost.
norms = alias("norms", normalization, prepost, norm_cost)
# --- end m-mB ------------------------------------------------------------------------------
