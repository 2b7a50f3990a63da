"""Recipes of the skip-connections page (one per section; see ``resviz/recipes/core.py``)."""

from __future__ import annotations
