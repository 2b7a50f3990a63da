"""Recipes of the encoder playground (one per section; see ``resviz/recipes/core.py``)."""

from __future__ import annotations
