"""A session visiting a page's heaviest deep links stays within the memory budget: each
page's synchronous work (what it computes while drawing, outside background runs) at
its largest allowed settings, in turn, in one fresh process per page
(tests/app/peak_rss.py), raises the peak resident size by at most ``SESSION_PEAK_MB``
(one experiment's budget) and the process's overhead, over a server that has drawn
every page once."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import resviz as rv

ROOT = Path(__file__).resolve().parents[2]

# One experiment's memory budget (``rv.Budget().max_memory_bytes``). The budget bounds
# the estimate of what a computation allocates, and the gradient-flow page allows a
# float64 stack up to it (100 blocks of width 448: 254 MB estimated), so the peak a
# visit adds tracks the budget itself: 243-252 MB alone on the 2-core machine, once
# 259 MB beside the test suite's other worker. The process's own overhead (allocator
# arenas, Python's objects, the results cached) comes on top: allowed up to 10%.
SESSION_PEAK_MB = 256
OVERHEAD = 1.10

WORDS = "+".join(f"w{i}" for i in range(64))
TEXT = "+".join(f"tok{i % 700}" for i in range(12_000))  # 95,000 characters, 700 words

WORST = [
    # The audit's links: 100 x 512 stacks, their Jacobians and scaled shortcut (the
    # Derivation section, which computes the Per layer section's stacks too); the
    # largest norm views, a 24-layer Post-/Pre-LN comparison and (refused) timing, each
    # section of the normalization page opened by its own link.
    "gradient_flow?section=Derivation&depth=100&width=512&act=sigmoid&norm=batch&L=100&block=100"
    "&steps=1000&train_scaled=true",
    # The largest stack whose float64 measurement fits the budget (512 is refused).
    "gradient_flow?section=Derivation&depth=100&width=448&act=sigmoid&norm=batch&L=100&block=100",
    *(
        f"normalization?section={section}&batch=16&tokens=32&d=128&big=100&small=0.01"
        "&layers=24&d_model=128&w_layers=12&w_steps=300&s_steps=300&s_norms=true&s_place=true"
        "&t_size=16x256x1024"
        for section in (
            "Four+views",
            "Invariances",
            "Pre-LN+vs+Post-LN",
            "Warm-up",
            "Stability",
            "Cost",
        )
    ),
    # The largest timing that fits the budget.
    "normalization?section=Cost&t_size=16x128x512",
    # The stack's heaviest section: its forward pass, plain and with the shortcut.
    "skip_connections?section=Signal&depth=64&width=256&mode=concat&project=true",
    f"sinusoidal_encoding?positions=1000&d_model=1024&d=32&k=100&dec=8&text={WORDS}",
    # Its large results: a 1,000 x 1,024 matrix, 1,000 x 1,000 dot products, four maps.
    *(
        f"sinusoidal_encoding?section={section}&positions=1000&d_model=1024&k=100"
        for section in ("Matrix", "Relative+position", "Alternatives")
    ),
    # The playground's largest model: timed (Model), inspected (Attention; the residual
    # stream reads the same views) and compared four ways (Rank collapse).
    *(
        "encoder_playground?max_len=64&vocab=512&layers=12&d_model=256&heads=16&d_ff=1024"
        f"&layer=12&head=16&text={TEXT}{section}"
        for section in ("", "&section=Attention", "&section=Rank+collapse")
    ),
]


PAGES = sorted({link.split("?", 1)[0] for link in WORST})


@pytest.mark.parametrize("page", PAGES)
def test_worst_deep_links_stay_within_the_session_memory_figure(page):
    """One page's heaviest links, in turn, in one fresh process: what a visitor working
    through that page's largest settings adds. (Across pages the server's caches hold
    more: each cache is bounded by its own ``max_entries``, see ui/cache.py.)"""
    assert SESSION_PEAK_MB * 2**20 == rv.Budget().max_memory_bytes
    links = [link for link in WORST if link.split("?", 1)[0] == page]
    # As `make run` starts the server (see the Makefile).
    env = {**os.environ, "MALLOC_ARENA_MAX": "2"}
    out = subprocess.run(
        [sys.executable, "-m", "tests.app.peak_rss", *links],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        check=True,
        timeout=900,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    for link in result["links"]:
        assert not link["exceptions"], link
        # The only errors are refusals of what does not fit (training runs, the timing).
        assert all("over this server's budget" in e for e in link["errors"]), link
    increase = result["peak_mb"] - result["baseline_mb"]
    print(
        f"{page}: peak resident increase {increase:.0f} MB (baseline {result['baseline_mb']:.0f} MB)"
    )
    assert increase <= SESSION_PEAK_MB * OVERHEAD, result
