"""A server's allowed model folders (``RESVIZ_MODEL_ROOTS``): a path inside one of them
loads as before; any other path, a hub name, or a link out of them is refused with one
message, the same whether or not the path exists, so a stranger learns nothing of the
rest of the server's disk. Without roots (a user's own machine) nothing changes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from resviz.pretrained import cache
from resviz.pretrained.checks import (
    OUTSIDE_ROOTS,
    PretrainedError,
    check_within_roots,
    model_roots,
)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "models"
    (r / "gpt2").mkdir(parents=True)
    (tmp_path / "secret").mkdir()
    (r / "escape").symlink_to(tmp_path / "secret")  # a link that leads out
    return r


def refused(path: str, roots: list[Path]) -> str:
    with pytest.raises(PretrainedError) as err:
        check_within_roots(path, roots)
    assert err.value.kind == "path"
    return err.value.message


def test_inside_a_root_passes(root: Path) -> None:
    check_within_roots(str(root / "gpt2"), [root])
    check_within_roots(str(root / "not-yet-saved"), [root])  # loading then says why
    check_within_roots(str(root), [root])


@pytest.mark.parametrize("outside", ["/etc", "/root", "/no/such/folder", "gpt2", "org/model"])
def test_outside_every_root_is_one_message_whether_or_not_it_exists(
    root: Path, outside: str
) -> None:
    assert refused(outside, [root]) == OUTSIDE_ROOTS
    assert Path("/etc").exists() and not Path("/no/such/folder").exists()


def test_a_link_or_dots_out_of_the_root_is_refused(root: Path) -> None:
    assert refused(str(root / "escape"), [root]) == OUTSIDE_ROOTS
    assert refused(str(root / ".." / "secret"), [root]) == OUTSIDE_ROOTS
    assert refused(str(root) + "-sibling", [root]) == OUTSIDE_ROOTS  # a prefix, not a parent
    assert refused("", [root]) == OUTSIDE_ROOTS
    assert refused("bad\0path", [root]) == OUTSIDE_ROOTS


def test_no_roots_lets_everything_through() -> None:
    check_within_roots("/etc", [])
    check_within_roots("some-org/some-model", [])


def test_the_environment_sets_the_roots_and_the_loader_obeys(
    root: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("RESVIZ_MODEL_ROOTS", f"{root}{os.pathsep}{tmp_path / 'other'}{os.pathsep}")
    assert model_roots() == [root, tmp_path / "other"]
    assert cache.source_of(cache.FOLDER, str(root / "gpt2")) == str(root / "gpt2")
    with pytest.raises(PretrainedError, match="only from the folders it allows"):
        cache.source_of(cache.FOLDER, "/etc")
    assert cache.source_of(cache.TINY) is not None  # the shipped models are not folders
    monkeypatch.delenv("RESVIZ_MODEL_ROOTS")
    assert model_roots() == []
    assert cache.source_of(cache.FOLDER, "/etc") == "/etc"
