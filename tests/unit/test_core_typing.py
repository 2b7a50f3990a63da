"""A type checker sees a recipe's own signature: ``@recipe`` (resviz/core.py)
keeps the decorated function's parameters and its return type; and the library
type-checks clean under its own configuration (``[tool.mypy]`` in pyproject.toml, what
``make lint`` runs).

For the signatures, mypy runs on a small snippet in tmp_path. Only resviz is analysed,
silently (its own errors are not this test's); every other package is skipped (seen as
Any), so one cold run takes a few seconds. The whole library, checked as configured,
follows torch: a minute or more cold."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# The snippet, one statement a line: the test reads mypy's answer by line number.
SNIPPET = """\
import resviz as rv
from resviz.encoder import recipes as encoder
from resviz.pretrained import recipes as pretrained

reveal_type(rv.recipes.gradients.per_layer)
reveal_type(rv.recipes.gradients.per_layer.one)
reveal_type(rv.recipes.gradients.per_layer(rv.gradients.Stack(depth=3)))
reveal_type(pretrained.stream_norms)
rv.gradients.Stack(depth="x")
rv.recipes.gradients.per_layer(rv.gradients.Stack(depht=3))
pretrained.stream_norms(rv.pretrained.Reading(text=1))
rv.recipes.gradients.per_layer(seeds="3")
rv.recipes.gradients.per_layer(rv.gradients.Stack(depth=30, width=8, act="relu"), seed=1)
rv.recipes.gradients.per_layer(rv.gradients.Stack(depth=30), seeds=3)
rv.recipes.gradients.per_layer.one(rv.gradients.Stack(depth=30), seed=2)
pretrained.stream_norms(reading=rv.pretrained.Reading(text="Shall I compare thee"))
encoder.model(encoder=rv.encoder.Model(d_model="32"), seed=1)
"""
REVEAL_PER_LAYER, REVEAL_ONE, REVEAL_RESULT, REVEAL_NO_SEEDS = 5, 6, 7, 8
WRONG = {9: 'depth="x"', 10: "a misspelt field", 11: "text=1", 12: 'seeds="3"'}
RIGHT = range(13, 18)

CONFIG = f"""\
[mypy]
mypy_path = {ROOT}
follow_imports = skip
ignore_missing_imports = True

[mypy-resviz.*]
follow_imports = silent
"""


def _mypy(tmp_path: Path) -> dict[int, list[str]]:
    """mypy's messages on the snippet, by line."""
    snippet = tmp_path / "snippet.py"
    snippet.write_text(SNIPPET)
    config = tmp_path / "mypy.ini"
    config.write_text(CONFIG)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(config),
            "--cache-dir",
            str(tmp_path / "cache"),
            "--hide-error-context",
            str(snippet),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
        check=False,
    )
    # mypy ran: 0 or 1 (errors found; 2 is mypy itself failing), and its summary line
    # ends the answer (a missing mypy also exits 1, "No module named mypy", on stderr).
    assert out.returncode in (0, 1), out.stdout + out.stderr
    *said, summary = out.stdout.splitlines() or [""]
    assert re.match(r"(Found \d+ errors? in 1 file|Success: no issues found)", summary), (
        out.stdout + out.stderr
    )
    lines: dict[int, list[str]] = {}
    for raw in said:
        m = re.match(r".*snippet\.py:(\d+): (.*)", raw)
        assert m, raw  # only the snippet's lines: resviz's own are silent
        lines.setdefault(int(m.group(1)), []).append(m.group(2))
    return lines


@pytest.mark.slow
def test_recipes_keep_their_signature_for_a_type_checker(tmp_path):
    said = _mypy(tmp_path)

    per_layer = " ".join(said[REVEAL_PER_LAYER])
    assert "Revealed type" in per_layer and "_SeededRecipe" in per_layer
    # The groups of settings it takes, typed: a notebook builds them.
    for param in ("stack: resviz.gradients.settings.Stack =", "seed: int ="):
        assert param in per_layer, per_layer
    one = " ".join(said[REVEAL_ONE])
    assert "def (stack: resviz.gradients.settings.Stack =" in one, one
    assert "-> resviz.core.Result" in one, one
    assert 'Revealed type is "resviz.core.Result"' in said[REVEAL_RESULT][0]
    # seeds=None: the function itself, nothing added.
    no_seeds = said[REVEAL_NO_SEEDS][0]
    assert "checkpoint: resviz.pretrained.cache.Checkpoint =" in no_seeds, no_seeds
    assert "reading: resviz.pretrained.cache.Reading =, *, seed: int =)" in no_seeds, no_seeds
    assert "-> resviz.core.Result" in no_seeds

    for line, what in WRONG.items():
        assert any("error:" in m for m in said.get(line, [])), (what, said.get(line))
    for line in RIGHT:
        assert not said.get(line), (SNIPPET.splitlines()[line - 1], said[line])
    # Nothing but the reveals and the wrong calls.
    assert set(said) == {REVEAL_PER_LAYER, REVEAL_ONE, REVEAL_RESULT, REVEAL_NO_SEEDS, *WRONG}


@pytest.mark.slow
def test_the_library_type_checks_clean_under_its_config():
    """``mypy`` as ``make lint`` runs it: the files and the strictness pyproject.toml
    names. Its cache is the checkout's own (.mypy_cache), so a second run is quick."""
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=900,
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Success: no issues found" in out.stdout, out.stdout + out.stderr
