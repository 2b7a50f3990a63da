"""The lesson as one self-contained HTML file: each step's text and settings, and
for each question the room's predictions, second votes and measured answers, as
inline SVG bar charts; each step's takeaway (its ``explain``) and the lesson's
references. Never the presenter's notes. No script, no stylesheet or font from elsewhere: it opens
offline. Step texts, questions and the summary are the lesson's Markdown, drawn as the
app draws them: its ``$...$`` (and ``$$...$$``) math as MathML (:mod:`ui.mathml`), which
browsers draw natively, and its emphasis, code and lists as HTML. Raw HTML in them is
escaped, links and images are plain text, never anchors; every other piece of text goes
through :func:`html.escape`: nothing a lesson author or a participant typed becomes
markup. On a 390 px phone the page never scrolls sideways: words wrap anywhere, charts
shrink to fit, a formula wider than the screen scrolls inside its own box."""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token

from ..lessons import Lesson, Step, question_call
from ..mathml import to_mathml
from ..notebook import Notebook, literal
from ..specs import fmt
from ..specs.pages import spec_of

# The take-home notebooks measure a question over this many seeds (0-9).
EXERCISE_SEEDS = 10

CSS = """
html { -webkit-text-size-adjust: 100%; text-size-adjust: 100%; }
body { font: 17px/1.55 system-ui, sans-serif; max-width: 46rem; margin: 1.5rem auto;
       padding: 0 1rem; color: #1b1b1b; overflow-wrap: anywhere; }
h1 { font-size: 1.6rem; line-height: 1.25; } h2 { font-size: 1.2rem; margin-top: 2rem; }
.muted { color: #555; font-size: .9rem; }
code { font-size: .9em; background: #f2f2f2; padding: 0 .2em; border-radius: 3px; }
pre { overflow-x: auto; max-width: 100%; } table { display: block; overflow-x: auto; }
math { font-size: 1.1em; }
/* A formula scrolls inside its own box; inline-flex (unlike inline-block) keeps the
   formula's baseline on the line's while it scrolls. The padding keeps the ink of
   italic letters (J, f) that reaches past their box from being clipped. */
.math { display: inline-flex; max-width: 100%; overflow-x: auto; overflow-y: hidden;
        padding: .15em .1em; margin: -.15em 0; box-sizing: border-box; }
.math-block { display: block; max-width: 100%; overflow-x: auto; overflow-y: hidden;
              padding: .25em .2em; margin: .25rem 0; box-sizing: border-box; }
figure { margin: .5rem 0 1rem; } figcaption { font-weight: 600; }
.takeaway { border-left: 4px solid #4c78a8; padding: .1rem 0 .1rem .8rem; margin: 1rem 0; }
svg { max-width: 100%; height: auto; }
svg text { font: 13px system-ui, sans-serif; fill: #1b1b1b; }
"""


def _math_rule(state: StateInline, silent: bool) -> bool:
    """``$tex$`` or ``$$tex$$`` at ``state.pos``: a ``math`` token. A single ``$`` opens
    only before a non-space and closes only after a non-space, not before a digit or
    another ``$`` (so "$5 and $10" stays text); ``\\$`` is a dollar sign, in math too."""
    src, start, stop = state.src, state.pos, state.posMax
    if src[start] != "$":
        return False
    delim = "$$" if src.startswith("$$", start) else "$"
    begin = start + len(delim)
    if begin >= stop or (delim == "$" and src[begin].isspace()):
        return False
    end = begin
    while True:
        end = src.find(delim, end, stop)
        if end < 0:
            return False
        if delim == "$" and src.startswith("$$", end):  # a $$ does not close a $
            end += 2
            continue
        after = src[end + len(delim) : end + len(delim) + 1]
        closes = src[end - 1] != "\\" and (
            delim == "$$" or not (src[end - 1].isspace() or after.isdigit())
        )
        if end > begin and closes:
            break
        end += 1
    if not silent:
        token = state.push("math", "math", 0)
        token.content, token.markup = src[begin:end], delim
    state.pos = end + len(delim)
    return True


def _render_math(_self: Any, tokens: Sequence[Token], idx: int, _options: Any, _env: Any) -> str:
    display = tokens[idx].markup == "$$"
    box = "math-block" if display else "math"
    return f"<span class='{box}'>{to_mathml(tokens[idx].content, display)}</span>"


def _link_open(
    _self: Any, tokens: Sequence[Token], idx: int, _options: Any, env: MutableMapping[str, Any]
) -> str:
    # A link is its text, then its address as plain text: never an anchor.
    token = tokens[idx]
    href = "" if token.markup == "autolink" else str(token.attrGet("href") or "")
    env.setdefault("hrefs", []).append(href)
    return ""


def _link_close(
    _self: Any, _tokens: Sequence[Token], _idx: int, _options: Any, env: MutableMapping[str, Any]
) -> str:
    href = env["hrefs"].pop()
    return f" ({html.escape(href)})" if href else ""


def _image(
    self: Any, tokens: Sequence[Token], idx: int, options: Any, env: MutableMapping[str, Any]
) -> str:
    # An image is its description and address as plain text: nothing is fetched.
    token = tokens[idx]
    alt = self.renderInlineAsText(token.children or [], options, env)
    return html.escape(f"{alt} ({token.attrGet('src') or ''})")


def markdown() -> MarkdownIt:
    """The lessons' Markdown: CommonMark with tables and strikethrough, raw HTML escaped
    (``html=False``), math as MathML, links and images as plain text."""
    md = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])
    md.inline.ruler.before("escape", "math", _math_rule)
    md.add_render_rule("math", _render_math)
    md.add_render_rule("link_open", _link_open)
    md.add_render_rule("link_close", _link_close)
    md.add_render_rule("image", _image)
    return md


MD = markdown()


def render_text(text: str) -> str:
    """A step's text (Markdown with math) as HTML."""
    return MD.render(text, {})


def render_inline(text: str) -> str:
    """One line of Markdown with math (a question, the summary) as inline HTML."""
    return MD.renderInline(text, {})


def bar_svg(rows: list[tuple[str, int]], color: str = "#4c78a8") -> str:
    """Horizontal bars, one per answer, labelled with the answer and its count."""
    label_w, bar_w, row_h = 150, 190, 26
    width, height = label_w + bar_w + 40, row_h * len(rows) + 4
    top = max((c for _, c in rows), default=0) or 1
    parts = [  # the viewBox lets CSS shrink the chart to a narrow screen
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}">'
    ]
    for i, (answer, count) in enumerate(rows):
        y = i * row_h + 2
        w = round(bar_w * count / top)
        parts.append(
            f'<text x="{label_w - 6}" y="{y + 17}" text-anchor="end">'
            f"{html.escape(answer[:22])}</text>"
            f'<rect x="{label_w}" y="{y + 3}" width="{w}" height="{row_h - 8}" fill="{color}"/>'
            f'<text x="{label_w + w + 6}" y="{y + 17}">{count}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _takeaway(explain: str) -> list[str]:
    """A step's why, as the handout's takeaway (nothing where the step has none)."""
    if not explain:
        return []
    return [f"<div class='takeaway'><strong>Takeaway.</strong>{render_text(explain)}</div>"]


def exercise_notebook(step: Step) -> Notebook:
    """A take-home notebook for a question step: the question (as Python literals: it
    is the lesson author's text), then the recipe call that measures it at the step's
    settings over seeds 0-9 (:func:`ui.lessons.question_call`, the room's own call,
    with :data:`EXERCISE_SEEDS` where the recipe runs seeds) and the measured answer."""
    q = step.predict
    assert q is not None
    name, settings = question_call(step.page, step, seed=0)
    if "seeds" in settings:
        settings["seeds"] = EXERCISE_SEEDS
    section = step.section or spec_of(step.page).sections[0]
    nb = Notebook(step.page, section, {k: fmt(v) for k, v in step.settings})
    nb.code(
        f"question = {literal(q.question)}\nchoices = {literal(list(q.choices))}\nprint(question, choices)"
    )
    seeds = (
        "over seeds 0-9 (the `seeds` setting)"
        if "seeds" in settings
        else "(no seeds: fixed weights)"
    )
    nb.md(
        "Predict your answer first. The next cell computes the section's data with the "
        f"step's settings {seeds} and reads the answer the way the workshop room did."
    )
    call = ", ".join(f"{k}={literal(v)}" for k, v in settings.items())
    nb.code(
        f"r = rv.recipes.{name}({call})\n"
        f"answer = rv.recipes.MEASURES[{literal(q.measure)}].over(r)\n"
        "print(answer.answer)\nprint(answer.sentence)"
    )
    nb.md("Now change one setting in that call, predict again, and run it.")
    return nb


def _take_home(lesson: Lesson) -> list[str]:
    """The take-home exercises: one per question, its text and its notebook, a download
    inside the file (a data URL: the handout stays one self-contained file)."""
    from resviz.recipes import MEASURES  # torch: only once a handout is made

    asked = [s for s in lesson.steps if s.predict]
    if not asked:
        return []
    e = html.escape
    stem = re.sub(r"[^a-z0-9_-]+", "-", lesson.id.lower()).strip("-") or "lesson"
    out = [
        "<h2>Take home</h2>",
        "<p>One exercise per question. Each notebook measures its question with the "
        "<code>resviz</code> library at the step's settings, as the room did; its first "
        "cell says how to install what it needs.</p>",
    ]
    for k, step in enumerate(asked, start=1):
        q = step.predict
        assert q is not None
        out.append(f"<h3>Exercise {k}. {e(step.title)}</h3>")
        if step.exercise:
            out.append(render_text(step.exercise))
        else:
            out.append(
                f"<p>Predict, then run the notebook: “{render_inline(q.question)}” "
                f"({e(' or '.join(q.choices))}). Then change one setting in its call, "
                "predict again, and run it.</p>"
            )
        if q.measure not in MEASURES:  # only a lesson built by hand, unchecked
            continue
        data = base64.b64encode(exercise_notebook(step).to_bytes()).decode("ascii")
        file = f"{stem}-exercise-{k}.ipynb"
        out.append(
            f"<p><a class='notebook' download='{file}' "
            f"href='data:application/x-ipynb+json;base64,{data}'>Notebook: {file}</a></p>"
        )
    return out


def build(
    lesson: Lesson,
    code: str,
    room_counts: Mapping[int, Mapping[str, list[tuple[str, int]]]],
    participants: int,
) -> str:
    """The handout's HTML (UTF-8 text)."""
    e = html.escape
    out = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<title>{e(lesson.title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{e(lesson.title)}</h1>",
        f"<p class='muted'>Workshop room {e(code)} · {participants} participants · "
        "made with resviz</p>",
    ]
    if lesson.summary:
        out.append(f"<p>{render_inline(lesson.summary)}</p>")
    if lesson.slot:
        out.append(f"<p class='muted'>A {e(fmt(lesson.slot))}-minute workshop.</p>")
    for i, step in enumerate(lesson.steps, start=1):
        out.append(f"<h2>Step {i}. {e(step.title)}</h2>")
        out.append(f"<div class='text'>{render_text(step.text)}</div>")
        where = step.page + (f", section {step.section}" if step.section else "")
        settings = ", ".join(f"{k} = {fmt(v)}" for k, v in step.settings)
        out.append(
            f"<p class='muted'>Page: {e(where)}"
            + (f"; settings: {e(settings)}" if settings else "")
            + "</p>"
        )
        q = step.predict
        if q is None:
            out.extend(_takeaway(step.explain))
            continue
        out.append(f"<p><strong>Question:</strong> {render_inline(q.question)}</p>")
        counts = room_counts.get(i, {})
        for key, title, color in (
            ("predictions", "The room's predictions", "#4c78a8"),
            ("measured", "Measured by the server, one seed per participant", "#59a14f"),
            ("second", "Second vote, after the discussion", "#f28e2b"),
        ):
            rows = list(counts.get(key, []))
            n = sum(c for _, c in rows)
            if n == 0:  # not asked (or no one answered): no empty chart
                if key != "second":
                    out.append(f"<p class='muted'>{e(title)}: no answers.</p>")
                continue
            out.append(
                f"<figure><figcaption>{e(title)} ({n} answers)</figcaption>"
                f"{bar_svg(rows, color)}</figure>"
            )
        out.extend(_takeaway(step.explain))
    out.extend(_take_home(lesson))
    if lesson.references:
        out.append("<h2>References</h2><ul class='references'>")
        out.extend(f"<li>{render_inline(ref)}</li>" for ref in lesson.references)
        out.append("</ul>")
    out.append("</body></html>")
    return "\n".join(out)
