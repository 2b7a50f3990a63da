"""The training sections' default settings show their finding (issue 37, "defaults that
teach"): each section's recipe at the settings its page opens with (ui/specs), seed 0
and the default seeds, worded by the headline the page draws; every side of the
finding checked clear of its threshold first (tests/margins.py), so that no CPU's
rounding can turn it. The sections drawn without a run are checked in
``tests/app/test_sections.py::test_section_contract`` (tests/findings.py)."""

from __future__ import annotations

import pandas as pd
import pytest

from resviz.core import settings_of
from resviz.encoder import headline as HE
from resviz.encoder import recipes as RE
from resviz.gradients import headline as HG
from resviz.gradients import recipes as RG
from resviz.norms import headline as HN
from resviz.norms import recipes as RN
from resviz.shortcuts import headline as HS
from resviz.shortcuts import recipes as RS
from tests.margins import assert_clear, assert_lesion_clear
from ui.specs import encoder_playground as SE
from ui.specs import gradient_flow as SG
from ui.specs import normalization as SN
from ui.specs import skip_connections as SS


def at_defaults(spec, fn):
    """``fn`` at the page's default settings (its seeds too), from seed 0."""
    kw = {n: spec.SPEC.param(n).default for n in settings_of(fn) if spec.SPEC.param(n)}
    kw = {k: v for k, v in kw.items() if k not in ("seed", "seeds")}
    return fn(**kw, seed=0)


@pytest.mark.slow
def test_degradation_default_shows_the_deep_plain_stack_ending_higher():
    r = at_defaults(SS, RS.degradation)
    last = r.curves.groupby(["kind", "depth"]).tail(1).set_index(["kind", "depth"])["loss"]
    plain, resid = (last[k, r.deep] / last[k, r.shallow] for k in ("plain", "residual"))
    assert_clear(plain, 1, side="above", margin=1.2, kind="factor", what="deep / shallow plain")
    assert_clear(resid, 1, side="below", margin=1.2, kind="factor", what="deep / shallow resid")
    said = HS.degradation([x.curves for x in r.per_seed], r.shallow, r.deep, r.seeds).line
    assert said == (
        "In the one seed run (seed 0) the 16-block plain stack ends above the 4-block one "
        "(degradation); the 16-block residual stack ends below its 4-block twin."
    )


@pytest.mark.slow
def test_lesion_default_shows_the_plain_stack_suffering_and_the_residual_one_coping():
    r = at_defaults(SS, RS.lesion)
    for kind, want in (("plain", "suffers"), ("residual", "depends on the block")):
        s = r.summary[r.summary["kind"] == kind].iloc[0]
        deleted = r.lesion[r.lesion["kind"] == kind]["accuracy"]
        assert assert_lesion_clear(s["intact"], deleted, what=kind) == want
    assert HS.lesion([x.summary for x in r.per_seed], r.seeds).line == (
        "In the one seed run (seed 0) the plain stack suffers from every deleted block and "
        "the residual stack minds some deleted blocks, not others."
    )


@pytest.mark.slow
def test_depth_sweep_default_shows_the_residual_stack_keeping_the_gradient():
    r = at_defaults(SG, RG.depth_sweep)
    measure = SG.SPEC.param("measure").default
    deepest = r.sweep[r.sweep["depth"] == r.sweep["depth"].max()]
    gap = deepest.pivot_table(index=["seed", "activation"], columns="variant", values="log10_gain")
    for (seed, act), row in gap.iterrows():  # orders of magnitude, residual over plain
        assert_clear(row["residual"] - row["plain"], 0, side="above", margin=10, what=act)
    acts = list(dict.fromkeys(r.sweep["activation"]))
    assert HG.sweep(r.sweep, "log10_gain", measure, r.seeds, acts).line == (
        "In 3 of 3 seeds the residual stack keeps the larger ||dL/dx_0|| / ||dL/dx_L|| at "
        "depth 100, under all 4 activations."
    )


def _final(h: pd.DataFrame, variant: str) -> float:
    return float(h[h["variant"] == variant].sort_values("step")["loss"].iloc[-1])


@pytest.mark.slow
def test_warmup_default_shows_post_ln_needing_it_and_pre_ln_not():
    r = at_defaults(SN, RN.warmup)
    h, w = r.history, r.w_warm
    for place, side in (("Post-LN", "below"), ("Pre-LN", "above")):
        with_w, without = _final(h, f"{place}, warm-up {w}"), _final(h, f"{place}, no warm-up")
        assert_clear(with_w, without, side=side, margin=0.3, kind="rel", what=place)
    assert HN.warmup(h, w).line == (
        "In the one seed run (seed 0) Post-LN ends lower with warm-up and Pre-LN ends lower "
        "without warm-up."
    )


@pytest.mark.slow
def test_encoder_training_default_shows_your_model_ending_lower():
    r = at_defaults(SE, RE.training)
    c = r.curves
    other = next(v for v in pd.unique(c["variant"]) if v != "your model")
    tail = c.groupby("variant").tail(10).groupby("variant")["loss"].mean()
    assert_clear(tail["your model"], tail[other], side="below", margin=0.03, kind="rel")
    assert HE.loss_race(c, "your model", other).line == (
        'In the one seed run (seed 0) "your model" ends with the lower loss.'
    )
