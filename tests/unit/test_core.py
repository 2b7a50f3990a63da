"""A recipe written for one seed runs over several: resviz/core.py."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from resviz.core import (
    MAX_SEEDS,
    Answer,
    Measure,
    Result,
    combine,
    recipe,
    settings_of,
)
from resviz.recipes import RECIPES
from resviz.words.seeds import SEEDS_DISAGREE, agreement, seeds_answer


def _one(*, width: int = 2, seed: int = 0) -> Result:
    """A toy one-seed recipe: a frame whose numbers are the seed's, a value shared by
    every seed (width) and one that is the seed's own (seed_squared)."""
    df = pd.DataFrame({"block": [1, 2], "value": [seed * 10.0 + 1, seed * 10.0 + 2]})
    return Result({"curve": df}, {"width": width, "seed_squared": seed**2})


def test_combine_stacks_frames_under_a_seed_column_and_keeps_only_shared_values():
    runs = [_one(seed=s) for s in (4, 5, 6)]
    r = combine(runs, [4, 5, 6])
    assert list(r.curve.columns) == ["seed", "block", "value"]
    assert r.curve["seed"].tolist() == [4, 4, 5, 5, 6, 6]
    assert r.curve["value"].tolist() == [41.0, 42.0, 51.0, 52.0, 61.0, 62.0]
    assert r.width == 2
    assert r.seeds == (4, 5, 6) and r.runs == tuple(runs) and r.per_seed == tuple(runs)
    with pytest.raises(AttributeError, match="differs between the seeds"):
        _ = r.seed_squared
    assert [x.seed_squared for x in r.per_seed] == [16, 25, 36]


def test_combine_refuses_a_frame_with_its_own_seed_column():
    bad = Result({"f": pd.DataFrame({"seed": [1]})})
    with pytest.raises(ValueError, match="seed column of its own"):
        combine([bad], [0])


def test_values_alike_include_nan_and_frames():
    a = Result({}, {"x": math.nan, "t": pd.DataFrame({"a": [1]})})
    b = Result({}, {"x": math.nan, "t": pd.DataFrame({"a": [1]})})
    c = Result({}, {"x": math.nan, "t": pd.DataFrame({"a": [2]})})
    assert set(combine([a, b], [0, 1]).values) == {"x", "t"}
    assert set(combine([a, c], [0, 1]).values) == {"x"}


# A registered toy recipe (removed again after the tests that use it).
@pytest.fixture
def toy():
    fn = recipe(seeds=3)(_one)
    yield fn
    RECIPES.pop("tests.unit.recipes.test_core._one", None)


def test_the_registered_recipe_takes_seeds_and_runs_each_seed_alone(toy):
    assert settings_of(toy) == {"width": 2, "seeds": 3, "seed": 0}
    r = toy(seed=7)
    assert r.seeds == (7, 8, 9)
    for s, run in zip(r.seeds, r.runs, strict=True):
        pd.testing.assert_frame_equal(run.curve, _one(seed=s).curve)
    one = toy(seeds=1, seed=8)
    assert one.seeds == (8,) and one.seed_squared == 64  # one seed: every value kept
    assert toy.one is _one


@pytest.mark.parametrize("bad", [0, MAX_SEEDS + 1, 2.0, True, "3"])
def test_seeds_out_of_range_is_refused_with_the_range(toy, bad):
    with pytest.raises(ValueError, match=f"from 1 to {MAX_SEEDS}"):
        toy(seeds=bad)


def test_progress_counts_every_seeds_steps_and_stop_keeps_the_finished_seeds():
    def trained(*, seed: int = 0, progress=None, should_stop=None) -> Result:
        for step in (1, 2):
            if progress:
                progress(Result({"loss": pd.DataFrame({"step": [step]})}), step, 2)
        return Result({"loss": pd.DataFrame({"step": [1, 2]})})

    fn = recipe(seeds=1)(trained)
    try:
        seen = []
        r = fn(seeds=3, progress=lambda part, done, total: seen.append((part.seeds, done, total)))
        assert [s[1:] for s in seen] == [(1, 6), (2, 6), (3, 6), (4, 6), (5, 6), (6, 6)]
        # The partial result holds the finished seeds beside the running one.
        assert seen[2][0] == (0, 1) and seen[5][0] == (0, 1, 2)
        assert r.seeds == (0, 1, 2)
        calls = []
        stopped = fn(seeds=3, should_stop=lambda: calls.append(1) or len(calls) >= 1)
        assert stopped.seeds == (0,)  # asked to stop after the first seed
    finally:
        RECIPES.pop("tests.unit.recipes.test_core.trained", None)


def test_a_seed_free_recipe_has_no_seeds_setting():
    def formula(*, n: int = 3, seed: int = 0) -> Result:
        return Result({"f": pd.DataFrame({"n": [n]})})

    fn = recipe(seeds=None)(formula)
    try:
        assert fn is formula and "seeds" not in settings_of(fn)
    finally:
        RECIPES.pop("tests.unit.recipes.test_core.formula", None)


def _measure() -> Measure:
    def read(r: Result) -> Answer:
        v = float(r.curve["value"].iloc[0])
        return Answer("high" if v > 20 else "low", f"value {v:g}")

    return Measure("toy", _one, read, ("high", "low"))


def _values(values: list[int]) -> Result:
    """A result over seeds 1..n whose seed s reads ``values[s - 1]``."""
    runs = [Result({"curve": pd.DataFrame({"step": [0], "value": [float(v)]})}) for v in values]
    return combine(runs, list(range(1, len(values) + 1)))


def _over(values: list[int]) -> Answer:
    """The answer :func:`seeds_answer` gives from each seed's own reading (seeds 1..n),
    worded as tested in tests/unit/words/test_seeds.py."""
    m = _measure()
    r = _values(values)
    each = [m.read(run) for run in r.per_seed]
    return Answer(*seeds_answer([a.answer for a in each], [a.sentence for a in each], r.seeds))


def test_measure_states_an_answer_only_when_the_seeds_agree():
    """The captions' rule: all seeds up to 3, all but one beyond."""
    m = _measure()
    a = m.over(_values([21, 31, 41]))
    assert a.answer == "high" and a == _over([21, 31, 41])
    assert a.sentence.endswith("Seed 1: value 21")  # the first seed's own reading
    split = m.over(_values([11, 21, 31]))  # a majority of 2 is not agreement of 3
    assert split.answer == SEEDS_DISAGREE and split.answer not in m.choices
    assert split == _over([11, 21, 31]) and split.sentence.endswith("Seed 1: value 11")
    four = m.over(_values([11, 21, 31, 41, 51]))  # all but one of 5
    assert four.answer == "high" and four == _over([11, 21, 31, 41, 51])
    assert four.sentence.endswith("Seed 2: value 21")  # the first seed that says high
    assert m.over(_values([11, 12, 31, 41, 51])).answer == SEEDS_DISAGREE  # 3 of 5


def test_measure_on_an_even_split_says_so_and_answers_no_choice():
    a = _measure().over(_values([11, 21]))
    assert a.answer == SEEDS_DISAGREE and a == _over([11, 21])


def test_measure_on_one_seed_says_it_is_one_run():
    m = _measure()
    one = m.over(_values([31]))
    assert one.answer == "high" and one == _over([31]) and one.sentence.endswith("value 31")
    # A recipe without seeds (a fixed model's weights): its reading, as it is.
    assert m.over(_one(seed=3)) == Answer("high", "value 31")


@pytest.mark.parametrize(
    "outcomes",
    [["a"], ["a", "b"], ["a", "a"], ["a", "a", "b"], ["a", "a", "a"], ["a", "b", "b", "b"],
     ["a", "a", "b", "b"], ["a", "a", "a", "a", "b"], ["a", "a", "a", "b", "b"],
     ["b", "a", "a", "a", "a", "a", "a", "a", "a", "c"], ["a"] * 9 + ["b"]],
)  # fmt: skip
def test_a_lesson_answer_and_a_caption_follow_one_rule(outcomes):
    """The same seeds' outcomes: the lesson's measure states an answer exactly when the
    seeds agree (:attr:`Agreement.agreed`, the rule a caption's sentence follows: see
    tests/unit/words/test_seeds.py), and the same one."""
    values = [30 if o == "a" else 10 for o in outcomes]  # "a" reads high, "b" low
    got = _measure().over(_values(values))
    rule = agreement(["high" if o == "a" else "low" for o in outcomes])
    assert (got.answer != SEEDS_DISAGREE) is rule.agreed, got
    if rule.agreed:
        assert got.answer == rule.top


# Timings are the one seed-free section whose numbers still change between runs (the
# playground's model card holds one timing row; the rest of it is checked seed-free in
# tests/unit/encoder/test_measures.py).
NOT_REPEATABLE = {"norms.cost", "encoder.model"}


@pytest.mark.slow
@pytest.mark.parametrize(
    "name",
    sorted(
        n for n, fn in RECIPES.items() if "seeds" not in settings_of(fn) and n not in NOT_REPEATABLE
    ),
)
def test_a_section_without_seeds_gives_the_same_numbers_at_every_seed(name):
    """A section declared seed-free (``@recipe(seeds=None)``) states it truly: seeds
    0 and 1 give the same frames and values."""
    fn = RECIPES[name]
    a, b = fn(seed=0), fn(seed=1)
    assert a.frames.keys() == b.frames.keys()
    for k in a.frames:
        pd.testing.assert_frame_equal(a.frames[k], b.frames[k])
