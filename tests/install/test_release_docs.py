"""What a stranger reads before installing, citing or building on resviz.

* README.md is rendered on a package page (PyPI) with no repository around it: every
  link and image there is an in-page anchor whose heading exists, or an absolute https
  URL; one into the repository (resviz/_version.py's ``REPOSITORY``) names a file or
  folder this checkout has.
* CITATION.cff is valid YAML carrying the package's version, licence and the date
  CHANGELOG.md gives that version.
* CHANGELOG.md has an Unreleased section and one for the current version; every
  version it lists is tagged (``v<version>``) on a commit that says that version.
* CONTRIBUTING.md names the two loops, and every repository path it names exists.

Reads files and git's tags only: no build, no venv.
"""

from __future__ import annotations

import datetime
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from resviz import __version__
from resviz._version import REPOSITORY

ROOT = Path(__file__).resolve().parents[2]

FENCE = re.compile(r"^(```|~~~).*?^\1\s*$", re.M | re.S)
CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
# [text](target) and ![alt](target), text holding one level of brackets, an optional title.
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.M)
HTML_TARGET = re.compile(r"<(?:a|img)\b[^>]*?\b(?:href|src)\s*=\s*[\"']([^\"']+)[\"']", re.I)
IN_REPO = re.compile(rf"^{re.escape(REPOSITORY)}/(blob|tree|raw)/([^/]+)/(.+)$")
VERSION_HEADING = re.compile(
    r"^## \[(?P<version>[^\]]+)\](?: - (?P<date>\d{4}-\d{2}-\d{2}))?\s*$", re.M
)


def without_code(text: str) -> str:
    """Markdown with its fenced blocks and code spans removed: no link lives there."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def link_targets(markdown: str) -> list[str]:
    """Every link and image target: inline, reference definitions and HTML tags."""
    text = without_code(markdown)
    return [
        target
        for pattern in (INLINE_LINK, REFERENCE_DEF, HTML_TARGET)
        for target in pattern.findall(text)
    ]


def anchor(heading: str) -> str:
    """The id GitHub (and PyPI's renderer) gives a heading: lower case, punctuation
    dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(markdown: str) -> set[str]:
    headings = re.findall(r"^#{1,6}\s+(.+?)\s*#*\s*$", FENCE.sub("", markdown), re.M)
    return {anchor(h) for h in headings}


def link_problem(target: str, page_anchors: set[str]) -> str | None:
    """Why a README target would not work on a package page, or None where it does."""
    if target.startswith("#"):
        return None if target[1:] in page_anchors else "no heading for this anchor"
    if not target.startswith("https://"):
        return "not an absolute https URL (a package page has no repository around it)"
    m = IN_REPO.match(target.split("#", 1)[0].split("?", 1)[0])
    if m is None:
        return None
    kind, ref, rel = m.groups()
    if ref != "main":
        return f"a repository link to {ref}, not main"
    path = ROOT / rel.rstrip("/")
    if kind == "tree":
        return None if path.is_dir() else f"no folder {rel} in the checkout"
    return None if path.is_file() else f"no file {rel} in the checkout"


def test_the_link_check_tells_good_targets_from_broken_ones() -> None:
    heads = anchors("# resviz\n\n## The two commands\n")
    assert link_problem("#the-two-commands", heads) is None
    assert link_problem("#nowhere", heads)
    assert link_problem("docs/design.md", heads)
    assert link_problem("http://example.org/", heads)
    assert link_problem(f"{REPOSITORY}/blob/main/docs/design.md", heads) is None
    assert link_problem(f"{REPOSITORY}/blob/main/docs/no_such_file.md", heads)
    assert link_problem(f"{REPOSITORY}/tree/main/docs", heads) is None
    assert link_problem(f"{REPOSITORY}/tree/main/README.md", heads)
    assert link_problem(f"{REPOSITORY}/raw/main/docs/images/home.png", heads) is None
    assert link_problem(f"{REPOSITORY}/blob/master/docs/design.md", heads)
    assert link_problem(f"{REPOSITORY}/issues", heads) is None
    found = link_targets("[a](x.md) ![b](y.png) `[c](z.md)`\n```\n[d](w.md)\n```\n[e]: v.md\n")
    assert found == ["x.md", "y.png", "v.md"]


def test_every_readme_link_works_on_a_package_page() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = link_targets(readme)
    assert targets, "no links found in README.md: the pattern is wrong"
    heads = anchors(readme)
    broken = {t: why for t in targets if (why := link_problem(t, heads))}
    assert not broken, broken


def changelog() -> str:
    return (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")


def changelog_versions() -> dict[str, str | None]:
    """Each ``## [version] - date`` heading of CHANGELOG.md: version -> date (None for
    Unreleased)."""
    return {m["version"]: m["date"] for m in VERSION_HEADING.finditer(changelog())}


def test_the_changelog_has_unreleased_and_the_current_version() -> None:
    versions = changelog_versions()
    assert "Unreleased" in versions, "CHANGELOG.md has no '## [Unreleased]' section"
    assert __version__ in versions, f"CHANGELOG.md has no '## [{__version__}] - date'"
    date = versions[__version__]
    assert date, f"'## [{__version__}]' carries no date"
    datetime.date.fromisoformat(date)
    assert list(versions)[0] == "Unreleased", "Unreleased comes first, newest on top"


@pytest.fixture(scope="module")
def citation() -> dict:
    return yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))


def test_the_citation_names_this_release(citation: dict) -> None:
    assert citation["cff-version"] == "1.2.0"
    assert citation["title"] == "resviz"
    assert citation["message"] and citation["authors"]
    assert str(citation["version"]) == __version__
    assert citation["license"] == "MIT"
    assert str(citation["date-released"]) == changelog_versions()[__version__]
    if "repository-code" in citation:
        assert citation["repository-code"] == REPOSITORY
    for ref in citation.get("references", []):
        assert ref.get("type") and ref.get("title") and ref.get("authors"), ref


def contributing_paths(text: str) -> list[str]:
    """Repository paths CONTRIBUTING.md names in code spans: words holding a ``/`` or
    ending in .py, .md or .txt; ``<name>`` is a placeholder for any one name."""
    found = []
    for _, span in CODE_SPAN.findall(FENCE.sub("", text)):
        for word in span.split():
            word = word.strip("\"'(),;:").split("::", 1)[0]
            if "://" in word or word.startswith(("/", "-")) or "=" in word:
                continue
            if "/" in word or word.endswith((".py", ".md", ".txt")):
                found.append(word)
    return found


def path_exists(path: str) -> bool:
    pattern = re.sub(r"<[^>]+>", "*", path)
    want_dir = pattern.endswith("/")
    pattern = pattern.rstrip("/")
    matches = list(ROOT.glob(pattern)) if "*" in pattern else [ROOT / pattern]
    return any(m.is_dir() if want_dir else m.exists() for m in matches)


def test_the_path_check_reads_placeholders_and_skips_commands() -> None:
    text = "`make check`, `python docs/make_api.py`, `resviz/<topic>/recipes.py`, `https://x/y`"
    assert contributing_paths(text) == ["docs/make_api.py", "resviz/<topic>/recipes.py"]
    assert path_exists("resviz/<topic>/recipes.py") and path_exists("tests/unit/<topic>/")
    assert not path_exists("resviz/<topic>/no_such_module.py")


def test_contributing_names_the_loops_and_only_paths_that_exist() -> None:
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    assert "`make check`" in text and "`make test`" in text
    paths = contributing_paths(text)
    assert paths, "no paths found in CONTRIBUTING.md: the pattern is wrong"
    missing = sorted({p for p in paths if not path_exists(p)})
    assert not missing, missing


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)


def _version_at(ref: str) -> str | None:
    """The version a commit says: resviz/_version.py, or (before that file) pyproject.toml."""
    for path, pattern in (
        ("resviz/_version.py", r'^__version__ = "([^"]+)"'),
        ("pyproject.toml", r'^version = "([^"]+)"'),
    ):
        shown = _git("show", f"{ref}:{path}")
        found = re.search(pattern, shown.stdout, re.M) if shown.returncode == 0 else None
        if found:
            return found.group(1)
    return None


def test_every_released_version_is_tagged_on_a_commit_that_says_it() -> None:
    """Each version in CHANGELOG.md has the tag ``v<version>`` on a commit whose files
    give that version (an image named resviz:<version> is built from that tag). The
    current version's tag is made on its release commit (CONTRIBUTING.md, Releasing): it
    may be missing before that, and, once made, says the same."""
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: no tags to read")
    tags = set(_git("tag", "--list", "v*").stdout.split())
    if not tags:
        pytest.skip("this clone carries no tags (git clone --no-tags, or a shallow one)")
    for version in changelog_versions():
        if version == "Unreleased" or (version == __version__ and f"v{version}" not in tags):
            continue
        assert f"v{version}" in tags, f"version {version} has no tag v{version}"
        assert _version_at(f"v{version}") == version, (
            f"v{version} says {_version_at(f'v{version}')}"
        )
