"""Positional encodings (:mod:`resviz.positional.encodings`: sinusoidal, Vaswani et al.
2017, section 3.5; integer index, learned, RoPE), what is measured on them
(:mod:`resviz.positional.measures`: dot products by offset, the shift-as-rotation
identity, norms, embeddings beside positions) and the page's groups of settings
(:mod:`resviz.positional.settings`: ``rv.positional.Encoding(d_model="64")``)."""

from resviz.positional import encodings as _encodings
from resviz.positional import measures as _measures
from resviz.positional.encodings import *  # noqa: F403 - the package's public names
from resviz.positional.measures import *  # noqa: F403 - the package's public names
from resviz.positional.settings import Encoding, Shift, Table, Waves

__all__ = [  # the two modules' public names, and the groups
    *_encodings.__all__,
    *_measures.__all__,
    "Encoding",
    "Shift",
    "Table",
    "Waves",
]
