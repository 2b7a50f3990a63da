"""Pretrained models page: its sections, each section's recipe, and the prompts the
Where the answer travels section picks from (only the page reads them: the recipe takes
the two prompts they give). The recipes' settings are declared in
resviz/pretrained/cache.py (Checkpoint, Reading, Target) and
resviz/pretrained/heal_sections.py (Healing)."""

from dataclasses import dataclass

# The model picker's choices, the depth ladder's siblings, the default text and the
# proposed pairs: the library's (the page's names).
from resviz.pretrained.cache import (  # noqa: F401 - re-exported
    DEFAULT_TEXT,
    DEMO,
    FOLDER,
    PAIRS,
    SIBLINGS,
    TINY,
)
from resviz.settings import Settings, choice, text

from . import PageSpec

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


def _changed(clean: str, corrupted: str) -> str:
    """``you -> thou``: the first word the two prompts differ in."""
    a, b = next((a, b) for a, b in zip(clean.split(), corrupted.split(), strict=True) if a != b)
    return f"{a} -> {b}"


OWN_PAIR = "my own pair"
PAIR_OPTIONS = (*(f"{c} ({_changed(c, x)})" for c, x in PAIRS), OWN_PAIR)


@dataclass(frozen=True)
class Prompts(Settings):
    """Where the answer travels: a proposed pair (PAIR_OPTIONS) or the user's own (the
    two boxes, which take effect with OWN_PAIR only)."""

    pair: str = choice(
        PAIR_OPTIONS[0],
        PAIR_OPTIONS,
        label="Prompts",
        help="A clean prompt and a corrupted one with one word changed; or type your own.",
    )
    clean: str = text(PAIRS[0][0], 300, label="Clean prompt")
    corrupted: str = text(PAIRS[0][1], 300, label="Corrupted prompt (one word changed)")

    def prompts(self) -> tuple[str, str]:
        """The clean and corrupted prompts the recipe runs on."""
        if self.pair == OWN_PAIR:
            return self.clean, self.corrupted
        return PAIRS[PAIR_OPTIONS.index(self.pair)]


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
    groups={TRAVELS: (Prompts,)},
)
