"""The gradient-flow page's lesson measures (resviz.gradients.recipes): each reads its
section's recipe result, its answer flips at a setting the page allows, and its
sentence quotes the recipe's numbers."""

import re

import pytest

from resviz import gradients as G
from resviz.gradients import recipes as R
from resviz.recipes import MEASURES, Answer
from resviz.words.seeds import SEEDS_DISAGREE, seeds_answer
from tests.margins import AT_INIT, PRINTED, assert_clear, printed
from ui.specs.gradient_flow import SPEC

NUM = r"(-?\d+(?:\.\d+)?(?:e[-+]?\d+)?)"


def all_three(answer: str) -> str:
    """How a lesson's answer over seeds 0-2 begins where all three give ``answer`` (the
    wording is seeds_answer's, tested in tests/unit/words)."""
    return seeds_answer([answer] * 3, [""] * 3, (0, 1, 2))[1]


def _assert_gains_clear(settings, answers):
    """Each seed's input gains at init, plain against residual, 5% clear of a tie
    (tests/margins.py), and larger where ``answers`` (one per seed) says."""
    for run, answer in zip(R.per_layer(**settings).per_seed, answers, strict=True):
        g = run.gains.set_index("variant")["log10_input_gain"]
        ratio = 10 ** (float(g[G.PLAIN]) - float(g[G.RESIDUAL]))  # plain over residual
        side = "above" if answer == "plain" else "below"
        assert_clear(ratio, 1, side=side, margin=AT_INIT, kind="factor", what="plain over residual")


def _measure(name, seed=0, **settings):
    for k, v in settings.items():  # every setting is one a lesson (or a URL) may carry
        SPEC.param(k).check(v)
    out = MEASURES[name].at(settings, seed)
    assert isinstance(out, Answer)
    return out


@pytest.mark.parametrize(
    ("settings", "answer"),
    [({}, "residual"), ({"depth": 50, "act": "relu", "norm": "layer"}, "plain")],
)
def test_input_gradient(settings, answer):
    # Plain over residual, seeds 0-2: 10^-2.98 to 10^-2.91 at the defaults, 10^3.18 to
    # 10^3.52 at 50 ReLU blocks with a LayerNorm.
    _assert_gains_clear(settings, [answer] * 3)
    out = _measure("gradflow_input_gradient", **settings)
    assert out.answer == answer
    m = re.search(rf"is {NUM} in the plain stack and {NUM} in the residual one", out.sentence)
    assert m, out.sentence
    plain, resid = float(m[1]), float(m[2])
    assert (plain > resid) == (answer == "plain")


@pytest.mark.parametrize(("scale", "answer"), [(0.5, "shrinks"), (1.5, "grows")])
def test_scaled_shortcut(scale, answer):
    out = _measure("gradflow_scaled_shortcut", l=scale)
    assert out.answer == answer
    m = re.search(rf"is {NUM}; it agrees with λ\^L \({NUM}\) within {NUM}%", out.sentence)
    assert m, out.sentence
    side = "above" if answer == "grows" else "below"  # 1.9e5 and 9.3e-10: far from 1
    assert_clear(float(m[1]), 1, side=side, margin=AT_INIT, kind="factor", what="measured gain")
    # Near-zero branches, no norm layer (the defaults): the measurement follows λ^L.
    assert float(m[1]) == pytest.approx(scale**30, rel=0.05)
    assert float(m[2]) == printed(scale**30)
    assert float(m[3]) <= 5


def test_scaled_shortcut_with_a_norm_layer_says_it_is_not_the_identity_term():
    # The old lesson said the gradient at the input "is the identity term alone, λ^L"
    # for every setting; with a LayerNorm before each branch it measured 4.8e-3.
    out = _measure("gradflow_scaled_shortcut", l=0.5, L=30, small=True, norm="layer")
    assert out.answer == "shrinks"
    m = re.search(rf"is {NUM}; it is {NUM} times λ\^L \({NUM}\)", out.sentence)
    assert m, out.sentence
    assert float(m[1]) > 1e-4 and float(m[2]) > 1e5
    # "shrinks": 4.7e-3 to 6.2e-3 over seeds 0-2, far under 1.
    assert_clear(float(m[1]), 1, side="below", margin=AT_INIT, kind="factor", what="gain")
    assert "A layer norm sits before every branch here" in out.sentence
    assert "does not apply" in out.sentence


def test_scaled_shortcut_reads_the_result_it_is_given():
    r = R.derivation.one(l=1.5, L=10, seed=2)
    out = MEASURES["gradflow_scaled_shortcut"].read(r)
    assert out.answer == "grows"
    assert R.format_number(r.measured) in out.sentence


@pytest.mark.slow
@pytest.mark.parametrize(("bn", "answer"), [(True, "shattered"), (False, "smooth")])
def test_plain_shattered(bn, answer):
    # At init, seeds 0-2: the plain 50-block net's lag-1 autocorrelation is 0.003-0.014
    # with batch norm, 0.992 without; each checked 5% clear of 0.5.
    for s in range(3):
        run = R.shattered.one(bn=bn, seed=s)
        corr = run.lag1.set_index("depth").loc[50, "plain lag-1 autocorrelation"]
        side = "below" if answer == "shattered" else "above"
        what = f"plain lag-1 autocorrelation, seed {s}"
        if answer == "shattered":
            assert_clear(corr, R.SMOOTH, side=side, margin=0.1, what=what)
        else:
            assert_clear(corr, R.SMOOTH, side=side, margin=AT_INIT, kind="factor", what=what)
    out = _measure("gradflow_plain_shattered", bn=bn)
    assert out.answer == answer
    # The sentence quotes the first seed that gives the majority's answer (seed 0 here).
    assert out.sentence.startswith(all_three(answer))  # every seed gives the answer
    one = R.shattered.one(bn=bn, seed=0)
    corr = one.lag1.set_index("depth").loc[50, "plain lag-1 autocorrelation"]
    m = re.search(rf"autocorrelation of df/dx is {NUM}", out.sentence)
    assert m and float(m[1]) == pytest.approx(corr, rel=PRINTED, abs=1e-3), out.sentence


def test_the_seed_is_the_sidebar_seed():
    # Another seed, other weights: the sentence's numbers change with it.
    a = _measure("gradflow_input_gradient", seed=0).sentence
    b = _measure("gradflow_input_gradient", seed=1).sentence
    assert a != b


def test_the_input_gradient_measure_answers_only_when_the_seeds_agree():
    # 5 ReLU blocks of width 8 with a LayerNorm: two of seeds 0-2 pass the larger
    # gradient back through the plain stack, one through the residual one.
    settings = {"depth": 5, "width": 8, "act": "relu", "norm": "layer"}
    # Plain over residual: 1.125, 0.52 and 1.48 times in seeds 0-2, each 5% clear.
    _assert_gains_clear(settings, ["plain", "residual", "plain"])
    r = R.per_layer(**settings)
    each = [MEASURES["gradflow_input_gradient"].read(run) for run in r.per_seed]
    assert [a.answer for a in each] == ["plain", "residual", "plain"]
    out = _measure("gradflow_input_gradient", **settings)
    # Two of three is not agreement (the captions' rule): no answer, and the split.
    assert out.answer == SEEDS_DISAGREE
    assert (out.answer, out.sentence) == seeds_answer(
        [a.answer for a in each], [a.sentence for a in each], r.seeds
    )
    # At the defaults all three agree.
    assert _measure("gradflow_input_gradient").sentence.startswith(all_three("residual"))


@pytest.mark.parametrize(
    ("name", "seeds"),
    [("per_layer", 3), ("derivation", 3), ("shattered", 3), ("depth_sweep", 3), ("training", 1)],
)
def test_each_section_runs_its_default_seeds_with_a_seed_column(name, seeds):
    from resviz.core import settings_of

    fn = getattr(R, name)
    assert settings_of(fn)["seeds"] == seeds
    if name in ("depth_sweep", "training"):
        return  # long: their frames are checked on the page (tests/app)
    r = fn(seeds=2, seed=3)
    assert r.seeds == (3, 4)
    for frame in r.frames.values():
        assert frame.columns[0] == "seed" and set(frame["seed"]) == {3, 4}
