"""What the Training section needs around its recipe: its cost before it starts and
its progress over every seed run so far."""

import pandas as pd

import resviz as rv
from resviz.encoder import recipes as E


def test_training_cost_is_every_trained_models_over_every_seed():
    s = rv.encoder.setup(rv.encoder.Text(), rv.encoder.Model(layers=1, d_model="32"))
    train = rv.encoder.Training(steps=20)
    one, three = E.training_cost(s, train, 1), E.training_cost(s, train, 3)
    models = rv.encoder.training_variants(s.cfg, train.against).values()
    each = [rv.estimate(c, batch=E.BATCH, seq_len=s.T, steps=20) for c in models]
    assert len(each) == 2 and one.flops_total == sum(e.flops_total for e in each)
    assert one.params == sum(e.params for e in each)  # both models stay alive
    assert three.flops_total == 3 * one.flops_total  # seeds run one after another...
    assert three.memory_bytes == one.memory_bytes  # ... never side by side


def _curves(seed: int | None, steps: int) -> pd.DataFrame:
    frame = pd.DataFrame({"variant": ["a"] * steps, "step": range(1, steps + 1)})
    return frame if seed is None else frame.assign(seed=seed)[["seed", "variant", "step"]]


def test_progress_over_seeds_holds_every_seed_run_so_far():
    got = []
    report = E.progress_over_seeds(lambda f, step, total: got.append((f, step, total)), 4)
    report(_curves(None, 2), 2, 10)  # one seed: the recipe names no seed yet
    assert list(got[-1][0]["seed"]) == [4, 4] and got[-1][1:] == (2, 10)
    report(_curves(4, 3), 3, 10)
    report(_curves(5, 1), 11, 20)  # the next seed: beside the first's last curves
    frame = got[-1][0]
    assert list(frame["seed"]) == [4, 4, 4, 5] and list(frame["step"]) == [1, 2, 3, 1]
    report(None, 12, 20)  # no frame (yet): passed on as it is
    assert got[-1] == (None, 12, 20)
