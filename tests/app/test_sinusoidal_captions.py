"""The sinusoidal page's captions state what its settings give: at a small base and d the
last columns are not "sin near 0, cos near 1" over these positions, and at small d the
token and position parts are not "nearly orthogonal"."""

import math
import re

import numpy as np
import pytest
import torch

from resviz import positional as P
from resviz.words.seeds import band_words
from tests.app.conftest import NUM, find_caption, find_metric
from tests.margins import printed

PAGE = "app_pages/sinusoidal_encoding.py"


def test_matrix_caption_says_how_far_the_last_pair_turns(app):
    at = app(PAGE, section="Matrix", d_model="16", base="100", positions="1000").run()
    assert not at.exception and not at.error
    cap = find_caption(at, "Red +1, white 0, blue -1.")
    assert "sin near 0, cos near 1" not in cap
    freq = P.column_formulas(16, 100.0).set_index("j").loc[14, "frequency"]
    m = re.search(rf"the last pair \(columns 14, 15\) through {NUM} rad \({NUM} turns\)", cap)
    assert m, cap
    assert float(m[1]) == printed(999 * freq)
    assert float(m[2]) == printed(999 * freq / (2 * math.pi))
    assert float(m[2]) > 1  # more than a whole turn: the last columns change a lot
    # The paper's sizes: the last pair barely turns, and the caption bounds it.
    at = app(PAGE, section="Matrix").run()
    cap = find_caption(at, "Red +1, white 0, blue -1.")
    angle = 99 / 10000 ** (510 / 512)
    m = re.search(
        rf"its sine rises from 0 to only {NUM} and its cosine falls from 1 by only {NUM}\.", cap
    )
    assert m, cap
    assert float(m[1]) == printed(math.sin(angle))
    assert float(m[2]) == printed(1 - math.cos(angle))


def _first_rise(d: int, base: float) -> int:
    w = base ** (-np.arange(0, d, 2) / d)
    dot = np.cos(np.outer(np.arange(1024), w)).sum(axis=1)
    return int(np.nonzero(np.diff(dot) > 1e-9)[0][0]) + 1


def test_similarity_caption_over_a_short_range_says_where_it_rises(app):
    at = app(PAGE, section="Relative position", positions="3").run()
    cap = find_caption(at, "Largest at offset 0")
    # Not "at some larger offset": the offset, measured.
    assert (
        f"Over these 3 offsets it falls at every step; it first rises again at offset "
        f"{_first_rise(512, 10000.0)}, beyond the positions shown." in cap
    )
    # The shift k (5) is more than positions - 1: the page says which k it measured.
    assert find_metric(at, "max |PE(p+2) - R_2 PE(p)|")
    assert "k is 2 here: at most positions - 1." in find_caption(at, "A shift by k")
    at = app(PAGE, section="Relative position", positions="100", d_model="16").run()
    cap = find_caption(at, "Largest at offset 0 (= d/2 = 8).")
    first = _first_rise(16, 10000.0)
    assert f"(first at {first})" in cap, cap


def test_table_caption_counts_values_shown_as_zero(app):
    # sin(1 / 10000^(30/32)) = 1.78e-4 is shown as 0.00: the page says so.
    at = app(PAGE, text="a b", d="32", n="10000", dec="2").run()
    cap = find_caption(at, "Values rounded to 2 decimals")
    exact = P.encoding_table(["a", "b"], 32, 10000.0).filter(like="P(k,")
    hidden = int(((exact != 0) & (exact.round(2) == 0)).to_numpy().sum())
    m = re.search(rf"{NUM} cells shown as 0 are not 0 \(the smallest in size is {NUM}\)", cap)
    assert m, cap
    assert int(m[1]) == hidden > 0
    assert float(m[2]) == printed(math.sin(1 / 10000 ** (30 / 32)))
    at = app(PAGE).run()  # the lecture notes' table: no value rounds to 0
    assert find_caption(at, "Values rounded to") == "Values rounded to 2 decimals."


def test_waves_say_which_columns_d_model_lacks(app):
    at = app(PAGE, section="Waves", d_model="16").run()
    assert not at.exception and not at.error
    info = " ".join(i.value for i in at.info)
    assert "Columns 40, 100, 160 are beyond d_model = 16 (columns 0 to 15): not drawn." in info


def test_alternatives_say_how_many_positions_they_draw(app):
    at = app(PAGE, section="Alternatives", positions="1000", d_model="16", seed="1").run()
    assert not at.exception and not at.error
    assert find_caption(at, "The first 256 of the 1000 positions.")
    cap = find_caption(at, "Random at init")
    assert "no structure" not in cap
    # Three seeds (1-3) by default: the learned table's spread over all three.
    offs = []
    for s in (1, 2, 3):
        learned = P.similarity_matrices(256, 16, 10000.0, s)["learned (init)"]
        offs.append(learned[~torch.eye(256, dtype=torch.bool)])
    # The means' range reads "a to b" where an end is negative, "a–b" otherwise.
    m = re.search(rf"mean {NUM}( to |–){NUM} and standard deviation {NUM}–{NUM}", cap)
    assert m, cap
    assert m[2] == (" to " if "-" in m[1] + m[3] else "–")
    assert "drawn here from seed 1: over seeds 1-3" in cap
    assert float(m[1]) == printed(min(float(o.mean()) for o in offs))
    assert float(m[3]) == printed(max(float(o.mean()) for o in offs))
    assert float(m[4]) == printed(min(float(o.std()) for o in offs))
    assert float(m[5]) == printed(max(float(o.std()) for o in offs))
    assert find_caption(at, "Rotary").endswith("The vector of seed 1.")
    assert band_words([1, 2, 3]) in find_caption(at, "Norm per position")
    # One seed, from the URL: that seed's own numbers.
    at = app(PAGE, section="Alternatives", d_model="16", seed="1", seeds="1").run()
    cap = find_caption(at, "Random at init")
    learned = P.similarity_matrices(100, 16, 10000.0, 1)["learned (init)"]
    off = learned[~torch.eye(100, dtype=torch.bool)]
    m = re.search(
        rf"in seed 1's table, off the diagonal the cosines have mean {NUM} and "
        rf"standard deviation {NUM}",
        cap,
    )
    assert m, cap
    assert float(m[1]) == printed(float(off.mean()))
    assert float(m[2]) == printed(float(off.std()))
    at = app(PAGE, section="Embeddings", positions="1000").run()
    assert "Here (the first 256 positions) the sum's norm" in find_caption(at, "Token embeddings")


def test_embedding_caption_quotes_the_measured_gap(app):
    at = app(PAGE, section="Embeddings", d_model="16", positions="200").run()
    assert not at.exception and not at.error
    cap = find_caption(at, "Token embeddings drawn as nn.Embedding does")
    rels = []
    for s in (0, 1, 2):  # three seeds by default
        parts = P.embedding_vs_position(1000, 16, 200, seed=s, base=10000.0)
        wide = parts.pivot(index="position", columns="part", values="norm")
        pyth = (wide["token"] ** 2 + wide["position"] ** 2) ** 0.5
        rels.append((wide["sum"] - pyth).abs() / pyth * 100)
    m = re.search(
        rf"by {NUM}–{NUM}% on average \(lowest to highest of seeds 0-2\) and at most "
        rf"{NUM}% \(seed (\d)\)\.",
        cap,
    )
    assert m, cap
    means = [r.mean() for r in rels]
    assert float(m[1]) == pytest.approx(min(means), rel=0.02)
    assert float(m[2]) == pytest.approx(max(means), rel=0.02)
    worst = max(range(3), key=lambda i: rels[i].max())
    assert float(m[3]) == pytest.approx(rels[worst].max(), rel=0.02) and int(m[4]) == worst
    assert rels[worst].max() > 10  # at d = 16 the two parts are far from orthogonal
