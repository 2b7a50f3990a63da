"""A direction is stated only when the seeds agree: resviz/words/seeds.py and
resviz/words/headline.py.

The seed-agreement phrase ("In 3 of 3 seeds ...", "The seeds disagree: ...", "In the
one seed run ...") is worded by :func:`seeds_sentence` (captions), :func:`seeds_headline`
(headlines) and :func:`seeds_answer` (lesson answers). Its wording is tested here, once,
on both outcomes, NaN, Inf, ties, zeros, negatives and one seed; a topic's tests check
their own clause and compare the rest with these functions' output."""

import math

import pytest

from resviz.words.headline import seeds_headline
from resviz.words.seeds import (
    SEEDS_DISAGREE,
    agreement,
    band_words,
    log_span,
    seed_progress,
    seeds_answer,
    seeds_label,
    seeds_sentence,
    seeds_sentence_by,
    span,
)

SAYS = {"residual": "the residual stack passes more", "plain": "the plain stack passes more"}
SHORT = {"residual": "residual", "plain": "plain"}
NAN, INF = math.nan, math.inf


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


def test_all_but_one_of_four_agree_and_two_of_two_agree():
    out = ["plain", "plain", "plain", "residual"]
    assert seeds_sentence(out, SAYS, [0, 1, 2, 3]) == (
        "In 3 of 4 seeds the plain stack passes more (not in seed 3)."
    )
    assert seeds_sentence(["plain", "plain"], SAYS, [0, 1]) == (
        "In 2 of 2 seeds the plain stack passes more."
    )
    assert seeds_sentence(["plain", "residual"], SAYS, [0, 1]) == (
        "The seeds split evenly: in 1 of 2 (seed 0) the plain stack passes more; "
        "in 1 of 2 (seed 1) the residual stack passes more."
    )


def test_a_three_way_split_lists_every_outcome_and_its_seeds():
    says = {**SAYS, "level": "the two pass as much"}
    # 2-2-1: the two largest tie; the earliest seed's outcome first among equals.
    out = ["level", "plain", "residual", "plain", "level"]
    assert seeds_sentence(out, says, [0, 1, 2, 3, 4]) == (
        "The seeds split evenly: in 2 of 5 (seeds 0, 4) the two pass as much; "
        "in 2 of 5 (seeds 1, 3) the plain stack passes more; "
        "in 1 of 5 (seed 2) the residual stack passes more."
    )
    # 3-1-1 of five is no agreement (all but one is 4) and no tie.
    out = ["plain", "level", "plain", "residual", "plain"]
    assert seeds_sentence(out, says, [0, 1, 2, 3, 4]) == (
        "The seeds disagree: in 3 of 5 (seeds 0, 2, 4) the plain stack passes more; "
        "in 1 of 5 (seed 1) the two pass as much; in 1 of 5 (seed 3) the residual stack "
        "passes more."
    )


def test_seed_zero_unsorted_and_gapped_seeds_are_labelled_in_order():
    assert seeds_sentence(["plain"], SAYS, [0]) == (
        "In the one seed run (seed 0) the plain stack passes more; "
        "run more seeds to see whether it holds."
    )
    # Seeds given out of order: each outcome's seeds sorted, the run written as a range.
    out = ["plain", "residual", "plain", "plain", "plain"]
    assert seeds_sentence(out, SAYS, [7, 0, 9, 8, 3]) == (
        "In 4 of 5 seeds the plain stack passes more (not in seed 0)."
    )
    assert seeds_sentence(["plain", "residual", "plain"], SAYS, [4, 0, 2]) == (
        "The seeds disagree: in 2 of 3 (seeds 2, 4) the plain stack passes more; "
        "in 1 of 3 (seed 0) the residual stack passes more."
    )
    # Seeds default to 0..n-1.
    assert seeds_sentence(["plain"] * 3, SAYS) == seeds_sentence(["plain"] * 3, SAYS, [0, 1, 2])


def test_the_top_outcome_of_a_tie_is_the_earliest_seeds():
    a = agreement(["b", "a", "a", "b"])
    assert a.counts == [("b", 2), ("a", 2)] and a.top == "b" and a.tie
    assert a.seeds_of("a") == (1, 2) and a.seeds_of_other() == (1, 2)
    three = agreement(["c", "b", "a"], [5, 6, 7])
    assert three.tie and three.top == "c" and not three.agreed
    assert agreement(["x"]).counts == [("x", 1)] and not agreement(["x"]).tie


def test_outcomes_are_compared_as_text():
    # NaN is not equal to itself as a float; as an outcome it is the same outcome.
    a = agreement([NAN, NAN, INF])
    assert a.outcomes == ("nan", "nan", "inf") and a.top == "nan" and not a.agreed


def _sign(v: float) -> str:
    if not math.isfinite(v):
        return "not finite"
    return "grows" if v > 0 else ("shrinks" if v < 0 else "level")


def _quote(values: list[float]):
    def phrase(outcome: str, ix: list[int]) -> str:
        return f"it {outcome} ({span([values[i] for i in ix])})"

    return phrase


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        # Negatives and zeros, each seed's number quoted in its own group.
        (
            [-2.0, -0.5, 0.0],
            "The seeds disagree: in 2 of 3 (seeds 0-1) it shrinks (-2 to -0.5); "
            "in 1 of 3 (seed 2) it level (0).",
        ),
        ([0.0, -0.0, 0.0], "In 3 of 3 seeds it level (0)."),
        # NaN and Inf: one outcome ("not finite"), both named; 3 of 4 agree.
        (
            [NAN, INF, NAN, 1.0],
            "In 3 of 4 seeds it not finite (Inf or NaN) (not in seed 3).",
        ),
        (
            [INF, -INF, 2.0, 3.0, 4.0],
            "The seeds disagree: in 3 of 5 (seeds 2-4) it grows (2–4); "
            "in 2 of 5 (seeds 0-1) it not finite (-Inf or Inf).",
        ),
        ([1.0, 2.5, NAN, 4.0, 1.5], "In 4 of 5 seeds it grows (1–4) (not in seed 2)."),
        ([-1e-300], "In the one seed run (seed 0) it shrinks (-1e-300); run more seeds to see "
         "whether it holds."),
    ],
)  # fmt: skip
def test_seeds_sentence_by_quotes_each_groups_numbers(values, expected):
    outcomes = [_sign(v) for v in values]
    got = seeds_sentence_by(outcomes, range(len(values)), _quote(values))
    assert got == expected
    # The same sentence as seeds_sentence given each outcome's words.
    groups = {o: [i for i, x in enumerate(outcomes) if x == o] for o in outcomes}
    says = {o: _quote(values)(o, ix) for o, ix in groups.items()}
    assert got == seeds_sentence(outcomes, says, range(len(values)))


def test_headline_agreed_all_but_one_and_one_seed():
    assert seeds_headline(["residual"] * 3, SAYS, [0, 1, 2], "x") == (
        "In 3 of 3 seeds the residual stack passes more."
    )
    out = ["residual", "residual", "plain", "residual", "residual"]
    assert seeds_headline(out, SAYS, range(5), "x") == (
        "In 4 of 5 seeds the residual stack passes more (not in seed 2)."
    )
    # One seed: one run, in fewer words than the caption's (no reminder).
    assert seeds_headline(["plain"], SAYS, [7]) == (
        "In the one seed run (seed 7) the plain stack passes more."
    )


def test_headline_split_in_short_words_and_a_tie_as_even():
    out = ["residual", "plain", "residual"]
    assert seeds_headline(out, SAYS, [0, 1, 2], "which passes more", SHORT) == (
        "The seeds disagree on which passes more: residual in 2 of 3; plain in 1."
    )
    assert seeds_headline(["residual", "plain"], SAYS, [0, 1], "which passes more", SHORT) == (
        "The seeds split evenly on which passes more: residual in 1 of 2; plain in 1."
    )
    # Without short words, the full ones; without a topic, "the outcome".
    assert seeds_headline(["plain", "residual"], SAYS, [3, 4]) == (
        "The seeds split evenly on the outcome: the plain stack passes more in 1 of 2; "
        "the residual stack passes more in 1."
    )
    three = ["plain", "residual", "level", "plain", "residual", "plain"]
    names = {**SHORT, "level": "level"}
    assert seeds_headline(three, names, range(6), "which passes more") == (
        "The seeds disagree on which passes more: plain in 3 of 6; residual in 2; level in 1."
    )


def test_answer_agreed_quotes_the_first_agreeing_seeds_sentence():
    said = ["value 21", "value 31", "value 41"]
    assert seeds_answer(["high"] * 3, said, [1, 2, 3]) == (
        "high",
        "In 3 of 3 seeds: high. Seed 1: value 21",
    )
    # All but one of five: the other seed named, the first agreeing seed quoted.
    said = ["value 11", "value 21", "value 31", "value 41", "value 51"]
    assert seeds_answer(["low", "high", "high", "high", "high"], said, [1, 2, 3, 4, 5]) == (
        "high",
        "In 4 of 5 seeds: high (not in seed 1). Seed 2: value 21",
    )


def test_answer_split_answers_no_choice_and_quotes_the_first_seed():
    said = ["value 11", "value 21", "value 31"]
    assert seeds_answer(["low", "high", "high"], said, [1, 2, 3]) == (
        SEEDS_DISAGREE,
        "The seeds disagree: 2 of 3 (seeds 2-3) say high; 1 of 3 (seed 1) say low. "
        "Seed 1: value 11",
    )
    assert seeds_answer(["low", "high"], said[:2], [1, 2]) == (
        SEEDS_DISAGREE,
        "The seeds split evenly: 1 of 2 (seed 1) say low; 1 of 2 (seed 2) say high. "
        "Seed 1: value 11",
    )
    five = ["low", "low", "high", "high", "high"]  # 3 of 5 is no agreement
    assert seeds_answer(five, [f"v{i}" for i in range(5)], range(5))[0] == SEEDS_DISAGREE


def test_answer_of_one_seed_says_it_is_one_run():
    assert seeds_answer(["high"], ["value 31"], [1]) == (
        "high",
        "In the one seed run (seed 1): high; run more seeds to see whether it holds. value 31",
    )
    assert seeds_answer(["low"], ["value -0"], [0])[1].startswith("In the one seed run (seed 0)")


PATTERNS = [
    ["a"], ["a", "b"], ["a", "a"], ["a", "a", "b"], ["a", "a", "a"], ["a", "b", "b", "b"],
    ["a", "a", "b", "b"], ["a", "a", "a", "a", "b"], ["a", "a", "a", "b", "b"],
    ["b", "a", "a", "a", "a", "a", "a", "a", "a", "c"], ["a"] * 9 + ["b"], ["a", "b", "c"],
]  # fmt: skip


@pytest.mark.parametrize("outcomes", PATTERNS, ids=["".join(p) for p in PATTERNS])
def test_caption_headline_and_answer_follow_one_rule(outcomes):
    """The same seeds' outcomes: the caption, the headline and a lesson's answer each
    state a direction exactly when :attr:`Agreement.agreed`, and the same one."""
    says = {"a": "it is a", "b": "it is b", "c": "it is c"}
    a = agreement(outcomes)
    seeds = range(len(outcomes))
    caption = seeds_sentence(outcomes, says, seeds)
    headline = seeds_headline(outcomes, says, seeds, "which")
    answer, _ = seeds_answer(outcomes, [f"s{i}" for i in seeds], seeds)
    split = ("The seeds disagree", "The seeds split evenly")
    for text in (caption, headline):
        assert text.startswith(split) is not a.agreed, text
        assert text.startswith("The seeds split evenly") is (a.tie and not a.agreed), text
    assert (answer == SEEDS_DISAGREE) is not a.agreed
    if a.agreed:
        assert answer == a.top and says[a.top] in caption and says[a.top] in headline
        lead = f"In {a.top_count} of {a.n} seeds " if a.n > 1 else "In the one seed run (seed 0) "
        assert caption.startswith(lead + says[a.top]) and headline.startswith(lead + says[a.top])


# ------------------------------------------------------------------ live progress
@pytest.mark.parametrize(
    ("step", "per_seed", "n_seeds", "said"),
    [
        (0, 200, 3, "Seed 5 (1 of 3): step 0 of 200."),
        (199, 200, 3, "Seed 5 (1 of 3): step 199 of 200."),
        (200, 200, 3, "Seed 6 (2 of 3): step 0 of 200."),
        (450, 200, 3, "Seed 7 (3 of 3): step 50 of 200."),
        (600, 200, 3, "Seed 7 (3 of 3): step 200 of 200."),  # the end: the last seed, done
        (601, 200, 3, "Seed 7 (3 of 3): step 200 of 200."),  # never past its share
        (40, 60, 1, "Seed 5 (1 of 1): step 40 of 60."),  # one seed
        (0, 0, 2, "Seed 5 (1 of 2): step 0 of 1."),  # no unit per seed: at least one
        (-3, 10, 2, "Seed 5 (1 of 2): step 0 of 10."),  # a negative count: the start
    ],
)
def test_seed_progress_names_the_seed_and_how_far_into_it(step, per_seed, n_seeds, said):
    assert seed_progress(step, per_seed, n_seeds, 5) == said


def test_seed_progress_names_the_unit():
    assert seed_progress(3, 4, 2, 0, "stack") == "Seed 0 (1 of 2): stack 3 of 4."
