"""The one training loop (same-seed variants, identical batches, Adam with warm-up), the one definition of divergence, and side-by-side comparisons."""

from resviz.train.compare import (
    gradient_norms,
    make_batch,
    param_location,
    parameter_count,
    stream_norms,
    train_compare,
)
from resviz.train.divergence import (
    DIVERGENCE_FACTOR,
    Divergence,
    definition,
    divergence_column,
    divergence_note,
    first_divergence,
)
from resviz.train.loop import BLOCK_COLUMNS, STEP_COLUMNS, Trainer, build_variants, variant_workers

__all__ = [
    "BLOCK_COLUMNS",
    "DIVERGENCE_FACTOR",
    "Divergence",
    "STEP_COLUMNS",
    "Trainer",
    "build_variants",
    "definition",
    "divergence_column",
    "divergence_note",
    "first_divergence",
    "gradient_norms",
    "make_batch",
    "param_location",
    "parameter_count",
    "stream_norms",
    "train_compare",
    "variant_workers",
]
