"""The sinusoidal page's groups of settings (resviz.positional.settings): what the
recipes take, built by a notebook or named field by field."""

import pandas as pd
import pytest

import resviz as rv
from resviz.positional import recipes as R
from resviz.positional.settings import Encoding, Shift, Table, Waves


def test_groups_are_exported_for_a_notebook():
    for group in (Encoding, Shift, Table, Waves):
        assert getattr(rv.positional, group.__name__) is group


def test_encoding_reads_the_urls_text_or_numbers():
    e = Encoding(positions=10, d_model="64", base="100")
    assert (e.d, e.n) == (64, 100.0)
    assert isinstance(e.d, int) and isinstance(e.n, float)
    assert (Encoding(d_model=16, base=1000.0).d, Encoding(base=1000.0).n) == (16, 1000.0)  # type: ignore[arg-type]


def test_a_group_or_its_fields_make_the_same_call():
    enc = Encoding(positions=30, d_model="16", base="100")
    by_group = R.relative(enc, Shift(k=7))
    by_name = R.relative(positions=30, d_model="16", base="100", k=7)
    by_keyword = R.relative(encoding=enc, shift=Shift(k=7))
    for r in (by_name, by_keyword):
        assert r.k == by_group.k == 7
        pd.testing.assert_frame_equal(r.by_offset, by_group.by_offset)
    w = R.waves(enc, Waves(dims=(0, 3, 40)))
    assert w.beyond == [40] and sorted(w.waves["dim"].unique()) == [0, 3]
    t = R.table(Table(text="a b", d=8))
    pd.testing.assert_frame_equal(t.table, R.table(text="a b", d=8).table)


def test_a_recipe_refuses_another_topics_group():
    with pytest.raises(TypeError, match="takes Encoding"):
        R.matrix(Shift())
