"""The sinusoidal page's recipes (resviz.positional.recipes) and the sentences worded
from them (resviz.positional.words): each number against a direct computation,
each sentence on both of its outcomes."""

import math
import re

import numpy as np
import pandas as pd
import pytest
import torch

import resviz as rv
from resviz import positional as P
from resviz.positional import recipes as R
from resviz.positional import words as W
from tests.margins import printed

NUM = r"(-?\d+(?:\.\d+)?(?:e[-+]?\d+)?)"


def test_lecture_notes_table_d4_n100():
    """The lecture notes' table for "I am a robot" (d = 4, n = 100), to two decimals."""
    r = R.table(text="I am a robot", d=4, n=100, dec=2)
    t = r.table.set_index("token")
    lecture = {
        "I": [0.00, 1.00, 0.00, 1.00],
        "am": [0.84, 0.54, 0.10, 1.00],
        "a": [0.91, -0.42, 0.20, 0.98],
        "robot": [0.14, -0.99, 0.30, 0.96],
    }
    for token, values in lecture.items():
        assert [float(t.loc[token, f"P(k,{j})"]) for j in range(4)] == values
    assert r.words == 4 and not r.truncated
    assert r.hidden == 0 and math.isnan(r.smallest_hidden)


def test_table_counts_cells_that_round_to_zero():
    # sin(1 / 10000^(30/32)) = 1.78e-4 shows as 0.00 at two decimals.
    r = R.table(text="a b", d=32, n=10000, dec=2)
    exact = P.encoding_table(["a", "b"], 32, 10000.0).filter(like="P(k,")
    want = ((exact != 0) & (exact.round(2) == 0)).to_numpy()
    assert r.hidden == int(want.sum()) > 0
    assert r.smallest_hidden == pytest.approx(math.sin(1 / 10000 ** (30 / 32)), rel=1e-9)
    assert R.table(text="a b", d=32, n=10000, dec=8).hidden == 0


def test_table_truncates_at_64_words():
    r = R.table(text=" ".join(f"w{i}" for i in range(70)))
    assert r.truncated and r.words == 64 and len(r.table) == 64
    empty = R.table(text="   ")
    assert empty.words == 0 and len(empty.table) == 0


def test_matrix_and_last_angle():
    r = R.matrix(positions=1000, d_model="16", base="100")
    assert r.matrix.shape == (1000, 17) and list(r.matrix.columns[:2]) == ["k", "P(k,0)"]
    freq = P.column_formulas(16, 100.0).set_index("j").loc[14, "frequency"]
    assert r.last_angle == pytest.approx(999 * freq, rel=1e-12)


def test_waves_keep_the_dims_d_model_has():
    r = R.waves(positions=10, d_model="16", dims=[0, 3, 40])
    assert r.beyond == [40]
    assert sorted(r.waves["dim"].unique()) == [0, 3]
    assert set(r.waves["dimension"]) == {"j=0", "j=3"}
    assert len(r.wavelengths) == 8
    none = R.waves(positions=10, d_model="16", dims=[100])
    assert len(none.waves) == 0 and none.beyond == [100]


def test_alternatives_are_the_first_256_positions():
    r = R.alternatives(positions=1000, d_model="16", base="100", seed=2, seeds=1)
    assert r.shown == 256 and r.seeds == (2,)
    for frame in R.SCHEMES:
        assert r[frame].shape == (256, 258)  # seed, p, then q=0 ... q=255
        assert r.per_seed[0][frame].shape == (256, 257)
    learned = P.similarity_matrices(256, 16, 100.0, 2)["learned (init)"]
    off = learned[~torch.eye(256, dtype=torch.bool)]
    assert r.learned_std == pytest.approx(float(off.std()), rel=1e-12)
    assert r.learned_mean == pytest.approx(float(off.mean()), rel=1e-12)
    assert np.isnan(r.integer_index.iloc[0, 2])  # the zero vector has no direction
    norms = r.norms[r.norms["scheme"] == "sinusoidal"]["norm"]
    np.testing.assert_allclose(norms, math.sqrt(8), rtol=1e-6)


def test_embeddings_gap_words_quote_the_measured_gap():
    r = R.embeddings(positions=200, d_model="16", seed=0, seeds=1)
    assert r.shown == 200
    wide = r.per_seed[0].parts.pivot(index="position", columns="part", values="norm")
    pyth = (wide["token"] ** 2 + wide["position"] ** 2) ** 0.5
    rel = (wide["sum"] - pyth).abs() / pyth * 100
    m = re.search(rf"{NUM}% on average and at most {NUM}%", W.pythagoras_words(r.per_seed[0].parts))
    assert float(m[1]) == pytest.approx(rel.mean(), rel=0.02)
    assert float(m[2]) == pytest.approx(rel.max(), rel=0.02)


def test_last_pair_words_on_both_sides_of_a_quarter_turn():
    small = W.last_pair_words(100, 512, 0.0103)
    assert "its sine rises from 0 to only 0.0103" in small
    m = re.search(rf"falls from 1 by only {NUM}\.", small)
    assert float(m[1]) == printed(1 - math.cos(0.0103))
    big = W.last_pair_words(1000, 16, 40.0)
    assert "sine" not in big and "through 40 rad (6.37 turns)." in big


def test_monotone_words_on_both_outcomes():
    assert "rises again at 2 of them (first at 44)" in W.monotone_words(100, [44, 80], 44)
    falls = W.monotone_words(3, [], 44)
    assert falls == (
        "Over these 3 offsets it falls at every step; it first rises again at offset 44, "
        "beyond the positions shown."
    )
    assert "no rise was found" in W.monotone_words(3, [], None)


def test_rounding_words_on_both_outcomes():
    assert W.rounding_words(2, 0, math.nan) == "Values rounded to 2 decimals."
    one = W.rounding_words(1, 1, 1.78e-4)
    assert one.startswith("Values rounded to 1 decimal: 1 cell shown as 0 is not 0")
    assert "1.78e-4" in one
    assert "6 cells shown as 0 are not 0" in W.rounding_words(2, 6, 1.78e-4)


def test_spread_words_quote_the_numbers():
    words = W.spread_words(8.49e-4, 0.251, 16)
    assert "mean 8.49e-4 and standard deviation 0.251 (1/sqrt(d) = 0.25" in words


# ----------------------------------------------------------------- seeds
def test_random_sections_run_three_seeds_by_default():
    r = R.alternatives(positions=20, d_model="16", seed=2)
    assert r.seeds == (2, 3, 4) and set(r.norms["seed"]) == {2, 3, 4}
    for s, run in zip(r.seeds, r.per_seed, strict=True):
        learned = P.similarity_matrices(20, 16, 10000.0, s)["learned (init)"]
        off = learned[~torch.eye(20, dtype=torch.bool)]
        assert run.learned_mean == pytest.approx(float(off.mean()), rel=1e-12)
    with pytest.raises(AttributeError, match="differs between the seeds"):
        r.learned_mean  # noqa: B018 - no sentence may read one seed's value silently
    # The formulas are alike in every seed; the learned table is not.
    sin = r.sinusoidal.drop(columns="seed")
    n = len(r.per_seed[0].sinusoidal)
    pd.testing.assert_frame_equal(sin.iloc[:n], sin.iloc[n : 2 * n].reset_index(drop=True))
    e = R.embeddings(positions=20, d_model="16")
    assert e.seeds == (0, 1, 2) and set(e.parts["seed"]) == {0, 1, 2}


def test_learned_spread_words_one_and_many_seeds():
    one = W.learned_spread_words([8.49e-4], [0.251], 16, (3,))
    assert "in seed 3's table, off the diagonal the cosines have mean 8.49e-4 and standard" in one
    many = W.learned_spread_words([0.01, -0.02, 0.005], [0.25, 0.24, 0.26], 16, (0, 1, 2))
    assert "drawn here from seed 0: over seeds 0-2" in many
    assert "mean -0.02 to 0.01 and standard deviation 0.24–0.26 (lowest to highest" in many


def test_pythagoras_seeds_words_quote_every_seed():
    r = R.embeddings(positions=50, d_model="16", seeds=3)
    gaps = []
    for run in r.per_seed:
        wide = run.parts.pivot(index="position", columns="part", values="norm")
        pyth = (wide["token"] ** 2 + wide["position"] ** 2) ** 0.5
        gaps.append((wide["sum"] - pyth).abs() / pyth * 100)
    words = W.pythagoras_seeds_words([x.parts for x in r.per_seed], r.seeds)
    means = [g.mean() for g in gaps]
    worst = int(np.argmax([g.max() for g in gaps]))
    assert words == (
        f"{rv.format_number(min(means), 2)}–{rv.format_number(max(means), 2)}% on average "
        f"(lowest to highest of seeds 0-2) and at most "
        f"{rv.format_number(gaps[worst].max(), 2)}% (seed {worst})"
    )
    one = W.pythagoras_seeds_words([r.per_seed[1].parts], (1,))
    assert one == W.pythagoras_words(r.per_seed[1].parts) + " (seed 1)"
