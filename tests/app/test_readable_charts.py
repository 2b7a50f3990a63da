"""The charts a background run draws read on a phone too (``tests/readable.py``): every
series named in a legend that fits, lines told apart by dash, titles whole. Each
section's default view is checked in ``test_sections.py::test_section_contract``; these
sections draw their charts once a run has finished, here one seed with short settings
(Warm-up and the playground's Training take 10-15 s: their series names are checked
in ``tests/unit/charts/test_series.py``)."""

import pytest

import ui.jobs
from tests.app.conftest import clean
from tests.readable import problems, spec_of

CASES = {
    "degradation": ("app_pages/skip_connections.py", dict(section="Degradation", steps="20")),
    "lesion": ("app_pages/skip_connections.py", dict(section="Lesion", l_steps="100")),
    "training": (
        "app_pages/gradient_flow.py",
        dict(section="Training", steps="20", train_scaled="true"),
    ),
    "depth sweep": ("app_pages/gradient_flow.py", dict(section="Depth sweep")),
    "stability": (
        "app_pages/normalization.py",
        dict(section="Stability", s_steps="20", s_norms="true", s_place="true"),
    ),
}


@pytest.fixture(autouse=True)
def _fresh_jobs():
    ui.jobs.REGISTRY.clear()
    yield
    ui.jobs.REGISTRY.clear()


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_finished_run_draws_readable_charts(app, case):
    page, params = CASES[case]
    at = app(page, seeds="1", **params).run()
    clean(at)
    before = len(at.get("vega_lite_chart"))
    (start,) = [b for b in at.button if b.key and b.key.endswith(":start")]
    start.click().run()
    assert ui.jobs.REGISTRY.wait(120)
    at.run()
    clean(at)
    charts = at.get("vega_lite_chart")
    assert len(charts) > before, "the finished run drew no chart"
    for el in charts:
        spec, datasets = spec_of(el)
        assert not problems(spec, datasets), problems(spec, datasets)
