"""How many examples a property test draws: the full count under ``make test``, a tenth
(at least 10) under ``make check`` (``RESVIZ_TESTS=check``), so the quick loop still
exercises every property and the full suite searches as hard as before.

Hypothesis's own profiles set the defaults (``tests/conftest.py``); a test that asks for
a count of its own goes through :func:`examples`, so the profile scales it too."""

from __future__ import annotations

import os

QUICK = os.environ.get("RESVIZ_TESTS") == "check"


def examples(full: int) -> int:
    """``full`` examples in the full suite, a tenth of them (at least 10) in the check."""
    return max(10, full // 10) if QUICK else full
