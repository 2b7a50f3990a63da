"""resviz.findings words each outcome as it came out, with the measured figures in it."""

import math

import pytest

import resviz as rv
from resviz.findings import (
    crossing_words,
    format_number,
    lower_words,
    ratio_words,
    trend_words,
)


@pytest.mark.parametrize(
    ("x", "text"),
    [
        (1.23456e9, "1.23e9"),
        (4.5e-31, "4.5e-31"),
        (0.0123, "0.0123"),
        (35.24, "35.2"),
        (1234.5, "1230"),
        (12345.0, "1.23e4"),
        (9.9e-4, "9.9e-4"),
        (2.0, "2"),
        (-3.3e5, "-3.3e5"),
        (0.0, "0"),
        (math.nan, "NaN"),
        (math.inf, "Inf"),
        (-math.inf, "-Inf"),
    ],
)
def test_format_number(x, text):
    assert format_number(x) == text
    if math.isfinite(x):
        assert float(text) == pytest.approx(x, rel=5e-3)


def test_trend_words_grows_and_falls():
    up = trend_words([1.1, 40.0, 3.3e9])
    assert up == "grows by a factor of 3e9, from 1.1 to 3.3e9"
    down = trend_words([0.5, 1e-10, 4e-31])
    assert down == "falls by a factor of 1.2e30, from 0.5 to 4e-31"


def test_trend_words_stays_within_a_factor_only_when_every_value_does():
    assert trend_words([1.1, 2.0, 2.5]) == "stays within a factor of 2.3 (from 1.1 to 2.5)"
    assert trend_words([1.0, 1.02, 1.05]) == "stays within 5% (from 1 to 1.05)"
    # End points close, but a peak in between: not "stays within".
    wide = trend_words([1.0, 80.0, 1.5])
    assert wide.startswith("ranges over a factor of 80") and "ends at 1.5, from 1" in wide
    # The threshold is a parameter.
    assert trend_words([1.0, 50.0], within=100).startswith("stays within a factor of 50")
    assert trend_words([1.0, 50.0], within=10).startswith("grows by a factor of 50")


def test_trend_words_zeros_nonfinite_and_short_input():
    assert trend_words([0.5, 1e-20, 0.0]) == "falls from 0.5 to exactly 0"
    assert trend_words([0.0, 3.0]) == "grows from exactly 0 to 3"
    assert trend_words([0.0, 0.0]) == "is exactly 0 throughout"
    assert trend_words([1.0, math.nan, 2.0]).endswith("; 1 of 3 values are not finite")
    assert trend_words([math.inf]) == "is not finite"
    assert trend_words([]) == "has no values yet"
    assert trend_words([0.7]) == "is 0.7 (one value)"
    assert trend_words([0.9, -0.1]) == "goes from 0.9 to -0.1"


def test_ratio_words():
    assert ratio_words(3.2e9, 1.0) == "3.2e9 times"
    assert ratio_words(0.41, 1.0) == "0.41 times"
    assert ratio_words(2.0, 2.0) == "exactly"
    assert ratio_words(1.0, 0.0) == "infinitely many times"
    assert ratio_words(math.nan, 1.0) == "not comparable with"


def test_crossing_words_both_outcomes():
    steps = [0, 10, 20, 30]
    assert (
        crossing_words(steps, [3, 2.6, 2, 1], [2.5] * 4, "A", "B") == "A drops below B at step 20"
    )
    assert crossing_words(steps, [3, 3, 3, 3], [2.5] * 4, "A", "B") == (
        "A stays at or above B throughout"
    )
    assert crossing_words(steps, [1, 3, 3, 3], [2.5] * 4, "A", "B") == (
        "A is below B from the first step"
    )
    assert crossing_words([0, 1], [math.nan, 1], [2, 2], "A", "B") == (
        "A is below B from the first step"
    )
    with pytest.raises(ValueError, match="same length"):
        crossing_words([0], [1, 2], [1, 2], "A", "B")


def test_lower_words_both_outcomes():
    assert lower_words("A", 0.036, "B", 0.51) == "A ends lower (0.036 against 0.51 for B)"
    assert lower_words("A", 0.51, "B", 0.036) == "B ends lower (0.036 against 0.51 for A)"
    assert lower_words("A", 0.5, "B", 0.50001) == "A and B end level (0.5)"
    assert lower_words("A", math.nan, "B", 0.2) == "B ends lower (0.2; A ended at NaN)"
    assert lower_words("A", 0.2, "B", math.inf) == "A ends lower (0.2; B ended at Inf)"
    assert lower_words("A", math.nan, "B", math.nan) == "neither A nor B ends at a finite value"


def test_exported_from_the_package():
    assert rv.trend_words is trend_words and rv.findings.lower_words is lower_words
