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
import functools
import importlib.metadata
import io
import json
import os
import re
import subprocess
import textwrap
import tokenize
from dataclasses import dataclass, field
from pathlib import Path
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

ROOT = Path(__file__).resolve().parents[1]
COMMIT = re.compile(r"[0-9a-f]{40}")


@functools.cache
def source_commit() -> str | None:
    """The commit this app's code is, when that can be said: ``RESVIZ_COMMIT`` (the
    image's build sets it), else the HEAD of the git checkout the app runs from, when
    ``resviz/`` and ``models/`` have no change beside it; otherwise None."""
    given = os.environ.get("RESVIZ_COMMIT", "").strip().lower()
    if COMMIT.fullmatch(given):
        return given
    if not (ROOT / ".git").exists():
        return None

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=10
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    head = git("rev-parse", "--verify", "HEAD")
    changed = git("status", "--porcelain", "--", "resviz", "models")
    if head is None or not COMMIT.fullmatch(head) or changed is None or changed:
        return None
    return head


def install_code(commit: str | None, pretrained: bool, home: str | None = None) -> str:
    """The notebook's first code cell: what it imports, installed where missing.

    resviz comes from ``home`` (default: REPOSITORY) at ``commit`` (a full hash: that code
    or an error, never another project's release of the same name); a notebook that loads
    a pretrained model adds the ``pretrained`` extra and our trained models (the
    ``resviz-models`` data package, ``models/`` at the same commit). Without a commit nothing is installed: the
    cell says which version to install and stops if resviz is missing."""
    extras = "notebook,pretrained" if pretrained else "notebook"
    home = home or REPOSITORY
    needs = ("resviz", "vl_convert", *(("transformers", "safetensors") if pretrained else ()))
    if commit is None:
        return (
            f"# resviz {RESVIZ_VERSION} made this notebook from a copy with no recorded commit\n"
            "# (local changes, or no git checkout): this cell installs nothing.\n"
            "import importlib.util\n\n"
            'if importlib.util.find_spec("resviz") is None:\n'
            "    raise SystemExit(\n"
            f'        "Install resviz {RESVIZ_VERSION} with its extras [{extras}]"\n'
            '        " (docs/install.md) from the copy this notebook came from."\n'
            "    )"
        )
    lines = [
        "# Installs what this notebook imports where it is missing: PyTorch (its CPU build on",
        f"# Linux), then resviz at commit {commit[:12]}, the code this notebook was made with",
        "# (that code or an error), and for a pretrained model our trained ones (resviz-models).",
        "import importlib.util",
        "import platform",
        "import subprocess",
        "import sys",
        "",
        f"HOME = {'git+' + home!r}",
        f"COMMIT = {commit!r}",
        f'RESVIZ = f"resviz[{extras}] @ {{HOME}}@{{COMMIT}}"',
        (
            'MODELS = f"resviz-models @ {HOME}@{COMMIT}#subdirectory=models"'
            if pretrained
            else "MODELS = None"
        ),
        "",
        "",
        "def pip_install(*args: str) -> None:",
        '    subprocess.run([sys.executable, "-m", "pip", "install", *args], check=True)',
        "",
        "",
        'if importlib.util.find_spec("torch") is None:',
        '    cpu = ["--index-url", "https://download.pytorch.org/whl/cpu"]',
        f'    pip_install("torch=={TORCH_VERSION}", *(cpu if platform.system() == "Linux" else []))',
        f"NEEDS = {needs!r}  # resviz and what its extras [{extras}] bring",
        "if any(importlib.util.find_spec(m) is None for m in NEEDS):",
        "    pip_install(RESVIZ)",
        "    importlib.invalidate_caches()",
        "if MODELS is not None:",
        "    from resviz.pretrained import tiny_gpt2_path",
        "",
        "    if tiny_gpt2_path() is None:",
        "        pip_install(MODELS)",
        "        importlib.invalidate_caches()",
    ]
    return wrap_code("\n".join(lines))


def _uses_pretrained(source: str) -> bool:
    """Whether code reads ``resviz.pretrained`` (parsed: a user's text naming it in a
    string literal does not count)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    return any(
        (isinstance(n, ast.Attribute) and n.attr == "pretrained")
        or (isinstance(n, ast.ImportFrom) and (n.module or "").startswith("resviz.pretrained"))
        for n in ast.walk(tree)
    )


def install_words(commit: str | None) -> str:
    """The first cell's Markdown: what the notebook was made with and how it installs."""
    made = f"Made with **resviz {RESVIZ_VERSION}** (torch {TORCH_VERSION})"
    if commit is None:
        return (
            f"{made}, from a copy with no recorded commit (local changes, or no git "
            "checkout). The next cell installs no resviz: install that version yourself "
            "(docs/install.md). Charts carry their own JavaScript (vl-convert-python, in the "
            "`notebook` extra), so they draw without a network."
        )
    return (
        f"{made}, at commit `{commit}` of {REPOSITORY}. The next cell installs what is "
        "missing: PyTorch (its CPU build on Linux), then resviz from exactly that commit "
        "(that code, or an error). Charts carry their own JavaScript (vl-convert-python, in "
        "the `notebook` extra), so they draw without a network."
    )


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
            "downloaded; change them in the recipe call that computes the data.\n\n"
            + install_words(source_commit())
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
        pretrained = any(
            _uses_pretrained(c["source"]) for c in self.cells if c["cell_type"] == "code"
        )
        install = {
            "cell_type": "code",
            "id": "install",
            "metadata": {},
            "source": install_code(source_commit(), pretrained),
            "execution_count": None,
            "outputs": [],
        }
        return {
            "cells": [*self.cells[:1], install, *self.cells[1:]],
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
