"""Every page through AppTest: defaults, every widget at its ends, odd text, bad URLs."""

from pathlib import Path

import pytest

from tests.app.conftest import (
    PAGE_PATHS,
    SECTION_CASES,
    SECTION_IDS,
    SWEEP_COUNTS,
    section_params,
)
from tests.findings import FINDINGS, NoFinding, Trained
from ui.registry import PAGES
from ui.views import BUDGET_MARK

ODD_TEXT = [
    "",
    "   ",
    "🙂🚀 emoji",
    "שלום עולם",
    "<script>alert(1)</script> **bold** [x](http://e)",
    "a\x00b",
    "x" * 100_000,
    "\u202eevil\u202c and \u200b zero-width",
]


def _assert_clean(at, budget_ok: bool = False):
    """No exception, and no error element except (when allowed) a budget refusal."""
    assert not at.exception, [e.value for e in at.exception]
    errors = [e.value for e in at.error]
    if budget_ok:
        errors = [e for e in errors if BUDGET_MARK not in e]
    assert not errors, errors


def test_home_lists_every_page(app):
    at = app().run()
    _assert_clean(at)
    assert "resviz" in at.title[0].value
    links = [el.proto.page for el in at.get("page_link")]
    assert links == [p.url_path for p in PAGES]


def test_every_section_declares_its_finding():
    """Each section says what its default setting shows, or why it shows none; a
    finding that comes with a background run names the test that runs its default."""
    assert set(FINDINGS) == set(SECTION_IDS)
    root = Path(__file__).resolve().parents[2]
    for sid, f in FINDINGS.items():
        if isinstance(f, Trained):  # every one has its test at its default setting
            assert f.test is not None, f"{sid}: no test runs its default setting"
            path, name = f.test.split("::")
            assert f"def {name}(" in (root / path).read_text(encoding="utf-8"), sid
        elif isinstance(f, NoFinding):
            assert f.why, f"{sid}: say why it has no finding to show"


@pytest.mark.parametrize(("page", "section"), SECTION_CASES, ids=SECTION_IDS)
def test_widget_sweep(app, page, section):
    """Every slider and number box at its minimum, default and maximum; every option of
    every select box and radio; every toggle and checkbox both ways, in every section.
    The only error allowed is a budget refusal that states its numbers.

    The sweep runs one seed (``seeds=1`` in the URL): it is about every widget's
    path, and each section's default view runs its default seeds
    (``tests/app/test_sections.py``); the sidebar's Seeds is swept over 1, 2 and
    auto, its largest values left to the pages' own seeds tests."""
    at = app(page, seeds="1", **section_params(section)).run()
    _assert_clean(at)
    combos = 1  # the default view
    # A widget goes back to its default in the same run that moves the next widget
    # (AppTest sends both): each setting is still tried with every other at its default,
    # one run fewer per widget. Widgets are found by their key (a setting's name), so a
    # widget that another one's value shows or hides is not mistaken for its neighbour;
    # one without a key goes back in a run of its own, as does the last one.
    back: list = []  # (kind, key, default) to send with the next run

    def widget(kind: str, ref):  # noqa: ANN001, ANN202 - a key, or an index without one
        found = getattr(at, kind)
        return next(w for w in found if w.key == ref) if isinstance(ref, str) else found[ref]

    def try_value(kind: str, ref, value) -> None:  # noqa: ANN001
        nonlocal combos
        for k, key, v in back:
            widget(k, key).set_value(v)
        back.clear()
        widget(kind, ref).set_value(value).run()
        _assert_clean(at, budget_ok=True)
        combos += 1

    def restore(kind: str, ref, default) -> None:  # noqa: ANN001
        if isinstance(ref, str):
            back.append((kind, ref, default))
        else:
            try_value(kind, ref, default)

    def refs(kind: str) -> list:
        return [w.key if w.key else i for i, w in enumerate(getattr(at, kind)) if not w.disabled]

    # A disabled widget is left alone, as a browser leaves it (AppTest refuses to set
    # one): each page's own tests set it where it acts (the skip page's λ under scaled).
    for kind in ("slider", "number_input"):
        for ref in refs(kind):
            w = widget(kind, ref)
            default, ends = w.value, (w.min, w.max)
            for v in ends:
                try_value(kind, ref, v)
            restore(kind, ref, default)
    for kind in ("selectbox", "radio"):
        for ref in refs(kind):
            w = widget(kind, ref)
            default = w.value
            options = ["2", "auto"] if w.key == "seeds" else w.options
            for opt in [o for o in options if o != default]:
                try_value(kind, ref, opt)
            restore(kind, ref, default)
    for kind in ("toggle", "checkbox"):
        for ref in refs(kind):
            default = widget(kind, ref).value
            try_value(kind, ref, not default)
            restore(kind, ref, default)
    if back:  # the last widget back to its default, in a run of its own
        kind, key, default = back.pop()
        try_value(kind, key, default)
    SWEEP_COUNTS[page] = SWEEP_COUNTS.get(page, 0) + combos
    print(f"{page}: {combos} widget settings swept")
    assert combos > 1


TEXT_PAGES = ["app_pages/sinusoidal_encoding.py", "app_pages/encoder_playground.py"]


@pytest.mark.parametrize("page", TEXT_PAGES)
def test_odd_text_inputs(app, page):
    at = app(page).run()
    assert at.text_input
    for text in ODD_TEXT:
        at.text_input[0].input(text[: at.text_input[0].max_chars or None]).run()
        _assert_clean(at)
    assert all(
        "<script>" not in m.value or not getattr(m, "allow_html", False) for m in at.markdown
    )


@pytest.mark.parametrize("page", PAGE_PATHS)
def test_malformed_url_falls_back_with_warning(app, page):
    at = app(page, seed="-5", device="tpu", bogus="1", depth="1e999", d="abc").run()
    _assert_clean(at)
    text = " ".join(w.value for w in at.warning)
    assert "seed" in text and "device" in text and "bogus" in text
    assert at.number_input(key="seed").value == 0


def test_url_parameters_set_the_view(app):
    at = app("app_pages/gradient_flow.py", depth="30", act="sigmoid").run()
    _assert_clean(at)
    assert at.slider(key="depth").value == 30
    assert at.selectbox(key="act").value == "sigmoid"
    assert not at.warning


def test_repeated_url_parameter_warns(app):
    at = app("app_pages/sinusoidal_encoding.py")
    at.query_params["d"] = ["4", "8"]
    at.run()
    _assert_clean(at)
    assert "given 2 times" in " ".join(w.value for w in at.warning)


def test_sinusoidal_table_matches_lecture_notes(app):
    at = app("app_pages/sinusoidal_encoding.py", text="I am a robot", d="4", n="100").run()
    df = at.dataframe[0].value
    row = df[df["token"] == "am"].iloc[0]
    assert [row[f"P(k,{j})"] for j in range(4)] == [0.84, 0.54, 0.10, 1.00]
