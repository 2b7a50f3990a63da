"""The encoder playground's lesson measures read its sections' recipes: each answer
matches the recipe's frame and flips at a setting the page allows."""

import pytest

import resviz as rv
from resviz.encoder import recipes as E
from resviz.recipes import MEASURES, Answer
from resviz.words.seeds import seeds_answer
from tests.margins import AT_INIT, assert_clear
from ui.specs import encoder_playground as S

SMALL = {"layers": 2, "d_model": "32", "heads": "4", "d_ff": "64", "max_len": 12}
NO_RESIDUALS = {"residual": False}  # the "No residuals" preset: Pre-LN, residual off


def all_three(answer: str) -> str:
    """How a lesson's answer over seeds 0-2 begins where all three give ``answer`` (the
    wording is seeds_answer's, tested in tests/unit/words)."""
    return seeds_answer([answer] * 3, [""] * 3, (0, 1, 2))[1]


def _measure(name: str, seed: int = 0, **settings) -> Answer:
    for k, v in settings.items():  # every setting is one a lesson (or a URL) may carry
        S.SPEC.param(k).check(v)
    out = MEASURES[name].at(settings, seed)
    assert isinstance(out, Answer) and out.answer in MEASURES[name].choices
    return out


def test_registered_on_the_sections_recipes():
    assert MEASURES["playground_update_ratio"].recipe is E.stream
    assert MEASURES["playground_rank_collapse"].recipe is E.collapse
    assert S.SPEC.recipes[S.STREAM] == "encoder.stream"
    assert S.SPEC.recipes[S.COLLAPSE] == "encoder.collapse"


@pytest.mark.parametrize(("settings", "answer"), [({}, "all below 1"), (NO_RESIDUALS, "not all")])
def test_update_ratio_stays_below_one_only_with_residuals(settings, answer):
    got = _measure("playground_update_ratio", **settings)
    assert got.answer == answer
    r = E.stream(**settings)  # three seeds, as the lesson step runs it
    assert r.seeds == (0, 1, 2)
    for run in r.per_seed:
        # At init: the largest ratio is 0.15-0.16 with residuals, 1.7-2.2 without; each
        # checked 5% clear of 1.
        top = run.ratio["update_ratio"].max()
        side = "below" if answer == "all below 1" else "above"
        assert_clear(top, 1, side=side, margin=AT_INIT, kind="factor", what="largest ratio")
        assert (top < 1) == (answer == "all below 1")
    assert got.sentence.startswith(all_three(answer))  # every seed gives the answer
    ratio = r.per_seed[0].ratio["update_ratio"]
    assert rv.format_number(ratio.max()) in got.sentence
    assert rv.format_number(ratio.min()) in got.sentence


@pytest.mark.parametrize(
    ("settings", "answer"),
    [
        ({}, "not collapsed"),
        (NO_RESIDUALS, "collapsed"),
        # One layer without shortcuts is not enough to collapse.
        ({**NO_RESIDUALS, "layers": 1}, "not collapsed"),
        # Pure attention (no FFN, no norm) without shortcuts, six layers.
        ({**SMALL, "ffn": False, "norm": "none", "residual": False, "layers": 6}, "collapsed"),
    ],
)
def test_rank_collapse_without_shortcuts_after_a_few_layers(settings, answer):
    got = _measure("playground_rank_collapse", **settings)
    assert got.answer == answer, got.sentence
    c = E.collapse(**settings)
    dists = []
    for run in c.per_seed:
        mine = run.collapse[run.collapse["variant"] == c.mine]
        dists.append(mine["residual"].iloc[-1])
        # At init (float64): 1.2e-12 or less where collapsed, 0.12 or more
        # where not; checked 0.009 under COLLAPSED_BELOW (0.01) and 5% over it.
        what = "distance from rank one after the last layer"
        if answer == "collapsed":
            assert_clear(dists[-1], E.COLLAPSED_BELOW, side="below", margin=0.009, what=what)
        else:
            assert_clear(
                dists[-1], E.COLLAPSED_BELOW, side="above", margin=AT_INIT, kind="factor", what=what
            )
        assert (dists[-1] < E.COLLAPSED_BELOW) == (answer == "collapsed")
    assert got.sentence.startswith(all_three(answer))  # every seed gives the answer
    # Measured in float64: a distance under its resolution is said so, not quoted.
    floor = rv.words.FLOAT64_RESOLUTION
    said = rv.words.resolution_words(floor) if dists[0] < floor else rv.format_number(dists[0])
    assert f"distance from rank one is {said}," in got.sentence


def test_the_seed_sets_the_weights_and_bad_settings_are_refused():
    a = _measure("playground_update_ratio", seed=0).sentence
    assert _measure("playground_update_ratio", seed=0).sentence == a
    assert _measure("playground_update_ratio", seed=1).sentence != a
    with pytest.raises(ValueError, match="no tokens"):
        MEASURES["playground_update_ratio"].at({"text": "   "}, 0)
    with pytest.raises(ValueError):
        MEASURES["playground_update_ratio"].at({"heads": "3"}, 0)


# ------------------------------------------------------------ the share's words
@pytest.mark.parametrize(
    ("settings", "says", "never"),
    [
        ({}, "so the bars sum to 1 (here 1)", "Post-LN"),
        (NO_RESIDUALS, "x_L is the last sublayer's output itself", "sum to 1"),
        ({"place": "post"}, "need not sum to 1", "so the bars sum to 1"),
        ({**NO_RESIDUALS, "place": "post"}, "need not sum to 1", "output itself"),
    ],
)
def test_share_words_follow_how_x_L_is_made(settings, says, never):
    r = E.stream(**SMALL, **settings)
    words = rv.encoder.words.share_words(r.share)
    assert says in words and never not in words
    shares = [run.share for run in r.per_seed]
    if not shares[0]["part"].all():
        if shares[0]["part"].sum() == 1:  # the last output itself: its share is measured as 1
            assert {rv.format_number(s["share"].iloc[-1]) for s in shares} == {"1"}
            assert "is 1;" in words
        else:  # Post-LN: the sums the caption states are the bars' sums, over the seeds
            sums = sorted(float(s["share"].sum()) for s in shares)
            lo, hi = rv.format_number(sums[0]), rv.format_number(sums[-1])
            assert lo != hi and f"(here {lo}–{hi})" in words


# ------------------------------------------------------------ seeds per section
def test_each_section_runs_its_seeds():
    """The views at init run 3 seeds by default, training 1 (a seed trains two
    models), the model card none (nothing on it depends on the seed)."""
    from resviz.core import settings_of

    for fn in (E.attention, E.stream, E.collapse):
        assert settings_of(fn)["seeds"] == 3, fn.__name__
    assert settings_of(E.training)["seeds"] == 1
    assert "seeds" not in settings_of(E.model)


def test_the_model_card_does_not_depend_on_the_seed():
    """What the Model section says of the seed is checked: its tokens and counts are
    alike at seeds 0 and 1; only the latency (a timing) and the code's seed differ."""
    a, b = E.model(**SMALL, seed=0), E.model(**SMALL, seed=1)
    assert a.tokens.equals(b.tokens)
    timed = a.card["quantity"] == "forward latency"
    assert timed.sum() == 1
    assert a.card[~timed].equals(b.card[~timed])
    for k in ("params", "flops", "activation_bytes", "n_tokens", "vocab_size"):
        assert a[k] == b[k], k
    changed = [
        (x, y) for x, y in zip(a.code.splitlines(), b.code.splitlines(), strict=True) if x != y
    ]
    assert changed == [("    seed = 0", "    seed = 1"), ("SEED = 0", "SEED = 1")]
