"""Time pages in a real browser against a real server (Playwright + Chromium).

    .venv/bin/python benchmarks/browser_pages.py [repeats]

Prints: server start to healthy, home page drawn, and for each page opened by
deep link on a warm server the time until its default view is fully drawn (no
script running, all charts drawn, download buttons shown), both in a fresh
browser context (Streamlit's front end loaded from scratch) and in a new tab of
a browser that has loaded it before (HTTP cache warm, as for a returning
user); then the redraw after a widget change (the page's first slider one step
right, a new result; then back, a cached result). Median of repeats. A bare
Streamlit page (``baseline_app.py``: a title and three small charts, no torch)
is timed the same way first, as the floor this browser and machine allow. Ends
with the server's resident memory after every page was visited.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from playwright.sync_api import sync_playwright  # noqa: E402

from tests.browser.conftest import (  # noqa: E402
    CHROMIUM_ARGS,
    Server,
    chromium_path,
    rss_mb,
    wait_ready,
)
from tests.browser.test_app_browser import MIN_CHARTS  # noqa: E402
from ui.registry import PAGES  # noqa: E402
from ui.specs.pages import spec_of  # noqa: E402


def med(values: list[float]) -> str:
    if not values:
        return "n/a"
    return f"{statistics.median(values):.2f} s (min {min(values):.2f}, n={len(values)})"


def widget_step(pg, charts: int) -> tuple[float, float]:
    """Move the first slider one step right, then back; time each redraw (the URL
    changes when the rerun has finished, then the charts must be drawn)."""
    handle = pg.locator("[data-testid='stSlider'] input[type='range']").first
    if not handle.count():
        return float("nan"), float("nan")
    times = []
    for key in ("ArrowRight", "ArrowLeft"):
        before = pg.evaluate("location.search")
        start = time.monotonic()
        handle.focus()
        pg.keyboard.press(key)
        pg.wait_for_function("(s) => location.search !== s", arg=before, timeout=60_000)
        wait_ready(pg, charts=charts, downloads=1, settle_ms=0)
        times.append(time.monotonic() - start)
    return times[0], times[1]


def deep_links(
    browser, url: str, charts: int, repeats: int, steps: bool = True
) -> tuple[list[float], list[float], list[float], list[float]]:
    """Open ``url`` ``repeats`` times (after one warm-up visit) in a fresh context
    and in a new tab of a kept context; optionally time a slider step in the tab."""

    def opened(pg) -> float:
        start = time.monotonic()
        pg.goto(url)
        wait_ready(pg, charts=charts, downloads=1, settle_ms=0)
        return time.monotonic() - start

    cold, warm, changed, cached = [], [], [], []
    keep = browser.new_context(viewport={"width": 1400, "height": 1000})
    for i in range(repeats + 1):  # the first visit warms the caches
        ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
        seconds = opened(ctx.new_page())
        if i:
            cold.append(seconds)
        ctx.close()
        tab = keep.new_page()
        seconds = opened(tab)
        if i:
            warm.append(seconds)
            if steps:
                a, b = widget_step(tab, charts)
                changed.append(a)
                cached.append(b)
        tab.close()
    keep.close()
    return cold, warm, changed, cached


def section_switches(browser, url: str, labels: tuple[str, ...]) -> dict[str, float]:
    """Open the page's first section, then click every other tab in turn: time from
    the click until the URL names the section and the script has finished."""
    out: dict[str, float] = {}
    if len(labels) < 2:
        return out
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = ctx.new_page()
    pg.goto(url)
    wait_ready(pg, settle_ms=0)
    for label in labels[1:]:
        start = time.monotonic()
        pg.get_by_role("tab", name=label, exact=True).click()
        pg.wait_for_function(
            "(s) => new URLSearchParams(location.search).get('section') === s",
            arg=label,
            timeout=60_000,
        )
        wait_ready(pg, settle_ms=0)
        out[label] = time.monotonic() - start
    ctx.close()
    return out


def main(repeats: int = 5) -> None:
    t0 = time.monotonic()
    server = Server()
    print(f"server healthy after {server.healthy_after:.2f} s")
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
            pg = browser.new_page(viewport={"width": 1400, "height": 1000})
            start = time.monotonic()
            pg.goto(server.url)
            wait_ready(pg, settle_ms=0)
            print(
                f"home drawn {time.monotonic() - start:.2f} s after healthy "
                f"({time.monotonic() - t0:.2f} s after launch)"
            )
            base = Server(script="benchmarks/baseline_app.py")
            try:
                cold, warm, _, _ = deep_links(browser, base.url, 3, repeats, steps=False)
            finally:
                base.stop()
            floor = statistics.median(cold)
            print(
                f"{'baseline (bare page)':22s} deep link: fresh context {med(cold)}, "
                f"cached front end {med(warm)}"
            )
            for info in PAGES:
                if not spec_of(info.url_path).sections:
                    continue  # the Workshop page: the presenter's, no measurement to draw
                url = f"{server.url}/{info.url_path}"
                cold, warm, changed, cached = deep_links(
                    browser, url, MIN_CHARTS.get(info.url_path, 0), repeats
                )
                print(
                    f"{info.url_path:22s} deep link (first section): fresh context {med(cold)} "
                    f"= {statistics.median(cold) / floor:.2f}x the bare page, "
                    f"cached front end {med(warm)}; slider step {med(changed)}, "
                    f"back (cached) {med(cached)}"
                )
                switches = section_switches(browser, url, spec_of(info.url_path).sections)
                if switches:
                    print(
                        f"{'':22s} section switch: "
                        + ", ".join(f"{k} {v:.2f} s" for k, v in switches.items())
                        + f"; slowest {max(switches.values()):.2f} s"
                    )
            print(f"server RSS after every section of every page: {rss_mb(server.proc.pid):.0f} MB")
            browser.close()
    finally:
        server.stop()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
