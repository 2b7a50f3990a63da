"""Security invariants of the shipped code (tests are excluded: they may exec
code the app generates, never user input)."""

import ast
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SHIPPED = [
    p
    for p in [
        ROOT / "streamlit_app.py",
        *ROOT.glob("resviz/**/*.py"),  # subpackages too (charts, positional, codegen)
        *ROOT.glob("ui/**/*.py"),  # the room and the page declarations too
        *ROOT.glob("app_pages/*.py"),
        *ROOT.glob("deploy/**/*.py"),  # the workshop server, the lock, the Cloud entry
    ]
]
FORBIDDEN_CALLS = {"eval", "exec", "compile", "__import__", "input"}
FORBIDDEN_MODULES = {"pickle", "cPickle", "dill", "marshal", "shelve", "joblib"}
FORBIDDEN_ATTRS = {("torch", "load"), ("st", "html"), ("components", "html")}


def _constant_css(path: Path, call: ast.Call) -> bool:
    """The one allowed st.html: projector mode's style sheet, a module constant of
    ui/projector.py that holds a <style> block and nothing the user typed."""
    if path.relative_to(ROOT).as_posix() != "ui/projector.py":
        return False
    if len(call.args) != 1 or not isinstance(call.args[0], ast.Name) or call.args[0].id != "CSS":
        return False
    from ui import projector

    css = projector.CSS
    return css.startswith("<style>") and css.endswith("</style>") and css.count("<") == 2


def _violations(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        where = f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name) and f.id in FORBIDDEN_CALLS:
                found.append(f"{where} calls {f.id}()")
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
                if (f.value.id, f.attr) in FORBIDDEN_ATTRS and not _constant_css(path, node):
                    found.append(f"{where} calls {f.value.id}.{f.attr}()")
            for kw in node.keywords:
                if kw.arg == "unsafe_allow_html" and not (
                    isinstance(kw.value, ast.Constant) and kw.value.value is False
                ):
                    found.append(f"{where} passes unsafe_allow_html")
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] + [getattr(node, "module", None) or ""]
            for n in names:
                if n.split(".")[0] in FORBIDDEN_MODULES:
                    found.append(f"{where} imports {n}")
    return found


@pytest.mark.slow
def test_shipped_code_has_no_eval_pickle_torch_load_or_raw_html():
    assert len(SHIPPED) > 15
    problems = [v for p in SHIPPED for v in _violations(p)]
    assert not problems, problems


def test_the_scanner_catches_what_it_looks_for(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import pickle\nimport torch\neval('1')\ntorch.load('x')\n"
        "st.markdown(t, unsafe_allow_html=True)\n"
    )
    global ROOT
    old, ROOT = ROOT, tmp_path
    try:
        assert len(_violations(bad)) == 4
    finally:
        ROOT = old


def test_xsrf_protection_stays_on_and_no_secrets_are_committed():
    config = tomllib.loads((ROOT / ".streamlit/config.toml").read_text())
    assert config["server"].get("enableXsrfProtection", True) is True
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=False
    ).stdout.split()
    assert not [f for f in tracked if f.endswith("secrets.toml") or f.endswith(".env")]


def test_the_secrets_file_is_git_ignored():
    """A budget table or any other secret put in .streamlit/secrets.toml never gets committed."""
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", ".streamlit/secrets.toml"], cwd=ROOT, check=False
    )
    assert ignored.returncode == 0
