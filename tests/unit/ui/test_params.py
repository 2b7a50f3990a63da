"""URL parsers accept only what the widget could hold; user text becomes an inert code span."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from resviz.settings import InvalidSetting as InvalidParam
from resviz.settings import parse_float, parse_int
from tests.examples import examples
from ui.params import md_escape


@pytest.mark.parametrize("s", ["4", "32", "+8", "2"])
def test_parse_int_accepts_ascii_on_the_step(s):
    assert parse_int(s, 2, 32, 2) == int(s)


@pytest.mark.parametrize(
    "s",
    ["3", "31", "34", "0", "٣٢", "３２", "1_0", " 4", "4 ", "4.0", "", "+", "1e1", "0x4", "٤"],
)
def test_parse_int_refuses_off_step_out_of_range_and_non_ascii(s):
    with pytest.raises(InvalidParam):
        parse_int(s, 2, 32, 2)


def test_python_itself_would_accept_those_digits():
    """Why the parsers match [0-9] and not \\d: both of these accept any Unicode digit."""
    assert re.fullmatch(r"\d+", "٣٢") and int("٣٢") == 32 and float("٠.٥") == 0.5


@pytest.mark.parametrize(("s", "v"), [("0.35", 0.35), ("1.5", 1.5), ("0", 0.0), ("5e-1", 0.5)])
def test_parse_float_accepts_on_step(s, v):
    assert parse_float(s, 0.0, 1.5, 0.05) == v


def test_parse_float_snaps_binary_noise_to_the_grid():
    assert parse_float(repr(0.1 + 0.2), 0.0, 1.5, 0.05) == 0.3


@pytest.mark.parametrize(
    "s", ["0.33", "٠.٥", "1.6", "-0.05", "nan", "inf", "1_0", " 0.5", "0.5.", "", "1" * 41]
)
def test_parse_float_refuses(s):
    with pytest.raises(InvalidParam):
        parse_float(s, 0.0, 1.5, 0.05)


def test_refusal_messages_never_repeat_the_input():
    for bad in ("www.evil.com", "http://x.y", "٣"):
        for parse in (lambda s: parse_int(s, 0, 9), lambda s: parse_float(s, 0.0, 9.0)):
            with pytest.raises(InvalidParam) as err:
                parse(bad)
            assert bad not in str(err.value)


def _decode(md: str) -> tuple[str, bool]:
    """Read an inline code span back as CommonMark does; fail if it is not exactly one."""
    cut = md.endswith("...") and not md.endswith("`...`")
    body = md[:-3] if cut else md
    fence = re.match(r"`+", body).group()
    assert body.endswith(fence) and len(body) >= 2 * len(fence) + 1
    inner = body[len(fence) : -len(fence)]
    # No run of exactly len(fence) backticks inside, so the span cannot close early.
    assert all(len(run) != len(fence) for run in re.findall(r"`+", inner))
    if inner.startswith(" ") and inner.endswith(" ") and inner.strip(" "):
        inner = inner[1:-1]
    return inner, cut


@settings(max_examples=examples(300), deadline=None)
@given(st.text(max_size=80))
def test_md_escape_is_one_code_span_holding_the_text(text):
    md = md_escape(text, limit=60)
    assert "\n" not in md and "\r" not in md
    if md.startswith("("):
        assert not text.strip(" ")
        return
    inner, cut = _decode(md)
    assert inner.isprintable()
    if text.isprintable() and len(text) <= 60:
        assert inner == text and not cut


@pytest.mark.parametrize(
    "text",
    [
        "www.evil.com/login",
        "http://evil.example",
        "mailto:a@b.c",
        "a@b.c",
        "`",
        "``x``",
        "` x `",
        "<script>alert(1)</script>",
    ],
)
def test_md_escape_examples(text):
    inner, cut = _decode(md_escape(text))
    assert inner == text and not cut


def test_md_escape_shows_invisible_characters_and_cuts_long_text():
    assert md_escape("a\u202eb\x00c") == "`a\\u202eb\\u0000c`"
    assert md_escape("x" * 100, limit=10) == "`xxxxxxxxxx`..."
    assert md_escape("") == "(empty)" and md_escape("   ") == "(3 spaces)"
