"""Skip connections page: its sections and URL settings."""

from . import PageSpec, Param

STACK, SIGNAL, PATHS, DEGRADATION, LESION = (
    "Stack",
    "Signal",
    "Paths",
    "Degradation",
    "Lesion",
)
SEED_WIDTHS = (25, 25, 43, 43, 54, 54)
PRESETS = ("custom depth x width", "seed network 25,25,43,43,54,54")

SPEC = PageSpec(
    sections=(STACK, SIGNAL, PATHS, DEGRADATION, LESION),
    params=(
        # The stack, shared: Stack, Signal and Paths draw all of these; Degradation
        # and Lesion draw the block settings (activation to learnable) only.
        Param("preset", "choice", PRESETS[0], options=PRESETS),
        Param("depth", "int", 16, lo=1, hi=64),
        Param("width", "int", 64, lo=2, hi=256),
        Param("act", "choice", "relu", options=("relu", "gelu", "tanh", "sigmoid")),
        Param("init", "choice", "default", options=("default", "kaiming", "xavier", "small")),
        Param("mode", "choice", "add", options=("none", "add", "scaled", "concat")),
        Param("join", "choice", "after_act", options=("after_act", "before_act")),
        Param("mismatch", "choice", "skip", options=("skip", "project")),
        Param("alpha", "float", 0.0, lo=0.0, hi=2.0, step=0.05),
        Param("learnable", "bool", True),
        Param("project", "bool", False),
        # The degradation experiment.
        Param("shallow", "int", 4, lo=1, hi=16, section=DEGRADATION),
        Param("deep", "int", 16, lo=2, hi=64, section=DEGRADATION),
        Param("steps", "int", 400, lo=20, hi=2000, step=20, section=DEGRADATION),
        Param(
            "lr", "choice", "0.003", options=("0.001", "0.003", "0.01", "0.03"), section=DEGRADATION
        ),
        # The lesion study.
        Param("l_depth", "int", 16, lo=4, hi=48, section=LESION),
        Param("l_steps", "int", 400, lo=100, hi=2000, step=100, section=LESION),
    ),
    recipes={
        STACK: "shortcuts.stack",
        SIGNAL: "shortcuts.signal",
        PATHS: "shortcuts.paths",
        DEGRADATION: "shortcuts.degradation",
        LESION: "shortcuts.lesion",
    },
)
