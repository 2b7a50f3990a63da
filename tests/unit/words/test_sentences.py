"""resviz.words.sentences words each outcome as it came out, with the measured figures in it."""

import math

import pytest

import resviz as rv
from resviz.words import sentences as fd
from resviz.words.sentences import (
    crossing_words,
    format_number,
    lower_words,
    ratio_words,
    trend_words,
)
from tests.margins import printed


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
        assert float(text) == printed(x)


@pytest.mark.parametrize("x", [1.005, 9.9949, 0.0010049, 1234.5, -9.995e-7, 9.995e12, 1 / 3, 0.0])
def test_a_printed_number_is_within_the_printed_tolerance(x):
    """tests/margins.py's :func:`printed`, the tolerance every test reading a number off
    a page uses, holds for the pages' own formatting, at its worst roundings too."""
    assert float(format_number(x)) == printed(x)
    assert float(format_number(x, 2)) == printed(x, 2)


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
    assert rv.words.trend_words is trend_words and rv.words.lower_words is lower_words


BLOCKS = ["block 1", "block 2", "block 3", "block 4"]


def test_findings_stack_is_an_alias_with_one_number_format():
    assert rv.words.format_number is format_number and rv.words.trend is fd.trend
    assert format_number(12345.0) == "1.23e4" and format_number(0.012345) == "0.0123"


def test_trend_rises_falls_and_stays_flat():
    up = fd.trend([1.0, 10.0, 100.0, 1000.0], BLOCKS, "the norm")
    assert up == "The norm rises from 1 at block 1 to 1000 at block 4 (a factor of 1000)."
    down = fd.trend([8.0, 4.0, 2.0, 1.0], BLOCKS, "the norm")
    assert down == "The norm falls from 8 at block 1 to 1 at block 4 (a factor of 8)."
    flat = fd.trend([1.0, 1.2, 1.1, 1.3], BLOCKS, "the norm")
    assert flat == "The norm stays within a factor of 1.3 (1 to 1.3) from block 1 to block 4."
    # A wider band is not called flat.
    assert "rises" in fd.trend([1.0, 1.2, 1.1, 1.6], BLOCKS, "the norm")
    assert "stays" in fd.trend([1.0, 1.2, 1.1, 1.6], BLOCKS, "the norm", flat=2.0)


def test_trend_names_a_peak_or_dip_beyond_both_ends():
    peak = fd.trend([1.0, 50.0, 3.0, 2.0], BLOCKS, "x")
    assert peak.startswith("X rises from 1 at block 1 to 2 at block 4")
    assert "peaks at 50 at block 2" in peak
    dip = fd.trend([5.0, 0.1, 3.0, 2.0], BLOCKS, "x")
    assert "falls" in dip and "dips to 0.1 at block 2" in dip
    assert "peaks" not in fd.trend([1.0, 2.0, 3.0, 4.0], BLOCKS, "x")


def test_trend_zero_sign_change_and_non_finite():
    to_zero = fd.trend([0.9, 0.3, 0.0, 0.0], BLOCKS, "the distance")
    assert to_zero == "The distance falls from 0.9 at block 1 to 0 at block 4."
    signs = fd.trend([-0.5, 0.1, 0.2, 0.4], BLOCKS, "the cosine")
    assert signs == "The cosine rises from -0.5 at block 1 to 0.4 at block 4."
    blown = fd.trend([1.0, 1e30, math.inf, math.nan], BLOCKS, "the norm")
    assert blown == "The norm goes from 1 at block 1 to Inf (not finite) at block 3."
    assert fd.trend([math.nan, 1.0], BLOCKS[:2], "y") == "Y is already NaN (not finite) at block 1."
    assert fd.trend([2.0], BLOCKS[:1], "y") == "Y is 2 at block 1."
    assert fd.trend([3.0, 3.0, 1.0, 3.0], BLOCKS, "y").startswith("Y ends where it starts, at 3")
    with pytest.raises(ValueError):
        fd.trend([1.0, 2.0], BLOCKS, "y")


def test_compare_and_order_every_outcome():
    assert fd.order(1.0, 2.0) == -1 and fd.order(2.0, 1.0) == 1 and fd.order(1.0, 1.01) == 0
    assert fd.order(math.nan, 1.0) is None
    lower = fd.compare("A", 0.5, "B", 2.0, "loss")
    assert lower == "Loss of A (0.5) is lower than that of B (2), by a factor of 4."
    higher = fd.compare("A", 3.0, "B", 1.0, "the loss")
    assert higher == "The loss of A (3) is higher than that of B (1), by a factor of 3."
    level = fd.compare("A", 1.0, "B", 1.02, "the loss")
    assert level == "The loss of A (1) is about the same as that of B (1.02), within 5%."
    assert fd.compare("A", -1.0, "B", 1.0, "the cosine") == (
        "The cosine of A (-1) is lower than that of B (1)."
    )
    assert fd.compare("A", math.nan, "B", 1.0, "loss").endswith("only that of B is finite.")
    assert fd.compare("A", math.inf, "B", math.nan, "loss").endswith("neither is finite.")


def test_crossing_every_outcome():
    steps = [10, 20, 30, 40]
    assert fd.crossing(steps, [1, 1, 1, 1], [2, 2, 2, 2], "a", "b") == (
        "A is below b at every step (10 to 40)."
    )
    assert fd.crossing(steps, [3, 1, 3, 1], [2, 2, 2, 2], "a", "b") == (
        "A is below b from step 40 on."
    )
    assert fd.crossing(steps, [1, 1, 3, 3], [2, 2, 2, 2], "a", "b") == (
        "A is not below b at the last step (40)."
    )
    assert fd.crossing(steps, [3, 3, 3, math.nan], [2, 2, 2, 2], "a", "b") == (
        "A is not below b at the last step (40); it is not below at any step from 10."
    )
    assert "no steps" in fd.crossing([], [], [], "a", "b")


def test_value_range_change_spread_and_share():
    assert fd.value_range([0.3, 0.1, math.nan, 0.9], BLOCKS, "the share") == (
        "The share ranges from 0.1 (block 2) to 0.9 (block 4) (1 value(s) not finite)."
    )
    assert fd.value_range([1.0, 1.0], BLOCKS[:2], "y") == "Y is 1 everywhere."
    assert (
        fd.value_range([math.nan], BLOCKS[:1], "y")
        == "Y has no finite value (1 value(s) not finite)."
    )
    assert fd.change(0.9, 0.45, "d") == "D falls from 0.9 to 0.45 (a factor of 2)."
    assert fd.change(0.1, 0.5, "d") == "D rises from 0.1 to 0.5 (a factor of 5)."
    assert fd.change(0.9, 0.91, "d") == "D stays at about 0.9 (0.9 to 0.91)."
    assert fd.spread_vs([0.05, 0.21, 0.1], 0.1, "the weights", "uniform attention") == (
        "The weights lie between 0.05 and 0.21; uniform attention would give each 0.1, and "
        "the largest is 2.1 times that."
    )
    assert fd.spread_vs([0.25] * 4, 0.25, "w", "uniform").startswith("W all equal 0.25")
    assert fd.share_of([0.1, 0.6, 0.3], ["embedding", "L1 attn", "L1 ffn"], "share") == (
        "The largest share: L1 attn (0.6)."
    )
