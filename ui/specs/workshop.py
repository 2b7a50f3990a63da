"""Workshop page: the presenter's lesson, step and projector setting; a room's join code."""

from pathlib import Path

from . import PageSpec, Param

# The built-in lessons (lessons/*.toml, by file name), the 60-minute one first.
BUILT_IN = tuple(
    sorted(
        (f.stem for f in (Path(__file__).resolve().parents[2] / "lessons").glob("*.toml")),
        key=lambda stem: (stem != "residuals", stem),
    )
)

SPEC = PageSpec(
    params=(
        # The built-in lesson; a teacher's own lessons are added to the choices at run time.
        Param("lesson", "choice", "residuals", options=BUILT_IN),
        Param("step", "int", 1, lo=1, hi=60),
        Param("projector", "bool", False),
        # A workshop room's join code (a participant's join link fills it in).
        Param("join", "text", "", limit=12),
    )
)
