"""Each extra of the package installs, in a clean venv, every package its files import.

What an extra promises is read from the code, not typed: the third-party modules that
the library (resviz/), the app (streamlit_app.py, app_pages/, ui/, deploy/cloud/) and the
tests (tests/, benchmarks/, conftest.py) import anywhere in their files. One venv is
built step by step, as a user would: torch first (the build this machine offers), then
the wheel alone, then ``[notebook]`` (what an exported notebook's setup cell imports),
then ``[app]``, then ``[test]``, each with ``-c constraints.txt``; after
each step the promised modules are imported there, before the next step adds anything.
With the bare wheel in, the README's example runs there too.
The bare wheel must not bring the app's packages (so the app check can fail), and the app
extra runs the app's entry point and its Workshop page (segno's QR codes) under AppTest."""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from tests.install.test_wheel import assert_readme_example_runs, build_wheel

ROOT = Path(__file__).resolve().parents[2]
LOCAL = {"resviz", "ui", "app_pages", "tests", "benchmarks", "deploy", "conftest", "__future__"}


def imported_modules(*paths: Path) -> set[str]:
    """Top-level third-party modules that these files (folders walked) import."""
    files: list[Path] = []
    for path in paths:
        files += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    found: set[str] = set()
    for file in files:
        for node in ast.walk(ast.parse(file.read_text(), str(file))):
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return {m for m in found if m not in sys.stdlib_module_names and m not in LOCAL}


# resviz.pretrained imports transformers and the hub client when a model is loaded: the
# `pretrained` extra brings them; the rest of the library needs only the base wheel.
# Scanned when a test asks (every file parsed: seconds), not at collection.
@functools.cache
def scanned(part: str) -> frozenset[str]:
    """The third-party modules a part imports: ``pretrained``, ``library``, ``app``,
    ``tests`` (read from its files), or ``notebook`` (the exported notebook's setup)."""
    resviz = ROOT / "resviz"
    found = {
        "pretrained": lambda: imported_modules(resviz / "pretrained"),
        "library": lambda: imported_modules(
            *(p for p in resviz.iterdir() if p.name != "pretrained")
        ),
        "app": lambda: imported_modules(
            ROOT / "streamlit_app.py", ROOT / "app_pages", ROOT / "ui", ROOT / "deploy" / "cloud"
        ),
        "tests": lambda: imported_modules(
            ROOT / "tests", ROOT / "benchmarks", ROOT / "conftest.py"
        ),
        "notebook": notebook_modules,
    }[part]()
    return frozenset(found)


def notebook_modules() -> set[str]:
    """What an exported notebook's setup cell imports (ui/notebook.py's SETUP)."""
    from ui.notebook import SETUP

    found: set[str] = set()
    for node in ast.walk(ast.parse(SETUP)):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
    return found - {"resviz"}


APP_CHECK = """
from streamlit.testing.v1 import AppTest
at = AppTest.from_file("streamlit_app.py", default_timeout=120).run()
assert not at.exception, [e.value for e in at.exception]
at.switch_page("app_pages/workshop.py").run()
assert not at.exception, [e.value for e in at.exception]
print("APP_OK", at.title[0].value)
"""


def test_the_scan_finds_what_each_part_is_known_to_import() -> None:
    assert {"torch", "numpy", "pandas", "altair"} <= scanned("library")
    assert {"streamlit", "segno"} <= scanned("app") and "streamlit" not in scanned("library")
    assert {"pytest", "nbclient", "nbformat", "playwright", "hypothesis"} <= scanned("tests")
    assert {"altair", "pandas", "vl_convert"} <= scanned("notebook")


class Venv:
    def __init__(self, path: Path) -> None:
        venv.EnvBuilder(with_pip=True).create(path)
        self.py = str(path / "bin" / "python")

    def pip(self, *args: str) -> None:
        cmd = [self.py, "-m", "pip", "install", "-q", "--disable-pip-version-check", *args]
        done = subprocess.run(cmd, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-3000:]

    def missing(self, modules: set[str]) -> list[str]:
        """The modules that do not import here (each tried on its own)."""
        code = (
            "import importlib, sys\nbad = []\n"
            f"for m in {sorted(modules)!r}:\n"
            "    try: importlib.import_module(m)\n"
            "    except Exception as e: bad.append(f'{m}: {type(e).__name__}: {e}')\n"
            "print('\\n'.join(bad))"
        )
        out = subprocess.run([self.py, "-c", code], capture_output=True, text=True, check=True)
        return [line for line in out.stdout.splitlines() if line]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("wheel"))


def test_each_extra_installs_what_its_files_import(wheel: Path, tmp_path: Path) -> None:
    env = Venv(tmp_path / "venv")
    constraints = ("-c", str(ROOT / "constraints.txt"))
    env.pip(*constraints, "torch")  # torch first: the build this machine offers (README)

    env.pip(*constraints, str(wheel))
    assert env.missing(scanned("library")) == []
    # The README's example, in this venv as a user has it now: torch and the bare wheel.
    assert_readme_example_runs(env.py, tmp_path / "venv", tmp_path / "readme")
    assert env.missing({"streamlit", "segno"}) != [], "the bare wheel brought the app's packages"
    assert env.missing({"vl_convert"}) != [], "the bare wheel brought the notebook's packages"

    assert env.missing({"transformers"}) != [], "the bare wheel brought transformers"

    env.pip(*constraints, f"{wheel}[notebook]")
    assert env.missing(scanned("notebook")) == []

    env.pip(*constraints, f"{wheel}[pretrained]")
    assert env.missing(scanned("pretrained")) == []

    env.pip(*constraints, f"{wheel}[app]")
    assert env.missing(scanned("app")) == []
    app = subprocess.run(
        [env.py, "-c", APP_CHECK],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
    )
    assert app.returncode == 0, app.stderr[-3000:]
    assert "APP_OK Workshop" in app.stdout

    env.pip(*constraints, f"{wheel}[test]")
    assert env.missing(scanned("tests")) == []
