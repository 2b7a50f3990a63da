"""The lesson "Inside a real model"'s measures and where the answer travels: each
answer recomputed here from the library's own functions on the shipped Sonnets GPT-2
(not through the recipe), each undecidable case on a frame built for it."""

from __future__ import annotations

import pandas as pd
import pytest

pytest.importorskip("transformers")

from resviz import pretrained as P  # noqa: E402
from resviz.core import Result  # noqa: E402
from resviz.pretrained import headline as H  # noqa: E402
from resviz.pretrained import recipes as R  # noqa: E402
from resviz.pretrained import words as M  # noqa: E402
from resviz.pretrained.stream import patching as PT  # noqa: E402
from resviz.pretrained.stream.travel import travel  # noqa: E402
from resviz.recipes import MEASURES  # noqa: E402
from tests.margins import assert_clear  # noqa: E402

NAN, INF = float("nan"), float("inf")


@pytest.fixture(scope="module")
def model():
    return P.load(P.tiny_gpt2_path())


def test_the_mlps_write_more_of_the_default_prediction(model):
    a = P.logit_attribution(P.trace(model, R.DEFAULT_TEXT))
    mlp = a.parts.loc[a.parts["part"] == "mlp", "logit"].sum()
    attn = a.parts.loc[a.parts["part"] == "attention", "logit"].sum()
    # The parts, the embeddings and the final norm's bias add up to the model's logit.
    assert a.parts["logit"].sum() == pytest.approx(a.logit, abs=1e-5)
    assert_clear(mlp, 1.05 * attn, side="above", margin=2.0, kind="factor", what="MLPs' sum")
    got = MEASURES["pretrained_mlps_write_more"].at({}, 0)
    assert got.answer == "MLPs"
    assert f"write {M._n(mlp)} and the 4 attention layers {M._n(attn)}" in got.sentence


def _result(**values) -> Result:
    frames = {k: v for k, v in values.items() if isinstance(v, pd.DataFrame)}
    return Result(frames, {k: v for k, v in values.items() if k not in frames})


def _parts(attn: float, mlp: float) -> pd.DataFrame:
    return pd.DataFrame({"part": ["embeddings", "attention", "mlp"], "logit": [0.1, attn, mlp]})


@pytest.mark.parametrize(
    ("attn", "mlp", "answer"),
    [
        (1.0, 3.0, "MLPs"),
        (3.0, 1.0, "attention"),
        (2.0, 2.0, M.LEVEL),  # a tie states no direction
        (2.0, 2.05, M.LEVEL),  # within 5%
        (0.0, 0.0, M.LEVEL),
        (-1.0, -3.0, "attention"),  # both negative: the larger sum writes more
        (NAN, 1.0, M.CANNOT),
        (INF, 1.0, M.CANNOT),
    ],
)
def test_who_writes_more_on_ties_zeros_negatives_and_nan(attn, mlp, answer):
    r = _result(
        parts=_parts(attn, mlp), linear=True, token=",", position=3, logit=5.0,
        architecture="GPT2LMHeadModel", n_layers=1,
    )  # fmt: skip
    assert M.mlps_write_more(r).answer == answer


def test_a_model_without_logit_parts_cannot_tell():
    r = _result(parts=_parts(1, 2), linear=False, architecture="BertModel", n_layers=1)
    got = M.mlps_write_more(r)
    assert got.answer == M.CANNOT and "BertModel" in got.sentence


def test_the_answer_travels_from_the_changed_word_to_the_last_position(model):
    clean, corrupted = R.PAIRS[0]
    p = PT.patching(model, clean, corrupted)
    f = p.frame.set_index(["block", "position"])["recovered"]
    (changed,) = p.differs
    last = p.read_position
    # The identities: x_0 at the changed word and x_L at the last position recover all.
    assert f[(0, changed)] == pytest.approx(1, abs=1e-9)
    assert f[(model.n_layers, last)] == pytest.approx(1, abs=1e-9)
    # After block 1 the changed word carries more (0.51 against 0.27); from block 2 on
    # the last position (0.53 against 0.38, 0.67 against 0.32).
    assert_clear(f[(1, changed)], f[(1, last)], side="above", margin=0.15, kind="abs", what="b1")
    for b in range(2, model.n_layers + 1):
        assert_clear(f[(b, last)], f[(b, changed)], side="above", margin=0.1, kind="abs", what=b)
    t = travel(p.frame, p.differs, last, model.n_layers)
    assert t.reaches == 2 and t.changed == (changed,)
    got = MEASURES["pretrained_answer_after_block_1"].at({}, 0)
    assert got.answer == "the changed word"
    assert M._n(f[(1, changed)]) in got.sentence and M._n(f[(1, last)]) in got.sentence
    line = H.patching(t).line
    assert line.startswith(f"The answer starts at the changed word (position {changed}); from ")
    assert f"block 2 on, patching the last position (position {last})" in line


def _frame(cells: dict[tuple[int, int], float]) -> pd.DataFrame:
    return pd.DataFrame(
        [{"block": b, "position": t, "recovered": v} for (b, t), v in cells.items()]
    )


def _two(rows: list[tuple[float, float]]) -> pd.DataFrame:
    """Blocks 0.. with (changed at position 0, read at position 1) shares."""
    cells = {}
    for b, (c, r) in enumerate(rows):
        cells[(b, 0)], cells[(b, 1)] = c, r
    return _frame(cells)


@pytest.mark.parametrize(
    ("rows", "n_layers", "reaches", "says"),
    [
        ([(1, 0), (0.6, 0.3), (0.3, 0.6), (0, 1)], 3, 2, "from block 2 on"),
        ([(1, 0), (0.3, 0.6), (0.6, 0.3), (0, 1)], 3, 1, "at block 1 (not at every later one)"),
        ([(1, 0), (0.6, 0.3), (0.6, 0.3), (0, 1)], 3, 3, "stays at the changed word"),
        ([(1, 0), (0.5, 0.5), (0.5, 0.5)], 3, None, "has not moved yet"),  # ties, stopped
        ([(1, 0)], 3, None, "Only x_0 is patched so far"),
        ([(1, 0), (NAN, 0.5), (0.2, 0.6)], 3, 2, "from block 2 on"),
        ([(1, 0), (NAN, 0.5), (0.5, INF)], 3, None, "not a finite number"),
        ([(1, 0), (-0.4, -0.2), (0, 1)], 2, 1, "from block 1 on"),  # negatives
    ],
)
def test_travel_and_its_sentence(rows, n_layers, reaches, says):
    t = travel(_two(rows), [0], 1, n_layers)
    assert t.reaches == reaches
    assert says in H.travel_sentence(t)
    figures = H.patching(t).figures
    assert (figures[0].value if figures else None) == (None if reaches is None else str(reaches))


def test_prompts_that_differ_only_where_the_answer_is_read():
    t = travel(_two([(0, 1), (0, 1)]), [1], 1, 1)
    assert t.changed == () and t.reaches is None
    assert "nowhere to travel" in H.travel_sentence(t)
    r = _result(patching=_two([(0, 1), (0, 1)]), differs=(1,), read_position=1, n_layers=1)
    assert M.answer_after_block_1(r).answer == M.CANNOT


@pytest.mark.parametrize(
    ("changed", "read", "answer"),
    [(0.6, 0.3, "the changed word"), (0.3, 0.6, "the last position"), (0.5, 0.5, M.LEVEL),
     (0.0, 0.0, M.LEVEL), (NAN, 0.5, M.CANNOT), (-0.2, -0.5, "the changed word")],
)  # fmt: skip
def test_after_block_1_on_ties_zeros_negatives_and_nan(changed, read, answer):
    r = _result(
        patching=_two([(1, 0), (changed, read), (0, 1)]), differs=(0,), read_position=1,
        n_layers=2,
    )  # fmt: skip
    assert M.answer_after_block_1(r).answer == answer


def test_deleting_the_first_block_costs_most(model):
    tr = P.trace(model, R.DEFAULT_TEXT)
    d = P.layer_deletion(tr).set_index("block")["loss_change"]
    assert_clear(d[1], 1.05 * d.iloc[1:].max(), side="above", margin=1.0, kind="abs", what="b1")
    got = MEASURES["pretrained_first_block_costs_most"].at({}, 0)
    assert got.answer == "the first"
    assert f"by {M._n(d[1])}" in got.sentence


@pytest.mark.parametrize(
    ("costs", "answer"),
    [([2.0, 0.1, 0.3], "the first"), ([0.1, 2.0, 0.3], "a later one"), ([1.0, 1.0], M.LEVEL),
     ([0.0, 0.0], M.LEVEL), ([-0.1, -0.3], "the first"), ([1.0, NAN], M.CANNOT),
     ([INF, 1.0], M.CANNOT), ([1.0], M.CANNOT)],
)  # fmt: skip
def test_deletion_on_ties_zeros_negatives_nan_and_one_block(costs, answer):
    n = len(costs)
    d = pd.DataFrame({"block": range(1, n + 1), "loss_change": costs, "output_cos": [1.0] * n})
    assert M.first_block_costs_most(_result(deletion=d, architecture="X")).answer == answer


def test_without_a_head_deletion_reads_the_output_cosine():
    d = pd.DataFrame({"block": [1, 2], "loss_change": [NAN, NAN], "output_cos": [0.9, 0.4]})
    got = M.first_block_costs_most(_result(deletion=d, architecture="BertModel"))
    assert got.answer == "a later one" and "cosine" in got.sentence


def _healing(healed: float, scratch: float) -> pd.DataFrame:
    rows = [(20, "full", 4.4), (20, "deleted", 7.7), (20, "healing", healed)]
    rows.append((20, "from scratch", scratch))
    return pd.DataFrame(rows, columns=["step", "variant", "held_out_loss"])


@pytest.mark.parametrize(
    ("healed", "scratch", "answer"),
    [(5.0, 6.0, "healed"), (6.0, 5.0, "from scratch"), (5.0, 5.0, M.LEVEL),
     (0.0, 0.0, M.LEVEL), (NAN, 5.0, M.CANNOT), (INF, 5.0, M.CANNOT)],
)  # fmt: skip
def test_heal_on_ties_zeros_and_nan(healed, scratch, answer):
    r = _result(healing=_healing(healed, scratch), deleted="block 1")
    got = M.heal_beats_scratch(r)
    assert got.answer == answer
    assert "After 20 steps" in got.sentence
    assert "(the full model: 4.4)" in got.sentence
