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

import ast
import importlib.metadata
import io
import json
import re
import textwrap
import tokenize
from dataclasses import dataclass, field
from typing import Any

import streamlit as st

from resviz import __version__ as RESVIZ_VERSION
from resviz._version import REPOSITORY

KERNEL = {"name": "python3", "display_name": "Python 3", "language": "python"}


def _torch_version() -> str:
    try:
        return importlib.metadata.version("torch").split("+")[0]
    except importlib.metadata.PackageNotFoundError:
        return "2.13.0"


TORCH_VERSION = _torch_version()

# How to get what the notebook imports, said in its first cell. PyTorch's CPU index is
# for an ordinary Linux machine (PyPI's Linux build brings CUDA); resviz installs from its
# public repository (resviz/_version.py's REPOSITORY) at this version's tag, with the
# extra that draws charts offline.
INSTALL = f"""\
Made with **resviz {RESVIZ_VERSION}** (torch {TORCH_VERSION}). To run it outside the app, \
install PyTorch, then resviz {RESVIZ_VERSION} with its `notebook` extra from its repository, \
{REPOSITORY}:

```
pip install torch=={TORCH_VERSION} --index-url https://download.pytorch.org/whl/cpu
pip install "resviz[notebook] @ git+{REPOSITORY}@v{RESVIZ_VERSION}"
```

(The first line takes PyTorch's CPU build on Linux; on macOS or Windows, \
`pip install torch=={TORCH_VERSION}` is already the CPU build. In a checkout of that \
repository, `pip install ".[notebook]"` installs the same.) Charts carry their own \
JavaScript (vl-convert-python, in that extra), so they draw without a network."""

# The first code cell: the settings, the imports, and charts that draw offline (Altair's
# default HTML loads Vega from a CDN; the inline template embeds it in each output).
SETUP = f"""\
import altair as alt
import pandas as pd

import resviz as rv

print(f"resviz {{rv.__version__}}; this notebook was made with resviz {RESVIZ_VERSION}")
try:  # Vega's JavaScript inside each chart's output: charts draw without a network
    import vl_convert  # noqa: F401

    alt.renderers.enable("html", template="inline")
except ImportError:
    print("vl-convert-python is not installed: charts load Vega from a CDN (needs a network)")"""


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
            "downloaded; change them in the recipe call that computes the data.\n\n" + INSTALL
        )
        self.code(f"# Settings on screen: {settings!r}\n{SETUP}")

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
        """A code cell; lines over 100 characters are broken up (:func:`wrap_code`)."""
        self._cell("code", wrap_code(source))
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
                "resviz": {
                    "version": RESVIZ_VERSION,
                    "page": self.page,
                    "section": self.section,
                    "frames": self.frames,
                },
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


# ------------------------------------------------------------ readable code lines
WIDTH = 100


def wrap_code(source: str, width: int = WIDTH) -> str:
    """``source`` with every line longer than ``width`` broken up, the program unchanged.

    Breaks fall only where Python ignores them: after the commas of a call's (or a
    list's) arguments, one per line inside the brackets; a trailing comment moves to
    its own line above; a long plain string becomes adjacent literals in parentheses.
    The result must parse to the same syntax tree as ``source`` (adjacent literals
    are one constant there), or ``source`` is returned as it was."""
    lines = source.split("\n")
    if all(len(line) <= width for line in lines):
        return source
    wrapped = "\n".join(part for line in lines for part in _wrap_line(line, width))
    try:
        same = ast.dump(ast.parse(wrapped)) == ast.dump(ast.parse(source))
    except SyntaxError:
        same = False
    return wrapped if same else source


def _tokens(line: str) -> list[tokenize.TokenInfo] | None:
    try:
        toks = list(tokenize.generate_tokens(io.StringIO(line + "\n").readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None
    skip = (tokenize.NEWLINE, tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER)
    return [t for t in toks if t.type not in skip]


def _wrap_line(line: str, width: int) -> list[str]:
    if len(line) <= width:
        return [line]
    toks = _tokens(line)
    if not toks:
        return [line]
    indent = line[: len(line) - len(line.lstrip())]
    if toks[-1].type == tokenize.COMMENT:  # a comment goes on lines of its own, above
        comment = textwrap.wrap(
            toks[-1].string.lstrip("# "), width - len(indent) - 2, break_long_words=False
        )
        above = [f"{indent}# {c}" for c in comment]
        if len(toks) == 1:
            return above
        return above + _wrap_line(line[: toks[-1].start[1]].rstrip(), width)
    split = _split_brackets(line, toks, indent, width)
    if split is not None:
        return split
    return _split_string(line, toks, indent, width)


def _split_brackets(
    line: str, toks: list[tokenize.TokenInfo], indent: str, width: int
) -> list[str] | None:
    """The first bracket pair's contents, one argument a line (recursively)."""
    depth, opened, commas, comprehension = 0, None, [], False
    for i, tok in enumerate(toks):
        if tok.type == tokenize.OP and tok.string in "([{":
            depth += 1
            if depth == 1 and opened is None:
                opened = i
        elif tok.type == tokenize.OP and tok.string in ")]}":
            depth -= 1
            if depth == 0 and opened is not None:
                start, end = toks[opened].end[1], tok.start[1]
                if not line[start:end].strip():
                    opened, commas, comprehension = None, [], False
                    continue
                cuts = [] if comprehension else commas
                bounds = [start, *cuts, end]
                items = [
                    line[a + (1 if k else 0) : b].strip()
                    for k, (a, b) in enumerate(zip(bounds, bounds[1:], strict=False))
                ]
                trailing = len(items) > 1 and not items[-1]  # f(a, b,) keeps its comma
                items = items[:-1] if trailing else items
                inner = indent + "    "
                out, row = [line[:start]], ""
                for k, item in enumerate(items):  # as many arguments a line as fit
                    piece = item + ("," if k < len(items) - 1 or trailing else "")
                    if len(inner + piece) > width:  # too long alone: a block of its own
                        out += [inner + row] if row else []
                        out += _wrap_line(inner + piece, width)
                        row = ""
                    elif len(f"{inner}{row} {piece}") <= width:
                        row = f"{row} {piece}" if row else piece
                    else:
                        out.append(inner + row)
                        row = piece
                out += [inner + row] if row else []
                return [*out, indent + line[end:].lstrip()]
        elif depth == 1 and opened is not None:
            if tok.type == tokenize.OP and tok.string == ",":
                commas.append(tok.start[1])
            elif tok.type == tokenize.NAME and tok.string in ("for", "lambda"):
                comprehension = True
    return None


def _split_string(line: str, toks: list[tokenize.TokenInfo], indent: str, width: int) -> list[str]:
    """The longest plain string literal as adjacent literals in parentheses."""
    strings = [t for t in toks if t.type == tokenize.STRING and t.string[:1] in "'\""]
    if not strings:
        return [line]
    tok = max(strings, key=lambda t: len(t.string))
    value = ast.literal_eval(tok.string)
    room = max(20, width - len(indent) - 8)
    chunks, current = [], ""
    for word in re.findall(r"\S+\s*|\s+", value):
        if current and len(repr(current + word)) > room:
            chunks.append(current)
            current = ""
        current += word
    chunks.append(current)
    if len(chunks) < 2:
        return [line]
    inner = indent + "    "
    head, tail = line[: tok.start[1]], line[tok.end[1] :]
    return [head + "(", *(inner + repr(c) for c in chunks), indent + ")" + tail]
