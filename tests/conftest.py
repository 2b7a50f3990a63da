"""How `make test` shares two cores (pytest-xdist: ``-n 2 --dist loadscope``, with the
scopes drawn here).

Each test file runs whole on one worker, so its module fixtures (a trained model, a
built venv, a started server) are made once. The tests that start servers, browsers or
clean venvs (``tests/browser``, ``tests/install``) form one scope: they run one after
another on one worker, first, since they take longest; their waits are sized for one
such test at a time. The other worker takes the in-process test files meanwhile.

(xdist's own ``--dist loadgroup`` renames a test's node id to group it, which pytest 9
no longer allows; the scheduler below draws the same groups from the path.)

Each worker runs torch on one thread, as the app does (``resviz.device``): two workers
with a pool of two threads each would oversubscribe two cores.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

from tests.examples import QUICK

# Property tests: a tenth of the examples under `make check` (tests/examples.py).
settings.register_profile("full")
settings.register_profile("check", max_examples=10)
settings.load_profile("check" if QUICK else "full")

SERIAL = ("tests/browser/", "tests/install/")

# Files that read another file's per-process cache, run on its worker: the offline
# notebook checks read the runs test_notebooks.py made of the same notebooks.
JOINS = {"tests/app/test_notebooks_offline.py": "tests/app/test_notebooks.py"}


def scope_of(nodeid: str) -> str:
    """A test's unit of scheduling: ``servers`` for the tests that start servers,
    browsers or venvs; otherwise its file (or the file it joins, :data:`JOINS`)."""
    if nodeid.startswith(SERIAL):
        return "servers"
    path = nodeid.split("::", 1)[0]
    return JOINS.get(path, path)


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER"):
        import torch

        torch.set_num_threads(1)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # The longest scope first, so the other worker's files fill in beside it.
    items.sort(key=lambda item: scope_of(item.nodeid) != "servers")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    from xdist.scheduler import LoadScopeScheduling

    class ByScope(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

    return ByScope(config, log)
