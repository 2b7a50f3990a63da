"""ui/room/handout.py: the lesson's Markdown and math drawn as HTML and MathML, all of it
inert (no script, no link, no image, no raw HTML from a lesson or a participant), one
self-contained file that fits a phone's width."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from ui.lessons import Lesson, Predict, Step, load_lessons
from ui.room import handout
from ui.room.handout import render_inline, render_text

LESSON = load_lessons()[0]["residuals"]
MATH_TAGS = {
    "math", "mrow", "mi", "mn", "mo", "mtext", "mspace", "msub", "msup", "msubsup",
    "munder", "mover", "munderover", "mfrac", "msqrt", "mroot",
}  # fmt: skip
# What the lesson's Markdown may become: no a, img, script, iframe, style or form.
TEXT_TAGS = {"p", "em", "strong", "code", "pre", "span", "ul", "ol", "li", "br", "hr",
             "blockquote", "h1", "h2", "h3", "h4", "h5", "h6", "s", "table", "thead",
             "tbody", "tr", "th", "td"} | MATH_TAGS  # fmt: skip
ATTRS = {"class", "display", "stretchy", "lspace", "rspace", "movablelimits",
         "linethickness", "mathvariant", "width", "accent", "start"}  # fmt: skip
# The page's own frame and charts around the texts.
PAGE_TAGS = TEXT_TAGS | {"html", "head", "meta", "title", "style", "body", "div", "figure",
                         "figcaption", "svg", "rect", "text"}  # fmt: skip
PAGE_ATTRS = ATTRS | {"lang", "charset", "name", "content", "xmlns", "role", "height",
                      "viewbox", "x", "y", "text-anchor", "fill"}  # fmt: skip
EVIL = (
    "<script>alert(1)</script> <img src=x onerror=alert(2)> [link](https://evil.example) "
    "![pic](https://evil.example/p.png) <https://evil.example/auto> "
    "[js](javascript:alert(3)) <a href='https://evil.example'>a</a> "
    "$a</math><script>alert(4)</script>$ and $$x</math><img src=y onerror=alert(5)>$$"
)


class Page(HTMLParser):
    """Every element with its attributes, and the text a reader sees (not the style)."""

    def __init__(self, markup: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self._skip = 0
        self.feed(markup)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))
        self._skip += tag in ("style", "title")

    def handle_endtag(self, tag: str) -> None:
        self._skip -= tag in ("style", "title")

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.text.append(data)

    @property
    def tags(self) -> set[str]:
        return {t for t, _ in self.elements}

    @property
    def visible(self) -> str:
        return "".join(self.text)


NOTEBOOK_LINK = re.compile(r"data:application/x-ipynb\+json;base64,[A-Za-z0-9+/=]+")


def assert_inert(markup: str, tags: set[str] = TEXT_TAGS, attrs: set[str] = ATTRS) -> Page:
    """Only the allowed tags and attributes, no handler, no address. The one anchor a
    handout has is its own: a take-home notebook, a download of a data URL (base64)."""
    page = Page(markup)
    for tag, attrs_ in page.elements:
        if tag == "a" and attrs is PAGE_ATTRS:
            assert set(attrs_) == {"class", "download", "href"}, attrs_
            assert attrs_["class"] == "notebook", attrs_
            assert re.fullmatch(r"[a-z0-9_-]+-exercise-\d+\.ipynb", attrs_["download"] or "")
            assert NOTEBOOK_LINK.fullmatch(attrs_["href"] or ""), attrs_["href"][:80]
            continue
        assert tag in tags, tag
        assert set(attrs_) <= attrs, (tag, attrs_)
        assert not any(k.startswith("on") or k in ("href", "src") for k in attrs_)
    return page


def test_emphasis_code_and_math_are_drawn_not_shown_as_source() -> None:
    out = render_text(
        "Press **Train**: it trains *worse*; `torch.nn.LayerNorm` has $x_{l+1} = x_l$."
    )
    assert "<strong>Train</strong>" in out and "<em>worse</em>" in out
    assert "<code>torch.nn.LayerNorm</code>" in out
    assert "<span class='math'><math><msub><mi>x</mi><mrow><mi>l</mi>" in out
    page = assert_inert(out)
    assert "$" not in page.visible and "*" not in page.visible and "`" not in page.visible


def test_paragraphs_lists_and_display_math() -> None:
    out = render_text("One\nline.\n\nTwo.\n\n- a $k$\n- b\n\n1. c\n2. d\n\n$$\\sum_i x_i$$")
    page = assert_inert(out)
    assert [t for t, _ in page.elements if t in ("p", "ul", "ol", "li")] == [
        "p", "p", "ul", "li", "li", "ol", "li", "li", "p"
    ]  # fmt: skip
    assert "One\nline." in out  # a single newline is a soft break, as in the app
    assert "<span class='math-block'><math display=\"block\"><munder>" in out


def test_dollars_that_are_not_math_stay_text() -> None:
    out = render_text(r"It costs $5 and $10; \$3 too.")
    assert "<math" not in out and Page(out).visible == "It costs $5 and $10; $3 too.\n"
    assert "<math" not in render_text("a $ b $ c")  # spaces inside the dollars: no math


def test_an_unsupported_formula_is_its_source_in_code() -> None:
    out = render_text(r"See $\unknown{x}$ here.")
    assert '<code class="tex">\\unknown{x}</code>' in out
    assert "<math" not in out


def test_html_links_images_and_formulas_that_break_out_come_out_inert() -> None:
    for out in (render_text(EVIL), render_inline(EVIL)):
        page = assert_inert(out)
        assert "<script" not in out and "<img" not in out and "<a " not in out
        assert "<script>alert(1)</script>" in page.visible  # shown, as text
        assert "<img src=x onerror=alert(2)>" in page.visible
        assert "link (https://evil.example)" in page.visible  # a link's address is text
        assert "pic (https://evil.example/p.png)" in page.visible
        assert "https://evil.example/auto" in page.visible
        assert out.count("<math") == 2 and out.count("</math>") == 2


def test_the_handout_draws_every_formula_of_the_lesson() -> None:
    out = handout.build(LESSON, "ABCDEF", {}, 3)
    page = assert_inert(out, PAGE_TAGS, PAGE_ATTRS)
    texts = [LESSON.summary] + [s.text for s in LESSON.steps] + [s.explain for s in LESSON.steps]
    # A question is drawn twice: at its step, and in its take-home exercise.
    texts += 2 * [s.predict.question for s in LESSON.steps if s.predict]
    texts += [s.exercise for s in LESSON.steps]
    assert out.count("<math") == sum(t.count("$") for t in texts) // 2 >= 25
    visible = page.visible
    assert "$" not in visible and "**" not in visible and "`" not in visible
    assert not re.search(r"\\[A-Za-z|,]", visible)  # no TeX command left as text
    assert "<strong>Train</strong>" in out and "<em>without</em>" in out
    for i, step in enumerate(LESSON.steps, 1):
        assert f"Step {i}. " in visible


def test_the_handout_is_one_self_contained_file_that_fits_a_phone() -> None:
    first = next(i for i, s in enumerate(LESSON.steps, 1) if s.predict)
    counts = {first: {"predictions": [("plain", 2), ("residual", 1)]}}
    out = handout.build(LESSON, "ABCDEF", counts, 3)
    # The take-home notebooks are inside the file, as data URLs: the only addresses.
    low = re.sub(r"href='data:application/x-ipynb\+json;base64,[a-z0-9+/=]+'", "", out.lower())
    for needle in ("<script", "<link", "src=", "href", "url(", "@import", "@font-face"):
        assert needle not in low, needle
    assert "http" not in out.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "name='viewport' content='width=device-width, initial-scale=1'" in out
    assert "overflow-wrap: anywhere" in handout.CSS and "overflow-x: auto" in handout.CSS
    svg = re.search(r"<svg [^>]*>", out)
    assert svg and 'viewBox="0 0 380 56"' in svg.group() and "max-width: 100%" in handout.CSS


def test_a_lesson_and_a_room_full_of_markup_stay_inert() -> None:
    step = Step("<script>t()</script>", "skip_connections", None, EVIL, (("depth", 8),),
                Predict(EVIL, ("<b>a</b>", "b"), "b", "m"))  # fmt: skip
    lesson = Lesson("x", "<img src=x onerror=t()>", EVIL, (step,))
    counts = {1: {"predictions": [("<script>x()</script>", 1)], "measured": [("b", 1)]}}
    out = handout.build(lesson, "<i>C</i>", counts, 2)
    page = assert_inert(out, PAGE_TAGS, PAGE_ATTRS)
    assert "<script" not in out.lower() and "<img" not in out and "<i>" not in out
    assert "<script>t()</script>" in page.visible and "<i>C</i>" in page.visible


def test_no_question_answered_means_no_chart() -> None:
    out = handout.build(LESSON, "ABCDEF", {}, 0)
    asked = sum(1 for s in LESSON.steps if s.predict)
    assert "<svg" not in out and out.count("predictions: no answers.") == asked


def test_the_handout_gives_each_takeaway_and_the_references_never_the_notes() -> None:
    out = handout.build(LESSON, "ABCDEF", {}, 3)
    page = assert_inert(out, PAGE_TAGS, PAGE_ATTRS)
    takeaways = [s.explain for s in LESSON.steps if s.explain]
    assert len(takeaways) == len(LESSON.steps)  # the shipped lesson explains every step
    assert out.count("<strong>Takeaway.</strong>") == len(takeaways)
    for text in takeaways:
        assert render_text(text) in out
    for step in LESSON.steps:  # the presenter's alone
        for line in filter(None, (x.strip() for x in step.notes.splitlines())):
            assert render_inline(line) not in out, line
    assert "<h2>References</h2>" in out
    assert all(render_inline(r) in out for r in LESSON.references)
    assert "A 60-minute workshop." in page.visible


def test_a_takeaway_and_a_reference_full_of_markup_stay_inert() -> None:
    step = Step("t", "skip_connections", None, "x", (), None, 3.0, EVIL, EVIL)
    lesson = Lesson("x", "t", "", (step,), slot=3.0, references=(EVIL,))
    out = handout.build(lesson, "ABCDEF", {}, 0)
    page = assert_inert(out, PAGE_TAGS, PAGE_ATTRS)
    assert "<script" not in out.lower() and "<img" not in out
    assert page.visible.count("<script>alert(1)</script>") == 2  # takeaway and reference


@pytest.mark.slow
def test_each_question_has_a_take_home_notebook_that_measures_it() -> None:
    """The take-home notebooks, decoded from the handout's data URLs: one per question,
    the question as Python literals, and a recipe call that, run, gives the lesson's
    expected answer at the step's settings over seeds 0-9 (the room's own call)."""
    import base64
    import contextlib
    import io
    import json

    out = handout.build(LESSON, "ABCDEF", {}, 3)
    links = re.findall(r"download='([^']+)' href='([^']+)'", out)
    asked = [s for s in LESSON.steps if s.predict]
    assert [name for name, _ in links] == [
        f"{LESSON.id}-exercise-{k}.ipynb" for k in range(1, len(asked) + 1)
    ]
    for step, (_, href) in zip(asked, links, strict=True):
        nb = json.loads(base64.b64decode(href.split(",", 1)[1]))
        # (the first code cell installs what is missing: tests/app/test_notebook_source.py)
        code = [
            c["source"] for c in nb["cells"] if c["cell_type"] == "code" and c["id"] != "install"
        ]
        # Run the question's and the measuring cells (our generated code, the author's
        # text in it only as literals) after the imports.
        scope: dict = {}
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec("import resviz as rv", scope)  # noqa: S102
            exec(code[1], scope)  # noqa: S102
            exec(code[2], scope)  # noqa: S102
        assert scope["question"] == step.predict.question
        assert scope["choices"] == list(step.predict.choices)
        answer = scope["answer"]
        assert answer.answer == step.predict.expect, (step.title, answer.sentence)
        if "seeds=" in code[2]:
            assert "seeds=10" in code[2] and answer.sentence.startswith("In 10 of 10 seeds")
