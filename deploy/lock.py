"""`make lock`: uv writes the hashed universal lock; two plain files are read off it.

- ``requirements.lock``: every package ``requirements-dev.txt`` installs (it takes in
  ``requirements.txt`` and ``requirements-workshop.txt``), for CPython 3.11 and later on
  every platform, each with the sha256 of its files: ``uv pip compile
  --universal --generate-hashes`` writes it whole. ``pip install --require-hashes -r
  requirements.lock`` is the hash-checked install of the test environment.
- ``constraints.txt``: its lines for CPython 3.11 on Linux x86_64, without hashes: what
  ``make setup`` and ``make setup-dev`` install with (``-c``). pip cannot take hashes from
  ``-c``: 23.2.1 (the pip a CPython 3.11 venv starts with) turns hash checking on and then
  refuses every requirement, and pip 26 checks them but then wants a hash on every
  requirement of the command, which ``.[test]``, a built wheel or the demo model never have.
- ``deploy/cloud/requirements.txt``: uv's universal resolution of ``requirements.txt``
  against the lock, read off for each Python Community Cloud offers on its platform
  (Linux x86_64); torch as a URL to PyTorch's CPU wheel with its ``#sha256=``.

torch: PyPI's Linux x86_64 wheel is the CUDA build (it pulls about 2.7 GB of nvidia-*
packages). uv resolves torch's CPU wheels from a one-package index this script writes
(PEP 503, in a temporary folder) out of ``TORCH_CPU_SHA256``; uv then picks them for Linux
x86_64 and PyPI's wheels elsewhere, and writes their hashes into the lock like any other.

Reproducible: uv keeps the pins of the lock it overwrites, so a second run changes nothing;
``--upgrade`` (``make lock UPGRADE=1``) takes the newest releases; ``--check`` writes
nothing and fails if a file differs from what the run gives.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import quote

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements.lock"
CONSTRAINTS = ROOT / "constraints.txt"
CLOUD = ROOT / "deploy" / "cloud" / "requirements.txt"
LOCK_PYTHON = "3.11"
# Every Python Community Cloud offers in its app settings (3.12 is its default).
CLOUD_PYTHONS = ("3.11", "3.12", "3.13", "3.14")
# PyPI's Linux torch wheels pull NVIDIA's CUDA libraries; PyTorch's CPU wheel needs none.
CUDA = re.compile(r"^(nvidia-|triton$|cuda-)", re.I)
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
# sha256 of PyTorch's CPU wheels (manylinux_2_28_x86_64), as PyTorch's CPU index lists
# them; the one part of the lock kept by hand, since this project's machines cannot reach
# that index. cp311: equal to sha256sum of the wheel `pip install torch==2.13.0` takes on
# this project's machines (tests/install/test_cloud_requirements.py recomputes it there).
# cp312, cp313, cp314: the same index's values, as recorded by public lock files and
# sha256sum listings of that index that agree with each other and with the cp311 value
# recomputed here (cp313: 191,815,667 bytes). A new torch release needs a line per Python
# here; lock refuses a CUDA package on Linux x86_64 (what a missing line would bring).
TORCH_CPU_SHA256 = {
    ("2.13.0", "cp311"): "6746dbcbeb526eb61330b76b41ff1b4eb848951103a892eeb080dfa2b264667b",
    ("2.13.0", "cp312"): "4ca4a9394b0c771238a4f73590fdbbc4debad85ed0fa63d026ae1b085da7d6e2",
    ("2.13.0", "cp313"): "3fbf9c9d1f3c10c2d59d04aca426dee9ccc6ceb32d255c61e93acc3b4f75fae6",
    ("2.13.0", "cp314"): "d20fa53ee744502fa4c69818a720b05ca0d37abd055d4f6e66cae155114bc691",
}

CONSTRAINTS_HEADER = """\
# Every package the app and the tests install, pinned (transitive ones included), for
# CPython 3.11 on Linux x86_64: requirements.lock's lines for it, without their hashes.
# The README's two commands install with -c constraints.txt. Written by `make lock`
# (deploy/lock.py); do not edit by hand. torch is written without its local label (+cpu)
# so the pin holds for either build.
"""

CLOUD_HEADER = """\
# Streamlit Community Cloud installs this file (it sits beside the entry point
# deploy/cloud/streamlit_app.py), trying uv first, then pip. Written by `make lock`
# (deploy/lock.py): uv's resolution of requirements.txt against requirements.lock, for
# Linux x86_64; do not edit by hand. Python 3.11 to 3.14 (every Python Cloud offers):
# torch is PyTorch's CPU wheel for that Python (about 190 MB; PyPI's default Linux build
# pulls about 2.7 GB of CUDA libraries the app cannot use there), chosen by environment
# marker and checked by its sha256. Every other package is pinned to requirements.lock's
# version; a package only one Python needs has a marker. Checked by
# tests/install/test_cloud_requirements.py. Local setup never reads this file.
"""


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def read_pins(path: Path) -> dict[str, tuple[str, str]]:
    """{normalized name: (name as written, version)} of the ``name==version`` lines."""
    pins: dict[str, tuple[str, str]] = {}
    for line in path.read_text().splitlines() if path.exists() else []:
        line = line.split("#")[0].split(";")[0].strip()
        if "==" in line:
            name, version = (s.strip() for s in line.split("==", 1))
            pins[norm(name)] = (name, version)
    return pins


def environment(python: str) -> dict[str, str]:
    """PEP 508 marker values of CPython ``python`` on Linux x86_64, at a patch release later
    than any a marker names (redis needs async-timeout only before 3.11.3)."""
    full = f"{python}.99"
    return {
        "implementation_name": "cpython",
        "implementation_version": full,
        "os_name": "posix",
        "platform_machine": "x86_64",
        "platform_python_implementation": "CPython",
        "platform_release": "",
        "platform_system": "Linux",
        "platform_version": "",
        "python_full_version": full,
        "python_version": python,
        "sys_platform": "linux",
    }


def applying(text: str, python: str) -> dict[str, tuple[str, str]]:
    """{normalized name: (name, version)} of the lines of uv's output that an installer
    takes on CPython ``python``, Linux x86_64 (markers evaluated, hashes dropped)."""
    pins: dict[str, tuple[str, str]] = {}
    for line in text.replace("\\\n", " ").splitlines():
        line = line.split(" --hash=")[0].split("#")[0].strip()
        if line:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate(environment(python)):
                pins[norm(req.name)] = (req.name, str(req.specifier).removeprefix("=="))
    return pins


def find_links() -> list[Path]:
    """The local folders pip is told to look in (``pip config list``: files and env)."""
    out = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True
    ).stdout
    values = [ln.split("=", 1)[1].strip("'") for ln in out.splitlines() if ".find-links=" in ln]
    return [Path(v.removeprefix("file://")) for value in values for v in value.split()]


def torch_index(work: Path) -> str:
    """A one-package index (PEP 503) of the CPU wheels in ``TORCH_CPU_SHA256``. Each link
    is PyTorch's URL, or a local copy pip finds (uv reads torch's metadata from the wheel:
    one it can open is enough, since every wheel of a release declares the same)."""
    links, folders = [], find_links()
    for (version, tag), digest in sorted(TORCH_CPU_SHA256.items()):
        name = f"torch-{version}+cpu-{tag}-{tag}-manylinux_2_28_x86_64.whl"
        local = [d / name for d in folders if (d / name).is_file()]
        href = local[0].as_uri() if local else f"{CPU_INDEX}/{quote(name)}"
        links.append(f'<a href="{href}#sha256={digest}">{name}</a><br>\n')
    (work / "torch").mkdir()
    (work / "torch" / "index.html").write_text(f"<html><body>\n{''.join(links)}</body></html>\n")
    return work.as_uri()


def uv() -> str:
    """The uv executable beside this interpreter (requirements-dev.txt pins it)."""
    found = Path(sys.executable).parent / "uv"
    if found.is_file():
        return str(found)
    return shutil.which("uv") or sys.exit("lock: uv not found: run make setup-dev")


def compile_(source: str, out: Path, index: str, *args: str) -> str:
    """``uv pip compile`` of ``source`` (relative to ROOT, as the lock's comments name it)
    for CPython 3.11 and later on every platform; uv's output text."""
    cmd = [uv(), "pip", "compile", "-q", source, "-o", str(out), "--universal"]
    cmd += ["--python-version", LOCK_PYTHON, "--index", index]
    # Every index's versions in one pool: PyPI's torch for the platforms the CPU index lacks.
    cmd += ["--index-strategy", "unsafe-best-match", *args]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"lock: uv could not resolve {source}:\n{done.stderr}")
    return out.read_text()


def lock(upgrade: bool = False) -> tuple[str, str, str]:
    """The text of requirements.lock, constraints.txt and the Cloud file."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        index = torch_index(work)
        out = work / LOCK.name
        if LOCK.exists():  # uv keeps the pins of the file it overwrites
            shutil.copy(LOCK, out)
        hashed = ["--generate-hashes", "--custom-compile-command", "make lock"]
        hashed += ["--upgrade"] if upgrade else []
        locked = compile_("requirements-dev.txt", out, index, *hashed)
        app = compile_("requirements.txt", work / "app.txt", index, "-c", str(out))
    for py in CLOUD_PYTHONS:
        if cuda := [n for n in applying(locked, py) if CUDA.match(n)]:
            sys.exit(f"lock: {cuda} on Linux x86_64: record torch's CPU wheels in {__file__}")
    pins = {k: (n, v.split("+")[0]) for k, (n, v) in applying(locked, LOCK_PYTHON).items()}
    constraints = CONSTRAINTS_HEADER + "".join(f"{n}=={v}\n" for n, v in sorted(pins.values()))

    per_python = {py: applying(app, py) for py in CLOUD_PYTHONS}
    lines = []
    for py, py_pins in per_python.items():
        version = py_pins.pop("torch")[1].removesuffix("+cpu")
        tag = "cp" + py.replace(".", "")
        wheel = f"torch-{version}%2Bcpu-{tag}-{tag}-manylinux_2_28_x86_64.whl"
        digest = TORCH_CPU_SHA256[(version, tag)]
        lines.append(f'torch @ {CPU_INDEX}/{wheel}#sha256={digest} ; python_version == "{py}"')
    first = per_python[LOCK_PYTHON]
    common = {k: v for k, v in first.items() if all(p.get(k) == v for p in per_python.values())}
    lines += [f"{n}=={v}" for n, v in sorted(common.values())]
    for py, py_pins in per_python.items():
        rest = sorted(v for k, v in py_pins.items() if k not in common)
        lines += [f'{n}=={v} ; python_version == "{py}"' for n, v in rest]
    return locked, constraints, CLOUD_HEADER + "".join(f"{ln}\n" for ln in lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--upgrade", action="store_true", help="take the newest releases")
    parser.add_argument("--check", action="store_true", help="write nothing; fail if stale")
    args = parser.parse_args()
    files = dict(zip((LOCK, CONSTRAINTS, CLOUD), lock(args.upgrade), strict=True))
    if args.check:
        stale = [str(p.relative_to(ROOT)) for p, t in files.items() if p.read_text() != t]
        sys.exit(f"lock: stale {', '.join(stale)}: run make lock" if stale else 0)
    for path, text in files.items():
        path.write_text(text)
    print(f"wrote {', '.join(str(p.relative_to(ROOT)) for p in files)}")


if __name__ == "__main__":
    main()
