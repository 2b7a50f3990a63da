"""Reproduce a section in a notebook: a Jupyter notebook per section, written as it runs.

A section builds a :class:`Notebook` beside its charts: code cells that recompute
its data with ``import resviz as rv`` (the exact configuration and seed on
screen) and draw the same charts with Altair. Each CSV the section offers is
declared with :meth:`Notebook.frame` (the CSV's name and the notebook variable
that holds the same table), so ``tests/app/test_notebooks.py`` can execute every
exported notebook with a real Jupyter kernel and compare its tables with the
section's CSVs. User text enters code only as a Python literal (``repr``), and
never as Markdown.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import streamlit as st

KERNEL = {"name": "python3", "display_name": "Python 3", "language": "python"}


@dataclass
class Notebook:
    page: str
    section: str
    query: dict[str, str] = field(default_factory=dict)
    cells: list[dict[str, Any]] = field(default_factory=list)
    frames: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        settings = ", ".join(f"{k}={v}" for k, v in sorted(self.query.items())) or "defaults"
        self.md(
            f"# resviz: {self.page}, {self.section}\n\n"
            "This notebook recomputes the section's data with the `resviz` library and "
            "draws its charts with Altair. The settings are those on screen when it was "
            "downloaded; change them in the first code cell."
        )
        self.code(f"# Settings on screen: {settings!r}\nimport resviz as rv\nimport pandas as pd")

    def _cell(self, kind: str, source: str) -> None:
        cell: dict[str, Any] = {
            "cell_type": kind,
            "id": f"cell-{len(self.cells)}",
            "metadata": {},
            "source": source.strip("\n"),
        }
        if kind == "code":
            cell.update(execution_count=None, outputs=[])
        self.cells.append(cell)

    def md(self, text: str) -> Notebook:
        """A Markdown cell of our own words (never user text)."""
        self._cell("markdown", text)
        return self

    def code(self, source: str) -> Notebook:
        self._cell("code", source)
        return self

    def frame(self, csv_name: str, variable: str) -> Notebook:
        """Declare that the section's ``csv_name``.csv equals the notebook's ``variable``."""
        self.frames[csv_name] = variable
        return self

    def to_json(self) -> dict[str, Any]:
        return {
            "cells": self.cells,
            "metadata": {
                "kernelspec": KERNEL,
                "language_info": {"name": "python"},
                "resviz": {"page": self.page, "section": self.section, "frames": self.frames},
            },
            "nbformat": 4,
            "nbformat_minor": 5,
        }

    def to_bytes(self) -> bytes:
        return json.dumps(self.to_json(), indent=1).encode("utf-8")

    def download(self, name: str) -> None:
        """The download button, under the section's charts."""
        st.download_button(
            "Reproduce in a notebook",
            self.to_bytes(),
            file_name=f"{name}.ipynb",
            mime="application/x-ipynb+json",
            key=f"notebook:{name}",
            on_click="ignore",
            icon=":material/code:",
            help="A Jupyter notebook that recomputes this section's data with "
            "`import resviz as rv` and draws the same charts.",
        )


def literal(value: Any) -> str:
    """A Python literal for a value shown on screen (user text included): repr only."""
    if isinstance(value, str | int | float | bool | type(None)):
        return repr(value)
    if isinstance(value, list | tuple):
        return repr(type(value)(value))
    raise TypeError(f"no literal for {type(value).__name__}")
