"""Normalization page: its sections and their recipes. Its settings are the groups
those recipes take (:mod:`resviz.norms.settings`)."""

from resviz.norms.settings import TUTORIAL_STABILITY as TUTORIAL
from resviz.norms.settings import Stability

from . import PageSpec

FOUR_VIEWS, TEXTBOOK, INVARIANCES, BATCH, PREPOST, WARMUP, STABILITY, COST = (
    "Four views",
    "Textbook LayerNorm",
    "Invariances",
    "Batch dependence",
    "Pre-LN vs Post-LN",
    "Warm-up",
    "Stability",
    "Cost",
)
# The sections drawn from the scaled input batch (its settings at the top of each).
INPUT_SECTIONS = (FOUR_VIEWS, TEXTBOOK, INVARIANCES)

SPEC = PageSpec(
    sections=(FOUR_VIEWS, TEXTBOOK, INVARIANCES, BATCH, PREPOST, WARMUP, STABILITY, COST),
    recipes={
        FOUR_VIEWS: "norms.four_views",
        TEXTBOOK: "norms.textbook",
        INVARIANCES: "norms.invariances",
        BATCH: "norms.batch_dependence",
        PREPOST: "norms.prepost_ln",
        WARMUP: "norms.warmup",
        STABILITY: "norms.stability",
        COST: "norms.cost",
    },
)


# The Stability section's settings as the tutorial notebook on transformer components
# ran its 2x2 (LayerNorm before each block, Adam at 0.001, 100 steps), and at the
# page's defaults, as its widgets hold them.
TUTORIAL_STABILITY = TUTORIAL.values()
DEFAULT_STABILITY = Stability().values()
