"""The Community Cloud deploy path (deploy/cloud/) and `make lock`, which writes its file.

What can be checked here is checked: `make lock` (deploy/lock.py: uv) run again gives
exactly the committed requirements.lock, constraints.txt and Cloud file; the Cloud file
resolves, with uv (what Cloud installs with first) for every Python Cloud offers (3.11 to
3.14) and with pip (its fallback) on this CPython 3.11, to exactly the packages it pins
(nothing floats), at constraints.txt's versions; its torch lines are PyTorch's CPU wheels
of the pinned release, one per Python by marker, and the cp311 line's sha256 is that of
the CPU wheel this machine installs. The torch lines point at download.pytorch.org, which
this machine cannot reach; the dry run puts the same release in its place. The entry point
itself runs the app under AppTest. tests/install/test_lock.py reads the lock itself."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from streamlit.testing.v1 import AppTest

from deploy import lock

ROOT = Path(__file__).resolve().parents[2]
CLOUD = ROOT / "deploy" / "cloud"
CUDA = lock.CUDA


def _pins(path: Path) -> dict[str, str]:
    return {k: v for k, (_, v) in lock.read_pins(path).items()}


def _requirements() -> list[Requirement]:
    lines = (CLOUD / "requirements.txt").read_text().splitlines()
    return [Requirement(ln) for ln in lines if ln.strip() and not ln.startswith("#")]


def _applies(req: Requirement, python: str) -> bool:
    env = {**default_environment(), "python_version": python, "python_full_version": python + ".0"}
    return req.marker is None or req.marker.evaluate(env)


@pytest.mark.parametrize("python", lock.CLOUD_PYTHONS)
def test_one_torch_line_per_python_is_the_cpu_wheel_of_the_pinned_release(python: str) -> None:
    torch = [r for r in _requirements() if r.name == "torch" and _applies(r, python)]
    assert len(torch) == 1, f"Python {python}: {len(torch)} torch lines apply"
    tag = "cp" + python.replace(".", "")
    version = _pins(ROOT / "constraints.txt")["torch"]
    m = re.fullmatch(
        rf"https://download\.pytorch\.org/whl/cpu/torch-([\d.]+)%2Bcpu-{tag}-{tag}-"
        r"manylinux_2_28_x86_64\.whl#sha256=([0-9a-f]{64})",
        torch[0].url or "",
    )
    assert m, f"not PyTorch's CPU wheel for CPython {python}: {torch[0]}"
    assert m.group(1) == version
    assert m.group(2) == lock.TORCH_CPU_SHA256[(version, tag)]


def test_no_line_applies_twice_or_to_no_supported_python() -> None:
    for python in lock.CLOUD_PYTHONS:
        names = [r.name.lower() for r in _requirements() if _applies(r, python)]
        assert len(names) == len(set(names)), f"Python {python}: a package named twice"
    for req in _requirements():
        assert any(_applies(req, py) for py in lock.CLOUD_PYTHONS), f"applies nowhere: {req}"


def test_cp311_hash_is_the_cpu_wheel_pip_installs_here(tmp_path: Path) -> None:
    """`pip install torch==X` takes PyTorch's CPU wheel on this project's machines: its
    bytes hash to the Cloud file's cp311 value (the same file at the same name)."""
    version = _pins(ROOT / "constraints.txt")["torch"]
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "--only-binary=:all:"]
    subprocess.run(
        [*cmd, "-d", str(tmp_path), f"torch=={version}"], check=True, capture_output=True
    )
    (wheel,) = tmp_path.glob("torch-*.whl")
    assert wheel.name == f"torch-{version}+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    (req,) = [r for r in _requirements() if r.name == "torch" and _applies(r, "3.11")]
    assert req.url and req.url.endswith(f"#sha256={digest}")


def _runtime_file(tmp_path: Path, python: str) -> tuple[Path, dict[str, str]]:
    """The Cloud file's lines that apply to ``python``, its torch URL line replaced by
    the same release from the index (download.pytorch.org is out of reach here), and
    {name: version} of what it pins besides torch."""
    constraints = _pins(ROOT / "constraints.txt")
    applying = [r for r in _requirements() if _applies(r, python)]
    pinned = {lock.norm(r.name): str(r.specifier).removeprefix("==") for r in applying if not r.url}
    reqs = tmp_path / f"requirements-{python}.txt"
    lines = [f"{r.name}{r.specifier}\n" for r in applying if not r.url]
    reqs.write_text("".join(lines) + f"torch=={constraints['torch']}\n")
    return reqs, pinned


@pytest.mark.parametrize("python", lock.CLOUD_PYTHONS)
def test_cloud_requirements_resolve_with_uv_for_every_cloud_python(
    tmp_path: Path, python: str
) -> None:
    """Community Cloud installs with uv first: uv resolves the file for CPython
    ``python`` on Cloud's platform (Linux x86_64, binary wheels only) to exactly the
    packages that apply to it, at their pins; nothing floats and nothing is missing.
    (uv resolves PyPI's torch here, the CUDA build: its CUDA-only packages are left out.)"""
    reqs, pinned = _runtime_file(tmp_path, python)
    out = tmp_path / "resolved.txt"
    cmd = [lock.uv(), "pip", "compile", "-q", "--no-header", "--only-binary", ":all:", str(reqs)]
    full = lock.environment(python)["python_full_version"]
    cmd += ["--python-version", full, "--python-platform", "x86_64-manylinux_2_28", "-o", str(out)]
    subprocess.run(cmd, check=True, capture_output=True, timeout=600)
    resolved = lock.applying(out.read_text(), python)
    version = resolved.pop("torch")[1]
    assert version == _pins(ROOT / "constraints.txt")["torch"]
    got = {k: v for k, (_, v) in resolved.items() if not CUDA.match(k)}
    assert got == pinned, "Cloud requirements do not pin exactly what uv installs"


def test_cloud_requirements_resolve_with_pip_on_the_python_at_hand(tmp_path: Path) -> None:
    """Cloud's fallback, pip, on this interpreter (3.11): the same packages at the same
    pins, and the CPU wheel itself (no CUDA package at all)."""
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert python in lock.CLOUD_PYTHONS
    reqs, pinned = _runtime_file(tmp_path, python)
    report = tmp_path / "report.json"
    cmd = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed"]
    subprocess.run(
        [*cmd, "-q", "--only-binary=:all:", "--report", str(report), "-r", str(reqs)],
        check=True,
        capture_output=True,
        text=True,
    )
    resolved = {
        lock.norm(i["metadata"]["name"]): i["metadata"]["version"]
        for i in json.loads(report.read_text())["install"]
    }
    version = resolved.pop("torch")
    assert version == _pins(ROOT / "constraints.txt")["torch"] + "+cpu"
    assert not [n for n in resolved if CUDA.match(n)], "CUDA packages in the Cloud install"
    assert resolved == pinned, "Cloud requirements do not pin exactly what pip installs"


def test_cloud_pins_are_constraints_pins() -> None:
    constraints = _pins(ROOT / "constraints.txt")
    for req in _requirements():
        if req.url:
            continue
        name, version = lock.norm(req.name), str(req.specifier).removeprefix("==")
        if _applies(req, lock.LOCK_PYTHON):  # what 3.11 installs is locked for 3.11
            assert constraints.get(name) == version, f"{name}: {version} vs constraints.txt"


def test_make_lock_reproduces_all_three_files() -> None:
    """`make lock` run again writes byte for byte the committed requirements.lock,
    constraints.txt and Cloud file (--check: it compares instead of writing). uv answers
    from its cache first (offline, about a second), then asks the registries (PyPI); the
    torch CPU wheels come from lock.py's table."""
    for offline in ({"UV_OFFLINE": "1"}, {}):
        done = subprocess.run(
            [sys.executable, str(ROOT / "deploy" / "lock.py"), "--check"],
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, **offline},
        )
        if done.returncode == 0:
            break
    assert done.returncode == 0, done.stderr[-2000:]
    make = (ROOT / "Makefile").read_text()
    assert re.search(r"^lock:.*\n\t\$\(BIN\)/python deploy/lock\.py", make, re.M)


def test_cloud_entry_point_runs_the_app() -> None:
    at = AppTest.from_file(str(CLOUD / "streamlit_app.py"), default_timeout=120).run()
    assert not at.exception
    assert "residual connections" in at.title[0].value
    at.switch_page(str(ROOT / "app_pages" / "sinusoidal_encoding.py")).run()
    assert not at.exception
    assert at.title[0].value == "Sinusoidal encoding"
