"""Time pages in a real browser against a real server (Playwright + Chromium).

    .venv/bin/python benchmarks/browser_pages.py [repeats]

Prints: server start to healthy, home page drawn, and for each page opened by
deep link on a warm server the time until its default view is fully drawn (no
script running, all charts drawn, download buttons shown). Median of repeats.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from playwright.sync_api import sync_playwright  # noqa: E402

from tests.browser.conftest import CHROMIUM_ARGS, Server, chromium_path, wait_ready  # noqa: E402
from tests.browser.test_app_browser import MIN_CHARTS  # noqa: E402
from ui.registry import PAGES  # noqa: E402


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
            wait_ready(pg)
            print(
                f"home drawn {time.monotonic() - start:.2f} s after healthy "
                f"({time.monotonic() - t0:.2f} s after launch)"
            )
            for info in PAGES:
                times = []
                for i in range(repeats + 1):  # the first visit warms the caches
                    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
                    page = ctx.new_page()
                    start = time.monotonic()
                    page.goto(f"{server.url}/{info.url_path}")
                    wait_ready(page, charts=MIN_CHARTS[info.url_path], downloads=1)
                    if i:
                        times.append(time.monotonic() - start)
                    ctx.close()
                print(
                    f"{info.url_path:22s} warm deep link: median {statistics.median(times):.2f} s "
                    f"(min {min(times):.2f}, max {max(times):.2f}, n={len(times)})"
                )
            browser.close()
    finally:
        server.stop()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
