"""ui/mathml.py: every formula the lessons hold becomes MathML (no TeX left over), with
the structure TeX gives it; anything outside the subset is its source in <code>; the
markup is made of our own tags and escaped text only, whatever the TeX holds."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.examples import examples
from ui.lessons import load_lessons
from ui.mathml import Unsupported, convert, to_mathml
from ui.room.handout import MD

TAGS = {
    "math", "mrow", "mi", "mn", "mo", "mtext", "mspace", "msub", "msup", "msubsup",
    "munder", "mover", "munderover", "mfrac", "msqrt", "mroot",
}  # fmt: skip
ATTRS = {
    "display", "stretchy", "lspace", "rspace", "movablelimits", "linethickness",
    "mathvariant", "width", "accent",
}  # fmt: skip


def lesson_formulas() -> list[str]:
    """Every formula in every lesson's texts, questions and summary, found by the
    handout's own Markdown parser; each ``$`` of a text is accounted for."""
    found: list[str] = []
    for lesson in load_lessons()[0].values():
        texts = [lesson.summary] + [s.text for s in lesson.steps]
        texts += [s.explain for s in lesson.steps]  # the handout's takeaways
        texts += [s.predict.question for s in lesson.steps if s.predict]
        texts += list(lesson.references)
        for text in texts:
            maths = [
                child
                for tok in MD.parse(text)
                if tok.type == "inline"
                for child in tok.children or []
                if child.type == "math"
            ]
            assert text.count("$") == sum(2 * len(m.markup) for m in maths), text
            found += [m.content for m in maths]
    return sorted(set(found))


FORMULAS = lesson_formulas()


def tree(markup: str) -> ET.Element:
    """The MathML as an XML tree, every tag and attribute checked to be one of ours."""
    root = ET.fromstring(markup)
    for el in root.iter():
        assert el.tag in TAGS, el.tag
        assert set(el.attrib) <= ATTRS, el.attrib
    return root


def shape(el: ET.Element) -> object:
    """An element as (tag, text) for a leaf, (tag, [children]) otherwise."""
    kids = list(el)
    return (el.tag, [shape(k) for k in kids]) if kids else (el.tag, el.text or "")


def test_the_lessons_hold_formulas_and_the_known_commands() -> None:
    assert len(FORMULAS) >= 20
    commands = {c for f in FORMULAS for c in re.findall(r"\\([A-Za-z]+|.)", f)}
    assert {"binom", "sqrt", "prod", "sum", "partial", "lambda", "|", ","} <= commands


@pytest.mark.parametrize("tex", FORMULAS)
def test_every_lesson_formula_becomes_mathml(tex: str) -> None:
    markup = convert(tex)  # raises Unsupported if any of it is outside the subset
    root = tree(markup)
    assert root.tag == "math" and len(root)
    text = "".join(root.itertext())
    assert "$" not in text and "\\" not in text and "{" not in text and "_" not in text
    assert "$" not in markup and "\\" not in markup


def test_a_subscripted_sum_has_the_structure_tex_gives_it() -> None:
    root = tree(convert(r"x_{l+1} = x_l + f(x_l)"))
    assert shape(root) == (
        "math",
        [
            ("msub", [("mi", "x"), ("mrow", [("mi", "l"), ("mo", "+"), ("mn", "1")])]),
            ("mo", "="),
            ("msub", [("mi", "x"), ("mi", "l")]),
            ("mo", "+"),
            ("mi", "f"),
            ("mo", "("),
            ("msub", [("mi", "x"), ("mi", "l")]),
            ("mo", ")"),
        ],
    )
    assert convert("x_{l+1}").startswith("<math><msub><mi>x</mi><mrow><mi>l</mi>")


@pytest.mark.parametrize(
    ("tex", "expected"),
    [
        (r"\binom{n}{k}", ("mrow", [("mo", "("), ("mfrac", [("mrow", [("mi", "n")]),
                                                           ("mrow", [("mi", "k")])]),
                                    ("mo", ")")])),
        (r"\frac{a}{b}", ("mfrac", [("mrow", [("mi", "a")]), ("mrow", [("mi", "b")])])),
        (r"\sqrt{d}", ("msqrt", [("mrow", [("mi", "d")])])),
        (r"\sqrt[3]{d}", ("mroot", [("mrow", [("mi", "d")]), ("mrow", [("mn", "3")])])),
        (r"\sum_i", ("munder", [("mo", "∑"), ("mi", "i")])),
        (r"\prod_{l=1}^L", ("munderover", [("mo", "∏"), ("mrow", [("mi", "l"), ("mo", "="),
                                                                  ("mn", "1")]),
                                           ("mi", "L")])),
        (r"\lambda^L", ("msup", [("mi", "λ"), ("mi", "L")])),
        (r"x_i^2", ("msubsup", [("mi", "x"), ("mi", "i"), ("mn", "2")])),
        (r"2^10", ("msup", [("mn", "2"), ("mn", "1")])),  # TeX takes one digit
        (r"\partial", ("mi", "∂")),
        (r"\ell", ("mi", "ℓ")),
        (r"\Sigma", ("mi", "Σ")),
        (r"\epsilon", ("mi", "ϵ")),
        (r"\|", ("mo", "‖")),
        (r"\cdot", ("mo", "⋅")),
        (r"\approx", ("mo", "≈")),
        (r"\le", ("mo", "≤")),
        (r"\cos", ("mi", "cos")),
        (r"\mathrm{d}", ("mi", "d")),
        (r"\text{if }", ("mtext", "if ")),
        (r"a-b", None),
    ],
)  # fmt: skip
def test_each_construct(tex: str, expected: object) -> None:
    root = tree(convert(tex))
    if expected is not None:
        assert shape(root[0]) == expected
    else:
        assert [shape(k) for k in root] == [("mi", "a"), ("mo", "−"), ("mi", "b")]


def test_upright_letters_and_fixed_size_delimiters() -> None:
    assert tree(convert(r"\mathrm{d}"))[0].get("mathvariant") == "normal"
    assert tree(convert(r"\Gamma"))[0].get("mathvariant") == "normal"
    plain = tree(convert(r"(\|x\|)"))
    assert [el.get("stretchy") for el in plain.iter("mo")] == ["false"] * 4
    fenced = tree(convert(r"\left( \frac{1}{2} \right)"))
    assert [el.get("stretchy") for el in fenced.iter("mo")] == [None, None]
    assert tree(convert("n/2"))[1].attrib == {"lspace": "0", "rspace": "0"}
    assert tree(convert("x", display=True)).get("display") == "block"


@pytest.mark.parametrize(
    "tex",
    [r"\foo x", r"x^}", r"{x", r"x}", r"x_1_2", r"a & b", r"\left( x", r"\frac{1}", "", " ",
     r"\right)", "{" * 2000 + "}" * 2000, "x % comment"],
)  # fmt: skip
def test_outside_the_subset_is_the_source_in_code(tex: str) -> None:
    with pytest.raises((Unsupported, RecursionError)):
        convert(tex)
    out = to_mathml(tex)
    el = ET.fromstring(out)
    assert el.tag == "code" and el.get("class") == "tex" and (el.text or "") == tex


def test_a_formula_that_tries_to_close_the_math_stays_inside_it() -> None:
    tex = r"a</math><script>alert(1)</script><img src=x onerror=alert(1)>"
    out = to_mathml(tex)
    assert "<script" not in out and "<img" not in out and "</math>" == out[-7:]
    assert out.count("<math>") == 1 and out.count("</math>") == 1
    root = tree(out)
    assert "".join(root.itertext()) == tex.replace(" ", "")  # spaces are TeX's, not text


def test_quotes_and_ampersands_in_text_are_escaped() -> None:
    out = to_mathml(r'\text{"a" & <b>}')
    assert '"a"' not in out and "&amp;" in out and "&lt;b&gt;" in out
    assert ET.fromstring(out).find("mtext").text == '"a" & <b>'
    assert ET.fromstring(to_mathml(r"\text{costs \$5}")).find("mtext").text == "costs $5"
    assert to_mathml(r"\text{\alpha}") == r'<code class="tex">\text{\alpha}</code>'


TEX_PIECES = st.sampled_from(
    [
        "x", "2", "10", "+", "-", "=", "(", ")", "[", "]", "|", "/", "'", ",", ".", " ",
        "{", "}", "_", "^", "~", "&", "%", "#", "<", ">", '"', "\\", "$",
        r"\frac", r"\sqrt", r"\binom", r"\left", r"\right", r"\|", r"\,", r"\alpha",
        r"\sum", r"\prod", r"\text", r"\mathrm", r"\hat", r"\foo", r"\\", "</math>",
        "<script>", "é", "α", "·",
    ]
)  # fmt: skip


@settings(max_examples=examples(400), deadline=None)
@given(st.lists(TEX_PIECES, max_size=25).map("".join), st.booleans())
def test_any_tex_gives_our_markup_or_its_source_never_an_error(tex: str, display: bool) -> None:
    out = to_mathml(tex, display)
    root = ET.fromstring(out)  # well-formed: nothing of the TeX broke out of its text
    if root.tag == "code":
        assert root.text == (tex or None) and list(root) == []
    else:
        tree(out)
        assert (root.get("display") == "block") is display
