"""Where a deep link's time goes in the browser: Chromium's JavaScript CPU profile.

    .venv/bin/python benchmarks/browser_profile.py [page ...]

For each page (default: every page, then the bare baseline page), opens it by
deep link in a new tab of a warm browser (second visit: caches warm, as in
browser_pages.py), records a CPU profile over the Chrome DevTools Protocol from
navigation until the page is drawn, and prints the wall time, the main thread's
long tasks (over 50 ms) and the profile's self time by script file: which of
Streamlit's front-end bundles (Vega, React, markdown, code highlighting, ...)
the page keeps busy.
"""

from __future__ import annotations

import collections
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from playwright.sync_api import sync_playwright  # noqa: E402

from tests.browser.conftest import CHROMIUM_ARGS, Server, chromium_path, wait_ready  # noqa: E402
from tests.browser.test_app_browser import MIN_CHARTS  # noqa: E402
from ui.registry import PAGES  # noqa: E402

LONG_TASKS = """window.__longtasks = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) window.__longtasks.push(e.duration);
}).observe({type: "longtask", buffered: true});"""


def profile(browser, url: str, charts: int) -> None:
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    ctx.add_init_script(LONG_TASKS)
    for _visit in range(2):  # the first visit warms the server's and the browser's caches
        tab = ctx.new_page()
        cdp = ctx.new_cdp_session(tab)
        cdp.send("Profiler.enable")
        cdp.send("Profiler.setSamplingInterval", {"interval": 500})
        cdp.send("Profiler.start")
        start = time.monotonic()
        tab.goto(url)
        wait_ready(tab, charts=charts, downloads=1, settle_ms=0)
        wall = time.monotonic() - start
        prof = cdp.send("Profiler.stop")["profile"]
        long_tasks = tab.evaluate("window.__longtasks")
        tab.close()
    ctx.close()
    nodes = {n["id"]: n["callFrame"] for n in prof["nodes"]}
    self_ms: collections.Counter[str] = collections.Counter()
    for node, delta in zip(prof["samples"], prof["timeDeltas"], strict=False):
        frame = nodes[node]
        name = frame["url"].rsplit("/", 1)[-1] or f"({frame['functionName']})"
        self_ms[name.split(".")[0]] += delta / 1000
    busy = sum(v for k, v in self_ms.items() if k != "((idle))")
    top = ", ".join(f"{k} {v:.0f}" for k, v in self_ms.most_common(8) if k != "((idle))")
    print(
        f"{url.rsplit('/', 1)[-1] or 'baseline':22s} {wall:.2f} s; long tasks "
        f"{sum(long_tasks):.0f} ms ({len(long_tasks)}); main thread busy {busy:.0f} ms: {top}"
    )


def main(pages: list[str]) -> None:
    server = Server()
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
            for p in pages:
                profile(browser, f"{server.url}/{p}", MIN_CHARTS[p])
            server.stop()
            server = Server(script="benchmarks/baseline_app.py")
            profile(browser, f"{server.url}/", 3)
            browser.close()
    finally:
        server.stop()


if __name__ == "__main__":
    main(sys.argv[1:] or [p.url_path for p in PAGES])
