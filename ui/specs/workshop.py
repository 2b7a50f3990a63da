"""Workshop page: the presenter's lesson, step and projector setting; a room's join code."""

from dataclasses import dataclass
from pathlib import Path

from resviz.settings import Settings, choice, flag, text, whole

from . import PageSpec

# The built-in lessons (lessons/*.toml, by file name), the 60-minute one first.
BUILT_IN = tuple(
    sorted(
        (f.stem for f in (Path(__file__).resolve().parents[2] / "lessons").glob("*.toml")),
        key=lambda stem: (stem != "residuals", stem),
    )
)


@dataclass(frozen=True)
class Presenter(Settings):
    """The presenter's lesson, step and projector setting, and a room's join code."""

    # The built-in lesson; a teacher's own lessons are added to the choices at run time.
    lesson: str = choice("residuals", BUILT_IN, label="Lesson")
    step: int = whole(1, 1, 60, label="Step", box=True)
    projector: bool = flag(
        False,
        label="Projector mode",
        help="Larger type in text and charts, and the sidebar hidden, on every page of your "
        "session (participants are not affected).",
    )
    # A workshop room's join code (a participant's join link fills it in).
    join: str = text("", 12, label="Room code")


SPEC = PageSpec(groups={None: (Presenter,)})
