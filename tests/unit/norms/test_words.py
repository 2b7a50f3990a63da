"""The normalization page's words over seeds (resviz.norms.words): each direction is
stated with how many seeds show it when they agree, and as a split when they do
not; each number is quoted as its range over the seeds. The agreement phrase itself
("In 3 of 3 seeds", "The seeds disagree") is tested in tests/unit/words/test_seeds.py:
here each topic's clauses and numbers, with the phrase built by the shared functions."""

import re
from collections.abc import Mapping, Sequence

import pandas as pd

from resviz.norms import training_words as NT
from resviz.norms import words as NW
from resviz.words.seeds import seeds_sentence
from tests.unit.words.agree import sentence

NUM = r"(-?\d+(?:\.\d+)?(?:e-?\d+)?)"


def split(groups: Mapping[str, Sequence[int]]) -> str:
    """A caption's sentence whose seeds split: each clause and the seeds that give it."""
    by_seed = {s: clause for clause, seeds in groups.items() for s in seeds}
    seeds = sorted(by_seed)
    return seeds_sentence([by_seed[s] for s in seeds], {c: c for c in groups}, seeds)


def _halves(bn_ratio: float) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"view": "raw", "first_half": 10.0, "second_half": 0.1, "ratio": 100.0},
            {"view": "BatchNorm", "first_half": bn_ratio, "second_half": 1.0, "ratio": bn_ratio},
        ]
    )


def test_bn_halves_agree_split_and_tie():
    alike = "the halves of sample 0 come out alike (within a factor of 1.5): {} times"
    differ = (
        "the halves of sample 0 still differ: {} times (each feature's std is 1 over the "
        "whole batch, not over sample 0 alone)"
    )
    agree = NW.bn_halves_seeds([_halves(1.1), _halves(0.9), _halves(1.2)], (0, 1, 2))
    assert agree == sentence(alike.format("0.9–1.2"), [0, 1, 2])
    got = NW.bn_halves_seeds([_halves(1.83), _halves(1.1), _halves(0.9)], (0, 1, 2))
    assert got == split({alike.format("0.9–1.1"): [1, 2], differ.format("1.83"): [0]})
    tie = NW.bn_halves_seeds([_halves(2.0), _halves(1.0)], (4, 5))
    assert tie == split({differ.format("2"): [4], alike.format("1"): [5]})
    one = NW.bn_halves_seeds([_halves(2.0)], (7,))
    assert one == sentence(differ.format("2"), [7])
    assert NW.halves_words([_halves(1.0), _halves(1.0)], "raw") == "100 times"
    assert NW.halves_words([_halves(1.0)], "BatchNorm") == "exactly"
    assert NW.halves_words([_halves(1.5), _halves(2.5)], "BatchNorm") == "1.5–2.5 times"


def test_textbook_gap_is_called_a_difference_only_where_it_is():
    apart = (
        "the gap is more than 10 times the formulas' misfit: the two LayerNorms are not the "
        "same function"
    )
    within = (
        "the gap is within 10 times the formulas' misfit, too small here to tell the two "
        "LayerNorms apart"
    )
    agree = NW.textbook_seeds([0.04, 0.05], [1e-6, 1e-6], (0, 1))
    assert agree == sentence(apart, [0, 1])
    got = NW.textbook_seeds([0.04, 1e-6, 0.03], [1e-6, 1e-6, 1e-6], (0, 1, 2))
    assert got == split({apart: [0, 2], within: [1]})
    tie = NW.textbook_seeds([0.04, 1e-6], [1e-6, 1e-6], (0, 1))
    assert tie == split({apart: [0], within: [1]})


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
    assert got == sentence("that holds for LayerNorm: every row; RMSNorm: scale", [0, 1, 2])
    other = _table({"LayerNorm": [True, True], "RMSNorm": [False, False]})
    got = NW.invariance_seeds([same, other, same], ("LayerNorm", "RMSNorm"), (0, 1, 2))
    # One sentence per norm: LayerNorm's seeds agree, RMSNorm's split.
    assert got == " ".join(
        [
            sentence("it holds for LayerNorm in every row", [0, 1, 2]),
            split({"it holds for RMSNorm in scale": [0, 2], "it holds for RMSNorm in no row": [1]}),
        ]
    )
    tie = NW.invariance_seeds([same, other], ("RMSNorm",), (0, 1))
    assert tie == split(
        {"it holds for RMSNorm in scale": [0], "it holds for RMSNorm in no row": [1]}
    )
    # More than 3 seeds: all but one is agreement, and the odd seed is named.
    four = NW.invariance_seeds([same, same, other, same], ("RMSNorm",), (0, 1, 2, 3))
    assert four == sentence("it holds for RMSNorm in scale", [0, 1, 2, 3], not_in=[2])


def _stream(pre: list[float]) -> pd.DataFrame:
    return pd.DataFrame(
        [{"variant": "Pre-LN", "block": b, "sq_norm_per_dim": v} for b, v in enumerate(pre)]
        + [{"variant": "Post-LN", "block": b, "sq_norm_per_dim": 1.0} for b in range(len(pre))]
    )


def test_stream_growth_over_seeds():
    grows = [_stream([1, 5, 11.4]), _stream([1, 6, 12.2]), _stream([1, 4, 11.8])]
    got = NW.stream_seeds(grows, (0, 1, 2), "the stream")
    assert got == sentence("the stream grows by a factor of 11–12, from 1 to 11.4–12.2", [0, 1, 2])
    got = NW.stream_seeds([grows[0], _stream([1, 1.1, 1.2]), grows[1]], (0, 1, 2), "it")
    assert got == split(
        {
            "it grows by a factor of 11–12, from 1 to 11.4–12.2": [0, 2],
            "it ends within a factor of 1.25 of where it starts (from 1 to 1.2)": [1],
        }
    )
    tie = NW.stream_seeds([_stream([2, 1]), _stream([1, 2])], (0, 1), "it")
    assert tie == split(
        {
            "it falls by a factor of 2, from 2 to 1": [0],
            "it grows by a factor of 2, from 1 to 2": [1],
        }
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
    pre, post = "Pre-LN's is the smaller at L = 8", "Post-LN's is the smaller at L = 8"
    assert agree == (
        "At L = 8 it is 0.95–1 for Post-LN and 0.45–0.5 for Pre-LN; sqrt(1/8) = 0.354. "
        + sentence(pre, [0, 1])
    )
    got = NW.deepest_ratios_seeds(
        [_grads(1.0, 0.45), _grads(0.4, 0.5), _grads(1.0, 0.5)], (0, 1, 2)
    )
    assert got == (
        "At L = 8 it is 0.4–1 for Post-LN and 0.45–0.5 for Pre-LN; sqrt(1/8) = 0.354. "
        + split({pre: [0, 2], post: [1]})
    )
    tie = NW.deepest_ratios_seeds([_grads(1.0, 0.45), _grads(0.5, 0.5)], (0, 1))
    assert tie == (
        "At L = 8 it is 0.5–1 for Post-LN and 0.45–0.5 for Pre-LN; sqrt(1/8) = 0.354. "
        + split({pre: [0], "the two are level at L = 8": [1]})
    )
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
    without = "Post-LN without warm-up ends lower ({} without, {} with)"
    with_ = "Post-LN with warm-up ends lower ({} without, {} with)"
    got = NT.warmup_seeds(pd.concat([a, b]), 10)
    assert got == sentence(without.format("1–1.2", "2–2.5"), [0, 1]) + " "
    got = NT.warmup_seeds(pd.concat([a, b, c]), 10)
    assert got == (
        split({without.format("1–1.2", "2–2.5"): [0, 1], with_.format("3", "1"): [2]}) + " "
    )
    got = NT.warmup_seeds(pd.concat([a, c]), 10)
    assert got == split({without.format("1", "2"): [0], with_.format("3", "1"): [2]}) + " "
    # One seed (no seed column): the one-seed sentence.
    one = NT.warmup_seeds(a.drop(columns="seed"), 10)
    assert one == sentence(without.format("1", "2"), [0]) + " "
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

    parts = (
        "the stacks without a norm (residual only and neither) diverged, at step {}, and "
        "those with one (residual + LayerNorm (post) and LayerNorm only (post)) did not: "
        "their loss over the last 10 steps is 1–1.01"
    )
    got = NT.stability_finding(pd.concat([parted(0, 1), parted(1, 2)]), NO_NORM)
    assert got == sentence(parts.format("1–2"), [0, 1])
    one = NT.stability_finding(parted(0, 1).drop(columns="seed"), NO_NORM)
    assert one == sentence(parts.format("1"), [0])

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

    larger = (
        "no run diverged, and the stacks without a norm drew the larger gradients (largest "
        "norm 4e4, against 0.4); every run's loss over its last 10 steps is 1–2"
    )
    apart = (
        "no run diverged, and the largest gradient norm of the stacks without a norm ({}) and "
        "of those with one (0.4) are less than 10 times apart; every run's loss over its last "
        "10 steps is 1–2"
    )
    assert NT.stability_finding(calm(0, 4e4), NO_NORM) == sentence(larger, [0])
    level = NT.stability_finding(pd.concat([calm(0, 0.39), calm(1, 0.5)]), NO_NORM)
    assert level == sentence(apart.format("0.39–0.5"), [0, 1])
    got = NT.stability_finding(pd.concat([calm(0, 4e4), calm(1, 0.5)]), NO_NORM)
    assert got == split({larger: [0], apart.format("0.5"): [1]})

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
