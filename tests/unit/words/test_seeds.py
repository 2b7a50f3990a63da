"""A direction is stated only when the seeds agree: resviz/words/seeds.py."""

import math

import pytest

from resviz.words.seeds import (
    agreement,
    band_words,
    log_span,
    seeds_label,
    seeds_sentence,
    span,
)

SAYS = {"residual": "the residual stack passes more", "plain": "the plain stack passes more"}


def test_all_agree():
    assert seeds_sentence(["residual"] * 5, SAYS, range(5)) == (
        "In 5 of 5 seeds the residual stack passes more."
    )


def test_all_but_one_of_more_than_three_agree_and_the_other_seed_is_named():
    out = ["residual", "residual", "plain", "residual", "residual"]
    assert seeds_sentence(out, SAYS, range(10, 15)) == (
        "In 4 of 5 seeds the residual stack passes more (not in seed 12)."
    )


def test_two_of_three_is_a_split_not_a_finding():
    out = ["residual", "plain", "residual"]
    assert agreement(out).agreed is False
    assert seeds_sentence(out, SAYS, [0, 1, 2]) == (
        "The seeds disagree: in 2 of 3 (seeds 0, 2) the residual stack passes more; "
        "in 1 of 3 (seed 1) the plain stack passes more."
    )


def test_an_even_split_is_a_tie():
    out = ["plain", "residual", "residual", "plain"]
    a = agreement(out, [3, 4, 5, 6])
    assert a.tie and not a.agreed and a.top == "plain"
    assert seeds_sentence(out, SAYS, [3, 4, 5, 6]).startswith(
        "The seeds split evenly: in 2 of 4 (seeds 3, 6) the plain stack passes more; "
        "in 2 of 4 (seeds 4-5)"
    )


def test_one_seed_says_it_is_one_run():
    assert seeds_sentence(["plain"], SAYS, [9]) == (
        "In the one seed run (seed 9) the plain stack passes more; "
        "run more seeds to see whether it holds."
    )


@pytest.mark.parametrize(
    ("n", "agree", "expected"),
    [(2, 2, True), (2, 1, False), (3, 2, False), (4, 3, True), (10, 9, True), (10, 8, False)],
)
def test_the_agreement_rule(n, agree, expected):
    assert agreement(["a"] * agree + ["b"] * (n - agree)).agreed is expected


def test_labels():
    assert seeds_label([2]) == "seed 2"
    assert seeds_label([0, 1, 2]) == "seeds 0-2"
    assert seeds_label([5, 1]) == "seeds 1, 5"
    assert (
        band_words([0, 1, 2])
        == "Lines: the median of 3 seeds (0-2); bands: their lowest to highest."
    )
    assert band_words([4]).startswith("One run (seed 4)")


def test_refusals():
    with pytest.raises(ValueError):
        agreement([])
    with pytest.raises(ValueError):
        agreement(["a"], [1, 2])


def test_span_and_log_span_quote_lowest_to_highest():
    nan, inf = math.nan, math.inf
    # Alike when they print alike at `digits` significant figures.
    assert span([0.41, 0.4104, 0.41]) == "0.41"
    assert span([1.234, 1.236], 2) == "1.2"
    assert span([1.234, 1.236]) == "1.23\u20131.24"
    assert span([1.234, 1.236], 4) == "1.234\u20131.236"
    # Lowest to highest, in any order, an en dash (U+2013) between non-negative ends.
    assert span([0.52, 0.41, 0.45]) == "0.41\u20130.52"
    assert span([0.0, 2, 1]) == "0\u20132"
    assert span([3e5, 2e-4]) == "2e-4\u20133e5"
    # "to" where an end is negative (a dash would read as a minus sign).
    assert span([0.2, -0.5]) == "-0.5 to 0.2"
    assert span([-0.2, -0.5]) == "-0.5 to -0.2"
    assert span([-1e-9, 3]) == "-1e-9 to 3"
    assert span([-0.0, 1]) == "0\u20131"  # -0.0 prints as 0: not a negative end
    # Values that are not finite are named after the range, once each, sorted.
    assert span([0.41, nan, 0.52]) == "0.41\u20130.52 (and NaN)"
    assert span([1, inf, nan, inf, -inf]) == "1 (and -Inf, Inf, NaN)"
    assert span([-1, nan, 2]) == "-1 to 2 (and NaN)"
    # Only such values; no values at all.
    assert span([nan, nan]) == "NaN"
    assert span([inf, nan]) == "Inf or NaN"
    assert span([]) == "none"
    # log10s: -inf is exactly 0, the lowest value, not a value that is not finite;
    # values beyond float64's range (1e-420) are quoted, not rounded to 0.
    assert log_span([math.log10(4e-3), math.log10(2.5e-3)]) == "0.0025\u20130.004"
    assert log_span([-419.43, -420]) == "1e-420\u20133.72e-420"
    assert log_span([-419.43, -420], 2) == "1e-420\u20133.7e-420"
    assert log_span([-420, -inf, -25.2]) == "0\u20136.31e-26"
    assert log_span([-inf, -inf]) == "0"
    assert log_span([-420, -420.0001]) == "1e-420"
    assert log_span([-inf, nan, inf, -1]) == "0\u20130.1 (and Inf, NaN)"
    assert log_span([nan]) == "NaN"
    assert log_span([inf, nan]) == "Inf or NaN"
    assert log_span([]) == "none"
