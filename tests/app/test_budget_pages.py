"""What the pages do with the budget and with background runs: one refusal per refused
experiment, runs keyed by everything the user set, the synchronous experiments' worst
settings within the budget, and the large caches bounded."""

from collections import Counter

import pytest

import resviz as rv
import ui.jobs
from ui.views import BUDGET_MARK

PLAYGROUND = "app_pages/encoder_playground.py"
SMALL = {"layers": "1", "d_model": "32", "heads": "4", "d_ff": "64", "max_len": "12"}
SMALL_TRAINING = {**SMALL, "section": "Training"}


def _refusals(at) -> Counter:
    """How many refusal boxes each refused experiment drew, by the name it gave."""
    assert not at.exception, [e.value for e in at.exception]
    return Counter(e.value.split(" is over")[0] for e in at.error if BUDGET_MARK in e.value)


def _job_seen(at) -> bool:
    """Whether the playground's training panel is showing a run (Reset is enabled)."""
    return not at.button(key="playground_train:reset").disabled


def test_different_texts_with_the_same_token_ids_do_not_share_a_run(app):
    """'cat dog cat dog bird' and 'sun moon sun moon star' both tokenize to ids
    3 4 3 4 5 with a 6-word vocabulary. A second session with the other text must not
    see (or join) the first one's run without pressing Train; the same text and
    settings still share it."""

    texts = ["cat dog cat dog bird", "sun moon sun moon star"]
    ids = {rv.data.tokenize(t, "word", 12, 256)[0].ids for t in texts}
    assert len(ids) == 1  # the premise: identical ids from different text

    ui.jobs.REGISTRY.clear()
    try:
        first = app(PLAYGROUND, text=texts[0], steps="400", **SMALL_TRAINING).run()
        assert not _job_seen(first)
        first.button(key="playground_train:start").click().run()
        assert _job_seen(first)

        other = app(PLAYGROUND, text=texts[1], steps="400", **SMALL_TRAINING).run()
        assert not other.exception
        assert not _job_seen(other)
        assert not other.button(key="playground_train:start").disabled
        assert len(ui.jobs.REGISTRY._jobs) == 1  # other's visit started nothing

        same = app(PLAYGROUND, text=texts[0], steps="400", **SMALL_TRAINING).run()
        assert _job_seen(same)  # identical settings: the run is shared
    finally:
        ui.jobs.REGISTRY.clear()


@pytest.mark.parametrize(
    "page, params, refused",
    [
        ("app_pages/gradient_flow.py", {"section": "Depth sweep"}, {"This depth sweep"}),
        ("app_pages/gradient_flow.py", {"section": "Training"}, {"This training run"}),
        ("app_pages/skip_connections.py", {"section": "Signal"}, {"This stack"}),
        ("app_pages/skip_connections.py", {"section": "Degradation"}, {"This experiment"}),
        ("app_pages/skip_connections.py", {"section": "Lesion"}, {"This lesion study"}),
        (
            "app_pages/normalization.py",
            {"section": "Warm-up", "w_layers": "2", "w_steps": "20"},
            {"This training run"},
        ),
        ("app_pages/normalization.py", {"section": "Cost"}, {"Timing at this size"}),
    ],
)
def test_each_refused_experiment_shows_its_refusal_once(app, monkeypatch, page, params, refused):
    """With a compute limit of 1 MFLOP, every budgeted experiment on the page is
    refused; each says so exactly once (not once by the page and again by its panel)."""
    monkeypatch.setenv("RESVIZ_MAX_GFLOP", "0.001")
    at = app(page, **params).run()
    counts = _refusals(at)
    assert set(counts) == refused and all(n == 1 for n in counts.values()), counts


def test_the_issue_url_refuses_training_once(app):
    """The audit's gradient-flow link, at the default budget: the 100 x 512 stacks
    are drawn, the three-way training is refused, once."""
    at = app(
        "app_pages/gradient_flow.py",
        section="Training",
        depth="100",
        width="512",
        act="sigmoid",
        norm="batch",
        L="100",
        block="100",
        steps="1000",
        train_scaled="true",
    ).run()
    assert _refusals(at) == Counter({"This training run": 1})
    assert at.button(key="gradflow_train:start").disabled


def test_gradient_flow_worst_settings_fit_the_default_budget(app):
    """Gradient flow computes sections 1 and 2 while drawing, with no refusal path:
    its sliders are bounded so that the deepest, widest stack fits the default budget
    (one backward pass holds the weights, the activations and one weight gradient)."""
    at = app("app_pages/gradient_flow.py", section="Derivation").run()
    depth = int(max(at.slider(key="depth").max, at.slider(key="L").max))
    width = int(at.slider(key="width").max)
    for norm in at.selectbox(key="norm").options:
        cfg = rv.StackConfig(depth=depth, width=width, norm=norm)
        est = rv.estimate(cfg, batch=32)
        assert rv.Budget().check(est) is None, est.describe()
        # Headroom for one weight gradient at a time and the Jacobian's rows.
        assert est.memory_bytes + 2 * width * width * 4 < rv.Budget().max_memory_bytes


def test_large_cached_values_are_bounded():
    """The sinusoidal page's largest results (a 1,000 x 1,024 matrix with its 11 MB CSV,
    1,000 x 1,000 dot products with their 19 MB CSV) are kept for at most four settings
    (``Section.run(..., large=True)``, ``ui.cache.LARGE``): six distinct worst-case
    settings of each section leave at most four entries, not six (and not up to 64)."""
    from streamlit.runtime.caching import cache_data_api

    from ui.section import run_recipe_large

    run_recipe_large.clear()
    sizes = []
    for base in (100.0, 1000.0, 10000.0):
        for d_model in (512, 1024):
            for name in ("positional.matrix", "positional.relative"):
                settings = (("positions", 1000), ("d_model", d_model), ("base", base))
                _, _, csvs = run_recipe_large(name, settings, "cpu")
                sizes.append(sum(len(b) for b in csvs.values()))
    stats = cache_data_api._data_caches.get_stats().get("cache_memory_bytes", [])
    held = sum(s.byte_length for s in stats if s.cache_name.endswith("run_recipe_large"))
    # Four entries at most: the four largest of the twelve results (with their CSVs
    # and the frames themselves, at most 8 MB each) bound what stays.
    assert held <= sum(sorted(sizes)[-4:]) + 4 * 9 * 2**20, (held, sizes)
    assert 0 < held < sum(sizes) / 2, (held, sizes)
    print(f"held {held / 2**20:.0f} MB of {sum(sizes) / 2**20:.0f} MB of CSVs made")
    run_recipe_large.clear()
