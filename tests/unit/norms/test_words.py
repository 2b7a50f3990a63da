"""The normalization page's words over seeds (resviz.norms.words): each direction is
stated with how many seeds show it when they agree, and as a split when they do
not; each number is quoted as its range over the seeds."""

import re

import pandas as pd

from resviz.norms import training_words as NT
from resviz.norms import words as NW

NUM = r"(-?\d+(?:\.\d+)?(?:e-?\d+)?)"


def _halves(bn_ratio: float) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"view": "raw", "first_half": 10.0, "second_half": 0.1, "ratio": 100.0},
            {"view": "BatchNorm", "first_half": bn_ratio, "second_half": 1.0, "ratio": bn_ratio},
        ]
    )


def test_bn_halves_agree_split_and_tie():
    agree = NW.bn_halves_seeds([_halves(1.1), _halves(0.9), _halves(1.2)], (0, 1, 2))
    assert agree == (
        "In 3 of 3 seeds the halves of sample 0 come out alike (within a factor of 1.5): "
        "0.9–1.2 times."
    )
    split = NW.bn_halves_seeds([_halves(1.83), _halves(1.1), _halves(0.9)], (0, 1, 2))
    assert split.startswith("The seeds disagree: in 2 of 3 (seeds 1-2) the halves of sample 0 ")
    assert "in 1 of 3 (seed 0) the halves of sample 0 still differ: 1.83 times" in split
    tie = NW.bn_halves_seeds([_halves(2.0), _halves(1.0)], (4, 5))
    assert tie.startswith("The seeds split evenly: in 1 of 2 (seed 4) ")
    one = NW.bn_halves_seeds([_halves(2.0)], (7,))
    assert one.startswith("In the one seed run (seed 7) the halves of sample 0 still differ: 2 ")
    assert NW.halves_words([_halves(1.0), _halves(1.0)], "raw") == "100 times"
    assert NW.halves_words([_halves(1.0)], "BatchNorm") == "exactly"
    assert NW.halves_words([_halves(1.5), _halves(2.5)], "BatchNorm") == "1.5–2.5 times"


def test_textbook_gap_is_called_a_difference_only_where_it_is():
    agree = NW.textbook_seeds([0.04, 0.05], [1e-6, 1e-6], (0, 1))
    assert agree.startswith("In 2 of 2 seeds the gap is more than 10 times")
    split = NW.textbook_seeds([0.04, 1e-6, 0.03], [1e-6, 1e-6, 1e-6], (0, 1, 2))
    assert split.startswith("The seeds disagree: in 2 of 3 (seeds 0, 2) the gap is more")
    assert "in 1 of 3 (seed 1) the gap is within 10 times" in split
    tie = NW.textbook_seeds([0.04, 1e-6], [1e-6, 1e-6], (0, 1))
    assert tie.startswith("The seeds split evenly")


def _table(invariant: dict[str, list[bool]]) -> pd.DataFrame:
    rows = []
    for norm, flags in invariant.items():
        for name, ok in zip(("shift", "scale"), flags, strict=True):
            rows.append(
                {
                    "transformation": name,
                    "measured_on": "all samples",
                    "norm": norm,
                    "invariant": ok,
                }
            )
    return pd.DataFrame(rows)


def test_invariances_one_sentence_when_every_seed_agrees_else_per_norm():
    same = _table({"LayerNorm": [True, True], "RMSNorm": [False, True]})
    got = NW.invariance_seeds([same, same, same], ("LayerNorm", "RMSNorm"), (0, 1, 2))
    assert got == "In 3 of 3 seeds that holds for LayerNorm: every row; RMSNorm: scale."
    other = _table({"LayerNorm": [True, True], "RMSNorm": [False, False]})
    got = NW.invariance_seeds([same, other, same], ("LayerNorm", "RMSNorm"), (0, 1, 2))
    assert "In 3 of 3 seeds it holds for LayerNorm in every row." in got
    assert (
        "The seeds disagree: in 2 of 3 (seeds 0, 2) it holds for RMSNorm in scale; in 1 of 3 "
        "(seed 1) it holds for RMSNorm in no row." in got
    )
    tie = NW.invariance_seeds([same, other], ("RMSNorm",), (0, 1))
    assert tie.startswith("The seeds split evenly")
    # More than 3 seeds: all but one is agreement, and the odd seed is named.
    four = NW.invariance_seeds([same, same, other, same], ("RMSNorm",), (0, 1, 2, 3))
    assert four == "In 3 of 4 seeds it holds for RMSNorm in scale (not in seed 2)."


def _stream(pre: list[float]) -> pd.DataFrame:
    return pd.DataFrame(
        [{"variant": "Pre-LN", "block": b, "sq_norm_per_dim": v} for b, v in enumerate(pre)]
        + [{"variant": "Post-LN", "block": b, "sq_norm_per_dim": 1.0} for b in range(len(pre))]
    )


def test_stream_growth_over_seeds():
    grows = [_stream([1, 5, 11.4]), _stream([1, 6, 12.2]), _stream([1, 4, 11.8])]
    got = NW.stream_seeds(grows, (0, 1, 2), "the stream")
    assert got == "In 3 of 3 seeds the stream grows by a factor of 11–12, from 1 to 11.4–12.2."
    split = NW.stream_seeds([grows[0], _stream([1, 1.1, 1.2]), grows[1]], (0, 1, 2), "it")
    assert split == (
        "The seeds disagree: in 2 of 3 (seeds 0, 2) it grows by a factor of 11–12, from 1 to "
        "11.4–12.2; in 1 of 3 (seed 1) it ends within a factor of 1.25 of where it starts "
        "(from 1 to 1.2)."
    )
    tie = NW.stream_seeds([_stream([2, 1]), _stream([1, 2])], (0, 1), "it")
    assert tie == (
        "The seeds split evenly: in 1 of 2 (seed 0) it falls by a factor of 2, from 2 to 1; "
        "in 1 of 2 (seed 1) it grows by a factor of 2, from 1 to 2."
    )


def _grads(post8: float, pre8: float) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"variant": "Post-LN", "n_layers": 1, "ratio_to_L1": 1.0},
            {"variant": "Pre-LN", "n_layers": 1, "ratio_to_L1": 1.0},
            {"variant": "Post-LN", "n_layers": 8, "ratio_to_L1": post8},
            {"variant": "Pre-LN", "n_layers": 8, "ratio_to_L1": pre8},
        ]
    )


def test_deepest_ratios_over_seeds():
    agree = NW.deepest_ratios_seeds([_grads(1.0, 0.45), _grads(0.95, 0.5)], (0, 1))
    assert agree == (
        "At L = 8 it is 0.95–1 for Post-LN and 0.45–0.5 for Pre-LN; sqrt(1/8) = 0.354. "
        "In 2 of 2 seeds Pre-LN's is the smaller at L = 8."
    )
    split = NW.deepest_ratios_seeds(
        [_grads(1.0, 0.45), _grads(0.4, 0.5), _grads(1.0, 0.5)], (0, 1, 2)
    )
    assert "The seeds disagree: in 2 of 3 (seeds 0, 2) Pre-LN's is the smaller" in split
    assert "in 1 of 3 (seed 1) Post-LN's is the smaller at L = 8." in split
    tie = NW.deepest_ratios_seeds([_grads(1.0, 0.45), _grads(0.5, 0.5)], (0, 1))
    assert "The seeds split evenly" in tie and "the two are level at L = 8" in tie
    one = pd.DataFrame([{"variant": v, "n_layers": 1, "ratio_to_L1": 1.0} for v in "ab"])
    assert NW.deepest_ratios_seeds([one], (0,)).startswith("Only L = 1")


def _history(seed: int, no: list[float], warm: list[float], diverged: str = "") -> pd.DataFrame:
    rows = []
    for name, losses in (("Post-LN, no warm-up", no), ("Post-LN, warm-up 10", warm)):
        for step, loss in enumerate(losses):
            hit = diverged == name and step == len(losses) - 1
            rows.append(
                {
                    "seed": seed,
                    "variant": name,
                    "step": step,
                    "loss": loss,
                    "diverged": hit,
                    "divergence": "loss > 1,000,000 x start" if hit else "",
                }
            )
    return pd.DataFrame(rows)


def test_warmup_words_agree_split_tie_and_live():
    a = _history(0, [4, 2, 1], [4, 3, 2])
    b = _history(1, [4, 2, 1.2], [4, 3, 2.5])
    c = _history(2, [4, 3, 3], [4, 2, 1])
    got = NT.warmup_seeds(pd.concat([a, b]), 10)
    assert got == "In 2 of 2 seeds Post-LN without warm-up ends lower (1–1.2 without, 2–2.5 with). "
    got = NT.warmup_seeds(pd.concat([a, b, c]), 10)
    assert got == (
        "The seeds disagree: in 2 of 3 (seeds 0-1) Post-LN without warm-up ends lower (1–1.2 "
        "without, 2–2.5 with); in 1 of 3 (seed 2) Post-LN with warm-up ends lower (3 without, "
        "1 with). "
    )
    assert NT.warmup_seeds(pd.concat([a, c]), 10).startswith("The seeds split evenly")
    # One seed (no seed column): the one-seed sentence.
    one = NT.warmup_seeds(a.drop(columns="seed"), 10)
    assert one.startswith("In the one seed run (seed 0) Post-LN without warm-up ends lower")
    # Live: the run with warm-up is one step behind; compared at the step both reached.
    live = a[~((a["variant"] == "Post-LN, warm-up 10") & (a["step"] == 2))]
    got = NT.warmup_seeds(live, 10)
    assert "at step 1, the last both runs have reached, Post-LN without warm-up is lower" in got
    assert "(2 without, 3 with)" in got
    # A diverged run is named with its step, never compared by loss.
    d = _history(0, [4, 2, 1e12], [4, 3, 2], diverged="Post-LN, no warm-up")
    got = NT.warmup_seeds(d, 10)
    assert "Post-LN without warm-up diverged (at step 2), with warm-up did not" in got
    assert "ends lower" not in got


def test_divergence_words_count_the_seeds():
    a = _history(0, [4, 2, 1e12], [4, 3, 2], diverged="Post-LN, no warm-up")
    b = _history(1, [4, 2, 1e12], [4, 3, 2], diverged="Post-LN, no warm-up")
    c = _history(2, [4, 2, 1], [4, 3, 2])
    got = NT.divergence_words(pd.concat([a, b, c]))
    assert "Post-LN, no warm-up in 2 of 3 seeds (at step 2 (loss > 1,000,000 x start) in " in got
    assert "seeds 0-1)" in got
    assert got.endswith("Did not diverge in any of the 3 seeds: Post-LN, warm-up 10.")
    assert NT.divergence_words(pd.concat([c, c.assign(seed=3)])).startswith(
        "No run diverged in any of the 2 seeds"
    )
    # One seed: the single-run note (with its dashed line on the chart).
    assert "Post-LN, no warm-up at step 2" in NT.divergence_words(a)
    assert "dashed vertical line" in NT.divergence_words(a)


def test_start_end_words_over_seeds():
    a = _history(0, [4.0] * 12, [3.0] * 3)
    b = _history(1, [5.0] * 12, [3.0] * 3)
    got = NT.start_end_words(pd.concat([a, b]))
    assert got == (
        "Loss at the first step, then its mean over the last 10 steps. Post-LN, no warm-up: "
        "4–5, then 4–5; Post-LN, warm-up 10: 3, then 3 (mean of its 3 steps in each seed)."
    )
    assert "(mean of its 3 steps)" in NT.start_end_words(a)
    m = re.search(rf"no warm-up: {NUM}, then {NUM};", NT.start_end_words(a))
    assert m and float(m[1]) == 4 and float(m[2]) == 4


NO_NORM = ["residual only", "neither"]


def _stability(seed: int, runs: dict[str, tuple[list[float], float, bool]]) -> pd.DataFrame:
    """One seed's stability frame: per run its losses, its gradient norm and whether
    it diverged (at its last step)."""
    rows = []
    for name, (losses, grad, diverged) in runs.items():
        for step, loss in enumerate(losses):
            hit = diverged and step == len(losses) - 1
            rows.append(
                {
                    "seed": seed,
                    "variant": name,
                    "step": step,
                    "loss": loss,
                    "grad_norm": grad,
                    "diverged": hit,
                }
            )
    return pd.DataFrame(rows)


def test_stability_finding_states_who_parts_and_how_many_seeds_show_it():
    def parted(seed: int, at: int) -> pd.DataFrame:
        return _stability(
            seed,
            {
                "residual + LayerNorm (post)": ([2.0] + [1.0] * 11, 0.3, False),
                "residual only": ([2.0] * at + [1e9], 1e9, True),
                "LayerNorm only (post)": ([2.0] + [1.01] * 11, 0.7, False),
                "neither": ([1.0] * at + [1e12], 1e12, True),
            },
        )

    got = NT.stability_finding(pd.concat([parted(0, 1), parted(1, 2)]), NO_NORM)
    assert got == (
        "In 2 of 2 seeds the stacks without a norm (residual only and neither) diverged, at "
        "step 1–2, and those with one (residual + LayerNorm (post) and LayerNorm only (post)) "
        "did not: their loss over the last 10 steps is 1–1.01."
    )
    one = NT.stability_finding(parted(0, 1).drop(columns="seed"), NO_NORM)
    assert one.startswith("In the one seed run (seed 0) the stacks without a norm")

    # Nothing diverges: the gradients part by 10 times or more, or they do not.
    def calm(seed: int, grad_without: float) -> pd.DataFrame:
        return _stability(
            seed,
            {
                "residual + LayerNorm (pre)": ([2.0] * 10, 0.4, False),
                "residual only": ([2.0] * 10, grad_without, False),
                "neither": ([1.0] * 10, 0.01, False),
            },
        )

    got = NT.stability_finding(calm(0, 4e4), NO_NORM)
    assert "no run diverged, and the stacks without a norm drew the larger gradients" in got
    assert "(largest norm 4e4, against 0.4)" in got
    level = NT.stability_finding(pd.concat([calm(0, 0.39), calm(1, 0.5)]), NO_NORM)
    assert level.startswith("In 2 of 2 seeds no run diverged, and the largest gradient norm")
    assert "(0.39–0.5) and of those with one (0.4) are less than 10 times apart" in level
    assert level.endswith("every run's loss over its last 10 steps is 1–2.")
    split = NT.stability_finding(pd.concat([calm(0, 4e4), calm(1, 0.5)]), NO_NORM)
    assert split.startswith("The seeds split evenly")

    # A run with a norm diverges too: named, with the ones that did not.
    odd = _stability(
        0,
        {
            "residual + LayerNorm (pre)": ([2.0, 1e9], 1e9, True),
            "residual only": ([2.0, 1e9], 1e9, True),
            "neither": ([1.0] * 10, 0.01, False),
        },
    )
    got = NT.stability_finding(odd, NO_NORM)
    assert (
        "residual + LayerNorm (pre) and residual only diverged, at step 1, and neither did not"
        in got
    )
