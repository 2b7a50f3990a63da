"""The library installs from the repository as a wheel that holds ``resviz`` only,
and the README's notebook example (and ``generate_code``, whose templates are package
data) runs from that install, outside the repository."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def readme_example() -> str:
    """The first Python block of the README's "In a notebook" section."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## In a notebook", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "README's notebook section has no python block"
    return match.group(1)


# Run from the installed wheel too: generate_code reads its templates from the package,
# and each generated script runs (it prints its parameter count and output shape).
CODEGEN_CHECK = """
import runpy
for cfg in (rv.StackConfig(depth=2, width=4), rv.EncoderConfig(n_layers=1, d_model=8, n_heads=2)):
    with open("generated.py", "w") as f:
        f.write(rv.generate_code(cfg))
    runpy.run_path("generated.py", run_name="__main__")
"""

# The version the package says is the installed metadata's; py.typed lies beside it.
VERSION_CHECK = """
import importlib.metadata, pathlib
assert rv.__version__ == importlib.metadata.version("resviz"), rv.__version__
assert (pathlib.Path(rv.__file__).parent / "py.typed").is_file()
print('RESVIZ_VERSION', rv.__version__)
print('RESVIZ_FROM', rv.__file__)
"""


def build_wheel(dest: Path) -> Path:
    """Build from a copy of what the wheel needs, so the checkout gets no build/ litter."""
    src = dest / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "resviz", src / "resviz", ignore=shutil.ignore_patterns("__pycache__"))
    cmd = [sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--no-build-isolation"]
    subprocess.run([*cmd, "-q", "-w", str(dest)], check=True, capture_output=True, text=True)
    (wheel,) = dest.glob("resviz-*.whl")
    return wheel


def rv_version() -> str:
    """The checkout's version: resviz/_version.py, which pyproject.toml reads."""
    from resviz._version import __version__

    return __version__


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("wheel"))


def test_wheel_holds_the_library_only(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names}
    assert top == {"resviz", wheel.name.split("-py3")[0] + ".dist-info"}, top
    assert "resviz/__init__.py" in names
    for family in ("stack", "encoder", "shared"):  # generate_code's templates are package data
        assert f"resviz/codegen/templates/{family}.py.tmpl" in names
    # No weights: our trained models are the resviz-models data package (models/).
    assert not [n for n in names if n.endswith((".safetensors", ".bin", ".pt"))]
    assert not [n for n in names if "tiny_gpt2" in n]
    assert wheel.stat().st_size < 4_000_000, wheel.stat().st_size
    meta = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("METADATA"))).decode()
    requires = {
        line.split(":", 1)[1].strip().split(">")[0].split(";")[0].strip()
        for line in meta.splitlines()
        if line.startswith("Requires-Dist:")
    }
    assert {"torch", "numpy", "pandas", "altair"} <= requires


def test_wheel_is_typed_licensed_and_versioned_once(wheel: Path) -> None:
    """py.typed ships (PEP 561); the MIT licence is named (SPDX) and its text is in the
    wheel; the wheel's version is resviz/_version.py's, the one place it is written."""
    names = zipfile.ZipFile(wheel).namelist()
    assert "resviz/py.typed" in names
    meta_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
    meta = zipfile.ZipFile(wheel).read(meta_name).decode()
    headers = [line.split(": ", 1) for line in meta.split("\n\n")[0].splitlines() if ": " in line]
    fields: dict[str, list[str]] = {}
    for key, value in headers:
        fields.setdefault(key, []).append(value)
    assert fields["License-Expression"] == ["MIT"]
    assert fields["License-File"] == ["LICENSE"]
    licence = zipfile.ZipFile(wheel).read(meta_name.replace("METADATA", "licenses/LICENSE"))
    assert licence == (ROOT / "LICENSE").read_bytes()
    assert licence.startswith(b"MIT License") and b"the resviz authors" in licence
    assert fields["Version"] == [rv_version()]
    assert wheel.name.startswith(f"resviz-{rv_version()}-")
    assert fields["Author"] == ["the resviz authors"]
    assert "Typing :: Typed" in fields["Classifier"]
    assert fields["Requires-Python"] == [">=3.11"]


def test_wheel_names_its_home_and_every_python_that_is_tested(wheel: Path) -> None:
    """The Project-URLs are resviz/_version.py's REPOSITORY (what a notebook says to
    install from); the Python classifiers are exactly the Pythons the Cloud file is
    resolved for and the hosted workflow's matrix runs."""
    from deploy.lock import CLOUD_PYTHONS
    from resviz._version import REPOSITORY

    names = zipfile.ZipFile(wheel).namelist()
    meta_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
    meta = zipfile.ZipFile(wheel).read(meta_name).decode().split("\n\n")[0].splitlines()
    urls = dict(
        ln.removeprefix("Project-URL: ").split(", ", 1)
        for ln in meta
        if ln.startswith("Project-URL: ")
    )
    assert set(urls) == {"Homepage", "Documentation", "Source", "Issues"}
    assert all(u.startswith(REPOSITORY) for u in urls.values()), urls
    pythons = {
        ln.rsplit(":: ", 1)[1]
        for ln in meta
        if ln.startswith("Classifier: Programming Language :: Python :: 3.")
    }
    assert pythons == set(CLOUD_PYTHONS)
    workflow = (ROOT / ".github" / "workflows" / "ci.yml").read_text()
    assert f"python: [{', '.join(repr(p) for p in CLOUD_PYTHONS)}]".replace("'", '"') in workflow
    from ui.notebook import install_code

    commit = "0123456789abcdef" * 2 + "01234567"
    code = install_code(commit, pretrained=True)
    assert f"HOME = 'git+{REPOSITORY}'" in code and f"COMMIT = {commit!r}" in code


def test_the_models_package_holds_each_model_once_at_resvizs_version(tmp_path: Path) -> None:
    """models/ builds the resviz-models wheel: every file of models/resviz_models once,
    byte for byte (four model folders: 1, 2, 4 and 8 blocks), at resviz's version, under
    the same licence; and resviz finds it once installed, not the checkout's copy."""
    source = tmp_path / "src"  # a copy: the checkout gets no build/ litter
    shutil.copytree(ROOT / "models", source, ignore=shutil.ignore_patterns("__pycache__"))
    cmd = [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps"]
    subprocess.run([*cmd, "--no-build-isolation", "-q", "-w", str(tmp_path)], check=True)
    (wheel,) = tmp_path.glob("resviz_models-*.whl")
    assert wheel.name.startswith(f"resviz_models-{rv_version()}-py3-none-any")
    with zipfile.ZipFile(wheel) as z:
        data = {n: z.read(n) for n in z.namelist() if n.startswith("resviz_models/")}
        meta = z.read(next(n for n in z.namelist() if n.endswith("licenses/LICENSE")))
    files = {
        p.relative_to(source).as_posix(): p.read_bytes()
        for p in (source / "resviz_models").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    assert data == files
    weights = sorted(n for n in data if n.endswith(".safetensors"))
    assert weights == [
        "resviz_models/tiny_gpt2/model.safetensors",
        *(f"resviz_models/tiny_gpt2_ladder/{n}/model.safetensors" for n in (1, 2, 8)),
    ]
    assert len({hashlib.sha256(data[n]).hexdigest() for n in weights}) == 4
    assert meta == (ROOT / "LICENSE").read_bytes() == (ROOT / "models" / "LICENSE").read_bytes()
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "-t", str(target), str(wheel)],
        check=True,
    )
    found = subprocess.run(
        [sys.executable, "-c", "from resviz.pretrained import tiny_gpt2_path as t; print(t())"],
        env={**os.environ, "PYTHONPATH": f"{target}:{ROOT}"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert found == str(target / "resviz_models" / "tiny_gpt2")


def assert_readme_example_runs(py: str, env_dir: Path, work: Path) -> None:
    """The README's example, run by ``py`` of a clean venv at ``env_dir`` holding torch
    and the bare wheel: resviz is imported from that venv, and the example's outputs and
    the version are what the README shows. ``tests/install/test_extras.py`` runs it in its
    venv once the bare wheel is in (one clean venv serves both)."""
    work.mkdir()
    script = work / "example.py"
    script.write_text(readme_example() + CODEGEN_CHECK + VERSION_CHECK)
    out = subprocess.run(
        [py, str(script)], cwd=work, check=True, capture_output=True, text=True
    ).stdout
    origin = Path(out.split("RESVIZ_FROM", 1)[1].strip())
    assert env_dir in origin.parents, f"resviz imported from {origin}, not the clean venv"
    assert "blocks.0" in out
    assert f"RESVIZ_VERSION {rv_version()}" in out
    assert "parameters; output (8, 4)" in out and "parameters; output (2, 16, 1000)" in out


def canonical(name: str) -> str:
    """A distribution's name as PEP 503 compares them (pip freeze and pip's resolver may
    spell one with '_' or '-')."""
    return re.sub(r"[-_.]+", "-", name).lower()


def test_constraints_pin_every_installed_package() -> None:
    """constraints.txt (and requirements-demo.txt, the demo model's wheel installed without
    its dependencies) list exactly what the test environment has, each with ==
    (setuptools included: torch needs it at run time; pip itself is not locked)."""
    lines = [
        ln.strip()
        for name in ("constraints.txt", "requirements-demo.txt")
        for ln in (ROOT / name).read_text().splitlines()
    ]
    pins = dict(ln.split("==", 1) for ln in lines if ln and not ln.startswith("#"))
    frozen = subprocess.run(
        [sys.executable, "-m", "pip", "freeze", "--all", "--exclude-editable"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    installed = {}
    for ln in frozen:
        if "==" in ln:
            name, version = ln.split("==", 1)
            installed[canonical(name)] = version.split("+")[0]
    installed.pop("resviz", None)
    installed.pop("pip", None)
    assert {canonical(k): v for k, v in pins.items()} == installed


def test_direct_requirements_agree_with_the_constraints() -> None:
    lines = (ROOT / "constraints.txt").read_text().splitlines()
    pins = {ln.split("==")[0].lower(): ln.split("==")[1] for ln in lines if "==" in ln}
    for req in ("requirements.txt", "requirements-dev.txt"):
        for ln in (ROOT / req).read_text().splitlines():
            ln = ln.split("#")[0].strip()
            if "==" in ln:
                name, version = ln.split("==")
                assert pins.get(name.lower()) == version, f"{req}: {ln} vs constraints"
