"""Old module names kept as documented aliases: namespaces over the modules that replaced them.

A page-shaped (or merged) module was split into modules named by concept; notebooks
and pages written against the old name (``rv.<old>.<name>``) keep working through a
namespace that exposes every public name of the new modules. New code imports the
new modules.
"""

from __future__ import annotations

import types
from types import ModuleType

from . import findings, findings_runs


def _public(module: ModuleType) -> dict[str, object]:
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in vars(module) if not n.startswith("_")]
    return {n: getattr(module, n) for n in names}


def alias(name: str, *modules: ModuleType, **extra: object) -> types.SimpleNamespace:
    """A namespace named ``name`` holding every public name of ``modules`` (later
    modules win a clash) and the ``extra`` names an old module had under another name."""
    ns: dict[str, object] = {}
    for module in modules:
        ns.update(_public(module))
    ns.update(extra)
    space = types.SimpleNamespace(**ns)
    space.__name__ = f"resviz.{name}"  # type: ignore[attr-defined]
    space.__doc__ = f"Alias of {', '.join(m.__name__ for m in modules)}."
    return space


# --- findings_stack (issue 14 phase 2, mC): merged into findings + findings_runs -----
# Its ``num`` (three significant digits) is now findings.format_number, the one format.
findings_stack = alias("findings_stack", findings, findings_runs, num=findings.format_number)
# --- end findings_stack ------------------------------------------------------------
