"""The workshop room in real Chromium through nginx with 2 replicas (serve.py), the
room in one SQLite file both replicas share: a presenter and 3 participants, one of
them on a phone's viewport (390 x 844), join by code, follow 3 steps without a
reload, vote, the presenter reveals and sees the counts; at least one participant
is on the other replica than the presenter."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

from tests.browser.conftest import ROOT, free_port, screenshot, wait_ready
from tests.browser.test_workshop_proxy import NGINX
from ui.lessons import load_lessons

pytestmark = pytest.mark.browser
LESSON = load_lessons()[0]["residuals"]
QI = next(i for i, s in enumerate(LESSON.steps, 1) if s.predict and s.page == "gradient_flow")
FOLLOW_S = 15  # generous for a loaded 2-core machine; the benchmark measures the delay


@pytest.fixture(scope="module")
def room_proxy(tmp_path_factory):
    if NGINX is None:
        msg = "nginx not installed (apt-get install nginx)"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    port = free_port()
    run = tmp_path_factory.mktemp("workshop-room")
    env = {**os.environ, "RESVIZ_ROOM_DB": str(run / "rooms.sqlite3")}
    env.pop("REDIS_URL", None)
    cmd = [sys.executable, str(ROOT / "deploy" / "workshop" / "serve.py"), "--port", str(port),
           "--address", "127.0.0.1", "--replicas", "2", "--run-dir", str(run)]  # fmt: skip
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=(run / "serve.log").open("w"), stderr=subprocess.STDOUT
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 150
    while time.monotonic() < deadline:
        assert proc.poll() is None, (run / "serve.log").read_text()
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2):
                break
        except OSError:
            time.sleep(0.5)
    else:
        proc.kill()
        pytest.fail("workshop server not up")
    yield url
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()


def _replica_of(url: str, cookie: str) -> str:
    req = urllib.request.Request(f"{url}/_stcore/health", headers={"Cookie": cookie})
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.headers["X-Resviz-Replica"]


def _context(browser, url: str, cookie_value: str, **kw):
    ctx = browser.new_context(**kw)
    ctx.add_cookies([{"name": "resviz_replica", "value": cookie_value, "url": url}])
    return ctx


def _step_heading(pg, title: str, timeout_s: float = FOLLOW_S) -> float:
    """Seconds until the step's title is on the page (the page moved by itself)."""
    t = time.monotonic()
    pg.locator("[data-testid='stHeading']", has_text=title).first.wait_for(timeout=timeout_s * 1000)
    return time.monotonic() - t


def _no_sideways_scroll(pg) -> None:
    widths = pg.evaluate(
        """() => [document.documentElement.scrollWidth, document.body.scrollWidth,
                 ...[...document.querySelectorAll('[data-testid=stMain], section.main')]
                   .map(e => e.scrollWidth - e.clientWidth + 390)]"""
    )
    assert max(widths) <= 390, widths


def test_presenter_and_three_participants_on_two_replicas(room_proxy, browser):
    url = room_proxy
    # Cookies that nginx hashes to each replica, so both are used whatever the hash.
    by_replica: dict[str, str] = {}
    for i in range(40):
        by_replica.setdefault(_replica_of(url, f"resviz_replica=c{i}"), f"c{i}")
    assert len(by_replica) == 2
    (r_a, c_a), (r_b, c_b) = sorted(by_replica.items())

    presenter = _context(browser, url, c_a, viewport={"width": 1500, "height": 1400})
    pp = presenter.new_page()
    pp.goto(f"{url}/workshop")
    wait_ready(pp)
    pp.get_by_role("button", name="Open as a room").click()
    pp.get_by_text(re.compile(r"Room code: [A-Z0-9]{6}")).wait_for(timeout=30_000)
    code = re.search(r"Room code: ([A-Z0-9]{6})", pp.inner_text("body")).group(1)
    assert pp.locator("[data-testid='stImage'] img").count() == 1  # one QR code
    screenshot(pp, "room_presenter_open")

    phone = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}
    desk = {"viewport": {"width": 1280, "height": 1000}}
    people = []
    for name, cookie, kw in (("Ada", c_b, desk), ("Bo", c_a, desk), ("Cy", c_b, phone)):
        ctx = _context(browser, url, cookie, **kw)
        pg = ctx.new_page()
        pg.goto(f"{url}/workshop?join={code}")
        wait_ready(pg)
        pg.get_by_label("Your name (optional)").fill(name)
        pg.get_by_role("button", name="Join", exact=True).click()
        _step_heading(pg, LESSON.steps[0].title, 60)
        assert f"room={code}" in pg.url and "seed=" in pg.url
        people.append((ctx, pg))
    assert {_replica_of(url, f"resviz_replica={c}") for c in (c_a, c_b)} == {r_a, r_b}

    # Follow three steps: the presenter presses Next; every page moves by itself.
    delays = []
    for index in range(2, QI + 1):
        pp.get_by_role("button", name="Next", exact=True).click()
        pp.get_by_text(f"Step {index} of").first.wait_for(timeout=30_000)
        for _, pg in people:
            delays.append(_step_heading(pg, LESSON.steps[index - 1].title))
            assert f"step={index}" in pg.url
    assert QI - 1 >= 3
    print(f"follow delays (s): {[round(d, 1) for d in delays]}")

    # The question: each votes; the section waits; the presenter sees the counts.
    step = LESSON.steps[QI - 1]
    for (_, pg), choice in zip(people, ["plain", "residual", "residual"], strict=True):
        pg.get_by_text("Predict first:").wait_for(timeout=30_000)
        assert pg.locator("[data-testid='stVegaLiteChart']").count() == 0
        pg.locator("[data-testid='stRadio']").get_by_text(choice, exact=True).click()
        pg.get_by_role("button", name="Send my prediction").click()
        pg.get_by_text("Waiting for the presenter to reveal").wait_for(timeout=30_000)
    phone_pg = people[2][1]
    heading = phone_pg.locator("[data-testid='stHeading']", has_text=step.title).first
    heading.scroll_into_view_if_needed()
    assert heading.is_visible()
    _no_sideways_scroll(phone_pg)
    screenshot(phone_pg, "room_phone_voted")
    pp.get_by_text("Predictions: 3 of 3 answered").wait_for(timeout=FOLLOW_S * 1000)
    pp.get_by_role("button", name="Reveal").click()
    for _, pg in people:
        pg.get_by_text("Measured with your seed").wait_for(timeout=60_000)
        wait_ready(pg, charts=1)
    pp.get_by_text("one seed each): 3 of 3 answered").wait_for(timeout=FOLLOW_S * 1000)
    screenshot(pp, "room_presenter_counts")
    _no_sideways_scroll(phone_pg)
    first_chart = phone_pg.locator("[data-testid='stVegaLiteChart']").first
    first_chart.scroll_into_view_if_needed()
    box = first_chart.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, box
    screenshot(phone_pg, "room_phone_measured")
    for ctx, pg in people:
        assert pg.locator("[data-testid='stException']").count() == 0
        ctx.close()
    presenter.close()
