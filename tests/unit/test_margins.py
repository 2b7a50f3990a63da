"""tests/margins.py: the one check every trained (or thresholded) outcome makes first."""

import math

import pytest

from tests.margins import (
    assert_clear,
    assert_far_past_divergence,
    assert_lesion_clear,
    assert_worst_clear,
)


@pytest.mark.parametrize(
    ("value", "threshold", "side", "margin", "kind", "distance"),
    [
        (0.02, 0.05, "below", 0.02, "abs", 0.03),  # a 2-point drop, 3 points under 5
        (0.09, 0.05, "above", 0.02, "abs", 0.04),
        (0.6, 1.0, "below", 0.3, "rel", 0.4),
        (1.5, 1.0, "above", 0.3, "rel", 0.5),
        (1e-3, 0.1, "below", 2.0, "factor", 100.0),
        (0.5, 0.1, "above", 2.0, "factor", 5.0),
        (-0.5, -1.0, "above", 0.2, "rel", 0.5),  # relative to |threshold|
    ],
)
def test_a_value_clear_of_the_threshold_passes_and_says_how_far(
    value, threshold, side, margin, kind, distance
):
    got = assert_clear(value, threshold, side=side, margin=margin, kind=kind, what="x")
    assert got == pytest.approx(distance)


@pytest.mark.parametrize(
    ("value", "threshold", "side", "margin", "kind"),
    [
        (0.046, 0.05, "below", 0.02, "abs"),  # the lesion that failed on a Xeon: 4.6 vs 5
        (0.0521, 0.05, "below", 0.02, "abs"),  # ... and the other side of it
        (0.06, 0.05, "above", 0.02, "abs"),
        (0.9, 1.0, "below", 0.2, "rel"),
        (0.06, 0.1, "below", 2.0, "factor"),
        (0.15, 0.1, "above", 2.0, "factor"),
        (math.nan, 1.0, "below", 0.1, "abs"),
        (math.inf, 1.0, "above", 0.1, "abs"),
        (-1.0, 1.0, "below", 2.0, "factor"),
    ],
)
def test_a_value_inside_the_margin_or_on_the_wrong_side_fails(value, threshold, side, margin, kind):
    with pytest.raises(AssertionError, match="should be"):
        assert_clear(value, threshold, side=side, margin=margin, kind=kind)


def test_the_message_names_value_threshold_and_margin():
    with pytest.raises(AssertionError) as e:
        assert_clear(0.046, 0.05, side="below", margin=0.02, what="worst deletion")
    msg = str(e.value)
    assert "worst deletion: 0.046 should be below 0.05 by at least 0.02" in msg
    assert "it is 0.004 below it" in msg and "move the setting" in msg
    with pytest.raises(AssertionError, match=r"by at least 2x; it is 1\.5x above it"):
        assert_clear(0.15, 0.1, side="above", margin=2, kind="factor")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"side": "under", "margin": 0.1},
        {"side": "below", "margin": 0.1, "kind": "log"},
        {"side": "below", "margin": -0.1},
        {"side": "below", "margin": 0.5, "kind": "factor"},
        {"side": "below", "margin": 0.1, "kind": "rel", "threshold": 0.0},
        {"side": "below", "margin": 2.0, "kind": "factor", "threshold": -1.0},
        {"side": "below", "margin": 0.1, "threshold": math.nan},
    ],
)
def test_a_margin_that_means_nothing_is_refused(kwargs):
    threshold = kwargs.pop("threshold", 1.0)
    with pytest.raises(ValueError):
        assert_clear(0.5, threshold, **kwargs)


@pytest.mark.parametrize(
    ("intact", "deleted", "verdict"),
    [
        (0.96, [0.95, 0.94, 0.96], "barely changes"),  # largest drop 2 points
        (0.96, [0.95, 0.80, 0.96], "depends on the block"),
        (0.96, [0.80, 0.70, 0.85], "suffers"),  # smallest drop 11 points
        (0.40, [0.40, 0.30], "did not learn"),
    ],
)
def test_lesion_verdict_with_every_side_clear(intact, deleted, verdict):
    import pandas as pd

    import resviz as rv

    assert assert_lesion_clear(intact, deleted) == verdict
    les = pd.DataFrame(
        {
            "variant": "v",
            "kind": "residual",
            "depth": 4,
            "block": range(2, 2 + len(deleted)),
            "loss": 0.0,
            "accuracy": deleted,
            "base_accuracy": intact,
        }
    )
    assert rv.shortcuts.lesion_verdict(rv.shortcuts.lesion_summary(les).iloc[0]) == verdict


@pytest.mark.parametrize(
    ("intact", "deleted", "edge"),
    [
        (0.96, [0.914, 0.95], "largest drop"),  # 4.6 points: "barely changes" on the edge
        (0.96, [0.9079, 0.95], "largest drop"),  # 5.21 points: "depends", on the edge
        (0.96, [0.90, 0.70], "smallest drop"),  # 6 points: "suffers", 1 point clear
        (0.68, [0.60, 0.50], "intact accuracy"),  # learned, 1.3 points over 2/3
        (0.65, [0.60], "intact accuracy"),  # did not learn, 1.7 points under
    ],
)
def test_lesion_verdict_on_the_edge_fails(intact, deleted, edge):
    with pytest.raises(AssertionError, match=edge):
        assert_lesion_clear(intact, deleted)


def test_worst_block_clear_of_the_runner_up():
    assert assert_worst_clear([2, 3, 4], [0.5, 0.9, 0.7]) == 2
    # Seed 0 at the lesion's defaults: blocks 3 and 4 cost 9.31 and 8.98 points.
    with pytest.raises(AssertionError, match="runner-up"):
        assert_worst_clear([3, 4, 2], [0.9616 - 0.0931, 0.9616 - 0.0898, 0.9616 - 0.0716])


def test_a_divergence_far_past_the_factor():
    import resviz as rv

    factor = rv.train.DIVERGENCE_FACTOR
    assert_far_past_divergence(rv.first_divergence([1.0, math.nan]))
    assert_far_past_divergence(rv.first_divergence([2.0, 2.0 * factor * 1e4]))
    with pytest.raises(AssertionError, match="loss at divergence"):  # just past the line
        assert_far_past_divergence(rv.first_divergence([2.0, 2.0 * factor * 2]))
    with pytest.raises(AssertionError, match="did not diverge"):
        assert_far_past_divergence(rv.first_divergence([2.0, 1.0]))
