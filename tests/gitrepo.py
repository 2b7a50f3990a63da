"""A folder made a git repository of one commit, for tests of what names a commit."""

from __future__ import annotations

import subprocess
from pathlib import Path


def commit_all(folder: Path, message: str = "x") -> str:
    """``git init`` in ``folder``, every file in it committed: the commit's full hash."""
    git = ["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", message], check=True)
    done = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True)
    return done.stdout.strip()
