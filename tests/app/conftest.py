from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from ui.registry import PAGES

# Importing torch alone exceeds AppTest's 3 s default on a 2-core machine.
TIMEOUT = 120
ENTRY = str(Path(__file__).resolve().parents[2] / "streamlit_app.py")


@pytest.fixture
def app():
    def make(page: str | None = None, **params: str) -> AppTest:
        at = AppTest.from_file(ENTRY, default_timeout=TIMEOUT)
        for k, v in params.items():
            at.query_params[k] = v
        if page:
            at.switch_page(page)
        return at

    return make


PAGE_PATHS = [p.path for p in PAGES]


# page -> number of widget settings the sweep ran (reported at the end of the run).
SWEEP_COUNTS: dict[str, int] = {}


def open_section(at: AppTest, label: str) -> AppTest:
    """Switch an open page to another section, as a click on its tab does."""
    at.session_state["section"] = label
    at.query_params["section"] = label
    return at.run()


def _sections(page: str) -> list[str | None]:
    from ui.specs.pages import spec_of

    labels = spec_of(page.removeprefix("app_pages/").removesuffix(".py")).sections
    return list(labels) if labels else [None]


# Every (page, section) a deep link can open; section None for a page without sections.
SECTION_CASES = [(page, s) for page in PAGE_PATHS for s in _sections(page)]
SECTION_IDS = [f"{p.removeprefix('app_pages/').removesuffix('.py')}-{s}" for p, s in SECTION_CASES]


def section_params(section: str | None) -> dict[str, str]:
    return {"section": section} if section else {}


# ----------------------------------------------------- what the tests read off a page
# A number as the pages write it (rv.format_number): 0.0123, 1.23e4, -5e-31.
NUM = r"(-?\d+(?:\.\d+)?(?:e-?\d+)?)"


@pytest.fixture
def fresh_jobs():
    """No background run left over from another test (runs are keyed by settings)."""
    import ui.jobs

    ui.jobs.REGISTRY.clear()
    yield
    ui.jobs.REGISTRY.clear()


def clean(at: AppTest) -> None:
    """The run raised nothing and showed no error."""
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def find_caption(at: AppTest, start: str) -> str:
    """The one caption that starts with ``start``."""
    found = [c.value for c in at.caption if c.value.startswith(start)]
    assert len(found) == 1, (start, [c.value for c in at.caption])
    return found[0]


def find_caption_with(at: AppTest, words: str) -> str:
    """The first caption that contains ``words``."""
    return next(c.value for c in at.caption if words in c.value)


def find_metric(at: AppTest, prefix: str):
    """The first metric whose label starts with ``prefix``."""
    return next(m for m in at.metric if m.label.startswith(prefix))


def find_table(at: AppTest, column: str, value: object, having: str | None = None):
    """The first table with ``value`` in ``column`` (and a column ``having``)."""
    for df in at.dataframe:
        v = df.value
        if having is not None and having not in v.columns:
            continue
        if column in v.columns and (v[column] == value).any():
            return v
    raise AssertionError(f"no table with {column} = {value}")


def find_job(label: str):
    """The one background run with this label."""
    import ui.jobs

    jobs = [j for j in ui.jobs.REGISTRY._jobs.values() if j.label == label]
    assert len(jobs) == 1
    return jobs[0]


def recorded_csvs(monkeypatch: pytest.MonkeyPatch) -> dict:
    """The frames each CSV button offers, by file name, as the page hands them over
    (filled in as the page runs)."""
    import ui.views

    seen = {}
    original = ui.views.csv_button

    def record(df, name, label="Download CSV"):  # noqa: ANN001, ANN202
        seen[name] = df
        original(df, name, label)

    monkeypatch.setattr(ui.views, "csv_button", record)
    return seen


def chart_frames(at: AppTest) -> list:
    """Every chart's data as drawn (the Arrow datasets the browser receives)."""
    from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df

    return [
        convert_arrow_bytes_to_pandas_df(ds.data.data)
        for chart in at.get("vega_lite_chart")
        for ds in chart.proto.datasets
    ]


def run_section_in_background(at: AppTest, done: str = "Measured: ") -> None:
    """A section that trains in the background (``ui/jobs.py``) shows its result, and a
    lesson step on it its measured answer, once its run has finished: unless ``done``
    is already shown, press the section's start button, as the step's text asks, and
    wait for the run."""
    import ui.jobs

    text = " ".join(x.value for x in [*at.success, *at.warning])
    starts = [b for b in at.button if (b.key or "").endswith(":start") and not b.disabled]
    if starts and done not in text:
        starts[0].click().run()
        assert ui.jobs.REGISTRY.wait(300), "the section's run did not finish"
        at.run()


def page_text(at) -> str:  # noqa: ANN001
    """Every text the page drew: each element's value, label, body and help."""
    out = []

    def walk(node) -> None:  # noqa: ANN001
        for name in ("value", "label", "body", "help", "placeholder"):
            try:
                v = getattr(node, name)
            except Exception:  # noqa: BLE001 - an element without it
                continue
            if isinstance(v, str):
                out.append(v)
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at._tree)
    return "\n".join(out)


def assert_no_notes(at, step) -> None:  # noqa: ANN001
    """The presenter's notes are nowhere on a participant's page (and the check
    sees the page: the step's title is there)."""
    text = page_text(at)
    assert step.title in text
    for line in filter(None, (x.strip() for x in step.notes.splitlines())):
        assert line not in text, line
