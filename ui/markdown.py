"""User text made inert for Streamlit Markdown, written once.

User text reaches Markdown only through :func:`md_escape`, which renders it as an
inline code span: Markdown draws no link, image, HTML, math, emoji or directive
inside one, where escaping characters cannot stop autolinks (``www.x.com``,
``http://``, ``mailto:``, e-mail addresses).
"""

from __future__ import annotations

import re

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:])")


def _visible(text: str) -> str:
    """Every character Python deems unprintable (controls, bidi overrides, zero-width
    and other odd spaces, line separators, unassigned) shown as its escape."""
    return "".join(
        ch
        if ch.isprintable()
        else (f"\\u{ord(ch):04x}" if ord(ch) < 0x10000 else f"\\U{ord(ch):08x}")
        for ch in text
    )


def md_escape(text: str, limit: int = 60) -> str:
    """User text made inert for Streamlit markdown: an inline code span.

    Nothing inside a code span becomes a link (autolinks included), an image,
    HTML, math, an emoji or a Streamlit directive. Control and invisible
    characters are shown as ``\\uXXXX``; text beyond ``limit`` characters is cut.
    """
    text = _visible(text)
    cut = len(text) > limit
    if cut:
        text = text[:limit]
    if not text.strip(" "):
        return "(empty)" if not text else f"({len(text)} spaces)"
    # A fence one backtick longer than the longest run inside cannot be closed
    # early; a space pads text that starts or ends with a backtick (CommonMark
    # strips one space from each end).
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text[0] in "` " or text[-1] in "` " else ""
    return f"{fence}{pad}{text}{pad}{fence}" + ("..." if cut else "")


def _md_plain(text: str) -> str:
    """Our own text (never the user's) with Markdown's special characters escaped."""
    return _MD_SPECIAL.sub(r"\\\1", text)
