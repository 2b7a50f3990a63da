"""An exported notebook's first code cell installs this project, and nothing else of
that name.

A notebook names the commit it was made from; its install cell installs resviz from
that commit (``git+<home>@<full hash>``: that code or an error). Checked offline against
the artefacts of this checkout: a git repository made from its files, served as
``file://``, stands for the project's home. In a clean venv that holds only PyTorch, the
notebook's cells run as a user runs them: the first installs resviz (and, for a section
on the Sonnets GPT-2, the ``pretrained`` extra and the ``resviz-models`` data package),
the rest reproduce the section's CSVs, as the app drew them (about 3 minutes). The notebook that is offered
where no commit can be named installs nothing and says which version to install."""

from __future__ import annotations

import io
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

import ui.notebook
import ui.views
from tests.gitrepo import commit_all
from tests.install.test_extras import Venv

ROOT = Path(__file__).resolve().parents[2]
# What the project's wheel and the data package build from.
PROJECT_FILES = ("pyproject.toml", "README.md", "LICENSE", "resviz", "models")
# One section on the Sonnets GPT-2: its notebook installs all three parts (resviz, the
# extras, resviz-models); a plain section's install line, one part, is
# tests/app/test_notebook_source.py's.
CASES = [("app_pages/pretrained.py", "Stream norms", True)]


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """A git repository holding this checkout's project files, one commit: (URL, hash)."""
    repo = tmp_path_factory.mktemp("home")
    for name in PROJECT_FILES:
        src = ROOT / name
        if src.is_dir():
            ignore = shutil.ignore_patterns("__pycache__", "build", "*.egg-info")
            shutil.copytree(src, repo / name, ignore=ignore)
        else:
            shutil.copy(src, repo / name)
    commit = commit_all(repo, "release")
    # file://localhost/...: the form a PEP 508 URL takes for a local path (pip 23 refuses
    # file:///... in "name @ url").
    return f"file://localhost{repo}", commit


@pytest.fixture(scope="module")
def torch_venv(tmp_path_factory: pytest.TempPathFactory) -> Venv:
    """A clean venv with PyTorch only (the build this machine offers), as a user's."""
    env = Venv(tmp_path_factory.mktemp("venv") / "venv")
    env.pip("-c", str(ROOT / "constraints.txt"), "torch")
    return env


def exported(
    monkeypatch: pytest.MonkeyPatch, page: str, section: str, commit: str | None, home: str
) -> tuple[dict, dict[str, str]]:
    """The section's notebook (JSON) and CSVs, as the app offers them at seed 3, made by
    an app whose code is ``commit`` of ``home``."""
    csvs: dict[str, str] = {}
    notebooks: list[ui.notebook.Notebook] = []
    monkeypatch.setattr(ui.notebook, "source_commit", lambda: commit)
    monkeypatch.setattr(ui.notebook, "REPOSITORY", home)
    monkeypatch.setattr(
        ui.views,
        "csv_button",
        lambda df, name, label="": csvs.setdefault(name, df.to_csv(index=False)),
    )
    monkeypatch.setattr(ui.notebook.Notebook, "download", lambda nb, name: notebooks.append(nb))
    at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=120)
    at.query_params.update(seed="3", section=section)
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    (nb,) = notebooks
    return nb.to_json(), csvs


def as_script(nb: dict, out: Path) -> str:
    """The notebook's code cells in order, then each declared table written to ``out``."""
    code = [c["source"] for c in nb["cells"] if c["cell_type"] == "code"]
    frames = nb["metadata"]["resviz"]["frames"]
    code += [
        f"{var}.to_csv({str(out / (name + '.csv'))!r}, index=False)" for name, var in frames.items()
    ]
    code.append("import resviz\nprint('RESVIZ_FROM', resviz.__file__)")
    return "\n\n".join(code)


def test_without_a_commit_the_first_cell_installs_nothing_and_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, torch_venv: Venv
) -> None:
    # (first: the venv has no resviz yet)
    nb, _ = exported(monkeypatch, *CASES[0][:2], None, "file:///nowhere")
    install = nb["cells"][1]["source"]
    assert "git+" not in install and "pip" not in install
    assert "no recorded commit" in nb["cells"][0]["source"]
    (tmp_path / "cell.py").write_text(install)
    done = subprocess.run(
        [torch_venv.py, str(tmp_path / "cell.py")], capture_output=True, text=True
    )
    assert done.returncode == 1
    want = f"Install resviz {ui.notebook.RESVIZ_VERSION} with its extras [notebook,pretrained]"
    assert want in done.stderr


@pytest.mark.parametrize(("page", "section", "pretrained"), CASES, ids=[c[1] for c in CASES])
def test_the_first_cell_installs_this_commit_and_the_notebook_reproduces_the_section(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    home: tuple[str, str],
    torch_venv: Venv,
    page: str,
    section: str,
    pretrained: bool,
) -> None:
    url, commit = home
    nb, csvs = exported(monkeypatch, page, section, commit, url)
    install = nb["cells"][1]
    assert install["id"] == "install" and f"COMMIT = {commit!r}" in install["source"]
    assert f"HOME = {'git+' + url!r}" in install["source"]
    assert ("resviz-models @" in install["source"]) is pretrained
    assert f"at commit `{commit}`" in nb["cells"][0]["source"]
    (tmp_path / "nb.py").write_text(as_script(nb, tmp_path))
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    done = subprocess.run(
        [torch_venv.py, "nb.py"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-3000:])
    origin = Path(done.stdout.split("RESVIZ_FROM", 1)[1].strip())
    assert Path(torch_venv.py).parents[1] in origin.parents, origin
    freeze = subprocess.run(
        [torch_venv.py, "-m", "pip", "freeze"], capture_output=True, text=True, check=True
    ).stdout
    assert f"resviz @ git+{url}@{commit}" in freeze
    assert (f"resviz-models @ git+{url}@{commit}" in freeze) is pretrained
    frames = nb["metadata"]["resviz"]["frames"]
    assert frames, "the notebook declares no table to compare"
    for name in frames:
        got = pd.read_csv(tmp_path / f"{name}.csv")
        want = pd.read_csv(io.StringIO(csvs[name]))
        pd.testing.assert_frame_equal(got, want, check_exact=False, rtol=1e-9, atol=1e-12)
