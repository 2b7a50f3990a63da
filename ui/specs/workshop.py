"""Workshop page: the presenter's lesson, step and projector setting; a room's join code."""

from . import PageSpec, Param

SPEC = PageSpec(
    params=(
        # The built-in lesson; a teacher's own lessons are added to the choices at run time.
        Param("lesson", "choice", "residuals", options=("residuals",)),
        Param("step", "int", 1, lo=1, hi=60),
        Param("projector", "bool", False),
        # A workshop room's join code (a participant's join link fills it in).
        Param("join", "text", "", limit=12),
    )
)
