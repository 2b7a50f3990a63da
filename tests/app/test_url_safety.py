"""What a hostile or careless URL can do to a page: nothing but a visible warning.

Values off a slider's step, digits other than ASCII, URL-like text that Markdown
would turn into links, widgets drawn late on the page.
"""

from __future__ import annotations

import re

import pytest

SINUS = "app_pages/sinusoidal_encoding.py"


def _warning_text(at) -> str:
    return " ".join(w.value for w in at.warning)


# ------------------------------------------------------------ values in the URL
@pytest.mark.parametrize("d", ["3", "31", "٣٢", "３２", "1_0", " 4"])
def test_sinusoidal_d_off_step_or_not_ascii_falls_back_with_warning(app, d):
    """d=3 and d=31 are inside 2..32 but off the slider's step of 2 (an odd d has
    no sin/cos pairs); Arabic-Indic and full-width digits pass ``\\d`` and ``int()``."""
    at = app(SINUS, d=d).run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error
    assert at.slider(key="d").value == 4
    text = _warning_text(at)
    assert "`d`" in text and "using the default `4`" in text
    assert at.dataframe, "the table is drawn with the default d"


def test_sinusoidal_even_d_from_url_is_used(app):
    at = app(SINUS, d="32").run()
    assert not at.warning and not at.exception
    assert at.slider(key="d").value == 32
    assert [c for c in at.dataframe[0].value.columns if c.startswith("P(k,")][-1] == "P(k,31)"


@pytest.mark.parametrize(
    ("page", "params", "key", "default"),
    [
        (
            "app_pages/gradient_flow.py",
            {"steps": "205", "section": "Training"},
            "steps",
            200,
        ),
        (
            "app_pages/gradient_flow.py",
            {"l": "0.33", "section": "Derivation"},
            "l",
            0.5,
        ),
        (
            "app_pages/gradient_flow.py",
            {"l": "٠.٥", "section": "Derivation"},
            "l",
            0.5,
        ),
        ("app_pages/gradient_flow.py", {"depth": "١٢"}, "depth", 10),
        (
            "app_pages/normalization.py",
            {"shift": "5.25", "section": "Invariances"},
            "shift",
            5.0,
        ),
        (
            "app_pages/skip_connections.py",
            {"steps": "410", "section": "Degradation"},
            "steps",
            400,
        ),
    ],
)
def test_off_step_and_non_ascii_values_are_refused(app, page, params, key, default):
    at = app(page, **params).run()
    assert not at.exception
    assert at.slider(key=key).value == default
    name = next(iter(params))
    assert f"`{name}`" in _warning_text(at)
    assert name not in at.query_params  # the default is not written back


def test_on_step_float_from_url_is_used_and_round_trips(app):
    at = app("app_pages/gradient_flow.py", section="Derivation", l="0.35").run()
    assert not at.warning
    assert at.slider(key="l").value == 0.35
    assert at.query_params["l"] in ("0.35", ["0.35"])


def test_seed_in_arabic_indic_digits_is_refused(app):
    at = app(SINUS, seed="٧").run()
    assert at.number_input(key="seed").value == 0
    assert "`seed`" in _warning_text(at)


# ------------------------------------------------- widgets after the old sync()
def test_shattered_gradients_toggle_is_in_the_url(app):
    """``bn`` is drawn near the end of the page, after the old ``p.sync()`` call: it
    reads the URL and is bound to it (Chromium sees it written back:
    tests/browser/test_url_binding_browser.py)."""
    at = app("app_pages/gradient_flow.py", section="Shattered", bn="false").run()
    assert not at.exception
    assert not at.warning, _warning_text(at)
    assert at.toggle(key="bn").value is False
    assert at.toggle(key="bn").proto.query_param_key == "bn"
    at.toggle(key="bn").set_value(True).run()
    assert at.toggle(key="bn").value is True and not at.warning


def test_unknown_parameters_are_reported_once_and_removed(app):
    at = app("app_pages/gradient_flow.py", bogus="1", depth="12").run()
    assert "unknown parameter `bogus` ignored" in _warning_text(at)
    assert "bogus" not in at.query_params and at.query_params["depth"] in ("12", ["12"])
    at.slider(key="depth").set_value(13).run()
    assert not at.warning


# ------------------------------------------------------------- no links, ever
LINKY = [
    "www.evil.com/login",
    "http://evil.example/x",
    "https://evil.example",
    "mailto:someone@evil.example",
    "someone@evil.example",
    "[click](http://evil.example)",
    "<http://evil.example>",
    "`` ` ``www.evil.com",
    ":material/home: :red[x] :smile: $x^2$",
]


def _outside_code_spans(markdown: str) -> str:
    """The text a CommonMark renderer would see outside inline code spans."""
    out, i = [], 0
    while i < len(markdown):
        m = re.compile(r"`+").search(markdown, i)
        if not m:
            out.append(markdown[i:])
            break
        out.append(markdown[i : m.start()])
        fence = m.group()
        close = re.compile(rf"(?<!`){fence}(?!`)").search(markdown, m.end())
        if not close:  # an unmatched fence is literal text
            out.append(fence)
            i = m.end()
            continue
        i = close.end()
    return "".join(out)


def test_outside_code_spans_helper():
    assert _outside_code_spans("a `b` c ``d`e`` f") == "a  c  f"
    assert _outside_code_spans("a `b") == "a `b"


@pytest.mark.parametrize("text", LINKY)
def test_url_like_parameter_names_and_values_render_as_code(app, text):
    """The warning shows the bad name and value, but only inside code spans, where
    Markdown makes no autolink, link, HTML, emoji or math."""
    at = app("app_pages/normalization.py", **{text: "1", "d": text}).run()
    assert not at.exception
    body = _warning_text(at)
    assert "unknown parameter" in body and "`d`" in body
    outside = _outside_code_spans(body)
    for needle in ("evil", "@", "http", "www", "mailto", ":material", ":red", "$x"):
        assert needle not in outside, (needle, outside)


def test_no_markdown_element_shows_url_text_outside_code(app):
    """The sentence a user types is never echoed as Markdown on the sinusoidal page."""
    at = app(SINUS, text="visit www.evil.com or mail a@evil.example").run()
    assert not at.exception
    for el in [*at.markdown, *at.caption, *at.warning, *at.info, *at.error]:
        assert "evil" not in _outside_code_spans(el.value), el.value
