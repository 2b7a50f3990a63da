"""The encoder playground's words over seeds. How seeds agree, split or tie is
:func:`resviz.words.seeds.seeds_sentence`'s (tests/unit/words/test_seeds.py): here each
function must give it the right outcome per seed and the right words for each
outcome, with the numbers of the seeds that show it. Agree, split, tie, one seed, NaN,
inf, zeros and negatives."""

import math

import pandas as pd
import pytest

from resviz.encoder import words as W
from resviz.words.seeds import seeds_sentence

LABELS = ["the input", "block 1", "block 2"]


# ------------------------------------------------------------------ the helpers
def test_by_seed():
    with pytest.raises(ValueError, match="no seed column"):
        W.by_seed(pd.DataFrame({"x": [1]}))
    parts, seeds = W.by_seed(pd.DataFrame({"seed": [4, 4, 2], "x": [1, 2, 3]}))
    assert seeds == (4, 2) and [list(p["x"]) for p in parts] == [[1, 2], [3]]
    assert "seed" not in parts[0].columns


# --------------------------------------------------------------------- trends
def trend(values, seeds=(0, 1, 2), subject="the norm"):
    return W.trend_over_seeds(values, LABELS, subject, seeds)


def test_trend_words_each_seeds_direction_with_the_numbers_of_its_seeds():
    rises = "the norm rises from the input (1) to block 2 (4–9), a factor of 4–9"
    assert trend([[1, 2, 4], [1, 3, 9], [1, 5, 8]]) == seeds_sentence(
        ["rises"] * 3, {"rises": rises}, (0, 1, 2)
    )
    split = trend([[1, 2, 4], [1, 3, 9], [4, 2, 1]])
    falls = "the norm falls from the input (4) to block 2 (1), a factor of 4"
    assert split == seeds_sentence(
        ["rises", "rises", "falls"], {"rises": rises, "falls": falls}, (0, 1, 2)
    )
    one = trend([[2, 1, 0.5]], seeds=(7,))
    said = "the norm falls from the input (2) to block 2 (0.5), a factor of 4"
    assert one == seeds_sentence(["falls"], {"falls": said}, (7,))


def test_trend_ties_flat_returns_and_values_that_are_not_finite():
    tie = trend([[1, 1.1, 1.2], [1, 5, 0.1]], seeds=(0, 1))
    stays = "the norm stays within a factor of 1.2 from the input to block 2"
    falls = "the norm falls from the input (1) to block 2 (0.1), a factor of 10"
    assert tie == seeds_sentence(["stays", "falls"], {"stays": stays, "falls": falls}, (0, 1))
    ends = trend([[2, 1, 2], [2, 1, 2]], seeds=(0, 1))
    assert ends.endswith("the norm ends where it starts, at 2, from the input to block 2.")
    zero = trend([[0, 0, 0]], seeds=(0,))  # no factor between zeros: it ends where it starts
    assert "the norm ends where it starts, at 0, from the input to block 2" in zero
    for bad in (math.inf, math.nan):
        said = trend([[1, bad, 2]] * 3)
        assert said == seeds_sentence(
            ["not finite"] * 3,
            {"not finite": "the norm reaches a value that is not finite (NaN or Inf)"},
            (0, 1, 2),
        )
    with pytest.raises(ValueError):
        W.trend_over_seeds([[1, 2]], LABELS, "the norm", (0,))
    with pytest.raises(ValueError):
        W.trend_over_seeds([[1, 2, 3]], LABELS, "the norm", (0, 1))


def test_trend_factor_never_hides_a_seed_without_one():
    """A range of factors is quoted over the seeds that have one, and says so: an end
    at exactly 0, a change of sign or an overflow has no factor."""
    zero = trend([[2, 1, 0.5], [2, 1, 0.0], [4, 2, 1]])
    assert zero.endswith(
        "the norm falls from the input (2–4) to block 2 (0–1), a factor of 4 in 2 of them "
        "(the others end at 0, change sign or overflow)."
    )
    sign = trend([[2, 1, -0.5], [2, 1, 0.5], [4, 2, 1]], subject="x")
    assert "(-0.5 to 1), a factor of 4 in 2 of them (the others end at 0" in sign
    negative = trend([[-2, -1, -4]], seeds=(0,), subject="x")
    assert "x falls from the input (-2) to block 2 (-4), a factor of 2" in negative
    big = trend([[1e-300, 1, 1e300], [1, 2, 4]], seeds=(0, 1), subject="x")
    assert big.endswith(
        "a factor of 4 in 1 of them (the others end at 0, change sign or overflow)."
    )


def test_trend_under_the_floor_is_worded_by_where_it_goes_under():
    said = W.trend_over_seeds([[0.84, 1e-15, 1e-16]], LABELS, "the distance", (0,), floor=1e-13)
    assert "the distance falls from the input (0.84) below float64 resolution (< 1e-13) by " in said
    assert "block 1" in said and "e-16" not in said


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
    values = {0: [1, 2, 4], 1: [1, 2, 8]}
    labels = ["the input", "after L1 attn", "after L1 ffn"]
    assert W.stream_norm_words(_stream(values)) == W.trend_over_seeds(
        list(values.values()), labels, "the mean token norm", (0, 1)
    )


# -------------------------------------------------------------- update ratios
def _ratio(per_seed):
    rows = []
    for s, vals in per_seed.items():
        for (block, sub), v in zip([(1, "attn"), (1, "ffn"), (2, "attn")], vals, strict=True):
            rows.append({"seed": s, "block": block, "sublayer": sub, "update_ratio": v})
    return pd.DataFrame(rows)


SMALLER = "every sublayer's output is smaller than the stream it reads (largest ratio {})"
LARGER = "some sublayer's output is at least as large as the stream it reads (largest ratio {})"


def test_update_ratio_words_over_seeds():
    seeds = (0, 1, 2)
    said = W.update_ratio_words(
        _ratio({0: [0.1, 0.3, 0.2], 1: [0.1, 2.0, 0.2], 2: [0.1, 0.2, 1.5]})
    )
    below = seeds_sentence(
        ["all below 1", "not all", "not all"],
        {"all below 1": SMALLER.format("0.3"), "not all": LARGER.format("1.5–2")},
        seeds,
    )
    where = seeds_sentence(
        ["L1 ffn", "L1 ffn", "L2 attn"],
        {w: f"the largest ratio is {w}'s" for w in ("L1 ffn", "L2 attn")},
        seeds,
    )
    assert said == f"The ratio ranges from 0.1 to 2 over seeds 0-2. {below} {where}"


def test_update_ratio_of_exactly_one_zeros_and_one_seed():
    said = W.update_ratio_words(_ratio({3: [0.5, 1.0, 0.0]}))
    assert said.startswith("The ratio ranges from 0 to 1 over seed 3. ")
    assert seeds_sentence(["not all"], {"not all": LARGER.format("1")}, (3,)) in said


def test_update_ratio_that_is_not_finite_is_said_so():
    assert W.update_ratio_words(_ratio({0: [math.nan, math.inf, math.nan]})) == (
        "No ratio is finite (seed 0)."
    )
    said = W.update_ratio_words(_ratio({0: [0.5, math.nan, 0.2], 1: [math.nan] * 3}))
    not_finite = "some sublayer's ratio is not finite (NaN or Inf)"
    assert seeds_sentence(["not finite"] * 2, {"not finite": not_finite}, (0, 1)) in said
    where = {"L1 attn": "the largest ratio is L1 attn's", "none": "no ratio is a number"}
    assert said.endswith(seeds_sentence(["L1 attn", "none"], where, (0, 1)))
    # An Inf is the largest ratio, never one below 1.
    said = W.update_ratio_words(_ratio({0: [0.5, math.inf, 0.2]}))
    assert "every sublayer's output is smaller" not in said and "L1 ffn's" in said


# ---------------------------------------------------------------- final share
def _share(per_seed, part):
    rows = []
    comps = ["embedding", "L1 attn", "L1 ffn"]
    for s, vals in per_seed.items():
        for c, v, p in zip(comps, vals, part, strict=True):
            rows.append({"seed": s, "component": c, "sublayer": c.split()[-1], "share": v,
                         "part": p})  # fmt: skip
    return pd.DataFrame(rows)


def test_share_words_the_three_ways_x_L_is_made():
    every = [True, True, True]
    said = W.share_words(
        _share({0: [0.6, 0.2, 0.2], 1: [0.2, 0.7, 0.1], 2: [0.5, 0.3, 0.2]}, every)
    )
    largest = seeds_sentence(
        ["embedding", "L1 attn", "embedding"],
        {"embedding": "the largest share is embedding's (0.5–0.6)",
         "L1 attn": "the largest share is L1 attn's (0.7)"},
        (0, 1, 2),
    )  # fmt: skip
    assert said == W.HEAD + (
        "x_L is the sum of these components (residuals, and no norm on the stream itself), "
        f"so the bars sum to 1 (here 1). {largest}"
    )
    last = W.share_words(_share({0: [0.3, -0.1, 1.0], 1: [0.2, 0.1, 1.0]}, [False, False, True]))
    assert "so its bar (L1 ffn) is 1; the other bars" in last and "(from -0.1 to 0.3)" in last
    post = W.share_words(_share({4: [0.6, 0.3, 0.4]}, [False] * 3))
    assert "need not sum to 1 (here 1.3)" in post
    largest = {"embedding": "the largest projection is embedding's (0.6)"}
    assert post.endswith(seeds_sentence(["embedding"], largest, (4,)))


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


MINE, FLIPPED = '"your model"', '"your model, no shortcuts"'
ATTN, PURE = '"attention only, shortcuts"', '"attention only, no shortcuts"'


def test_collapse_words_each_variant_then_the_shortcut_comparisons():
    frame = _collapse(
        {0: [0.8, 1e-3, 0.75, 1e-4], 1: [0.7, 2e-3, 1e-6, 1e-5], 2: [0.7, 2e-3, 0.7, 0.7]}
    )
    said = W.collapse_words(frame)
    seeds = (0, 1, 2)
    pure = [[0.8, 1e-4], [0.8, 1e-5], [0.8, 0.7]]
    trend = W.trend_over_seeds(pure, ["the input", "block 1"], "the distance", seeds, floor=W.FLOOR)
    assert f"Attention only, no shortcuts: {trend[:1].lower()}{trend[1:]}" in said
    ends = "after block 1"
    mine = f"{MINE} ends further from rank one {ends} than {FLIPPED} (0.7–0.8 against 0.001–0.002)"
    assert seeds_sentence(["apart"] * 3, {"apart": mine}, seeds) in said
    attn = seeds_sentence(
        ["apart", "closer", "same"],
        {"apart": f"{ATTN} ends further from rank one {ends} than {PURE} (0.75 against 1e-4)",
         "closer": f"{ATTN} ends closer to rank one {ends} than {PURE} (1e-6 against 1e-5)",
         "same": f"{ATTN} and {PURE} end about as far from rank one {ends} (0.7 against 0.7)"},
        seeds,
    )  # fmt: skip
    assert said.endswith(attn)


def test_collapse_words_at_rounding_and_values_that_are_not_finite():
    said = W.collapse_words(_collapse({0: [0.8, math.inf, 1e-15, 0.0]}))
    none = f"{MINE} and {FLIPPED} cannot be compared after block 1 (a value is not finite)"
    assert seeds_sentence(["none"], {"none": none}, (0,)) in said
    under = (
        f"{ATTN} and {PURE} both end below float64 resolution (< 1e-13) after block 1: "
        "rounding cannot tell them apart"
    )
    assert said.endswith(seeds_sentence(["unresolved"], {"unresolved": under}, (0,)))
    assert "e-15" not in said  # a distance under the floor is never quoted


def test_cosine_and_attention_spread_quote_every_seed():
    c = _collapse({0: [0.8, 1e-3, 0.75, 1e-4], 1: [0.7, 2e-3, 0.7, 1e-5]})
    said = W.cosine_words(c[["seed", "variant", "block", "cosine"]])
    assert said.startswith("After the last layer (seeds 0-1): your model: 0.2–0.3;")
    att = pd.DataFrame(
        {"seed": [0, 0, 1, 1], "query": ["a", "a", "a", "a"], "key": ["a", "b", "a", "b"],
         "weight": [0.5, 0.5, 0.9, 0.1]}
    )  # fmt: skip
    assert W.attention_spread_words(att, 1, 2) == (
        "In the map shown (seed 1) the weights lie between 0.1 and 0.9; uniform attention "
        "(1/2) would give each 0.5, and the largest is 1.8 times that (over seeds 0-1: 1–1.8 "
        "times)."
    )
    one = att[att["seed"] == 0]  # one seed, every weight alike: no range and no "over"
    assert W.attention_spread_words(one, 0, 2) == (
        "In the map shown (seed 0) the weights all equal 0.5; uniform attention (1/2) would "
        "give each 0.5, and the largest is 1 times that."
    )
    zeros = W.attention_spread_words(one.assign(weight=0.0), 0, 2)
    assert zeros.endswith("the weights all equal 0; uniform attention (1/2) would give each 0.5.")
