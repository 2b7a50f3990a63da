"""A section's exported notebook draws its charts without a network (checked on
sections that cover every kind of chart), says which resviz made it and how to install
it, and wraps long code lines (``wrap_code``; every section's notebook as offered keeps
its lines within 100 characters: ``tests/app/test_sections.py``).

Each section is opened by deep link in AppTest (a background-run section with the short
settings test_notebooks.py gives it; its notebook is offered before the run), its
notebook is captured and executed by a real Jupyter kernel whose Python refuses every
connection that is not to this machine (test_notebooks.py's ``execute``: the run that
file's test already made of the same notebook, not a second one), and every code
cell that draws a chart must show one: an HTML output holding Vega's JavaScript inline
and no remote script. Each chart is then opened in headless Chromium with every
request other than the file itself refused, and must paint pixels."""

from __future__ import annotations

import ast
import io
import os
import re
from pathlib import Path

import nbformat
import numpy as np
import pytest
from PIL import Image

import ui.jobs
import ui.notebook
from resviz import __version__
from tests.app.test_notebooks import (  # noqa: F401 - capture: a fixture
    ALL_CASES,
    ALL_IDS,
    IDS,
    SECTION_SETUP,
    capture,
    execute,
    timed_of,
)
from ui.notebook import WIDTH, wrap_code

# Charts are painted in the one Chromium every folder shares (conftest.py's browser).


# Notebooks known to draw no chart where they should, each with the reason (strict: the
# test fails once the notebook is fixed, so the entry is removed then).
NO_CHART: dict[tuple[str, str], str] = {}

# A cell draws a chart when it calls a chart builder of the library or Altair's.
DRAWS = re.compile(r"\brv\.charts\.\w+\(|\balt\.Chart\(")
REMOTE_SCRIPT = re.compile(r"<script[^>]+src=[\"']?(https?:)?//", re.I)


def chart_outputs(cell: nbformat.NotebookNode) -> list[str]:
    return [
        out["data"]["text/html"]
        for out in cell.get("outputs", [])
        if "text/html" in out.get("data", {}) and "vegaEmbed(" in out["data"]["text/html"]
    ]


def colored_pixels(png: bytes) -> int:
    """Pixels of a screenshot that are neither white, black nor grey: the marks' colours
    (axes, labels and the background are grey scale)."""
    rgb = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.int16)
    return int(((rgb.max(axis=2) - rgb.min(axis=2)) > 40).sum())


def painted_pixels(browser, html: str, path: Path) -> tuple[int, list[str]]:
    """Open the chart's HTML with every request but the file refused: the number of
    coloured pixels it paints on screen, and the requests refused."""
    path.write_text(html)
    page = browser.new_page()
    refused: list[str] = []

    def route(r) -> None:  # noqa: ANN001
        if r.request.url.startswith("file://"):
            r.continue_()
        else:
            refused.append(r.request.url)
            r.abort()

    try:
        page.route("**/*", route)
        page.goto(path.as_uri())
        page.wait_for_selector(".vega-embed canvas, .vega-embed svg.marks", timeout=20_000)
        chart = page.query_selector(".vega-embed")
        count = 0
        for _ in range(20):  # image marks paint a moment after the chart appears
            count = colored_pixels(chart.screenshot())
            if count > 200:
                break
            page.wait_for_timeout(250)
    finally:
        page.close()
    return count, refused


# The network guard and the painting run on sections whose charts cover every kind the
# notebooks draw (lines with bands, grid and image heatmaps, faceted histograms, an
# attention map, bars, the autocorrelation panels): the setup cell and the inline
# renderer they check are every notebook's, and tests/app/test_notebooks.py executes every
# section's notebook in full. Running all 40 here took about 7 minutes of the suite:
# RESVIZ_PAINT_ALL=1 paints every section's (run before a stop that changes the
# notebooks' setup or charts).
PAINT_ALL = os.environ.get("RESVIZ_PAINT_ALL") == "1"
OFFLINE = {
    "skip_connections-Signal",
    "gradient_flow-Per layer",
    "gradient_flow-Shattered",
    "normalization-Four views",
    "sinusoidal_encoding-Matrix",
    "encoder_playground-Attention",
    "pretrained-Stream norms",
    "pretrained-Attention sinks",
}
assert OFFLINE <= set(IDS), "a section above is not one whose notebook test_notebooks runs"
if PAINT_ALL:
    OFFLINE = set(ALL_IDS)
OFFLINE_CASES = [c for c, i in zip(ALL_CASES, ALL_IDS, strict=True) if i in OFFLINE]


@pytest.mark.browser
@pytest.mark.parametrize(
    ("page", "section"), OFFLINE_CASES, ids=sorted(OFFLINE, key=list(ALL_IDS).index)
)
def test_notebook_draws_its_charts_offline(app, capture, browser, request, tmp_path, page, section):  # noqa: F811
    csvs, notebooks = capture
    if (page, section) in NO_CHART:
        request.applymarker(pytest.mark.xfail(reason=NO_CHART[page, section], strict=True))
    # A background-run section's short settings (test_notebooks.py's), its run not
    # started: the notebook is offered before it, and the kernel runs the same code.
    # The notebook is test_notebooks.py's (the same page, seed and settings): its run
    # there, with the network refused, is the one checked here.
    params, _ = SECTION_SETUP.get((page, section), ({}, None))
    at = app(page, seed="3", section=section, **params).run()
    assert not at.exception, [e.value for e in at.exception]
    assert notebooks, f"{page} / {section} offers no notebook"
    for i, nb in enumerate(notebooks):
        work = tmp_path / f"nb{i}"
        work.mkdir()
        run = execute(nb.to_json(), work, timed_of(csvs))
        done, tried = run.nb, list(run.tried)
        assert tried == [], f"the kernel tried the network: {tried}"
        assert done.cells[1].id == "install"  # resviz is here: it installs nothing
        setup_out = "".join(o.get("text", "") for o in done.cells[2].outputs)
        assert f"this notebook was made with resviz {__version__}" in setup_out
        assert "vl-convert-python is not installed" not in setup_out
        drawn = 0
        for cell in done.cells:
            if cell.cell_type != "code" or not DRAWS.search(cell.source):
                continue
            charts = chart_outputs(cell)
            assert charts, f"a cell that draws shows no chart:\n{cell.source}"
            for html in charts:
                assert not REMOTE_SCRIPT.search(html), "a chart loads a remote script"
                pixels, refused = painted_pixels(browser, html, work / f"chart{drawn}.html")
                assert refused == [], f"the chart asked the network for {refused}"
                assert pixels > 200, f"chart {drawn} of {section} painted {pixels} coloured pixels"
                drawn += 1


def test_notebook_header_names_the_version_and_the_install(app, capture):  # noqa: F811
    _, notebooks = capture
    at = app("app_pages/sinusoidal_encoding.py").run()
    assert not at.exception
    nb = notebooks[0].to_json()
    assert nb["metadata"]["resviz"]["version"] == __version__
    intro = nb["cells"][0]["source"]
    assert f"resviz {__version__}" in intro
    commit = ui.notebook.source_commit()
    install = nb["cells"][1]
    assert install["id"] == "install"
    assert install["source"] == ui.notebook.install_code(commit, pretrained=False)
    if commit is not None:  # a clean checkout (CI's clone): that commit, said and installed
        assert f"at commit `{commit}`" in intro and f"COMMIT = {commit!r}" in install["source"]
        assert "--index-url https://download.pytorch.org/whl/cpu" not in intro
        assert '"https://download.pytorch.org/whl/cpu"' in install["source"]
    else:  # local changes: nothing installed, the version to install said
        assert "no recorded commit" in intro and "pip" not in install["source"]
    setup = nb["cells"][2]["source"]
    assert 'alt.renderers.enable("html", template="inline")' in setup
    compile(setup, "setup", "exec")


# ------------------------------------------------------------------------- wrap_code
CASES_WRAP = {
    "call": "cfg = rv.StackConfig(" + ", ".join(f"name{i}={i}" for i in range(30)) + ")",
    "nested": "display(rv.charts.line(part, title=f'depth {d}', x='input', y='grad_scaled', "
    "color='variant', points=False, x_title='input x', y_title='df/dx', height=280))",
    "comprehension": "[rv.charts.image_heatmap(m.numpy(), title=name, x_title='q', y_title='p', "
    "vmin=-1.0, vmax=1.0, height=220) for name, m in mats.items()]",
    "string": "text = " + repr("a residual connection adds its input to its output. " * 8),
    "comment": "x = f(1)  # " + "a comment that says a great many things " * 4,
    "indented": "for v in vs:\n    display(rv.charts.grid_heatmap(views[views['view'] == v], "
    "'feature', 'token', 'value', title=rv.norms.VIEW_TITLES[v], height=220))",
    "trailing comma": "f(" + ", ".join(f"argument_{i}" for i in range(12)) + ",)",
}


@pytest.mark.parametrize("source", CASES_WRAP.values(), ids=CASES_WRAP.keys())
def test_wrap_code_fits_and_keeps_the_program(source: str) -> None:
    assert max(map(len, source.split("\n"))) > WIDTH  # each case needs wrapping
    wrapped = wrap_code(source)
    assert max(map(len, wrapped.split("\n"))) <= WIDTH, wrapped
    assert ast.dump(ast.parse(wrapped)) == ast.dump(ast.parse(source))


def test_wrap_code_leaves_what_it_cannot_break() -> None:
    one_token = "x = " + "a" * 120
    assert wrap_code(one_token) == one_token
    short = "x = f(1, 2)"
    assert wrap_code(short) == short
    fstring = "print(f'" + "{x} " * 40 + "')"  # one f-string token: no break inside
    assert wrap_code(fstring).replace("\n", "").replace(" ", "") == fstring.replace(" ", "")
    assert ast.dump(ast.parse(wrap_code(fstring))) == ast.dump(ast.parse(fstring))


def test_notebook_code_cells_are_wrapped() -> None:
    nb = ui.notebook.Notebook("Page", "Section", {"seed": "3"})
    nb.code(CASES_WRAP["call"])
    assert nb.cells[-1]["source"] == wrap_code(CASES_WRAP["call"])
    assert nb.cells[-1]["source"] != CASES_WRAP["call"]
