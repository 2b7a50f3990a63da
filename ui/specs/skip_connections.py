"""Skip connections page: its sections and each section's recipe. The settings are
declared in resviz/shortcuts/settings.py (the block, the stack, the two trained runs)."""

from resviz.shortcuts.settings import PRESETS, SEED_WIDTHS

from . import PageSpec

STACK, SIGNAL, PATHS, DEGRADATION, LESION = (
    "Stack",
    "Signal",
    "Paths",
    "Degradation",
    "Lesion",
)

SPEC = PageSpec(
    sections=(STACK, SIGNAL, PATHS, DEGRADATION, LESION),
    recipes={
        STACK: "shortcuts.stack",
        SIGNAL: "shortcuts.signal",
        PATHS: "shortcuts.paths",
        DEGRADATION: "shortcuts.degradation",
        LESION: "shortcuts.lesion",
    },
)

__all__ = ["DEGRADATION", "LESION", "PATHS", "PRESETS", "SEED_WIDTHS", "SIGNAL", "SPEC", "STACK"]
