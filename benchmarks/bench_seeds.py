"""A section at 5 seeds against the same section at 1 seed, in one run (pytest-benchmark).

    .venv/bin/python -m pytest benchmarks/bench_seeds.py --benchmark-only -q \
        -p no:cacheprovider --benchmark-columns=min,median,max,rounds

Every init-time section that takes seeds is timed at its page's default settings
with ``seeds=1`` and ``seeds=5``, one torch thread (as the app runs each session's
computation); the summary at the end prints each section's ratio of medians, 5 seeds
over 1 (the issue's goal: at most 2.5 on a 2-core CPU). Training sections are left
out: each seed trains a model, so their cost is the seed count times one run, shown
with progress per seed.
"""

from __future__ import annotations

import pytest
import torch

from resviz.core import SEEDS_TRAINING, settings_of
from resviz.recipes import RECIPES

INIT_TIME = sorted(
    name
    for name, fn in RECIPES.items()
    if "seeds" in settings_of(fn) and settings_of(fn)["seeds"] != SEEDS_TRAINING
)


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize("seeds", [1, 5])
@pytest.mark.parametrize("name", INIT_TIME)
def test_section_seeds(benchmark, name, seeds):
    fn = RECIPES[name]
    benchmark.group = name
    fn(seeds=seeds)  # warm: first-call costs (imports, allocator) are not the section's
    benchmark.pedantic(fn, kwargs={"seeds": seeds}, rounds=7, iterations=1)
