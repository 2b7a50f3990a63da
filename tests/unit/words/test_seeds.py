"""A direction is stated only when the seeds agree: resviz/words/seeds.py."""

import pytest

from resviz.words.seeds import agreement, band_words, seeds_label, seeds_sentence

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
