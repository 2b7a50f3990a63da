"""requirements.lock, the hashed universal lock `make lock` has uv write, read offline.

Every package requirements.txt, requirements-workshop.txt and requirements-dev.txt name
is pinned there, at their version, with a sha256 on every line, for each Python 3.11 to
3.14 on Linux x86_64, macOS (arm64) and Windows (x86_64); on Linux x86_64 torch is
PyTorch's CPU wheel (its hashes are deploy/lock.py's table) and no CUDA package applies;
constraints.txt and the Cloud file are the lock's lines, without hashes. That uv rewrites the lock byte for byte
is tests/install/test_cloud_requirements.py's test_make_lock_reproduces_all_three_files
(it asks the registries)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from deploy import lock

ROOT = Path(__file__).resolve().parents[2]
PLATFORMS = {
    "linux": {},
    "macos": {"sys_platform": "darwin", "platform_system": "Darwin", "platform_machine": "arm64"},
    "windows": {
        "sys_platform": "win32",
        "platform_system": "Windows",
        "platform_machine": "AMD64",
        "os_name": "nt",
    },
}


def _entries() -> list[tuple[Requirement, list[str]]]:
    """Each requirement of requirements.lock with its sha256 hashes."""
    text = lock.LOCK.read_text().replace("\\\n", " ")
    entries = []
    for line in text.splitlines():
        line = line.split("#")[0].strip()
        if line:
            req, *hashes = line.split(" --hash=")
            entries.append((Requirement(req), [h.strip() for h in hashes]))
    return entries


def _applying(python: str, platform: str) -> dict[str, tuple[str, list[str]]]:
    """{normalized name: (version, hashes)} of the lock's lines that apply to CPython
    ``python`` on ``platform``; a package named twice fails."""
    env = {**lock.environment(python), **PLATFORMS[platform]}
    out: dict[str, tuple[str, list[str]]] = {}
    for req, hashes in _entries():
        if req.marker is None or req.marker.evaluate(env):
            name = lock.norm(req.name)
            assert name not in out, f"{python} {platform}: {name} pinned twice"
            out[name] = (str(req.specifier).removeprefix("=="), hashes)
    return out


def _direct() -> dict[str, str]:
    """{normalized name: version} that the requirements files pin."""
    pins = {}
    for name in ("requirements.txt", "requirements-workshop.txt", "requirements-dev.txt"):
        for line in (ROOT / name).read_text().splitlines():
            line = line.split("#")[0].strip()
            if line and not line.startswith("-"):
                req = Requirement(line)
                pins[lock.norm(req.name)] = str(req.specifier).removeprefix("==")
    return pins


def test_every_line_is_pinned_with_sha256_hashes() -> None:
    entries = _entries()
    assert len(entries) > 100
    for req, hashes in entries:
        assert re.fullmatch(r"==[\w.+]+", str(req.specifier)), f"not pinned: {req}"
        assert hashes, f"no hash: {req}"
        assert all(re.fullmatch(r"sha256:[0-9a-f]{64}", h) for h in hashes), req


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("python", lock.CLOUD_PYTHONS)
def test_every_requirement_is_locked_with_hashes(python: str, platform: str) -> None:
    locked = _applying(python, platform)
    for name, version in _direct().items():
        assert name in locked, f"{name} not locked for {python} on {platform}"
        got, hashes = locked[name]
        assert got.split("+")[0] == version, f"{name}: {got} in the lock, {version} asked"
        assert hashes, f"{name}: no hash for {python} on {platform}"


@pytest.mark.parametrize("python", lock.CLOUD_PYTHONS)
def test_linux_torch_is_the_cpu_wheel_and_nothing_cuda(python: str) -> None:
    locked = _applying(python, "linux")
    version, hashes = locked["torch"]
    base = _direct()["torch"]
    assert version == f"{base}+cpu"
    tag = "cp" + python.replace(".", "")
    assert f"sha256:{lock.TORCH_CPU_SHA256[(base, tag)]}" in hashes
    assert not [n for n in locked if lock.CUDA.match(n)], "CUDA packages on Linux x86_64"


def test_constraints_are_the_locks_lines_for_3_11_without_hashes() -> None:
    locked = _applying(lock.LOCK_PYTHON, "linux")
    expected = {name: version.split("+")[0] for name, (version, _) in locked.items()}
    lines = [ln for ln in lock.CONSTRAINTS.read_text().splitlines() if not ln.startswith("#")]
    assert all(re.fullmatch(r"[\w.-]+==[\w.]+", ln) for ln in lines), "not plain name==version"
    assert {k: v for k, (_, v) in lock.read_pins(lock.CONSTRAINTS).items()} == expected


@pytest.mark.parametrize("python", lock.CLOUD_PYTHONS)
def test_cloud_pins_are_the_locks(python: str) -> None:
    locked = _applying(python, "linux")
    cloud = [ln for ln in lock.CLOUD.read_text().splitlines() if not ln.startswith("#")]
    for req in map(Requirement, cloud):
        if req.marker is None or req.marker.evaluate(lock.environment(python)):
            version = (req.url or "").split("%2B")[0].rsplit("-", 1)[-1] or str(req.specifier)
            assert locked[lock.norm(req.name)][0].split("+")[0] == version.removeprefix("==")


def test_the_lock_is_uvs_output_from_make_lock() -> None:
    head = lock.LOCK.read_text().splitlines()[:2]
    assert head == [
        "# This file was autogenerated by uv via the following command:",
        "#    make lock",
    ]
    assert "uv==" in (ROOT / "requirements-dev.txt").read_text()
    make = (ROOT / "Makefile").read_text()
    assert re.search(r"^lock:.*\n\t\$\(BIN\)/python deploy/lock\.py", make, re.M)
