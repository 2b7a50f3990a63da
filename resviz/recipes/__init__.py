"""Section recipes: one function per section of every page, each in its topic's
``recipes`` module (``resviz/<topic>/recipes.py``), gathered here for notebooks.

``rv.recipes.gradients.per_layer(rv.gradients.Stack(depth=30), seed=1)`` computes what the
gradient-flow page's Per layer section shows at those settings. The contract every
recipe follows (``Result``, ``@recipe``, lesson measures) is :mod:`resviz.core`.
"""

from resviz.core import MEASURES, RECIPES, Answer, Measure, Result, measure, recipe
from resviz.encoder import recipes as encoder
from resviz.gradients import recipes as gradients
from resviz.norms import recipes as norms
from resviz.positional import recipes as positional
from resviz.pretrained import recipes as pretrained
from resviz.shortcuts import recipes as shortcuts

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
