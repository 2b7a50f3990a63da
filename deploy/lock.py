"""`make lock`: write constraints.txt and deploy/cloud/requirements.txt in one run.

Both files are the output of pip's own resolver (``pip install --dry-run --report``,
nothing installed), so they name exactly what an install brings:

- ``constraints.txt``: every package ``requirements-dev.txt`` installs on CPython 3.11
  (Linux x86_64), pinned. The README's two commands install with ``-c constraints.txt``.
- ``deploy/cloud/requirements.txt``: what Streamlit Community Cloud installs for the app
  (``requirements.txt``), resolved separately for every Python Cloud offers (3.11 to
  3.14) against constraints.txt; torch is PyTorch's CPU wheel for each by environment
  marker, with its ``#sha256=`` hash, a package only one Python needs carries a marker too.

Reproducible: the pins already written are the resolver's preferences, so a second run
gives identical files; only a changed requirements file moves a pin (the packages it
names are re-resolved, the rest stay). ``--upgrade`` (``make lock UPGRADE=1``) drops the
preferences and takes the newest releases.

constraints.txt is resolved by pip on a real CPython 3.11 (``python3.11`` on PATH or under
pyenv). The Cloud file is resolved by uv (``uv pip compile --python-version X
--python-platform x86_64-manylinux_2_28``), for two reasons: Community Cloud installs
with uv first, and uv evaluates environment markers for the target Python without its
interpreter, where pip evaluates them with the interpreter that runs it, whatever
``--python-version`` says (this machine has no CPython 3.14).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONSTRAINTS = ROOT / "constraints.txt"
CLOUD = ROOT / "deploy" / "cloud" / "requirements.txt"
LOCK_PYTHON = "3.11"
# Every Python Community Cloud offers in its app settings (3.12 is its default).
CLOUD_PYTHONS = ("3.11", "3.12", "3.13", "3.14")
CLOUD_PLATFORM = "x86_64-manylinux_2_28"
# PyPI's Linux torch wheels pull NVIDIA's CUDA libraries; PyTorch's CPU wheel of the same
# release needs none of them (its other requirements are the same list). Where the
# resolver sees the CUDA build (no local CPU wheel), its CUDA-only packages are left out.
CUDA = re.compile(r"^(nvidia-|triton$|cuda-)", re.I)
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
# sha256 of PyTorch's CPU wheels (manylinux_2_28_x86_64), as PyTorch's CPU index lists
# them. cp311: equal to sha256sum of the wheel `pip install torch==2.13.0` takes on this
# project's machines (tests/install/test_cloud_requirements.py recomputes it there).
# cp312, cp313, cp314: the same index's values, as recorded by public lock files and
# sha256sum listings of that index that agree with each other and with the cp311 value
# recomputed here (cp313: 191,815,667 bytes). A new torch release needs a line per Python
# here; lock refuses a torch pin without them.
TORCH_CPU_SHA256 = {
    ("2.13.0", "cp311"): "6746dbcbeb526eb61330b76b41ff1b4eb848951103a892eeb080dfa2b264667b",
    ("2.13.0", "cp312"): "4ca4a9394b0c771238a4f73590fdbbc4debad85ed0fa63d026ae1b085da7d6e2",
    ("2.13.0", "cp313"): "3fbf9c9d1f3c10c2d59d04aca426dee9ccc6ceb32d255c61e93acc3b4f75fae6",
    ("2.13.0", "cp314"): "d20fa53ee744502fa4c69818a720b05ca0d37abd055d4f6e66cae155114bc691",
}

CONSTRAINTS_HEADER = """\
# Every package the app and the tests install, pinned (transitive ones included), for
# CPython 3.11 on Linux x86_64. The README's two commands install with -c constraints.txt.
# Written by `make lock` (deploy/lock.py, pip's resolver); do not edit by hand.
# torch is written without its local label (+cpu) so the pin holds for either build.
"""

CLOUD_HEADER = """\
# Streamlit Community Cloud installs this file (it sits beside the entry point
# deploy/cloud/streamlit_app.py), trying uv first, then pip. Written by `make lock`
# (deploy/lock.py) from requirements.txt and constraints.txt; do not edit by hand.
# Python 3.11 to 3.14 (every Python Cloud offers): torch is PyTorch's CPU wheel for that
# Python on Linux x86_64 (about 190 MB; PyPI's default Linux build pulls about 2.7 GB of
# CUDA libraries the app cannot use there), chosen by environment marker and checked by
# its sha256. Every other package is pinned to constraints.txt's version; a package only one
# Python needs has a marker. tests/install/test_cloud_requirements.py checks all of it.
# Local setup never reads this file.
"""


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def read_pins(path: Path) -> dict[str, tuple[str, str]]:
    """{normalized name: (name as written, version)} of the ``name==version`` lines."""
    pins: dict[str, tuple[str, str]] = {}
    if not path.exists():
        return pins
    for line in path.read_text().splitlines():
        line = line.split("#")[0].split(";")[0].strip()
        if "==" in line:
            name, version = (s.strip() for s in line.split("==", 1))
            pins[norm(name)] = (name, version)
    return pins


def direct_names(*files: Path) -> set[str]:
    """The packages the requirements files name themselves (``-r`` followed)."""
    names: set[str] = set()
    for path in files:
        for line in path.read_text().splitlines():
            line = line.split("#")[0].strip()
            if line.startswith("-r"):
                names |= direct_names(path.parent / line[2:].strip())
            elif line and not line.startswith("-"):
                names.add(norm(re.split(r"[=<>!~;\[ @]", line, maxsplit=1)[0]))
    return names


def interpreter(version: str) -> str:
    """A CPython ``version`` interpreter: on PATH, or one pyenv installed."""
    if f"{sys.version_info.major}.{sys.version_info.minor}" == version:
        return sys.executable
    found = shutil.which(f"python{version}")
    if found and subprocess.run([found, "-V"], capture_output=True).returncode == 0:
        return found
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    for candidate in sorted(pyenv_root.glob(f"versions/{version}.*/bin/python{version}")):
        return str(candidate)
    sys.exit(f"lock: no Python {version} interpreter found (python{version} or pyenv)")


def resolve(python: str, args: list[str], work: Path) -> dict[str, tuple[str, str]]:
    """{normalized name: (name, version)} that ``pip install args`` would install on
    ``python`` (a dry run in an empty target: what is installed here plays no part)."""
    report = work / "report.json"
    cmd = [python, "-m", "pip", "install", "--dry-run", "--ignore-installed", "-q"]
    cmd += ["--disable-pip-version-check", "--only-binary=:all:", "--report", str(report)]
    done = subprocess.run([*cmd, *args], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(
            f"lock: pip could not resolve {' '.join(args)} on {python}:\n{done.stderr}\n"
            "If a requirement moved past a kept pin, run `make lock UPGRADE=1`."
        )
    out: dict[str, tuple[str, str]] = {}
    for item in json.loads(report.read_text())["install"]:
        name, version = item["metadata"]["name"], item["metadata"]["version"]
        if CUDA.match(name) or norm(name) in ("resviz", "pip"):
            continue
        out[norm(name)] = (name, version.split("+")[0])
    return out


def uv() -> str:
    """The uv executable beside this interpreter (requirements-dev.txt pins it)."""
    found = Path(sys.executable).parent / "uv"
    if found.is_file():
        return str(found)
    return shutil.which("uv") or sys.exit("lock: uv not found: run make setup-dev")


def resolve_cloud(python: str, args: list[str], work: Path) -> dict[str, tuple[str, str]]:
    """{normalized name: (name, version)} that uv resolves ``args`` to for CPython
    ``python`` on Cloud's platform, binary wheels only (nothing installed)."""
    out_file = work / f"cloud-{python}.txt"
    # uv reads "3.11" as 3.11.0; constraints.txt was resolved on a real 3.11 (3.11.7 here),
    # and a marker on the patch release (redis: async-timeout below 3.11.3) must read alike.
    if python == LOCK_PYTHON:
        python = subprocess.run(
            [interpreter(python), "-c", "import platform; print(platform.python_version())"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
    cmd = [uv(), "pip", "compile", "-q", "--no-header", "--no-annotate", "--only-binary", ":all:"]
    cmd += ["--python-version", python, "--python-platform", CLOUD_PLATFORM, "-o", str(out_file)]
    # pip's `-r FILE` is a positional source file to uv; `-c FILE` reads the same.
    uv_args = [a for a in args if a != "-r"]
    done = subprocess.run([*cmd, *uv_args], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"lock: uv could not resolve {' '.join(args)} for Python {python}:\n{done.stderr}")
    out: dict[str, tuple[str, str]] = {}
    for line in out_file.read_text().splitlines():
        line = line.split("#")[0].strip()
        if "==" not in line:
            continue
        name, version = (s.strip() for s in line.split("==", 1))
        if CUDA.match(name) or norm(name) in ("resviz", "pip"):
            continue
        out[norm(name)] = (name, version.split("+")[0])
    return out


def write_preferences(path: Path, pins: dict[str, tuple[str, str]], skip: set[str]) -> None:
    path.write_text("".join(f"{n}=={v}\n" for k, (n, v) in sorted(pins.items()) if k not in skip))


def torch_lines(version: str) -> list[str]:
    lines = []
    for py in CLOUD_PYTHONS:
        tag = "cp" + py.replace(".", "")
        digest = TORCH_CPU_SHA256.get((version, tag))
        if digest is None:
            sys.exit(f"lock: record the sha256 of torch {version}'s {tag} CPU wheel in {__file__}")
        wheel = f"torch-{version}%2Bcpu-{tag}-{tag}-manylinux_2_28_x86_64.whl"
        lines.append(f'torch @ {CPU_INDEX}/{wheel}#sha256={digest} ; python_version == "{py}"')
    return lines


def pin_lines(pins: dict[str, tuple[str, str]], marker: str = "") -> list[str]:
    suffix = f' ; python_version == "{marker}"' if marker else ""
    return [f"{n}=={v}{suffix}" for _, (n, v) in sorted(pins.items())]


def lock(upgrade: bool = False) -> tuple[str, str]:
    """The text of constraints.txt and of the Cloud file."""
    old = {} if upgrade else {**read_pins(CLOUD), **read_pins(CONSTRAINTS)}
    old.pop("torch", None)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        prefs = work / "preferences.txt"
        dev = ROOT / "requirements-dev.txt"
        write_preferences(prefs, old, direct_names(dev))
        pinned = resolve(interpreter(LOCK_PYTHON), ["-r", str(dev), "-c", str(prefs)], work)
        constraints = CONSTRAINTS_HEADER + "".join(f"{ln}\n" for ln in pin_lines(pinned))

        # The Cloud install: constraints.txt's pins, and the kept Cloud pins for a
        # package constraints.txt has not (one only another Python needs).
        locked = work / "constraints.txt"
        locked.write_text(constraints)
        cloud_prefs = {k: v for k, v in old.items() if k not in pinned}
        write_preferences(prefs, cloud_prefs, direct_names(ROOT / "requirements.txt"))
        runtime = ["-r", str(ROOT / "requirements.txt"), "-c", str(locked), "-c", str(prefs)]
        per_python = {py: resolve_cloud(py, runtime, work) for py in CLOUD_PYTHONS}
    # uv writes names lower-cased; keep each package's own spelling, as pip reports it.
    for pins in per_python.values():
        for k, (name, version) in pins.items():
            pins[k] = (pinned.get(k, (name, version))[0], version)
    torch_version = per_python[LOCK_PYTHON].pop("torch")[1]
    for py in CLOUD_PYTHONS[1:]:
        per_python[py].pop("torch")
    common = {
        k: v
        for k, v in per_python[LOCK_PYTHON].items()
        if all(per_python[p].get(k) == v for p in per_python)
    }
    lines = torch_lines(torch_version) + pin_lines(common)
    for py, pins in per_python.items():
        lines += pin_lines({k: v for k, v in pins.items() if k not in common}, py)
    return constraints, CLOUD_HEADER + "".join(f"{ln}\n" for ln in lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--upgrade", action="store_true", help="take the newest releases")
    parser.add_argument("--check", action="store_true", help="write nothing; fail if stale")
    args = parser.parse_args()
    constraints, cloud = lock(args.upgrade)
    if args.check:
        stale = [
            p.name for p, t in ((CONSTRAINTS, constraints), (CLOUD, cloud)) if p.read_text() != t
        ]
        sys.exit(f"lock: stale {', '.join(stale)}: run make lock" if stale else 0)
    CONSTRAINTS.write_text(constraints)
    CLOUD.write_text(cloud)
    print(f"wrote {CONSTRAINTS.relative_to(ROOT)} and {CLOUD.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
