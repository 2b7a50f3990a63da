"""The Makefile's `system` target says what it installs in words, and asks apt-get for
exactly those packages. Run as `make -n` prints it, with the two programs it looks for
moved to paths that do not exist, no sudo, and a stand-in apt-get that records its
arguments."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("chromium", "nginx", "said", "installed"),
    [
        (False, False, "installing chromium nginx (Debian packages)", "chromium nginx"),
        (False, True, "installing chromium (Debian packages)", "chromium"),
        (True, False, "installing nginx (Debian packages)", "nginx"),
        (True, True, "", ""),
    ],
)
def test_system_target_names_what_it_installs(tmp_path, chromium, nginx, said, installed):
    recipe = subprocess.run(
        ["make", "-n", "-s", "system", "SUDO="],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "apt.log"
    stub = bin_dir / "apt-get"
    stub.write_text(f'#!/bin/sh\necho "$@" >> {log}\n')
    stub.chmod(0o755)
    fake_chromium, fake_nginx = tmp_path / "chromium", tmp_path / "nginx"
    for path, present in ((fake_chromium, chromium), (fake_nginx, nginx)):
        if present:
            path.write_text("#!/bin/sh\n")
            path.chmod(0o755)
    script = recipe.replace("/usr/bin/chromium", str(fake_chromium))
    script = script.replace("/usr/sbin/nginx", str(fake_nginx))
    script = script.replace("command -v nginx", "command -v resviz-no-such-nginx")
    env = {"PATH": f"{bin_dir}{os.pathsep}/usr/bin:/bin", "HOME": str(tmp_path)}
    out = subprocess.run(["sh", "-c", script], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == said
    calls = log.read_text().splitlines() if log.exists() else []
    if installed:
        assert calls == ["update -qq", f"install -y -qq {installed}"]
    else:
        assert calls == []


@pytest.mark.parametrize(
    ("given", "args"),
    [
        ([], []),
        (["MODEL_FOLDERS=/srv/models:/data/more"], ["--model-folders", "/srv/models:/data/more"]),
        (["CERT=/c/cert.pem", "KEY=/c/key.pem"], ["--cert", "/c/cert.pem", "--key", "/c/key.pem"]),
        (["HTTP=1"], ["--http"]),
    ],
)
def test_make_workshop_passes_the_folders_and_the_certificate(given, args):
    """`make workshop` serves HTTPS (serve.py's default) and no model folders unless
    CERT/KEY, HTTP or MODEL_FOLDERS are given (the recipe as `make -n` prints it)."""
    import shlex

    recipe = subprocess.run(
        ["make", "-n", "-s", "-o", "setup", "-o", "nginx", "workshop",
         "WORKSHOP_PORT=8500", "REPLICAS=2", *given],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.replace("\\\n", " ")  # fmt: skip
    (line,) = [ln for ln in recipe.splitlines() if "serve.py" in ln]
    words = shlex.split(line)
    start = words.index("--replicas") + 2
    assert words[start:] == args, words
    assert ("--http" in words) == ("HTTP=1" in given)
