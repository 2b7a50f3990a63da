"""The library's layout, read from its source with ``ast`` (nothing is imported for
the graph): no import circle, at most six levels, small packages, short modules, a
short public surface.

How the import graph is built and levels are counted:

* Nodes: every ``.py`` file under ``resviz/`` is a module; a package's
  ``__init__.py`` is the module named after the package (``resviz.positional``).
* Edges: every ``import`` and ``from ... import`` of another module of the package,
  wherever it stands (module level, inside a function, under ``TYPE_CHECKING``):
  an import hidden in a function is still a dependency. ``from p import name`` is
  an edge to ``p.name`` when that is a module, else to ``p``; relative imports are
  resolved. The package ``__init__`` files Python runs on the way to a module
  (``resviz/__init__.py`` before ``resviz.config``) are not edges: they are how
  Python finds a module, not something the module asks for.
* Circles: looked for on that graph as it is, ``__init__`` modules included.
* Levels: a module that imports no other resviz module is on level 1; any other
  module is one level above the highest module it imports. The longest chain is
  the modules on the way down from the highest module, counted (``a -> b -> c``
  is 3 levels). A *facade*, an ``__init__.py`` that only re-exports (imports,
  ``__all__`` and a docstring, nothing defined: ``resviz/__init__.py``,
  ``resviz/norms/__init__.py``, ...), is not a level of its own: an import of a
  facade counts as an import of every module the facade imports, so importing a
  package from inside the library costs all it pulls in, while the public
  surface over the library adds nothing. (Counted as a level, the root facade,
  which imports ``resviz.recipes``, which imports every recipe module, would sit
  two levels above the recipes whatever the library did below them.) An
  ``__init__.py`` that defines code (``resviz/codegen``) is a module like any other.

The failure messages print the circle or the longest chain, module by module.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAX_LEVELS = 6
MAX_MODULES_PER_PACKAGE = 10
MAX_LINES = 400
MAX_PUBLIC_NAMES = 30

Graph = dict[str, set[str]]


def modules(root: Path, package: str) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` file of ``package`` under ``root``."""
    found = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _targets(node: ast.Import | ast.ImportFrom, name: str, is_package: bool) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:  # relative: from the module's package, one step up per extra dot
        here = name.split(".") if is_package else name.split(".")[:-1]
        here = here[: len(here) - (node.level - 1)]
        base = ".".join([*here, *([node.module] if node.module else [])])
    else:
        base = node.module or ""
    return [base, *(f"{base}.{alias.name}" for alias in node.names)]


def import_graph(root: Path, package: str) -> tuple[Graph, dict[str, Path]]:
    """Each module of ``package`` -> the modules of ``package`` it imports."""
    mods = modules(root, package)
    graph: Graph = {}
    for name, path in mods.items():
        is_package = path.name == "__init__.py"
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            base, *named = _targets(node, name, is_package)
            if isinstance(node, ast.Import):
                wanted = [base, *named]
            else:  # ``from p import x``: the module p.x if there is one, else p
                wanted = [n if n in mods else base for n in named]
            for target in wanted:
                # ``import a.b.c`` / ``from a.b.c import f``: the longest part that is a module
                parts = target.split(".")
                while parts and ".".join(parts) not in mods:
                    parts.pop()
                if parts and ".".join(parts) != name:
                    edges.add(".".join(parts))
        graph[name] = edges
    return graph, mods


def is_facade(path: Path) -> bool:
    """An ``__init__.py`` holding only imports, ``__all__`` and its docstring."""
    if path.name != "__init__.py":
        return False
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # the docstring
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        if [getattr(t, "id", None) for t in targets] == ["__all__"]:
            continue
        return False
    return True


def find_circle(graph: Graph) -> list[str] | None:
    """One import circle as ``[a, b, ..., a]``, or None."""
    state: dict[str, str] = {}  # "open" while on the path, "done" after
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = "open"
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)) is not None:
                return found
        path.pop()
        state[node] = "done"
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)) is not None:
            return found
    return None


def longest_chains(graph: Graph, facades: set[str]) -> dict[str, list[str]]:
    """Each module that is not a facade -> its longest import chain down to level 1
    (facades see through: see the module docstring). The graph must have no circle."""

    @cache
    def through(node: str) -> frozenset[str]:  # what an import of ``node`` stands for
        if node not in facades:
            return frozenset({node})
        return frozenset(m for nxt in graph[node] for m in through(nxt))

    @cache
    def chain(node: str) -> tuple[str, ...]:
        below = [chain(m) for nxt in graph[node] for m in through(nxt)]
        return (node, *max(below, key=lambda c: (len(c), c), default=()))

    return {m: list(chain(m)) for m in sorted(graph) if m not in facades}


def _shown(chain: list[str]) -> str:
    return f"{len(chain)} levels: " + " -> ".join(chain)


@pytest.fixture(scope="module")
def library() -> tuple[Graph, dict[str, Path]]:
    return import_graph(ROOT, "resviz")


def test_the_library_has_no_import_circle(library):
    graph, _ = library
    circle = find_circle(graph)
    assert circle is None, "import circle in resviz: " + " -> ".join(circle or [])


def test_the_library_has_at_most_six_levels(library):
    graph, mods = library
    facades = {m for m, p in mods.items() if is_facade(p)}
    assert {"resviz", "resviz.norms", "resviz.recipes"} <= facades
    assert "resviz.codegen" not in facades  # it defines the generator
    chains = longest_chains(graph, facades)
    longest = max(chains.values(), key=len)
    print("longest chain:", _shown(longest))
    too_deep = [_shown(c) for c in sorted(chains.values(), key=len, reverse=True)]
    too_deep = [c for c in too_deep if int(c.split()[0]) > MAX_LEVELS]
    assert not too_deep, f"over {MAX_LEVELS} levels:\n" + "\n".join(too_deep)


def test_the_ui_has_no_import_circle():
    graph, _ = import_graph(ROOT, "ui")
    assert {"ui.section", "ui.lesson_view", "ui.room.view"} <= graph.keys()
    circle = find_circle(graph)
    assert circle is None, "import circle in ui: " + " -> ".join(circle or [])


# The workshop: lessons, their steps on a page, rooms. It plugs into the page kit
# (ui/plugs.py); nothing the pages are drawn with reaches it.
WORKSHOP = ("ui.lessons", "ui.lesson_state", "ui.lesson_view", "ui.room", "ui.workshop")


def test_the_page_kit_imports_nothing_of_the_workshop():
    graph, _ = import_graph(ROOT, "ui")
    kit = {"ui.params", "ui.section", "ui.shell", "ui.jobs", "ui.views", "ui.notebook"}
    assert kit <= graph.keys()
    reached: set[str] = set()
    todo = list(kit)
    while todo:
        for nxt in graph[todo.pop()] - reached:
            reached.add(nxt)
            todo.append(nxt)
    workshop = sorted(m for m in reached if m.startswith(WORKSHOP))
    assert not workshop, f"the page kit reaches the workshop: {workshop}"
    # ... while the workshop does plug in (the check above is not vacuous).
    assert {"ui.plugs", "ui.lesson_view", "ui.lesson_state"} <= graph["ui.workshop"]


def test_no_package_holds_more_than_ten_modules_at_its_top():
    """Modules: the ``.py`` files directly in the package's folder, its
    ``__init__.py`` not counted (subpackages are counted in their own folders)."""
    crowded = {}
    for init in (ROOT / "resviz").rglob("__init__.py"):
        count = sum(1 for p in init.parent.glob("*.py") if p.name != "__init__.py")
        if count > MAX_MODULES_PER_PACKAGE:
            crowded[str(init.parent.relative_to(ROOT))] = count
    assert not crowded, f"packages with over {MAX_MODULES_PER_PACKAGE} modules: {crowded}"


def test_no_module_is_over_400_lines(library):
    _, mods = library
    lines = {m: len(p.read_text(encoding="utf-8").splitlines()) for m, p in mods.items()}
    long = {m: n for m, n in lines.items() if n > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines: {long}"


def test_no_module_answers_attributes_of_its_own(library):
    """Every public name is reached by an import a reader can follow: no module
    ``__getattr__`` (a lazy or aliasing namespace) anywhere in the library."""
    _, mods = library
    lazy = [
        m
        for m, p in mods.items()
        for node in ast.parse(p.read_text(encoding="utf-8")).body
        if isinstance(node, ast.FunctionDef) and node.name in ("__getattr__", "__dir__")
    ]
    assert not lazy, f"modules with a module-level __getattr__/__dir__: {lazy}"


def test_the_public_surface_has_at_most_30_names():
    import resviz

    assert len(resviz.__all__) <= MAX_PUBLIC_NAMES, sorted(resviz.__all__)
    assert len(set(resviz.__all__)) == len(resviz.__all__)
    missing = [n for n in resviz.__all__ if not hasattr(resviz, n)]
    assert not missing, f"in resviz.__all__ but not defined: {missing}"


# ---------------------------------------------------------------- the checker itself


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_the_checker_finds_a_circle_hidden_in_a_function(tmp_path):
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from pkg.b import f\n",
            "pkg/b.py": "def f():\n    from . import a\n    return a\n",
            "pkg/c.py": "import pkg.a\n",
        },
    )
    graph, _ = import_graph(tmp_path, "pkg")
    assert graph["pkg.a"] == {"pkg.b"} and graph["pkg.b"] == {"pkg.a"}
    assert graph["pkg.c"] == {"pkg.a"}
    assert find_circle(graph) == ["pkg.a", "pkg.b", "pkg.a"]


def test_the_checker_counts_levels_through_facades(tmp_path):
    _write(
        tmp_path,
        {
            "pkg/__init__.py": '"""Facade."""\nfrom pkg import top\n__all__ = ["top"]\n',
            "pkg/base.py": "X = 1\n",
            "pkg/mid.py": "from pkg.base import X\n",
            "pkg/sub/__init__.py": "from pkg.sub.deep import Y\n__all__ = ['Y']\n",
            "pkg/sub/deep.py": "from pkg.mid import X as Y\n",
            "pkg/top.py": "from pkg import sub\nfrom pkg.sub import deep\n",
            "pkg/code/__init__.py": "from pkg.base import X\n\ndef g():\n    return X\n",
        },
    )
    graph, mods = import_graph(tmp_path, "pkg")
    facades = {m for m, p in mods.items() if is_facade(p)}
    assert facades == {"pkg", "pkg.sub"}
    assert graph["pkg.top"] == {"pkg.sub", "pkg.sub.deep"}
    chains = longest_chains(graph, facades)
    assert chains["pkg.top"] == ["pkg.top", "pkg.sub.deep", "pkg.mid", "pkg.base"]
    assert chains["pkg.code"] == ["pkg.code", "pkg.base"]
    assert "pkg" not in chains and "pkg.sub" not in chains
