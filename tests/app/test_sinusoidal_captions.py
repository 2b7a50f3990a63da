"""The sinusoidal page's captions state what its settings give: at a small base and d the
last columns are not "sin near 0, cos near 1" over these positions, and at small d the
token and position parts are not "nearly orthogonal"."""

import math
import re

import pytest

from resviz import positional as P
from tests.app.conftest import NUM, find_caption

PAGE = "app_pages/sinusoidal_encoding.py"


def test_matrix_caption_says_how_far_the_last_pair_turns(app):
    at = app(PAGE, section="Matrix", d_model="16", base="100", positions="1000").run()
    assert not at.exception and not at.error
    cap = find_caption(at, "Red +1, white 0, blue -1.")
    assert "sin near 0, cos near 1" not in cap
    freq = P.column_formulas(16, 100.0).set_index("j").loc[14, "frequency"]
    m = re.search(rf"the last pair \(columns 14, 15\) through {NUM} rad \({NUM} turns\)", cap)
    assert m, cap
    assert float(m[1]) == pytest.approx(999 * freq, rel=5e-3)
    assert float(m[2]) == pytest.approx(999 * freq / (2 * math.pi), rel=5e-3)
    assert float(m[2]) > 1  # more than a whole turn: the last columns change a lot
    # The paper's sizes: the last pair barely turns, and the caption bounds it.
    at = app(PAGE, section="Matrix").run()
    cap = find_caption(at, "Red +1, white 0, blue -1.")
    angle = 99 / 10000 ** (510 / 512)
    m = re.search(rf"its sine stays below {NUM} and its cosine within {NUM} of 1\.", cap)
    assert m, cap
    assert float(m[1]) == pytest.approx(math.sin(angle), rel=5e-3)
    assert float(m[2]) == pytest.approx(1 - math.cos(angle), rel=5e-3)


def test_similarity_caption_over_a_short_range(app):
    at = app(PAGE, section="Relative position", positions="3").run()
    cap = find_caption(at, "Largest at offset 0")
    assert "Over these 3 offsets it happens to fall monotonically" in cap
    assert "add positions" not in cap


def test_embedding_caption_quotes_the_measured_gap(app):
    at = app(PAGE, section="Embeddings", d_model="16", positions="200").run()
    assert not at.exception and not at.error
    cap = find_caption(at, "Token embeddings drawn as nn.Embedding does")
    parts = P.embedding_vs_position(1000, 16, 200, seed=0, base=10000.0)
    wide = parts.pivot(index="position", columns="part", values="norm")
    pyth = (wide["token"] ** 2 + wide["position"] ** 2) ** 0.5
    rel = (wide["sum"] - pyth).abs() / pyth * 100
    m = re.search(rf"by {NUM}% on average and at most {NUM}%\.", cap)
    assert m, cap
    assert float(m[1]) == pytest.approx(rel.mean(), rel=0.02)
    assert float(m[2]) == pytest.approx(rel.max(), rel=0.02)
    assert rel.max() > 10  # at d = 16 the two parts are far from orthogonal
