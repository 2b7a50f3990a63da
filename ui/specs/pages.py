"""Each page's declaration (``ui/specs/<page>.py``), looked up by page name."""

from __future__ import annotations

import importlib

from . import PageSpec

PAGE_NAMES = (
    "skip_connections",
    "gradient_flow",
    "normalization",
    "sinusoidal_encoding",
    "encoder_playground",
    "pretrained",
)


def spec_of(page: str) -> PageSpec:
    """The page's ``SPEC`` (an empty one for a page that declares nothing yet)."""
    if page not in (*PAGE_NAMES, "workshop"):
        return PageSpec()
    try:
        module = importlib.import_module(f"ui.specs.{page}")
    except ModuleNotFoundError as exc:
        if exc.name != f"ui.specs.{page}":
            raise
        return PageSpec()
    return module.SPEC
