"""Tests for resviz.positional: the formula, its identities and its argument checks."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from resviz import positional as P
from tests.examples import examples

LECTURE = {  # lecture notes, d = 4, n = 100, "I am a robot"
    "am": (1, [0.84, 0.54, 0.10, 1.00]),
    "a": (2, [0.91, -0.42, 0.20, 0.98]),
    "robot": (3, [0.14, -0.99, 0.30, 0.96]),
}


def test_lecture_table_to_two_decimals():
    df = P.encoding_table(["I", "am", "a", "robot"], d_model=4, base=100)
    assert list(df.columns) == ["token", "k", "P(k,0)", "P(k,1)", "P(k,2)", "P(k,3)"]
    assert df["k"].tolist() == [0, 1, 2, 3]
    for token, (k, expected) in LECTURE.items():
        row = df[df["token"] == token]
        assert row["k"].item() == k
        got = row[[f"P(k,{j})" for j in range(4)]].to_numpy()[0]
        assert np.round(got, 2).tolist() == expected, token
    assert df.iloc[0, 2:].tolist() == [0.0, 1.0, 0.0, 1.0]


def test_empty_tokens_give_empty_table_with_columns():
    df = P.encoding_table([], d_model=4, base=100)
    assert len(df) == 0
    assert list(df.columns) == ["token", "k", "P(k,0)", "P(k,1)", "P(k,2)", "P(k,3)"]


@pytest.mark.parametrize(
    ("pos", "i", "d", "base"),
    [(0, 0, 8, 10000.0), (17, 3, 64, 10000.0), (4999, 255, 512, 10000.0), (123, 7, 16, 2.5)],
)
def test_float32_table_matches_paper_formula(pos, i, d, base):
    pe = P.sinusoidal_encoding(pos + 1, d, base)
    assert pe.dtype == torch.float32
    angle = pos / base ** (2 * i / d)
    assert abs(pe[pos, 2 * i].item() - math.sin(angle)) < 1e-6
    assert abs(pe[pos, 2 * i + 1].item() - math.cos(angle)) < 1e-6


def test_column_formulas():
    df = P.column_formulas(4, 100)
    assert df["fn"].tolist() == ["sin", "cos", "sin", "cos"]
    assert df["i"].tolist() == [0, 0, 1, 1]
    assert df["label"].tolist() == [
        "sin(k/100^(0/4))",
        "cos(k/100^(0/4))",
        "sin(k/100^(2/4))",
        "cos(k/100^(2/4))",
    ]
    np.testing.assert_allclose(df["frequency"], [1, 1, 0.1, 0.1], rtol=1e-12)
    np.testing.assert_allclose(df["wavelength"], 2 * math.pi / df["frequency"], rtol=1e-12)
    # each column really is the named wave of the table
    pe = P.sinusoidal_encoding(50, 4, 100, dtype=torch.float64)
    k = torch.arange(50, dtype=torch.float64)
    for row in df.itertuples():
        wave = torch.sin if row.fn == "sin" else torch.cos
        assert torch.allclose(pe[:, row.j], wave(k * row.frequency), atol=1e-12)
    assert P.column_formulas(6, 2.5)["label"][5] == "cos(k/2.5^(4/6))"


def test_wavelengths():
    df = P.wavelengths(8, 10000)
    assert df["dims"].tolist() == ["0/1", "2/3", "4/5", "6/7"]
    np.testing.assert_allclose(
        df["wavelength"], [2 * math.pi * 10000 ** (2 * i / 8) for i in range(4)]
    )
    # a wave of that wavelength returns to its start after one wavelength
    wl = df["wavelength"][1]
    assert abs(math.sin(wl / 10000 ** (2 / 8))) < 1e-12


def test_waves_long():
    df = P.waves_long(10, 8, 100.0, dims=[3, 0, 3])
    assert list(df.columns) == ["position", "dim", "value"]
    assert len(df) == 20
    pe = P.sinusoidal_encoding(10, 8, 100.0, dtype=torch.float64)
    for row in df.itertuples():
        assert row.value == pytest.approx(pe[row.position, row.dim].item(), abs=1e-12)
    with pytest.raises(ValueError, match="dims"):
        P.waves_long(10, 8, 100.0, dims=[8])


@pytest.mark.parametrize("d", [2, 16, 512])
def test_norm_squared_is_half_d(d):
    pe = P.sinusoidal_encoding(300, d, 10000.0, dtype=torch.float64)
    assert (pe.pow(2).sum(dim=1) - d / 2).abs().max().item() < 1e-9


def test_dot_product_depends_only_on_offset():
    pe = P.sinusoidal_encoding(256, 64, 10000.0, dtype=torch.float64)
    assert P.offset_dependence(pe) < 1e-9
    # and the check does detect a table without the property
    assert P.offset_dependence(P.learned_encoding(256, 64, seed=1)) > 1e-3


def test_position_similarity():
    pe = P.sinusoidal_encoding(40, 16, 10000.0, dtype=torch.float64)
    dot, cos = P.position_similarity(pe)
    assert dot.shape == cos.shape == (40, 40)
    assert dot.dtype == torch.float64
    assert torch.allclose(dot.diagonal(), torch.full((40,), 8.0, dtype=torch.float64))
    assert dot[3, 10].item() == pytest.approx(float(pe[3] @ pe[10]), abs=1e-12)
    assert torch.allclose(cos, dot / 8.0, atol=1e-12)


def test_dot_by_offset_is_not_monotone():
    pe = P.sinusoidal_encoding(100, 16, 10000.0, dtype=torch.float64)
    df = P.similarity_by_offset(pe)
    assert list(df.columns) == ["offset", "dot", "cosine"]
    expected = [sum(math.cos(o / 10000 ** (2 * i / 16)) for i in range(8)) for o in range(100)]
    np.testing.assert_allclose(df["dot"], expected, atol=1e-9)
    steps = np.diff(df["dot"].to_numpy())
    assert (steps > 0).any() and (steps < 0).any()
    np.testing.assert_allclose(df["cosine"], df["dot"] / 8.0, atol=1e-12)


@pytest.mark.parametrize(("d", "base", "k"), [(2, 10000.0, 1), (64, 10000.0, 5), (16, 100.0, 37)])
def test_rotation_identity(d, base, k):
    assert P.rotation_error(200, d, base, k) < 1e-9
    r = P.rotation_matrix(d, base, k)
    assert torch.allclose(r @ r.T, torch.eye(d, dtype=torch.float64), atol=1e-12)


def test_rotation_sign_convention_matters():
    # the textbook counter-clockwise matrix (its transpose) moves positions the wrong way
    pe = P.sinusoidal_encoding(20, 4, 100.0, dtype=torch.float64)
    r = P.rotation_matrix(4, 100.0, 3)
    assert (pe[3:] - pe[:-3] @ r.T).abs().max() < 1e-12
    assert (pe[3:] - pe[:-3] @ r).abs().max() > 0.1
    # R_{-k} undoes R_k, and R_0 is the identity
    assert torch.allclose(P.rotation_matrix(4, 100.0, -3) @ r, torch.eye(4, dtype=torch.float64))
    assert torch.equal(P.rotation_matrix(4, 100.0, 0), torch.eye(4, dtype=torch.float64))


def test_rotation_error_rejects_k_out_of_table():
    for k in (-1, 10, 1.5):
        with pytest.raises(ValueError, match="k="):
            P.rotation_error(10, 4, 100.0, k)


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((10, 5, 10000.0), "odd"),
        ((10, 0, 10000.0), "d_model"),
        ((10**7, 8, 10000.0), "n_positions"),
        ((0, 8, 10000.0), "n_positions"),
        ((10, 8, 1.0), "greater than 1"),
        ((10, 8, 0.5), "greater than 1"),
        ((10, 8, -3.0), "greater than 1"),
        ((10, 8, math.nan), "finite"),
        ((10, 8, math.inf), "finite"),
        ((10, 8, "100"), "finite"),
        ((10.0, 8, 100.0), "whole number"),
        ((True, 8, 100.0), "whole number"),
    ],
)
def test_bad_arguments_raise_value_error(args, match):
    n, d, base = args
    for call in (
        lambda: P.sinusoidal_encoding(n, d, base),
        lambda: P.waves_long(n, d, base, dims=[0]),
        lambda: P.rotation_error(n, d, base, 1),
        lambda: P.rope_similarity(n, d, base),
        lambda: P.embedding_vs_position(100, d, n, 0, base),
    ):
        with pytest.raises(ValueError, match=match):
            call()
    if type(n) is int and n == 10:  # the rows come from the tokens, not from n
        for call in (
            lambda: P.encoding_table(["x"] * n, d, base),
            lambda: P.column_formulas(d, base),
            lambda: P.wavelengths(d, base),
            lambda: P.rotation_matrix(d, base, 1),
        ):
            with pytest.raises(ValueError, match=match):
                call()


def test_huge_inputs_are_refused_before_allocating():
    with pytest.raises(ValueError, match="capped"):
        P.rope_similarity(P.MAX_MATRIX_POSITIONS + 1, 8)
    with pytest.raises(ValueError, match="capped"):
        P.position_similarity(torch.zeros(P.MAX_MATRIX_POSITIONS + 1, 2))
    with pytest.raises(ValueError, match="capped"):
        P.similarity_long(torch.zeros(P.MAX_LONG_POSITIONS + 1, P.MAX_LONG_POSITIONS + 1), "x")
    with pytest.raises(ValueError, match="cells"):
        P.encoding_table(["x"] * 1000, 8192, 10000.0)
    with pytest.raises(ValueError, match="rows"):
        P.waves_long(100_000, 8192, 10000.0, dims=list(range(20)))
    with pytest.raises(ValueError, match="vocab"):
        P.embedding_vs_position(10**6, 8192, 4)


def test_bad_tables_raise_value_error():
    for bad in ([[1.0, 2.0]], torch.zeros(3), torch.zeros(0, 4), torch.tensor([[math.nan, 1.0]])):
        with pytest.raises(ValueError):
            P.position_similarity(bad)
        with pytest.raises(ValueError):
            P.similarity_by_offset(bad)


# --- alternatives ---------------------------------------------------------------


def test_integer_index_encoding_and_norms():
    idx = P.integer_index_encoding(50, 16)
    assert idx.shape == (50, 16)
    assert torch.equal(idx[7], torch.full((16,), 7.0))
    sin = P.sinusoidal_encoding(50, 16, 10000.0)
    df = P.encoding_norms({"integer index": idx, "sinusoidal": sin})
    assert list(df.columns) == ["position", "scheme", "norm"]
    assert len(df) == 100
    idx_norms = df[df["scheme"] == "integer index"]["norm"].to_numpy()
    np.testing.assert_allclose(idx_norms, np.arange(50) * 4.0, atol=1e-9)  # k * sqrt(16)
    np.testing.assert_allclose(df[df["scheme"] == "sinusoidal"]["norm"], math.sqrt(8), atol=1e-6)
    _, cos = P.position_similarity(idx)
    assert torch.allclose(cos[1:, 1:], torch.ones(49, 49, dtype=torch.float64))
    assert cos[0].isnan().all()  # the zero vector has no direction


def test_learned_encoding_is_seeded_and_leaves_global_rng_alone():
    torch.manual_seed(123)
    before = torch.random.get_rng_state()
    a = P.learned_encoding(400, 64, seed=5)
    assert torch.equal(torch.random.get_rng_state(), before)
    assert torch.equal(a, P.learned_encoding(400, 64, seed=5))
    assert not torch.equal(a, P.learned_encoding(400, 64, seed=6))
    assert abs(a.std().item() - 0.02) < 0.001
    assert abs(a.mean().item()) < 0.001


def test_rope_rotate_matches_the_2x2_rotation():
    x = torch.tensor([[1.0, 0.0, 0.0, 1.0]] * 3, dtype=torch.float64)
    out = P.rope_rotate(x, base=100.0)
    for p in range(3):
        t0, t1 = p * 1.0, p / 100 ** (2 / 4)
        expected = [math.cos(t0), math.sin(t0), -math.sin(t1), math.cos(t1)]
        np.testing.assert_allclose(out[p].numpy(), expected, atol=1e-12)
    gen = torch.Generator().manual_seed(0)
    y = torch.randn(30, 8, generator=gen, dtype=torch.float64)
    ry = P.rope_rotate(y, base=10000.0)
    assert torch.allclose(ry.norm(dim=1), y.norm(dim=1), atol=1e-12)
    assert torch.equal(ry[0], y[0])  # position 0 is not rotated
    assert P.rope_rotate(y.float()).dtype == torch.float32


def test_rope_score_depends_only_on_relative_position():
    raw = P.rope_similarity(64, 16, 10000.0, seed=3, normalize=False, same_content=False)
    assert raw.shape == (64, 64)
    for offset in range(-63, 64):
        diag = raw.diagonal(offset)
        assert (diag - diag[0]).abs().max().item() < 1e-9
    # not trivially constant: different offsets do give different scores
    assert raw.std().item() > 0.1
    # and it really is <RoPE(q, p), RoPE(k, s)> with q, k from the seeded generator
    gen = torch.Generator().manual_seed(3)
    q = torch.randn(16, generator=gen, dtype=torch.float64)
    k = torch.randn(16, generator=gen, dtype=torch.float64)
    pq = P.rope_rotate(q.expand(64, 16))[10]
    pk = P.rope_rotate(k.expand(64, 16))[25]
    assert raw[10, 25].item() == pytest.approx(float(pq @ pk), abs=1e-12)
    cos = P.rope_similarity(64, 16, 10000.0, seed=3, same_content=False)
    assert cos.abs().max().item() <= 1 + 1e-12
    assert torch.allclose(cos * q.norm() * k.norm(), raw, atol=1e-12)
    # Same content for query and key (the default): cosine 1 on the diagonal.
    same = P.rope_similarity(64, 16, 10000.0, seed=3)
    assert torch.allclose(same.diagonal(), torch.ones(64, dtype=torch.float64), atol=1e-12)


def test_similarity_matrices_side_by_side():
    mats = P.similarity_matrices(20, 8, 10000.0, seed=0)
    assert set(mats) == {"sinusoidal", "integer index", "learned (init)", "RoPE"}
    for m in mats.values():
        assert m.shape == (20, 20)
    assert torch.allclose(mats["sinusoidal"].diagonal(), torch.ones(20, dtype=torch.float64))


def test_embedding_vs_position():
    df = P.embedding_vs_position(vocab_size=500, d_model=64, n_positions=30, seed=0)
    assert list(df.columns) == ["position", "part", "norm"]
    assert sorted(df["part"].unique()) == ["position", "sum", "token"]
    assert len(df) == 90
    pos = df[df["part"] == "position"]["norm"].to_numpy()
    np.testing.assert_allclose(pos, math.sqrt(32), atol=1e-9)
    tok = df[df["part"] == "token"]["norm"].to_numpy()
    assert 6.0 < tok.mean() < 10.0  # about sqrt(64)
    total = df[df["part"] == "sum"]["norm"].to_numpy()
    assert (total <= tok + pos + 1e-9).all()
    again = P.embedding_vs_position(vocab_size=500, d_model=64, n_positions=30, seed=0)
    pd.testing.assert_frame_equal(df, again)


def test_similarity_long():
    m = torch.arange(9, dtype=torch.float64).reshape(3, 3)
    df = P.similarity_long(m, "demo")
    assert list(df.columns) == ["p", "q", "value", "scheme"]
    assert len(df) == 9
    for row in df.itertuples():
        assert row.value == m[row.p, row.q].item()
    assert (df["scheme"] == "demo").all()
    with pytest.raises(ValueError, match="square"):
        P.similarity_long(torch.zeros(3, 4), "x")


# --- tokenizer ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("", []),
        ("   \t\n ", []),
        ("I am a robot", ["I", "am", "a", "robot"]),
        ("  spaced\u00a0out\u3000text ", ["spaced", "out", "text"]),  # NBSP, ideographic space
        ("robot 🤖 👩\u200d💻", ["robot", "🤖", "👩\u200d💻"]),
        ("أنا روبوت", ["أنا", "روبوت"]),
        ("nul\x00l byte \x00", ["null", "byte"]),
        ("<script>alert(1)</script> **bold**", ["<script>alert(1)</script>", "**bold**"]),
        ("lone \ud800 surrogate", ["lone", "?", "surrogate"]),
    ],
)
def test_tokenize_words(text, tokens):
    got, truncated = P.tokenize_words(text)
    assert got == tokens
    assert truncated is False
    for t in got:
        t.encode("utf-8")  # every token survives the trip to the browser


def test_tokenize_truncates():
    assert P.tokenize_words("a b c d", max_tokens=2) == (["a", "b"], True)
    assert P.tokenize_words("a b", max_tokens=2) == (["a", "b"], False)
    assert P.tokenize_words("w " * 100) == (["w"] * 64, True)
    for bad in (0, -1, 2.0, True):
        with pytest.raises(ValueError, match="max_tokens"):
            P.tokenize_words("a", max_tokens=bad)
    with pytest.raises(ValueError, match="string"):
        P.tokenize_words(None)
    with pytest.raises(ValueError, match="list of strings"):
        P.encoding_table("I am", 4, 100.0)


# --- properties ---------------------------------------------------------------


@settings(max_examples=examples(60), deadline=None)
@given(
    n=st.integers(1, 64),
    half_d=st.integers(1, 32),
    base=st.floats(min_value=1.0, max_value=1e12, exclude_min=True),
)
def test_accepted_inputs_give_finite_tables(n, half_d, base):
    d = 2 * half_d
    df = P.encoding_table([f"t{k}" for k in range(n)], d, base)
    assert df.shape == (n, d + 2)
    values = df.iloc[:, 2:].to_numpy(dtype=float)
    assert np.isfinite(values).all()
    assert (np.abs(values) <= 1.0).all()


_anything = st.one_of(
    st.integers(-10, 80),
    st.sampled_from([10**6, 10**12, -(10**9), 9000]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.text(max_size=3),
)


@pytest.mark.slow
@settings(max_examples=examples(150), deadline=None)
@given(n=_anything, d=_anything, base=_anything)
def test_any_input_either_works_or_raises_value_error(n, d, base):
    try:
        pe = P.sinusoidal_encoding(n, d, base)
    except ValueError as err:
        assert str(err)
        return
    assert pe.shape == (n, d)
    assert torch.isfinite(pe).all()
