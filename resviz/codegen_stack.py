"""Alias kept for old imports (``rv.codegen_stack``, ``rv.skip.generate_code``): the
stack's code generator is now :func:`resviz.codegen.generate_code`, one generator
with one template per model family."""

from __future__ import annotations

from .codegen import generate_code

__all__ = ["generate_code"]
