"""Positional encodings (:mod:`resviz.positional.encodings`: sinusoidal, Vaswani et al.
2017, section 3.5; integer index, learned, RoPE) and what is measured on them
(:mod:`resviz.positional.measures`: dot products by offset, the shift-as-rotation
identity, norms, embeddings beside positions)."""

from resviz.positional.encodings import *  # noqa: F403 - the package's public names
from resviz.positional.measures import *  # noqa: F403 - the package's public names
