"""The sinusoidal-encoding page's settings, each declared once (:mod:`resviz.settings`):
the sentence's table, the encoding every section after it shares, the Waves section's
columns and the Relative position section's shift. The recipes
(:mod:`resviz.positional.recipes`) take these groups; the page draws its widgets from
them; a notebook builds them::

    rv.recipes.positional.matrix(rv.positional.Encoding(positions=1000, d_model="16"))
"""

from __future__ import annotations

from dataclasses import dataclass

from resviz.settings import Settings, choice, text, whole, whole_numbers

D_MODELS = ("16", "32", "64", "128", "256", "512", "1024")
BASES = ("100", "1000", "10000", "100000")


@dataclass(frozen=True)
class Table(Settings):
    """The Table section's sentence and its table: ``d`` columns, base ``n``, rounded
    to ``dec`` decimals."""

    text: str = text(
        "I am a robot", 2000, label="Sentence (one word per token, split at whitespace)"
    )
    d: int = whole(4, 2, 32, step=2, label="d (columns, even)")
    n: int = whole(
        100,
        2,
        1_000_000,
        box=True,
        label="base n",
        help='100 in the worked example of the lecture notes this table comes from ("I am '
        'a robot", d = 4: the defaults here); 10000 in the Transformer paper (Vaswani et '
        "al. 2017)",
    )
    dec: int = whole(2, 0, 8, label="decimals")


@dataclass(frozen=True)
class Encoding(Settings):
    """The encoding the sections after the table share: ``positions`` rows of
    ``d_model`` columns with base ``base`` (both choices, as the URL's text: "512";
    a number is taken too)."""

    positions: int = whole(100, 2, 1000, label="positions")
    d_model: str = choice("512", D_MODELS, label="d_model")
    base: str = choice("10000", BASES, label="base")

    @property
    def d(self) -> int:
        """``d_model`` as a number."""
        return int(self.d_model)

    @property
    def n(self) -> float:
        """``base`` as a number."""
        return float(self.base)


@dataclass(frozen=True)
class Waves(Settings):
    """The Waves section's columns to draw against position (those ``d_model`` has)."""

    dims: tuple[int, ...] = whole_numbers(
        (0, 40, 100, 160),
        range(1024),
        8,
        label="dimensions to plot",
        help="Pick up to 8 columns j (0 to d_model - 1) to draw against position.",
    )


@dataclass(frozen=True)
class Shift(Settings):
    """The Relative position section's shift ``k`` (measured at most positions - 1)."""

    k: int = whole(5, 1, 100, label="shift k", help="The shift measured is at most positions - 1.")
