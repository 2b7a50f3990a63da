"""The lesson as one self-contained HTML file: each step's text and settings, and
for each question the room's predictions, second votes and measured answers, as
inline SVG bar charts. No script, no stylesheet or font from elsewhere: it opens
offline. Every piece of text goes through :func:`html.escape`; nothing a lesson
author or a participant typed becomes markup."""

from __future__ import annotations

import html
from collections.abc import Mapping

from ..lessons import Lesson
from ..specs import fmt

CSS = """
body { font: 16px/1.5 system-ui, sans-serif; max-width: 46rem; margin: 2rem auto;
       padding: 0 1rem; color: #1b1b1b; }
h1 { font-size: 1.6rem; } h2 { font-size: 1.2rem; margin-top: 2rem; }
.text { white-space: pre-wrap; } .muted { color: #555; font-size: .9rem; }
figure { margin: .5rem 0 1rem; } figcaption { font-weight: 600; }
svg text { font: 13px system-ui, sans-serif; fill: #1b1b1b; }
"""


def bar_svg(rows: list[tuple[str, int]], color: str = "#4c78a8") -> str:
    """Horizontal bars, one per answer, labelled with the answer and its count."""
    label_w, bar_w, row_h = 150, 260, 26
    top = max((c for _, c in rows), default=0) or 1
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{label_w + bar_w + 50}" '
        f'height="{row_h * len(rows) + 4}">'
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
        out.append(f"<p>{e(lesson.summary)}</p>")
    for i, step in enumerate(lesson.steps, start=1):
        out.append(f"<h2>Step {i}. {e(step.title)}</h2>")
        out.append(f"<div class='text'>{e(step.text)}</div>")
        where = step.page + (f", section {step.section}" if step.section else "")
        settings = ", ".join(f"{k} = {fmt(v)}" for k, v in step.settings)
        out.append(
            f"<p class='muted'>Page: {e(where)}"
            + (f"; settings: {e(settings)}" if settings else "")
            + "</p>"
        )
        q = step.predict
        if q is None:
            continue
        out.append(f"<p><strong>Question:</strong> {e(q.question)}</p>")
        counts = room_counts.get(i, {})
        for key, title, color in (
            ("predictions", "The room's predictions", "#4c78a8"),
            ("measured", "Measured on participants' laptops, one seed each", "#59a14f"),
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
    out.append("</body></html>")
    return "\n".join(out)
