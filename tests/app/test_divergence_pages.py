"""Every page that trains reports a diverged run by the one definition
(``rv.first_divergence``): the step, the reason (a finite loss blow-up is not
"NaN or Inf") and a dashed rule on the chart.

The training loop's loss is scripted (tests/unit/train/test_divergence.py): real until
step 3, then multiplied by 1e8, so every variant blows up past the factor at a
known step, finite, on any machine.
"""

import pytest

import ui.jobs
from resviz.charts import DIVERGED_LEGEND
from resviz.encoder import masked as masked_training
from resviz.gradients import training as gradient_training
from resviz.shortcuts import degradation as degradation
from tests.app.conftest import clean
from tests.unit.train.test_divergence import ScriptedF

BLOW_UP = 1e8  # x the real loss: 100 x the factor (1e6)
LABEL = "loss > 1,000,000 x start"


def _train(app, page, key, **params):
    ui.jobs.REGISTRY.clear()  # no finished run of the same key from another test
    at = app(page, **params).run()
    clean(at)
    at.button(key=f"{key}:start").click().run()
    assert ui.jobs.REGISTRY.wait(120)
    at.run()
    clean(at)
    return at


def _marked(at):
    return [c.proto.spec for c in at.get("vega_lite_chart") if DIVERGED_LEGEND in c.proto.spec]


@pytest.fixture(autouse=True)
def _fresh_jobs():
    yield
    ui.jobs.REGISTRY.clear()


def test_gradient_flow_names_a_blow_up_and_marks_it(app, monkeypatch):
    # Two variants (plain, residual) per step; the 4th step (step 3) blows up.
    monkeypatch.setattr(
        gradient_training,
        "F",
        ScriptedF("mse_loss", "train_layer_grads", [1, 1, 1, BLOW_UP], per_step=2),
    )
    at = _train(app, "app_pages/gradient_flow.py", "gradflow_train", section="Training", steps="20")
    warnings = [w.value for w in at.warning if "diverged" in w.value]
    assert len(warnings) == 2
    for w in warnings:
        assert "diverged: at step 3 its loss reached" in w
        assert "more than 1,000,000 times its starting loss" in w
        assert "NaN" not in w and "Inf" not in w
    assert len(_marked(at)) == 1  # the loss chart (the heatmaps are images)


def test_skip_connections_names_a_blow_up_and_marks_it(app, monkeypatch):
    # Four stacks per step; training steps count from 1, the 3rd blows up.
    monkeypatch.setattr(
        degradation,
        "F",
        ScriptedF("cross_entropy", "train_degradation", [1, 1, BLOW_UP], per_step=4),
    )
    at = _train(
        app,
        "app_pages/skip_connections.py",
        "degradation",
        section="Degradation",
        shallow="1",
        deep="3",
        steps="40",
    )
    warnings = [w.value for w in at.warning if "diverged" in w.value]
    assert len(warnings) == 4
    assert all(f"diverged at step 3 ({LABEL})" in w and "not finite" not in w for w in warnings)
    final = next(d.value for d in at.dataframe if "accuracy" in d.value.columns)
    assert (final["step"] == 3).all() and (final["divergence"] == LABEL).all()
    assert len(_marked(at)) == 2  # loss and error charts


def test_encoder_playground_names_a_blow_up_and_marks_it(app, monkeypatch):
    monkeypatch.setattr(
        masked_training,
        "F",
        ScriptedF("cross_entropy", "_masked_loss", [1, 1, BLOW_UP], per_step=2),
    )
    small = {"layers": "1", "d_model": "32", "heads": "4", "d_ff": "64", "max_len": "12"}
    small["section"] = "Training"
    text = "one two three four five six . " * 10
    at = _train(
        app, "app_pages/encoder_playground.py", "playground_train", text=text, steps="20", **small
    )
    warnings = [w.value for w in at.warning if "diverged" in w.value]
    assert len(warnings) == 2
    assert all(f"diverged at step 3 ({LABEL})" in w and "NaN" not in w for w in warnings)
    assert len(_marked(at)) == 1
