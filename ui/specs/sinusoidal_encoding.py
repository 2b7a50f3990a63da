"""Sinusoidal encoding page: its sections and URL settings."""

from . import PageSpec, Param

TABLE, MATRIX, WAVES, RELATIVE, ALTERNATIVES, EMBEDDINGS = (
    "Table",
    "Matrix",
    "Waves",
    "Relative position",
    "Alternatives",
    "Embeddings",
)
D_MODELS = ("16", "32", "64", "128", "256", "512", "1024")

SPEC = PageSpec(
    sections=(TABLE, MATRIX, WAVES, RELATIVE, ALTERNATIVES, EMBEDDINGS),
    params=(
        Param("text", "text", "I am a robot", limit=2000, section=TABLE),
        Param("d", "int", 4, lo=2, hi=32, step=2, section=TABLE),
        Param("n", "int", 100, lo=2, hi=1_000_000, section=TABLE),
        Param("dec", "int", 2, lo=0, hi=8, section=TABLE),
        # Shared by the sections after the table.
        Param("positions", "int", 100, lo=2, hi=1000),
        Param("d_model", "choice", "512", options=D_MODELS),
        Param("base", "choice", "10000", options=("100", "1000", "10000", "100000")),
        Param(
            "dims", "ints", (0, 40, 100, 160), options=tuple(range(1024)), limit=8, section=WAVES
        ),
        Param("k", "int", 5, lo=1, hi=100, section=RELATIVE),
    ),
    recipes={
        TABLE: "positional.table",
        MATRIX: "positional.matrix",
        WAVES: "positional.waves",
        RELATIVE: "positional.relative",
        ALTERNATIVES: "positional.alternatives",
        EMBEDDINGS: "positional.embeddings",
    },
)
