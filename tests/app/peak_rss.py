"""Peak resident memory of one session visiting deep links, in a fresh process.

    python -m tests.app.peak_rss "gradient_flow?depth=100&width=512" "normalization?..."

Each link is opened as a new AppTest session (its own session state, as a new
browser tab would be) in this one process. First every page is drawn once at its
defaults, so the baseline holds what any server holds after its first visitors
(torch, pandas and Altair imported, autograd and the chart machinery warmed up).
Then the high-water mark is reset (Linux's /proc/self/clear_refs), so the peak
counts from the resident size at that moment, not from an earlier import spike.
Prints one JSON object: the baseline resident size and the final peak in MB,
the peak after each link, and every error or exception a link drew.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from urllib.parse import parse_qsl

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]
ENTRY = str(ROOT / "streamlit_app.py")
TIMEOUT = 600


def _status_mb(field: str) -> float:
    text = Path("/proc/self/status").read_text()
    return int(re.search(field + r":\s+(\d+) kB", text).group(1)) / 1024


def peak_mb() -> float:
    return _status_mb("VmHWM")


def reset_peak() -> float:
    """Reset the high-water mark to the current resident size; return that size."""
    Path("/proc/self/clear_refs").write_text("5")
    return _status_mb("VmRSS")


def visit(link: str) -> AppTest:
    page, _, query = link.partition("?")
    at = AppTest.from_file(ENTRY, default_timeout=TIMEOUT)
    for k, v in parse_qsl(query, keep_blank_values=True):
        at.query_params[k] = v
    at.switch_page(f"app_pages/{page}.py")
    return at.run()


def main(links: list[str]) -> dict[str, object]:
    from ui.registry import PAGES

    for p in PAGES:
        visit(p.url_path)
    out: dict[str, object] = {"baseline_mb": reset_peak(), "links": []}
    for link in links:
        at = visit(link)
        out["links"].append(  # type: ignore[union-attr]
            {
                "link": link.partition("?")[0],
                "peak_mb": peak_mb(),
                "errors": [e.value for e in at.error],
                "exceptions": [e.value for e in at.exception],
            }
        )
    out["peak_mb"] = peak_mb()
    return out


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    print(json.dumps(main(sys.argv[1:])))
