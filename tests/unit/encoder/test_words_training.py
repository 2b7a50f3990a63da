"""The encoder playground's training words over seeds (resviz.encoder.words_training):
the outcome each seed gives :func:`resviz.words.seeds.seeds_sentence` and the words of
each outcome. Agree, split, tie, one seed, NaN, inf, zeros."""

import math

import pandas as pd

from resviz.encoder import words_training as W
from resviz.words.seeds import seeds_sentence


def _curves(per_seed):
    rows = []
    for s, (a, b) in per_seed.items():
        for v, losses in (("mine", a), ("other", b)):
            for step, loss in enumerate(losses, 1):
                rows.append({"seed": s, "variant": v, "step": step, "loss": loss})
    return pd.DataFrame(rows)


def race(curves, window=2):
    return W.loss_race_words(curves, "mine", "other", window)


LOWER = '"{}" ends with the lower mean loss over the last 2 steps both have ({} against {})'
DOWN, FLAT = [3.0, 2.0, 1.0], [3.0, 3.0, 3.0]


def test_loss_race_words_each_seeds_winner_with_its_means():
    said = race(_curves({0: (DOWN, FLAT), 1: (FLAT, DOWN), 2: (DOWN, FLAT)}))
    says = {"a": LOWER.format("mine", "1.5", "3"), "b": LOWER.format("other", "3", "1.5")}
    assert said == seeds_sentence(["a", "b", "a"], says, (0, 1, 2))
    tie = race(_curves({0: (DOWN, FLAT), 1: (FLAT, DOWN)}))
    assert tie == seeds_sentence(["a", "b"], says, (0, 1))


def test_loss_race_one_seed_adds_where_the_running_means_cross():
    one = race(_curves({3: (DOWN, FLAT)}))
    head = seeds_sentence(["a"], {"a": LOWER.format("mine", "1.5", "3")}, (3,))
    assert one == head + ' The 2-step mean of "mine" is below that of "other" from step 2 on.'


def test_loss_race_level_not_finite_and_no_common_step():
    same = race(_curves({0: ([3.0, 2.0], [3.0, 2.0])}))
    level = (
        '"mine" and "other" end with about the same mean loss over the last 2 steps both '
        "have, within 5% (2.5 against 2.5)"
    )
    assert same.startswith(seeds_sentence(["same"], {"same": level}, (0,)))
    # A NaN loss makes its mean NaN: never skipped into a finite mean of the rest.
    for bad in (math.nan, math.inf):
        said = race(_curves({0: ([3.0, bad], [3.0, 2.0])}))
        assert '"mine" or "other" is not finite over the last 2 steps both have' in said
        assert "(3 against" not in said
    c = _curves({0: ([3.0], [3.0])})
    c.loc[c["variant"] == "other", "step"] = 5
    none = {"none": 'no step has a loss for both "mine" and "other" yet'}
    assert race(c) == seeds_sentence(["none"], none, (0,))


def test_race_is_the_headlines_too():
    """The headline and the words read one race: the same outcomes and means."""
    from resviz.encoder import headline as H

    curves = _curves({0: (DOWN, FLAT), 1: ([3.0, math.nan, 1.0], FLAT)})
    parts, seeds = W.by_seed(curves)
    outcomes, ma, mb, _ = W.race(parts, "mine", "other", 10)
    assert outcomes == ["a", "inf"] and ma[0] == 2.0 and math.isnan(ma[1]) and mb == [3.0, 3.0]
    assert "not finite" in H.loss_race(curves, "mine", "other").line


def _init_trained(before: float, after: float, seed: int = 0) -> pd.DataFrame:
    return pd.DataFrame(
        {"seed": [seed] * 2, "variant": ["your model"] * 2, "weights": ["init", "trained"],
         "block": [6, 6], "residual": [before, after]}
    )  # fmt: skip


SUBJECT = "after layer 6, your model's distance from rank one"


def test_trained_collapse_words_per_seed():
    frame = pd.concat([_init_trained(0.1, 0.5), _init_trained(0.2, 0.6, 1),
                       _init_trained(0.3, 0.1, 2)])  # fmt: skip
    assert W.trained_collapse_words(frame, 6) == seeds_sentence(
        ["rises", "rises", "falls"],
        {"rises": f"{SUBJECT} rises with training (at init 0.1–0.2, trained 0.5–0.6): "
         "training pulls the tokens apart",
         "falls": f"{SUBJECT} falls with training (at init 0.3, trained 0.1)"},
        (0, 1, 2),
    )  # fmt: skip


def test_trained_collapse_states_no_direction_from_rounding_or_nan():
    """Two distances under float64's resolution are rounding: neither rises nor falls,
    and neither is printed as a value."""
    under = f"{SUBJECT} is below float64 resolution (< 1e-13) at init and trained"
    both = W.trained_collapse_words(_init_trained(3e-16, 8e-16), 6)
    assert both == seeds_sentence(["under"], {"under": under}, (0,))
    one = W.trained_collapse_words(
        pd.concat([_init_trained(3e-16, 0.2), _init_trained(0.21, 0.2, 1)]), 6
    )
    assert f"{SUBJECT} rises with training (at init < 1e-13, trained 0.2)" in one
    assert "e-16" not in one and "stays about the same with training, within 5%" in one
    nan = W.trained_collapse_words(_init_trained(0.3, math.nan), 6)
    none = f"{SUBJECT} is not finite before or after training (at init 0.3, trained NaN)"
    assert nan == seeds_sentence(["none"], {"none": none}, (0,))


def test_correct_guesses_per_seed():
    preds = pd.DataFrame(
        {"seed": [0, 0, 1, 1], "variant": ["a", "b", "a", "b"], "correct": [1, 0, 1, 1]}
    )
    assert W.correct_words(preds) == (
        "Correct guesses at the masked positions: a: 1 of 1 (seed 0), 1 of 1 (seed 1); "
        "b: 0 of 1 (seed 0), 1 of 1 (seed 1)."
    )
    one = pd.DataFrame({"seed": [4, 4], "variant": ["a", "a"], "correct": [0, 0]})
    assert W.correct_words(one) == "Correct guesses at the masked positions: a: 0 of 2."
