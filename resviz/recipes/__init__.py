"""Section recipes: one function per section of every page (see ``core``).

``rv.recipes.gradients.per_layer(depth=30, seed=1)`` computes exactly what the
gradient-flow page's Per layer section shows at those settings.
"""

from resviz.recipes import encoder, gradients, norms, positional, pretrained, shortcuts
from resviz.recipes.core import MEASURES, RECIPES, Answer, Measure, Result, measure, recipe

__all__ = [
    "MEASURES",
    "RECIPES",
    "Answer",
    "Measure",
    "Result",
    "encoder",
    "gradients",
    "measure",
    "norms",
    "positional",
    "pretrained",
    "recipe",
    "shortcuts",
]
