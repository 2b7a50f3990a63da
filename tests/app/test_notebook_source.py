"""Which code an exported notebook says it was made with, and its install cell's text.

``source_commit`` names a commit only when the app's code is that commit (the image's
``RESVIZ_COMMIT``, or a git checkout with no change under ``resviz/`` or ``models/``);
``install_code`` installs from that full hash, or nothing. The install itself, run in a
clean venv, is tests/install/test_notebook_install.py's."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import ui.notebook as N
from tests.gitrepo import commit_all

SHA = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    """A git repository with resviz/, models/ and a README, one commit, as the app's root."""
    for name in ("resviz/a.py", "models/m.txt", "README.md"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text("x\n")
    head = commit_all(tmp_path)
    monkeypatch.setattr(N, "ROOT", tmp_path)
    monkeypatch.delenv("RESVIZ_COMMIT", raising=False)
    N.source_commit.cache_clear()
    yield tmp_path, head
    N.source_commit.cache_clear()


def commit_now() -> str | None:
    N.source_commit.cache_clear()
    return N.source_commit()


def test_a_clean_checkout_names_its_head(checkout: tuple[Path, str]) -> None:
    root, head = checkout
    assert commit_now() == head
    (root / "README.md").write_text("changed outside the library\n")
    assert commit_now() == head


@pytest.mark.parametrize("change", ["resviz/a.py", "resviz/new.py", "models/m.txt", "models/n"])
def test_a_change_to_the_library_or_the_models_names_no_commit(
    checkout: tuple[Path, str], change: str
) -> None:
    root, _ = checkout
    (root / change).write_text("changed\n")
    assert commit_now() is None


def test_no_git_checkout_names_no_commit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(N, "ROOT", tmp_path)
    monkeypatch.delenv("RESVIZ_COMMIT", raising=False)
    assert commit_now() is None


@pytest.mark.parametrize(
    ("given", "named"),
    [
        (SHA, SHA),
        (SHA.upper(), SHA),
        (f" {SHA}\n", SHA),
        ("abc123", None),
        ("g" * 40, None),
        ("", None),
    ],
)
def test_the_images_commit_is_taken_only_as_a_full_hash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: str, named: str | None
) -> None:
    monkeypatch.setattr(N, "ROOT", tmp_path)  # no checkout: the variable alone decides
    monkeypatch.setenv("RESVIZ_COMMIT", given)
    assert commit_now() == named
    N.source_commit.cache_clear()


def assigned(code: str) -> dict[str, object]:
    """The module-level constants a cell assigns (literal values only)."""
    out: dict[str, object] = {}
    for node in ast.parse(code).body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            out[node.targets[0].id] = node.value.value  # type: ignore[attr-defined]
    return out


def test_a_plain_sections_cell_installs_resviz_at_the_commit_and_no_models() -> None:
    code = N.install_code(SHA, pretrained=False)
    values = assigned(code)
    assert values["HOME"] == f"git+{N.REPOSITORY}" and values["COMMIT"] == SHA
    assert values["MODELS"] is None
    assert 'RESVIZ = f"resviz[notebook] @ {HOME}@{COMMIT}"' in code
    assert "NEEDS = ('resviz', 'vl_convert')" in code
    assert max(len(line) for line in code.splitlines()) <= 100


def test_a_pretrained_sections_cell_adds_the_extra_and_the_models_at_the_same_commit() -> None:
    code = N.install_code(SHA, pretrained=True, home="https://example.org/fork")
    values = assigned(code)
    assert values["HOME"] == "git+https://example.org/fork" and values["COMMIT"] == SHA
    assert 'MODELS = f"resviz-models @ {HOME}@{COMMIT}#subdirectory=models"' in code
    assert "'transformers', 'safetensors'" in code


@pytest.mark.parametrize("pretrained", [False, True])
def test_without_a_commit_the_cell_installs_nothing(pretrained: bool) -> None:
    code = N.install_code(None, pretrained)
    assert "pip" not in code and "git+" not in code and "subprocess" not in code
    assert "SystemExit" in code and N.RESVIZ_VERSION in code
    compile(code, "cell", "exec")


@pytest.mark.parametrize(
    ("code", "uses"),
    [
        ("r = rv.pretrained.stream_norms()", True),
        ("from resviz.pretrained import load", True),
        ("r = rv.recipes.gradients.per_layer(text='rv.pretrained')", False),
        ("# rv.pretrained in a comment", False),
        ("this is not python (", False),
    ],
)
def test_a_notebook_needs_the_pretrained_parts_only_when_its_code_reads_them(
    code: str, uses: bool
) -> None:
    assert N._uses_pretrained(code) is uses
