"""TeX math as MathML, which browsers draw natively (no script, font or network).

The subset the lessons use and a little around it: ``_``, ``^``, groups, ``\\frac``,
``\\binom``, ``\\sqrt``, Greek, ``\\|``, ``\\partial``, ``\\sum``, ``\\cos``, ``\\mathrm``,
``\\text``, accents, ``\\left``/``\\right``, spaces. Anything else is shown as its source in
``<code>`` (:func:`to_mathml` never raises). The markup is made of fixed tags and escaped
tokens only: no character of the TeX reaches the output unescaped."""

from __future__ import annotations

import re
from html import escape

_TOKEN = re.compile(r"\\[A-Za-z]+|\\.|\d+(?:\.\d+)?|\s+|.", re.S)
_LOWER = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi pi rho sigma tau upsilon phi chi psi omega"  # noqa: E501
_UPPER = "Gamma Delta Theta Lambda Xi Pi Sigma Upsilon Phi Psi Omega"
GREEK = dict(zip(_LOWER.split(), "αβγδϵζηθικλμνξπρστυϕχψω", strict=True))
GREEK |= {"varepsilon": "ε", "vartheta": "ϑ", "varphi": "φ", "varrho": "ϱ", "varsigma": "ς"}
UPRIGHT = dict(zip(_UPPER.split(), "ΓΔΘΛΞΠΣΥΦΨΩ", strict=True))
IDENT = {"partial": "∂", "ell": "ℓ", "infty": "∞", "nabla": "∇", "top": "⊤"} | GREEK
OPS = {
    "cdot": "⋅", "times": "×", "pm": "±", "mp": "∓", "div": "÷", "ast": "∗", "circ": "∘",
    "approx": "≈", "sim": "∼", "simeq": "≃", "equiv": "≡", "propto": "∝", "ne": "≠",
    "neq": "≠", "le": "≤", "leq": "≤", "ge": "≥", "geq": "≥", "ll": "≪", "gg": "≫",
    "to": "→", "rightarrow": "→", "leftarrow": "←", "Rightarrow": "⇒", "mapsto": "↦",
    "in": "∈", "notin": "∉", "subset": "⊂", "subseteq": "⊆", "cup": "∪", "cap": "∩",
    "odot": "⊙", "otimes": "⊗", "oplus": "⊕", "ldots": "…", "cdots": "⋯", "dots": "…",
    "mid": "∣", "prime": "′", "int": "∫", "%": "%", "$": "$", "#": "#", "&": "&", "_": "_",
}  # fmt: skip
FENCES = {"|": "‖", "{": "{", "}": "}", "langle": "⟨", "rangle": "⟩", "lVert": "‖",
          "rVert": "‖", "lvert": "|", "rvert": "|"}  # fmt: skip
BIG = {"sum": "∑", "prod": "∏"} | {f: f for f in ("max", "min", "lim", "sup", "inf")}
FUNCS = set("cos sin tan cosh sinh tanh exp log ln arg det dim ker Pr".split())
SPACES = {",": "0.1667em", ":": "0.2222em", ";": "0.2778em", "!": "-0.1667em",
          " ": "0.25em", "quad": "1em", "qquad": "2em"}  # fmt: skip
ACCENTS = {"hat": "^", "bar": "¯", "overline": "¯", "tilde": "~", "vec": "→", "dot": "˙"}
CHAR_OPS = {"-": "−", "*": "∗", "'": "′"}


class Unsupported(ValueError):
    """TeX outside the subset this module draws."""


def _el(tag: str, *children: str, **attrs: str) -> str:
    extra = "".join(f' {k}="{escape(v)}"' for k, v in attrs.items())
    return f"<{tag}{extra}>{''.join(children)}</{tag}>"


def _mo(ch: str, plain: bool = False) -> str:
    if plain:  # a delimiter typed without \left/\right keeps its size, as in TeX
        return _el("mo", escape(ch), stretchy="false")
    if ch == "/":  # a slash is an ordinary symbol in TeX: no space around it
        return _el("mo", "/", lspace="0", rspace="0")
    return _el("mo", escape(ch))


class _Parser:
    def __init__(self, tex: str) -> None:
        self.toks = _TOKEN.findall(tex)
        self.i = 0

    def peek(self) -> str | None:
        while self.i < len(self.toks) and self.toks[self.i].isspace():
            self.i += 1
        return self.toks[self.i] if self.i < len(self.toks) else None

    def next(self) -> str:
        if (tok := self.peek()) is None:
            raise Unsupported("the formula ends too early")
        self.i += 1
        return tok

    def row(self, stop: str | None = None) -> str:
        out = []
        while (tok := self.peek()) != stop:
            if tok is None or tok in ("}", "\\right"):
                raise Unsupported(f"unexpected {tok or 'end'}")
            out.append(self.scripts(self.atom()))
        return "".join(out)

    def group(self) -> str:
        """One argument: a braced group or a single token (a number's first digit)."""
        tok = self.peek()
        if tok is not None and tok[0].isdigit() and len(tok) > 1:
            self.toks[self.i] = tok[1:]
            return _el("mn", escape(tok[0]))
        return self.atom()

    def raw(self) -> str:
        """The text of a braced group (for \\text and \\mathrm): ``\\$`` is a dollar."""
        if self.next() != "{":
            raise Unsupported("expected {")
        text = []
        while (tok := self.toks[self.i] if self.i < len(self.toks) else "}") not in "{}":
            if tok[0] == "\\" and (len(tok) != 2 or tok[1].isalpha()):
                raise Unsupported(f"a command in text: {tok}")
            text.append(tok[-1] if tok[0] == "\\" else tok)
            self.i += 1
        if self.next() != "}":
            raise Unsupported("expected }")
        return "".join(text)

    def scripts(self, base: str, big: bool = False) -> str:
        sub = sup = None
        while (tok := self.peek()) in ("_", "^"):
            self.i += 1
            if (sub if tok == "_" else sup) is not None:
                raise Unsupported("double script")
            arg = self.group()
            sub, sup = (arg, sup) if tok == "_" else (sub, arg)
        if sub is None and sup is None:
            return base
        tags = ("munder", "mover", "munderover") if big else ("msub", "msup", "msubsup")
        tag = tags[2] if sub is not None and sup is not None else tags[sub is None]
        return _el(tag, base, *(x for x in (sub, sup) if x is not None))

    def atom(self) -> str:
        tok = self.next()
        if tok == "{":
            inner = self.row("}")
            self.i += 1
            return _el("mrow", inner)
        if tok in ("_", "^"):  # a script with nothing before it: an empty base
            self.i -= 1
            return "<mrow></mrow>"
        if tok.startswith("\\"):
            return self.command(tok[1:])
        if tok[0].isdigit():
            return _el("mn", escape(tok))
        if tok.isalpha():
            return _el("mi", escape(tok))
        if tok == "~":
            return _el("mspace", width="0.25em")
        if tok in ("&", "#", "%", "}", "\x00"):
            raise Unsupported(f"unsupported {tok!r}")
        return _mo(CHAR_OPS.get(tok, tok), plain=tok in "()[]|")

    def delim(self) -> str:
        tok = self.next()
        if tok == ".":
            return ""
        ch = FENCES.get(tok[1:]) if tok.startswith("\\") else tok
        if ch is None or (len(tok) == 1 and tok not in "()[]|<>/"):
            raise Unsupported(f"not a delimiter: {tok}")
        return _mo(ch)

    def command(self, name: str) -> str:
        if name in SPACES:
            return _el("mspace", width=SPACES[name])
        if name in IDENT:
            return _el("mi", escape(IDENT[name]))
        if name in UPRIGHT:
            return _el("mi", escape(UPRIGHT[name]), mathvariant="normal")
        if name in BIG:
            big = _el("mo", escape(BIG[name]), movablelimits="true")
            return self.scripts(big, big=True)
        if name in FENCES:
            return _mo(FENCES[name], plain=True)
        if name in OPS:
            return _mo(OPS[name])
        if name in FUNCS:
            return _el("mi", escape(name))
        if name in ("frac", "dfrac", "tfrac"):
            return _el("mfrac", self.group(), self.group())
        if name == "binom":
            frac = _el("mfrac", self.group(), self.group(), linethickness="0")
            return _el("mrow", _mo("("), frac, _mo(")"))
        if name == "sqrt" and self.peek() != "[":
            return _el("msqrt", self.group())
        if name == "sqrt":  # \\sqrt[n]{x}
            self.i += 1
            index = _el("mrow", self.row("]"))
            self.i += 1
            return _el("mroot", self.group(), index)
        if name in ("mathrm", "operatorname"):
            return _el("mi", escape(self.raw()), mathvariant="normal")
        if name in ("text", "textrm", "mbox"):
            return _el("mtext", escape(self.raw()))
        if name in ACCENTS:
            return _el("mover", self.group(), _mo(ACCENTS[name]), accent="true")
        if name == "left":
            opening, inner = self.delim(), self.row("\\right")
            self.i += 1
            return _el("mrow", opening, inner, self.delim())
        raise Unsupported(f"unsupported command \\{name}")


def convert(tex: str, display: bool = False) -> str:
    """MathML for ``tex``; raises :class:`Unsupported` outside the subset."""
    body = _Parser(tex).row()
    if not body:
        raise Unsupported("empty formula")
    return _el("math", body, display="block") if display else _el("math", body)


def to_mathml(tex: str, display: bool = False) -> str:
    """MathML for ``tex``, or outside the subset its source in ``<code>``; never raises."""
    try:
        return convert(tex, display)
    except (Unsupported, RecursionError):  # RecursionError: braces nested very deep
        return _el("code", escape(tex), **{"class": "tex"})
