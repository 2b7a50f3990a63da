"""The encoder playground's lesson measures read its sections' recipes: each answer
matches the recipe's frame and flips at a setting the page allows."""

import pytest

import resviz as rv
from resviz.recipes import MEASURES, Answer
from resviz.recipes import encoder as E
from ui.specs import encoder_playground as S

SMALL = {"layers": 2, "d_model": "32", "heads": "4", "d_ff": "64", "max_len": 12}
NO_RESIDUALS = {"residual": False}  # the "No residuals" preset: Pre-LN, residual off


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
    ratio = E.stream(**settings).ratio["update_ratio"]
    assert (ratio.max() < 1) == (answer == "all below 1")
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
    mine = c.collapse[c.collapse["variant"] == c.mine]
    dist = mine["residual"].iloc[-1]
    assert (dist < E.COLLAPSED_BELOW) == (answer == "collapsed")
    assert f"distance from rank one is {rv.format_number(dist)}" in got.sentence


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
    share = E.stream(**SMALL, **settings).share
    words = rv.words.share_words(share)
    assert says in words and never not in words
    if not share["part"].all():
        last = share["share"].iloc[-1]
        if share["part"].sum() == 1:  # the last output itself: its share is measured as 1
            assert f"is {rv.format_number(last)};" in words
        else:  # Post-LN: the sum the caption states is the bars' sum
            assert f"(here {rv.format_number(share['share'].sum())})" in words
