"""resviz.norms.settings: the normalization page's groups of settings, what they turn
into, and the recipes taking them whole or by their fields' names."""

import pandas as pd
import pytest

import resviz as rv
from resviz.core import settings_of
from resviz.norms import recipes as R
from resviz.norms import settings as NS

pytestmark = pytest.mark.usefixtures("one_thread")


def test_the_input_batch_reads_its_choices_as_numbers():
    inputs = NS.Inputs(batch=4, tokens=2, d="16", big="100", small="0.01")
    assert inputs.sizes() == (4, 2, 16) and inputs.scales() == (100.0, 0.01)
    # A notebook may pass numbers where the URL holds text: the same batch.
    assert NS.Inputs(d=16, big=100.0).sizes() == NS.Inputs(d="16", big="100").sizes()
    batch = R.input_batch(inputs, seed=3)
    assert tuple(batch.shape) == (4, 2, 16)
    pd.testing.assert_frame_equal(
        pd.DataFrame(batch.reshape(-1, 16).numpy()),
        pd.DataFrame(rv.norms.scaled_batch(4, 2, 16, 100.0, 0.01, 3).reshape(-1, 16).numpy()),
    )


def test_the_tutorial_stability_setting_is_one_the_widgets_can_hold():
    for d in NS.Stability.declared():
        d.setting.check(getattr(NS.TUTORIAL_STABILITY, d.name))
    assert NS.TUTORIAL_STABILITY.values() != NS.Stability().values()


def test_each_recipe_lists_its_groups_fields_flat():
    assert list(settings_of(R.invariances)) == [
        *(d.name for d in NS.Inputs.declared()),
        *(d.name for d in NS.Transform.declared()),
        "seeds",
        "seed",
    ]
    assert list(settings_of(R.cost)) == ["t_size", "seed"]


def test_a_recipe_takes_its_groups_or_their_fields_by_name():
    """A notebook passes the groups (``rv.norms.Inputs``, exported with the topic); a
    lesson and the URL name the fields: the same call."""
    assert rv.norms.Inputs is NS.Inputs and rv.norms.Warmup is NS.Warmup
    by_group = R.invariances(NS.Inputs(d="16"), NS.Transform(shift=2.0), seed=1, seeds=1)
    by_name = R.invariances(d="16", shift=2.0, seed=1, seeds=1)
    pd.testing.assert_frame_equal(by_group.table, by_name.table, check_exact=True)
    keyword = R.prepost_ln(encoders=NS.PrePost(layers=2, d_model="32"), seed=0, seeds=1)
    flat = R.prepost_ln(layers=2, d_model=32, seed=0, seeds=1)
    pd.testing.assert_frame_equal(keyword.stream, flat.stream, check_exact=True)
