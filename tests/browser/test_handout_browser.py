"""The handout opened from disk in Chromium with every request blocked: nothing but the
file is asked for; the formulas are laid out as math (a subscript sits below its base,
a binomial's n above its k); no '$', '**' or TeX command is left in the text; on a
390 px phone the page never scrolls sideways (a formula wider than the screen scrolls
in its own box). Screenshots at 390 px and 1280 px: artifacts/screenshots/handout-*.png."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from tests.browser.conftest import screenshot
from ui.lessons import Step, load_lessons
from ui.room import handout

LESSON = load_lessons()[0]["residuals"]
LONG = " + ".join(f"x_{{{i}}}" for i in range(40))
WIDE = " + ".join(rf"\frac{{a_{{{i}}}}}{{b_{{{i}}}}}" for i in range(30))
EXTRA = Step(
    "A wide formula",
    "skip_connections",
    None,
    f"Inline ${LONG}$, then on its own line: $${WIDE}$$ and a word "
    + "residual" * 12
    + " that has no place to break, and **bold** text.",
)


SECOND_CHOICES = [s for s in LESSON.steps if s.predict][1].predict.choices


@pytest.fixture(scope="module")
def handout_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    lesson = dataclasses.replace(LESSON, steps=(*LESSON.steps, EXTRA))
    asked = [i for i, s in enumerate(lesson.steps, 1) if s.predict]
    first, second = (lesson.steps[i - 1].predict.choices for i in asked[:2])
    assert second == SECOND_CHOICES
    counts = {
        asked[0]: {"predictions": [(first[0], 5), (first[1], 2)],
                   "measured": [(first[0], 7), (first[1], 0)]},
        asked[1]: {"predictions": [(c, n) for c, n in zip(second, (1, 4, 2, 0), strict=False)]},
    }  # fmt: skip
    path = tmp_path_factory.mktemp("handout") / "handout.html"
    path.write_text(handout.build(lesson, "ABCDEF", counts, 7), encoding="utf-8")
    return path


@pytest.mark.parametrize("width", [390, 1280])
def test_the_handout_reads_offline_as_math_and_fits_the_screen(
    browser, handout_file: Path, width: int
) -> None:
    url = handout_file.as_uri()
    ctx = browser.new_context(viewport={"width": width, "height": 844})
    asked: list[str] = []
    ctx.on("request", lambda request: asked.append(request.url))

    def block(route) -> None:
        if route.request.url == url:
            route.continue_()
        else:
            route.abort()

    ctx.route("**/*", block)
    pg = ctx.new_page()
    try:
        pg.goto(url, wait_until="load")
        pg.wait_for_timeout(300)
        assert asked == [url], asked  # the file itself, and no CDN, font, image or other

        assert pg.evaluate("document.documentElement.scrollWidth") <= width
        sizes = pg.evaluate(
            "[...document.querySelectorAll('math')].map(m => {"
            " const r = m.getBoundingClientRect(); return [r.width, r.height]; })"
        )
        source = handout_file.read_text(encoding="utf-8")
        assert len(sizes) == source.count("<math") >= 25
        assert all(w > 0 and h > 0 for w, h in sizes), sizes

        # Laid out as math, not as inline text: x_{l+1}'s subscript sits lower than
        # its x, and the binomial's n is above its k.
        sub, binom = pg.evaluate(
            """() => {
              const box = el => el.getBoundingClientRect();
              const msub = document.querySelector('msub');
              const frac = document.querySelector('mfrac');
              return [[box(msub.children[0]).bottom, box(msub.children[1]).bottom],
                      [box(frac.children[0]).bottom, box(frac.children[1]).top]];
            }"""
        )
        assert sub[1] > sub[0] + 1 and binom[0] <= binom[1]

        text = pg.evaluate("document.body.innerText")
        assert "$" not in text and "**" not in text and not re.search(r"\\[A-Za-z|,]", text)
        # Bold text rendered as such, and the room's votes on the second question.
        assert "Optimization." in text and SECOND_CHOICES[1] in text, text[-2000:]

        # The wide formulas scroll inside their own boxes on the phone.
        boxes = pg.evaluate(
            "[...document.querySelectorAll('.math, .math-block')]"
            ".map(b => [b.scrollWidth, b.clientWidth])"
        )
        wide = [b for b in boxes if b[0] > b[1] + 1]
        assert len(wide) == 2, boxes
        assert all(client <= width for _, client in boxes)

        path = screenshot(pg, f"handout-{width}")
        assert path.stat().st_size > 10_000
    finally:
        ctx.close()
