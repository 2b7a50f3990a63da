"""Sinusoidal encoding page: its sections and each section's recipe (the settings are
the groups the recipes take: :mod:`resviz.positional.settings`)."""

from . import PageSpec

TABLE, MATRIX, WAVES, RELATIVE, ALTERNATIVES, EMBEDDINGS = (
    "Table",
    "Matrix",
    "Waves",
    "Relative position",
    "Alternatives",
    "Embeddings",
)

SPEC = PageSpec(
    sections=(TABLE, MATRIX, WAVES, RELATIVE, ALTERNATIVES, EMBEDDINGS),
    recipes={
        TABLE: "positional.table",
        MATRIX: "positional.matrix",
        WAVES: "positional.waves",
        RELATIVE: "positional.relative",
        ALTERNATIVES: "positional.alternatives",
        EMBEDDINGS: "positional.embeddings",
    },
)
