"""The encoder playground's words over seeds: each direction is stated with its count
when the seeds agree, and as the split when they do not (agree, split, tie, one seed),
with the numbers of the seeds that show it."""

import math

import pandas as pd
import pytest

import resviz as rv
from resviz.encoder import words as W

LABELS = ["the input", "block 1", "block 2"]


# ------------------------------------------------------------------ the helpers
def test_by_seed():
    with pytest.raises(ValueError, match="no seed column"):
        W.by_seed(pd.DataFrame({"x": [1]}))
    parts, seeds = W.by_seed(pd.DataFrame({"seed": [4, 4, 2], "x": [1, 2, 3]}))
    assert seeds == (4, 2) and [list(p["x"]) for p in parts] == [[1, 2], [3]]
    assert "seed" not in parts[0].columns


# --------------------------------------------------------------------- trends
def test_trend_agrees_with_the_count_and_the_numbers_of_every_seed():
    said = W.trend_over_seeds([[1, 2, 4], [1, 3, 9], [1, 5, 8]], LABELS, "the norm", (0, 1, 2))
    assert said == (
        "In 3 of 3 seeds the norm rises from the input (1) to block 2 (4–9), a factor of 4–9."
    )


def test_trend_split_names_each_side_with_its_seeds():
    said = W.trend_over_seeds([[1, 2, 4], [1, 3, 9], [4, 2, 1]], LABELS, "the norm", (0, 1, 2))
    assert said == (
        "The seeds disagree: in 2 of 3 (seeds 0-1) the norm rises from the input (1) to "
        "block 2 (4–9), a factor of 4–9; in 1 of 3 (seed 2) the norm falls from the "
        "input (4) to block 2 (1), a factor of 4."
    )


def test_trend_tie_flat_one_seed_and_not_finite():
    tie = W.trend_over_seeds([[1, 1.1, 1.2], [1, 5, 0.1]], LABELS, "the norm", (0, 1))
    assert tie.startswith("The seeds split evenly: in 1 of 2 (seed 0) the norm stays within a")
    assert "factor of 1.2 from the input to block 2" in tie
    assert "in 1 of 2 (seed 1) the norm falls from the input (1) to block 2 (0.1)" in tie
    one = W.trend_over_seeds([[2, 1, 0.5]], LABELS, "the norm", (7,))
    assert one == (
        "In the one seed run (seed 7) the norm falls from the input (2) to block 2 (0.5), a "
        "factor of 4; run more seeds to see whether it holds."
    )
    bad = W.trend_over_seeds([[1, math.inf, 2]] * 3, LABELS, "the norm", (0, 1, 2))
    assert bad == "In 3 of 3 seeds the norm reaches a value that is not finite (NaN or Inf)."
    # Four seeds: all but one is agreement.
    four = W.trend_over_seeds([[1, 2, 4]] * 3 + [[4, 2, 1]], LABELS, "the norm", (0, 1, 2, 3))
    assert four.startswith("In 3 of 4 seeds the norm rises") and "(not in seed 3)" in four
    with pytest.raises(ValueError):
        W.trend_over_seeds([[1, 2]], LABELS, "the norm", (0,))


def _stream(seed_norms):
    rows = []
    for s, norms in seed_norms.items():
        for i, (block, sub) in enumerate([(1, "attn"), (1, "ffn")]):
            rows.append(
                {"seed": s, "block": block, "sublayer": sub, "index": i + 1,
                 "stream_norm": norms[i + 1], "input_norm": norms[i]}
            )  # fmt: skip
    return pd.DataFrame(rows)


def test_stream_norm_words_read_the_input_and_every_sublayer():
    said = W.stream_norm_words(_stream({0: [1, 2, 4], 1: [1, 2, 8]}))
    assert said == (
        "In 2 of 2 seeds the mean token norm rises from the input (1) to after L1 ffn "
        "(4–8), a factor of 4–8."
    )


# -------------------------------------------------------------- update ratios
def _ratio(per_seed):
    rows = []
    for s, vals in per_seed.items():
        for (block, sub), v in zip([(1, "attn"), (1, "ffn"), (2, "attn")], vals, strict=True):
            rows.append({"seed": s, "block": block, "sublayer": sub, "update_ratio": v})
    return pd.DataFrame(rows)


def test_update_ratio_agree_split_and_tie():
    agree = W.update_ratio_words(_ratio({0: [0.1, 0.3, 0.2], 1: [0.1, 0.4, 0.2]}))
    assert agree == (
        "The ratio ranges from 0.1 to 0.4 over seeds 0-1. In 2 of 2 seeds every sublayer's "
        "output is smaller than the stream it reads (largest ratio 0.3–0.4). In 2 of 2 "
        "seeds the largest ratio is L1 ffn's."
    )
    split = W.update_ratio_words(
        _ratio({0: [0.1, 0.3, 0.2], 1: [0.1, 2.0, 0.2], 2: [0.1, 0.2, 1.5]})
    )
    assert (
        "The seeds disagree: in 2 of 3 (seeds 1-2) some sublayer's output is at least as "
        "large as the stream it reads (largest ratio 1.5–2); in 1 of 3 (seed 0) every "
        "sublayer's output is smaller than the stream it reads (largest ratio 0.3)." in split
    )
    assert (
        "The seeds disagree: in 2 of 3 (seeds 0-1) the largest ratio is L1 ffn's; in 1 of 3 "
        "(seed 2) the largest ratio is L2 attn's." in split
    )
    tie = W.update_ratio_words(_ratio({0: [0.1, 0.3, 0.2], 1: [0.1, 0.2, 0.3]}))
    assert "The seeds split evenly: in 1 of 2 (seed 0) the largest ratio is L1 ffn's" in tie


# ---------------------------------------------------------------- final share
def _share(per_seed, part):
    rows = []
    comps = ["embedding", "L1 attn", "L1 ffn"]
    for s, vals in per_seed.items():
        for c, v, p in zip(comps, vals, part, strict=True):
            rows.append({"seed": s, "component": c, "sublayer": c.split()[-1], "share": v,
                         "part": p})  # fmt: skip
    return pd.DataFrame(rows)


def test_share_words_agree_split_and_the_three_ways_x_L_is_made():
    every = [True, True, True]
    agree = W.share_words(_share({0: [0.6, 0.2, 0.2], 1: [0.7, 0.1, 0.2]}, every))
    assert "so the bars sum to 1 (here 1)." in agree
    assert "In 2 of 2 seeds the largest share is embedding's (0.6–0.7)." in agree
    split = W.share_words(
        _share({0: [0.6, 0.2, 0.2], 1: [0.2, 0.7, 0.1], 2: [0.5, 0.3, 0.2]}, every)
    )
    assert (
        "The seeds disagree: in 2 of 3 (seeds 0, 2) the largest share is embedding's (0.5–0.6); "
        "in 1 of 3 (seed 1) the largest share is L1 attn's (0.7)." in split
    )
    last = W.share_words(_share({0: [0.3, -0.1, 1.0], 1: [0.2, 0.1, 1.0]}, [False, False, True]))
    assert "so its bar (L1 ffn) is 1; the other bars" in last and "(from -0.1 to 0.3)" in last
    post = W.share_words(_share({0: [0.6, 0.3, 0.4], 1: [0.5, 0.2, 0.1]}, [False] * 3))
    assert "need not sum to 1 (here 0.8–1.3)" in post
    assert "In 2 of 2 seeds the largest projection is embedding's (0.5–0.6)." in post


# --------------------------------------------------------------- rank collapse
def _collapse(per_seed):
    """per_seed[s] = final distances of (mine, flipped, attn shortcuts, attn none)."""
    names = [
        ("your model", True),
        ("your model, no shortcuts", False),
        ("attention only, shortcuts", True),
        ("attention only, no shortcuts", False),
    ]
    rows = []
    for s, finals in per_seed.items():
        for (v, sc), f in zip(names, finals, strict=True):
            for block, r in ((0, 0.8), (1, f)):
                rows.append({"seed": s, "variant": v, "shortcuts": sc, "block": block,
                             "residual": r, "cosine": 1 - r})  # fmt: skip
    return pd.DataFrame(rows)


def test_collapse_words_agree_and_split_on_the_shortcut_comparison():
    agree = W.collapse_words(_collapse({0: [0.8, 1e-3, 0.75, 1e-4], 1: [0.7, 2e-3, 0.7, 1e-5]}))
    assert "Your model: in 2 of 2 seeds the distance stays within a factor of" in agree
    assert (
        "Attention only, no shortcuts: in 2 of 2 seeds the distance falls from the input "
        "(0.8) to block 1 (1e-5–1e-4), a factor of 8000–8e4." in agree
    )
    assert (
        'In 2 of 2 seeds "your model" ends further from rank one after block 1 than "your '
        'model, no shortcuts" (0.7–0.8 against 0.001–0.002).' in agree
    )
    split = W.collapse_words(
        _collapse(
            {0: [0.8, 1e-3, 0.75, 1e-4], 1: [0.7, 2e-3, 1e-6, 1e-5], 2: [0.7, 2e-3, 0.7, 0.7]}
        )
    )
    assert (
        'The seeds split evenly: in 1 of 3 (seed 0) "attention only, shortcuts" ends further '
        'from rank one after block 1 than "attention only, no shortcuts" (0.75 against '
        '1e-4); in 1 of 3 (seed 1) "attention only, shortcuts" ends closer' in split
    )
    assert "in 1 of 3 (seed 2) " in split and "end about as far from rank one" in split


def test_cosine_and_attention_spread_quote_every_seed():
    c = _collapse({0: [0.8, 1e-3, 0.75, 1e-4], 1: [0.7, 2e-3, 0.7, 1e-5]})
    said = W.cosine_words(c[["seed", "variant", "block", "cosine"]])
    assert said.startswith("After the last layer (seeds 0-1): your model: 0.2–0.3;")
    att = pd.DataFrame(
        {"seed": [0, 0, 1, 1], "query": ["a", "a", "a", "a"], "key": ["a", "b", "a", "b"],
         "weight": [0.5, 0.5, 0.9, 0.1]}
    )  # fmt: skip
    said = W.attention_spread_words(att, 1, 2)
    assert said == (
        "In the map shown (seed 1) the weights lie between 0.1 and 0.9; uniform attention "
        "(1/2) would give each 0.5, and the largest is 1.8 times that (over seeds 0-1: 1–1.8 "
        "times)."
    )


# ------------------------------------------------------------------- training
def _curves(per_seed):
    rows = []
    for s, (a, b) in per_seed.items():
        for v, losses in (("mine", a), ("other", b)):
            for step, loss in enumerate(losses, 1):
                rows.append({"seed": s, "variant": v, "step": step, "loss": loss})
    return pd.DataFrame(rows)


def test_loss_race_agree_split_tie_and_one_seed():
    down, flat = [3.0, 2.0, 1.0], [3.0, 3.0, 3.0]
    agree = W.loss_race_words(_curves({0: (down, flat), 1: (down, flat)}), "mine", "other", 2)
    assert agree == (
        'In 2 of 2 seeds "mine" ends with the lower mean loss over the last 2 steps both '
        "have (1.5 against 3)."
    )
    split = W.loss_race_words(
        _curves({0: (down, flat), 1: (flat, down), 2: (down, flat)}), "mine", "other", 2
    )
    assert split == (
        'The seeds disagree: in 2 of 3 (seeds 0, 2) "mine" ends with the lower mean loss '
        'over the last 2 steps both have (1.5 against 3); in 1 of 3 (seed 1) "other" ends '
        "with the lower mean loss over the last 2 steps both have (3 against 1.5)."
    )
    tie = W.loss_race_words(_curves({0: (down, flat), 1: (flat, down)}), "mine", "other", 2)
    assert tie.startswith("The seeds split evenly: in 1 of 2 (seed 0)")
    one = W.loss_race_words(_curves({3: (down, flat)}), "mine", "other", 2)
    assert one.startswith('In the one seed run (seed 3) "mine" ends with the lower mean')
    assert one.endswith('The 2-step mean of "mine" is below that of "other" from step 2 on.')


def test_trained_collapse_and_correct_guesses_per_seed():
    rows = []
    for s, (before, after) in {0: (0.1, 0.5), 1: (0.2, 0.6), 2: (0.3, 0.1)}.items():
        for w, r in (("init", before), ("trained", after)):
            rows.append({"seed": s, "variant": "your model", "weights": w, "block": 2,
                         "residual": r})  # fmt: skip
    said = W.trained_collapse_words(pd.DataFrame(rows), 2)
    assert said == (
        "The seeds disagree: in 2 of 3 (seeds 0-1) after layer 2, your model's distance "
        "from rank one rises with training (at init 0.1–0.2, trained 0.5–0.6): training "
        "pulls the tokens apart; in 1 of 3 (seed 2) after layer 2, your model's distance from "
        "rank one falls with training (at init 0.3, trained 0.1)."
    )
    preds = pd.DataFrame(
        {"seed": [0, 0, 1, 1], "variant": ["a", "b", "a", "b"], "correct": [1, 0, 1, 1]}
    )
    assert W.correct_words(preds) == (
        "Correct guesses at the masked positions: a: 1 of 1 (seed 0), 1 of 1 (seed 1); "
        "b: 0 of 1 (seed 0), 1 of 1 (seed 1)."
    )


def test_the_playground_words_are_the_librarys():
    assert rv.encoder.words.share_words is W.share_words


def test_trend_factor_never_hides_a_seed_without_one():
    """A range of factors is quoted over the seeds that have one, and says so: an end
    at exactly 0 or a change of sign has no factor."""
    zero = W.trend_over_seeds([[2, 1, 0.5], [2, 1, 0.0], [4, 2, 1]], LABELS, "the norm", (0, 1, 2))
    assert zero == (
        "In 3 of 3 seeds the norm falls from the input (2–4) to block 2 (0–1), a factor of 4 "
        "in 2 of them (the others end at 0, change sign or overflow)."
    )
    sign = W.trend_over_seeds([[2, 1, -0.5], [2, 1, 0.5], [4, 2, 1]], LABELS, "x", (0, 1, 2))
    assert "(-0.5 to 1), a factor of 4 in 2 of them (the others end at 0" in sign
    big = W.trend_over_seeds([[1e-300, 1, 1e300], [1, 2, 4]], LABELS, "x", (0, 1))
    assert big.endswith(
        "a factor of 4 in 1 of them (the others end at 0, change sign or overflow)."
    )


def _init_trained(before: float, after: float, seed: int = 0) -> pd.DataFrame:
    return pd.DataFrame(
        {"seed": [seed] * 2, "variant": ["your model"] * 2, "weights": ["init", "trained"],
         "block": [6, 6], "residual": [before, after]}
    )  # fmt: skip


def test_trained_collapse_states_no_direction_from_rounding():
    """Two distances under float64's resolution are rounding: neither rises nor falls,
    and neither is printed as a value."""
    both = W.trained_collapse_words(_init_trained(3e-16, 8e-16), 6)
    assert both == (
        "In the one seed run (seed 0) after layer 6, your model's distance from rank one is "
        "below float64 resolution (< 1e-13) at init and trained; run more seeds to see "
        "whether it holds."
    )
    one = W.trained_collapse_words(
        pd.concat([_init_trained(3e-16, 0.2), _init_trained(0.21, 0.2, 1)]), 6
    )
    assert one.startswith(
        "The seeds split evenly: in 1 of 2 (seed 0) after layer 6, your model's distance from "
        "rank one rises with training (at init < 1e-13, trained 0.2)"
    )
    assert "e-16" not in one and "stays about the same with training, within 5%" in one
