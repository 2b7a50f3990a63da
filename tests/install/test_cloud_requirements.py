"""The Community Cloud deploy path (deploy/cloud/): CPU torch, every package pinned.

What can be checked here is checked: the file resolves, in a pip dry run against
the indexes this machine reaches, to exactly the packages it pins (nothing floats),
at constraints.txt's versions, with nothing from the CUDA stack. The torch line
points at download.pytorch.org, which this machine cannot reach; the dry run puts
the same release in its place (the build offered here is the CPU one). The entry
point itself runs the app under AppTest."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]
CLOUD = ROOT / "deploy" / "cloud"
CUDA = re.compile(r"^(nvidia-|triton|cuda-)", re.I)


def _pins(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        line = line.split("#")[0].strip()
        if "==" in line:
            name, version = line.split("==")
            out[name.lower().replace("_", "-")] = version
    return out


def _torch_line() -> str:
    lines = (CLOUD / "requirements.txt").read_text().splitlines()
    (line,) = [ln for ln in lines if ln.startswith("torch")]
    return line


def test_torch_is_the_cpu_wheel_of_the_pinned_release() -> None:
    constraints = _pins(ROOT / "constraints.txt")
    line = _torch_line()
    m = re.fullmatch(
        r"torch @ https://download\.pytorch\.org/whl/cpu/torch-([\d.]+)%2Bcpu-cp311-cp311-"
        r"manylinux_2_28_x86_64\.whl",
        line,
    )
    assert m, f"not PyTorch's CPU wheel for CPython 3.11: {line}"
    assert m.group(1) == constraints["torch"]


def test_cloud_requirements_resolve_to_what_they_pin(tmp_path: Path) -> None:
    constraints = _pins(ROOT / "constraints.txt")
    pinned = _pins(CLOUD / "requirements.txt")
    reqs = tmp_path / "requirements.txt"
    text = (CLOUD / "requirements.txt").read_text()
    reqs.write_text(text.replace(_torch_line(), f"torch=={constraints['torch']}"))
    report = tmp_path / "report.json"
    cmd = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "-q"]
    subprocess.run(
        [*cmd, "--report", str(report), "-r", str(reqs)],
        check=True,
        capture_output=True,
        text=True,
    )
    resolved = {
        i["metadata"]["name"].lower().replace("_", "-"): i["metadata"]["version"]
        for i in json.loads(report.read_text())["install"]
    }
    assert not [n for n in resolved if CUDA.match(n)], "CUDA packages in the Cloud install"
    assert resolved.pop("torch").split("+")[0] == constraints["torch"]
    assert resolved == pinned, "Cloud requirements do not pin exactly what they install"
    for name, version in pinned.items():
        if name in constraints:
            assert constraints[name] == version, f"{name}: {version} vs constraints.txt"


def test_cloud_entry_point_runs_the_app() -> None:
    at = AppTest.from_file(str(CLOUD / "streamlit_app.py"), default_timeout=120).run()
    assert not at.exception
    assert "residual connections" in at.title[0].value
    at.switch_page(str(ROOT / "app_pages" / "sinusoidal_encoding.py")).run()
    assert not at.exception
    assert at.title[0].value == "Sinusoidal encoding"
