"""One definition of "diverged" (resviz.train.divergence), applied by every training loop.

The loops are tested with a scripted loss: the real loss of training step k is
multiplied by ``factors[k]``, so NaN, Inf, a blow-up past the factor and a rise
that stays below it happen at a known step on every machine, with no reliance on
when float32 overflows. A second set trains for real with a huge (finite)
learning rate: the loss lands many decades above the factor and many decades
below float32's overflow, and the tests assert on the factor, not on NaN.
"""

import math
import sys
import threading

import numpy as np
import pandas as pd
import pytest
import torch
from torch.nn import functional as F

import resviz as rv
from resviz import charts
from resviz import encoder as pg
from resviz import gradients as G
from resviz.gradients import training as gradient_training
from resviz.shortcuts import degradation as degradation
from resviz.train import compare as E
from resviz.train.divergence import definition, divergence_note
from tests.margins import assert_clear

FACTOR = rv.train.DIVERGENCE_FACTOR
NAN, INF = math.nan, math.inf


# ------------------------------------------------------------------ the definition


def test_factor_is_documented_and_public():
    assert FACTOR == rv.train.DIVERGENCE_FACTOR and FACTOR > 10
    assert f"{FACTOR:,.0f}" in definition()


@pytest.mark.parametrize(
    ("losses", "grads", "step", "reason", "quantity"),
    [
        ([2.0, 1.5, NAN, 1.0], None, 2, "nan", "loss"),
        ([2.0, 1.5, 1.0, INF], None, 3, "inf", "loss"),
        ([2.0, -INF, 1.0], None, 1, "inf", "loss"),
        ([2.0, 1.5, 1.0], [1.0, NAN, 1.0], 1, "nan", "gradient"),
        ([2.0, 1.5, 1.0], [1.0, 1.0, INF], 2, "inf", "gradient"),
        ([2.0, 3.0, 2.0 * FACTOR * 1.001, NAN], None, 2, "blow-up", "loss"),
        # NaN loss is reported before an Inf gradient at the same step.
        ([2.0, NAN], [1.0, INF], 1, "nan", "loss"),
        # A NaN start: nothing to compare with, but it is NaN itself.
        ([NAN, 1.0], None, 0, "nan", "loss"),
    ],
)
def test_first_divergence_finds_the_first_bad_step(losses, grads, step, reason, quantity):
    found = rv.first_divergence(losses, grads)
    assert found is not None
    assert (found.step, found.reason, found.quantity) == (step, reason, quantity)
    assert found.start == losses[0] or math.isnan(losses[0])
    assert str(step) in found.describe() and found.label


@pytest.mark.parametrize(
    "losses",
    [
        [2.0, 1.0, 0.5, 0.25],  # healthy
        [2.0, 20.0, 200.0, 2.0 * FACTOR],  # rises, but never above FACTOR x start
        [2.0, 2.0 * FACTOR / 10, 1.0],  # a spike that stays below the factor
        [0.0, 1e30, 1e30],  # no positive start: only NaN/Inf count
        [],
    ],
)
def test_first_divergence_none_when_below_the_factor(losses):
    assert rv.first_divergence(losses, None if not losses else [1.0] * len(losses)) is None


def test_first_divergence_blow_up_is_strictly_above_the_factor():
    start = 3.0
    at = start * FACTOR
    assert rv.first_divergence([start, at]) is None
    found = rv.first_divergence([start, np.nextafter(at, math.inf)])
    assert found is not None and found.reason == "blow-up" and found.value / start > FACTOR
    # Another factor, an explicit start and a step offset.
    found = rv.first_divergence([5.0, 11.0], start=1.0, factor=10.0, first_step=7)
    assert (found.step, found.reason, found.factor) == (8, "blow-up", 10.0)
    assert found.label == "loss > 10 x start"


def test_first_divergence_same_verdict_for_tensors_arrays_and_lists():
    values = [1.0, 2.0, 1.0 * FACTOR * 2, 3.0]
    a = rv.first_divergence(values)
    b = rv.first_divergence(np.array(values, dtype=np.float32))
    c = rv.first_divergence(torch.tensor(values))
    assert a == b == c and a.step == 2


def test_first_divergence_rejects_bad_input():
    with pytest.raises(ValueError, match="factor"):
        rv.first_divergence([1.0], factor=1.0)
    with pytest.raises(ValueError, match="factor"):
        rv.first_divergence([1.0], factor=math.inf)
    with pytest.raises(ValueError, match="gradient norms"):
        rv.first_divergence([1.0, 2.0], [1.0])


def test_divergence_note_reads_the_frame():
    frame = pd.DataFrame(
        {
            "variant": ["a", "a", "b", "b", "c"],
            "step": [0, 1, 0, 1, 0],
            "diverged": [False, False, False, True, False],
            "divergence": ["", "", "", "loss NaN", ""],
        }
    )
    note = divergence_note(frame)
    assert "b at step 1 (loss NaN)" in note and "Did not diverge: a, c." in note
    assert note.startswith("Diverged (" + definition())
    calm = frame.assign(diverged=False, divergence="")
    assert divergence_note(calm) == f"No run diverged ({definition()})."
    assert divergence_note(frame.iloc[:0]) == ""


def test_line_chart_marks_the_diverged_step_with_its_reason():
    frame = pd.DataFrame(
        {
            "variant": ["a", "a", "a", "b", "b"],
            "step": [0, 1, 2, 0, 1],
            "loss": [1.0, 0.5, 0.4, 1.0, 3e5],
            "diverged": [False, False, False, False, True],
            "divergence": ["", "", "", "", "loss > 10,000 x start"],
        }
    )
    spec = charts.line(frame, "step", "loss", "variant", log_y=True).to_dict()
    rules = [layer for layer in spec["layer"] if layer["mark"]["type"] == "rule"]
    assert len(rules) == 1
    data = spec["datasets"][rules[0]["data"]["name"]]
    assert data == [
        {
            "variant": "b",
            "step": 1,
            "reason": "loss > 10,000 x start",
            "mark": charts.DIVERGED_LEGEND,
        }
    ]
    # Dashed, with a legend entry of its own (the lines' dashes name their series).
    assert rules[0]["mark"]["strokeDash"] == list(charts.DIVERGED_DASH)
    assert rules[0]["encoding"]["strokeWidth"]["legend"] is not None
    calm = charts.line(frame.assign(diverged=False), "step", "loss", "variant").to_dict()
    assert "layer" not in calm  # no rule when nothing diverged
    off = charts.line(frame, "step", "loss", "variant", mark_diverged=False).to_dict()
    assert "layer" not in off


# ------------------------------------------------------- every loop, scripted loss


class ScriptedF:
    """``torch.nn.functional`` whose ``loss``, when called from the function named
    ``caller`` (the training loop), is multiplied by ``factors[k]`` on training step
    k (``per_step`` calls per step, one per variant); other calls (evaluations, the
    page's other measurements) are left alone. The last factor repeats."""

    def __init__(self, loss: str, caller: str, factors: list[float], per_step: int = 1) -> None:
        self.fn, self.caller = getattr(F, loss), caller
        self.factors, self.per_step, self.calls = factors, per_step, 0
        self._lock = threading.Lock()  # variants may step in parallel threads
        setattr(self, loss, self._scaled)

    def __getattr__(self, name: str):
        return getattr(F, name)

    def _scaled(self, *args, **kwargs):
        out = self.fn(*args, **kwargs)
        if sys._getframe(1).f_code.co_name != self.caller:
            return out
        with self._lock:
            k = min(self.calls // self.per_step, len(self.factors) - 1)
            self.calls += 1
        return out * self.factors[k]


SMALL = rv.StackConfig(depth=2, width=8, activation="tanh")
TEXT = "the cat sat on the mat and the dog sat on the log " * 20


def _run_compare(factors, monkeypatch):
    monkeypatch.setattr(E, "F", ScriptedF("mse_loss", "compute_loss", factors))
    df = rv.train_compare(
        {"v": SMALL}, steps=8, lr=1e-3, batch_size=4, seq_len=2, workers=1, sync_every=3
    )
    return df, df.attrs, 0  # frame, attrs, step of the first training step


def _run_layer_grads(factors, monkeypatch):
    monkeypatch.setattr(gradient_training, "F", ScriptedF("mse_loss", "train_layer_grads", factors))
    tr = G.train_layer_grads({"v": SMALL}, steps=8, lr=1e-3, batch_size=4, sync_every=3)
    return tr.loss, tr.attrs, 0


def _run_masked(factors, monkeypatch):
    vocab = rv.data.build_vocab(TEXT, "word", 64)
    ids = rv.data.encode(TEXT, vocab, 10_000).ids
    cfg = rv.EncoderConfig(
        n_layers=1, d_model=16, n_heads=2, d_ff=32, vocab_size=len(vocab), max_len=16
    )
    monkeypatch.setattr(rv.encoder.masked, "F", ScriptedF("cross_entropy", "_masked_loss", factors))
    run = pg.train_masked({"v": cfg}, ids, steps=8, seq_len=8, lr=1e-3, sync_every=3)
    return run.curves, run.curves.attrs, 1


DEGRADATION = rv.shortcuts.DegradationConfig(
    shallow=1, deep=2, width=8, steps=8, eval_every=2, n_points=150, batch_size=16
)


def _run_degradation(factors, monkeypatch):
    monkeypatch.setattr(
        degradation, "F", ScriptedF("cross_entropy", "train_degradation", factors, per_step=4)
    )
    res = rv.shortcuts.train_degradation(DEGRADATION)
    return res.curves, res.attrs, 1


LOOPS = {
    "train_compare": _run_compare,
    "train_layer_grads": _run_layer_grads,
    "train_masked": _run_masked,
    "train_degradation": _run_degradation,
}


@pytest.mark.parametrize("loop", LOOPS)
@pytest.mark.parametrize(
    ("factor_at_k", "reason"),
    [(NAN, "nan"), (INF, "inf"), (100 * FACTOR, "blow-up")],
)
def test_every_loop_stops_a_diverged_run_at_its_step(loop, factor_at_k, reason, monkeypatch):
    k = 3  # the 4th training step
    frame, attrs, first = LOOPS[loop]([1.0, 1.0, 1.0, factor_at_k], monkeypatch)
    step = first + k
    for v, found in attrs["divergence"].items():
        assert (found.step, found.reason, found.quantity) == (step, reason, "loss")
        assert attrs["diverged"][v] == step
        rows = frame[frame["variant"] == v]
        # The run stops there: no row after the step, the flag and reason on it.
        assert rows["step"].max() == step
        flagged = rows[rows["diverged"].astype(bool)]
        assert flagged["step"].tolist() == [step]
        assert flagged["divergence"].tolist() == [found.label]
        if reason == "blow-up":
            assert math.isfinite(found.value) and found.value > FACTOR * found.start
    assert len(attrs["divergence"]) == frame["variant"].nunique() >= 1


@pytest.mark.parametrize("loop", LOOPS)
@pytest.mark.parametrize("factors", [[1.0], [1.0, 10.0, 100.0, FACTOR / 100]])
def test_every_loop_keeps_a_run_below_the_factor(loop, factors, monkeypatch):
    # Healthy, and rising (100x start at most, then flat) but below the factor.
    frame, attrs, first = LOOPS[loop](factors, monkeypatch)
    assert attrs["divergence"] == {} and attrs["diverged"] == {}
    assert not frame["diverged"].astype(bool).any() and (frame["divergence"] == "").all()
    last = 8 if loop == "train_degradation" else first + 7
    assert (frame.groupby("variant")["step"].max() == last).all()


# ---------------------------------------------------- every loop, a huge lr for real


def _assert_blow_up(found: rv.train.Divergence) -> None:
    # Decades above the factor and decades below float32's overflow (3.4e38): the
    # verdict is the same on any CPU. Measured: 3.7e4 to 2.7e11 times the factor's
    # line, 5e12 or more under 1e30; checked a factor of 1,000 clear of each.
    assert found.reason == "blow-up"
    assert_clear(
        found.value / found.start,
        FACTOR,
        side="above",
        margin=1e3,
        kind="factor",
        what="loss at the blow-up over its start",
    )
    assert_clear(found.value, 1e30, side="below", margin=1e3, kind="factor", what="blown-up loss")


def test_huge_lr_blows_up_train_compare_and_train_layer_grads():
    cfg = rv.StackConfig(depth=2, width=16, activation="relu", residual="none")
    df = rv.train_compare({"v": cfg}, steps=10, lr=1e4, batch_size=4, seq_len=2, workers=1)
    _assert_blow_up(df.attrs["divergence"]["v"])
    assert df.attrs["divergence"]["v"] == rv.first_divergence(df["loss"], df["grad_norm"])
    tr = G.train_layer_grads({"v": cfg}, steps=10, lr=1e4, batch_size=4)
    _assert_blow_up(tr.attrs["divergence"]["v"])
    assert tr.attrs["divergence"]["v"] == rv.first_divergence(tr.loss["loss"], tr.loss["grad_norm"])
    # lr 1: the loss rises tens of times its start (35), then falls back; not diverged.
    calm = rv.train_compare({"v": cfg}, steps=10, lr=1.0, batch_size=4, seq_len=2, workers=1)
    rise = calm["loss"].max() / calm["loss"].iloc[0]
    assert_clear(rise, 10, side="above", margin=2, kind="factor", what="calm run's rise")
    assert_clear(rise, FACTOR, side="below", margin=1e3, kind="factor", what="calm run's rise")
    assert calm.attrs["divergence"] == {}


def test_huge_lr_blows_up_train_masked():
    vocab = rv.data.build_vocab(TEXT, "word", 64)
    ids = rv.data.encode(TEXT, vocab, 10_000).ids
    cfg = rv.EncoderConfig(
        n_layers=1, d_model=16, n_heads=2, d_ff=32, vocab_size=len(vocab), max_len=16
    )
    run = pg.train_masked({"v": cfg}, ids, steps=6, seq_len=8, lr=1e5, sync_every=3)
    found = run.curves.attrs["divergence"]["v"]
    _assert_blow_up(found)
    c = run.curves
    assert found == rv.first_divergence(c["loss"], c["grad_norm"], first_step=1)


def test_huge_lr_blows_up_train_degradation():
    dcfg = rv.shortcuts.DegradationConfig(
        shallow=1, deep=10, width=64, steps=6, eval_every=2, lr=1.0, n_points=150, batch_size=32
    )
    res = rv.shortcuts.train_degradation(dcfg)
    for kind in ("plain", "residual"):
        _assert_blow_up(res.attrs["divergence"][f"{kind}, 10 blocks"])
