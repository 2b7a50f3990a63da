"""The skip-connections page's sentences (resviz.shortcuts.words), each tested on a
setting that would make its claim false if it were stated for every setting."""

import math
from types import SimpleNamespace

import pandas as pd
import pytest

import resviz as rv
from resviz.shortcuts import recipes as R
from resviz.shortcuts import settings as SS
from resviz.shortcuts import training_words as WS
from resviz.shortcuts import words as W
from resviz.words.seeds import band_words, seeds_sentence, span
from tests.margins import AT_INIT, assert_clear, assert_lesion_clear, assert_worst_clear

SEED_NET = {"preset": SS.PRESETS[1]}


def _v(**kw):
    v = {k: d for k, d in rv.core.settings_of(R.stack).items() if k != "seed"}
    return {**v, **kw}


def test_table_caption_says_whether_widths_differ():
    r = R.stack(**_v())
    cap = W.shortcut_table_caption(r, _v())
    assert cap.startswith("16 of 16 blocks have a shortcut; 0 of them are projections.")
    assert "No block here changes the width" in cap and "decides" not in cap
    v = _v(**SEED_NET, mismatch="project")
    cap = W.shortcut_table_caption(R.stack(**v), v)
    assert cap.startswith("5 of 5 blocks have a shortcut; 2 of them are projections.")
    assert "2 of the 5 blocks change the width: *Where widths differ* decides" in cap
    v = _v(**SEED_NET, mode="concat", project=True)
    assert "(concat needs neither)" in W.shortcut_table_caption(R.stack(**v), v)


def test_signal_caption_states_the_rule_where_it_holds():
    # The seed network drops the shortcut where the width changes: the identity-shortcut
    # algebra holds in 3 of its 5 blocks, and the caption says so.
    v = _v(**SEED_NET)
    r = R.signal(**v, seeds=1)
    assert (r.terms["identity_share"] == 0).sum() == 2
    cap = W.signal_caption(r, v)
    assert "||y||^2 = ||x||^2 + ||u||^2 + 2<x, u>" in cap
    assert "That holds in the 3 of 5 blocks whose shortcut is the identity." in cap
    # Joined before the activation, the input is not passed on: no such rule.
    v = _v(join="before_act")
    cap = W.signal_caption(R.signal(**v), v)
    assert "||y||^2" not in cap and "the input is not passed on unchanged" in cap
    # Without a shortcut, one curve and no shortcut rule.
    v = _v(mode="none")
    cap = W.signal_caption(R.signal(**v), v)
    assert "||y||^2" not in cap and cap.count("the mean norm") == 1


def test_share_caption_rezero_claim_is_measured():
    """ "1 for ReZero at init, where u = 0": a = 0, learnable, gives exactly 1."""
    r = R.signal(**_v(mode="scaled", alpha=0.0, learnable=True))
    assert r.seeds == (0, 1, 2) and (r.terms["identity_share"] == 1.0).all()
    assert "Over the seeds, identity_share is 1 everywhere." in W.share_caption(r)
    r = R.signal(**_v(mode="scaled", alpha=1.0, learnable=False), seeds=1)
    assert (r.terms["identity_share"] < 1.0).all()
    cap = W.share_caption(r)
    assert "Here identity_share ranges from" in cap and ", seed" not in cap
    assert cap.endswith(band_words((0,)))
    # Over seeds the range is the lowest and highest of every seed's, each named.
    r = R.signal(**_v(mode="scaled", alpha=1.0, learnable=False), seeds=3)
    t = r.terms
    lo, hi = t.loc[t["identity_share"].idxmin()], t.loc[t["identity_share"].idxmax()]
    assert (
        f"Over the seeds, identity_share ranges from {rv.format_number(lo['identity_share'])} "
        f"(block {int(lo['block'])}, seed {int(lo['seed'])}) to {rv.format_number(hi['identity_share'])} "
        f"(block {int(hi['block'])}, seed {int(hi['seed'])})." in W.share_caption(r)
    )


def test_paths_caption_counts_the_blocks_that_can_be_skipped():
    r = R.paths(**_v(**SEED_NET))
    cap = W.paths_caption(r)
    assert "2^3 = 8 paths" in cap and "has length j + 2" in cap
    assert r.paths["length"].min() == 2  # no path is shorter than the 2 forced blocks
    cap = W.paths_caption(R.paths(**_v(mode="none", depth=5)))
    assert cap.startswith("No block has a shortcut: there is one path, through all 5 blocks.")
    assert "even the route that skips" in W.paths_caption(R.paths(**_v(join="before_act")))
    assert "must be passed through" not in W.paths_caption(R.paths(**_v()))


@pytest.mark.parametrize(
    ("settings", "noted"),
    [
        ({"act": "relu"}, True),
        ({"act": "relu", "mode": "scaled", "alpha": 0.5, "learnable": False}, True),
        ({"act": "tanh"}, False),
        ({"act": "relu", "join": "before_act"}, False),
    ],
)
def test_cosine_caption_non_negative_claim(settings, noted):
    """ "with ReLU joined after the activation ... the cosine cannot be negative at
    init": measured; where the note is left out, the cosine does go negative."""
    v = {**_v(), "lr": "0.003", **settings, "shallow": 1, "deep": 4, "steps": 20}
    v = {k: v[k] for k in rv.core.settings_of(R.degradation) if k not in ("seed", "seeds")}
    r = R.degradation(**v)
    init = r.cosine[r.cosine["stage"] == "init"]["cosine"].dropna()
    cap = WS.cosine_caption(r, v)
    assert ("cannot be negative there" in cap) == noted
    if noted:
        assert (init >= 0).all()  # exact: sums of products of non-negative numbers
    elif settings["act"] == "tanh":
        # At init (no training): the lowest cosine is -0.127, checked 0.05 clear of 0.
        assert_clear(init.min(), 0.0, side="below", margin=0.05, what="lowest cosine at init")


def test_intros_say_what_is_trained():
    dcfg = SS.DegradationRun(shallow=2, deep=5).config(SS.Block(mode="concat"))
    intro = WS.degradation_intro(dcfg)
    assert "four stacks of width 32" in intro and "2 and 5 blocks" in intro
    assert "with the shortcut (concat)" in intro and "projected back to the width" in intro
    assert "has no shortcut (the widths differ)" in WS.degradation_intro(
        SS.DegradationRun().config()
    )
    intro = WS.lesion_intro(SS.LesionRun(l_depth=8).config(SS.Block(mode="none")), 2.0)
    assert "a residual stack of 8 blocks" in intro and "with the shortcut (add)" in intro
    assert "1 turn per arm, fewer than the Degradation section's 2 turns per arm" in intro


# ----------------------------------------------------------------- over seeds
# Each direction is worded from every seed: tested on agree, split and tie, with
# made-up numbers (every outcome) and with real runs where the seeds really split.
# What is this topic's is each seed's clause and which seeds give it; the sentence
# around them ("In 3 of 3 seeds ...") is resviz.words.seeds.seeds_sentence's, tested
# once in tests/unit/words/test_seeds.py: here the captions are compared with it.


def said(clauses, seeds):
    """seeds_sentence of each seed's clause (one per seed, in seed order)."""
    return seeds_sentence(clauses, dict(zip(clauses, clauses, strict=True)), seeds)


def test_trend_seeds_agree_split_tie_and_one():
    labels = ["block 1", "block 2", "block 3"]
    up, up2, down = [1.0, 2.0, 8.0], [1.1, 3.0, 9.0], [8.0, 2.0, 1.0]
    # Each clause quotes the lowest to highest of the seeds that give it, and only theirs.
    rises = "the norm rises from block 1 to block 3 (block 1: 1–1.1; block 3: 4–9)"
    agree = W.trend_seeds([up, up2, [1.0, 1.5, 4.0]], labels, "the norm", [0, 1, 2])
    assert agree == said([rises] * 3, [0, 1, 2])
    rises = "the norm rises from block 1 to block 3 (block 1: 1–1.1; block 3: 8–9)"
    falls = "the norm falls from block 1 to block 3 (block 1: 8; block 3: 1)"
    split = W.trend_seeds([up, down, up2], labels, "the norm", [4, 5, 6])
    assert split == said([rises, falls, rises], [4, 5, 6])
    # More than 3 seeds: all but one is enough (the sentence names the other one).
    four = W.trend_seeds([up, up2, up, down], labels, "the norm", [0, 1, 2, 3])
    assert four == said([rises, rises, rises, falls], [0, 1, 2, 3])
    tie = W.trend_seeds([up, down], labels, "the norm", [0, 1])
    rises = "the norm rises from block 1 to block 3 (block 1: 1; block 3: 8)"
    assert tie == said([rises, falls], [0, 1])
    flat = W.trend_seeds([[1.0, 1.2, 1.1], [1.0, 1.1, 1.0]], labels, "the norm", [0, 1])
    stays = (
        "the norm stays within a factor of 1.5 from block 1 to block 3 (at most 1.2 in any "
        "of them; values 1–1.2)"
    )
    assert flat == said([stays] * 2, [0, 1])
    # One seed: its own trend, with its numbers and factor.
    one = W.trend_seeds([up], labels, "the norm", [3])
    assert one == said(["the norm rises from 1 at block 1 to 8 at block 3 (a factor of 8)"], [3])


def test_signal_caption_over_seeds_states_each_curve_from_every_seed():
    # Real runs at the page's defaults: every seed's plain norm falls and every seed's
    # residual norm rises (ReLU, 16 blocks), and the caption quotes each seed's ends.
    v = _v()
    r = R.signal(**v)
    cap = W.signal_caption(r, v)
    plain = r.signal[r.signal["variant"] == "plain"]
    ends = plain.groupby("seed")["norm"].agg(["first", "last"])
    assert (ends["last"] < ends["first"]).all()
    # At init the plain norm falls 8.4-11.3 times, the residual one rises 18-22 times:
    # each far past the factor of 1.5 under which a curve "stays" (checked 5% clear).
    added = r.signal[r.signal["variant"] != "plain"].groupby("seed")["norm"].agg(["first", "last"])
    for q in [*(ends["first"] / ends["last"]), *(added["last"] / added["first"])]:
        assert_clear(q, 1.5, side="above", margin=AT_INIT, kind="factor", what="norm's change")
    falls = (
        "the mean norm without a shortcut falls from block 1 to block 16 "
        f"(block 1: {span(ends['first'])}; block 16: {span(ends['last'])})"
    )
    assert said([falls] * 3, r.seeds) in cap
    rises = (
        "the mean norm with the shortcut (add) rises from block 1 to block 16 "
        f"(block 1: {span(added['first'])}; block 16: {span(added['last'])})"
    )
    assert said([rises] * 3, r.seeds) in cap
    assert cap.endswith(band_words(r.seeds))


def _curves(plain, residual, step=100):
    """Degradation curves at one step: (shallow, deep) final losses per kind."""
    rows = []
    for kind, (s, d) in (("plain", plain), ("residual", residual)):
        for depth, loss in ((2, s), (8, d)):
            rows.append({"kind": kind, "depth": depth, "step": step, "loss": loss})
    return pd.DataFrame(rows)


def test_degradation_seeds_agree_split_tie_and_one():
    agree = [_curves((0.4, 0.9), (0.5, 0.3)), _curves((0.5, 1.0), (0.6, 0.2))]
    text = WS.degradation_seeds(agree, 2, 8, [0, 1])
    assert text.startswith("At each stack's last evaluation (step 100):")
    worse = (
        "the 8-block plain stack ends with the higher loss, so the deeper plain stack trains "
        "worse (degradation)"
    )
    better = (
        "the 8-block residual stack ends with the lower loss, so the deeper residual stack "
        "trains better"
    )
    final = (
        " Final loss of the plain stacks, lowest to highest seed: 8 blocks 0.9–1, 2 blocks 0.4–0.5."
    )
    assert said([worse] * 2, [0, 1]) + final in text
    assert said([better] * 2, [0, 1]) in text
    split = [_curves((0.4, 0.9), (0.5, 0.3))] * 2 + [_curves((0.9, 0.4), (0.5, 0.51))]
    plain_better = (
        "the 8-block plain stack ends with the lower loss, so the deeper plain stack trains better"
    )
    level = "the two residual stacks end within 5% of each other, so depth makes little difference"
    text = WS.degradation_seeds(split, 2, 8, [0, 1, 2])
    assert said([worse, worse, plain_better], [0, 1, 2]) in text
    assert said([better, better, level], [0, 1, 2]) in text
    tie = WS.degradation_seeds(split[1:], 2, 8, [1, 2])
    assert said([worse, plain_better], [1, 2]) in tie and said([better, level], [1, 2]) in tie
    one = WS.degradation_seeds(agree[:1], 2, 8, [7])
    higher = (
        "the loss of the 8-block plain stack (0.9) is higher than that of the 2-block one "
        "(0.4), by a factor of 2.25, so the deeper plain stack trains worse (degradation)"
    )
    assert said([higher], [7]) in one
    # A run stopped in its second seed: the steps differ, and the caption says so.
    assert "(steps 40 to 100)" in WS.degradation_seeds(
        [agree[0], _curves((1, 1), (1, 1), 40)], 2, 8
    )


def _cos(init, trained, variant="residual, 8 blocks"):
    return pd.DataFrame(
        {
            "variant": variant,
            "stage": ["init", "init", "trained", "trained"],
            "cosine": [math.nan, init, math.nan, trained],
        }
    )


def test_cosine_seeds_agree_split_tie_and_one():
    cos = "the mean cosine of residual, 8 blocks"
    falls = f"{cos} falls from init to trained (init 0.4–0.5; trained 0.2–0.3)"
    assert WS.cosine_seeds([_cos(0.5, 0.3), _cos(0.4, 0.2)], [0, 1]) == said([falls] * 2, [0, 1])
    split = WS.cosine_seeds([_cos(0.5, 0.3), _cos(0.4, 0.6), _cos(0.4, 0.2)], [0, 1, 2])
    rises = f"{cos} rises from init to trained (init 0.4; trained 0.6)"
    assert split == said([falls, rises, falls], [0, 1, 2])
    tie = WS.cosine_seeds([_cos(0.5, 0.3), _cos(0.4, 0.41)], [0, 1])
    falls = f"{cos} falls from init to trained (init 0.5; trained 0.3)"
    stays = f"{cos} stays within 5% from init to trained (init 0.4; trained 0.41)"
    assert tie == said([falls, stays], [0, 1])
    one = WS.cosine_seeds([_cos(0.5, 0.25)], [2])
    assert one == said([f"{cos} falls from 0.5 to 0.25 (a factor of 2)"], [2])
    # A variant with no finite cosine anywhere is not worded (nothing of it is drawn).
    assert WS.cosine_seeds([_cos(math.nan, math.nan, "residual, 1 blocks")], [0]) == ""


@pytest.mark.slow
def test_cosine_caption_over_real_seeds_that_split():
    # Found by trying seeds 0-4 at these settings: the 2-block residual stack's mean
    # cosine stays within 5% in seed 0 (+0.7%), rises in seed 1 (+10.1%) and falls in
    # seed 2 (-14.5%); the 6-block one falls in all three (-11.0% to -18.4%). Seeds 3
    # and 4 (-7.9%, -6.9%) sit too near the 5% line to pin, so seeds 0-2 are the ones.
    v = {**_v(), "lr": "0.003", "shallow": 2, "deep": 6, "steps": 100}
    v = {k: v[k] for k in rv.core.settings_of(R.degradation) if k not in ("seed", "seeds")}
    r = R.degradation(**v, seeds=3)
    outcomes = {"residual, 2 blocks": [0, 1, -1], "residual, 6 blocks": [-1, -1, -1]}
    for s, run in zip(r.seeds, r.per_seed, strict=True):  # each outcome is that seed's data
        for variant, want in outcomes.items():
            g = run.cosine[run.cosine["variant"] == variant]
            m = g.groupby("stage")["cosine"].mean()
            # First the margin: the change, relative as rv.words.order measures it, at
            # least 2.5 points clear of the 5% that tells "stays" from a direction.
            change = abs(m["trained"] - m["init"]) / max(abs(m["trained"]), abs(m["init"]))
            side = "below" if want[s] == 0 else "above"
            what = f"relative change of the mean cosine, {variant}, seed {s}"
            assert_clear(change, 0.05, side=side, margin=0.025, what=what)
            assert rv.words.order(m["trained"], m["init"]) == want[s], (variant, s)
    # The caption words each variant from those outcomes (cosine_seeds, tested above on
    # every outcome), after its note on ReLU, and ends with what the bands are.
    cap = WS.cosine_caption(r, v)
    assert WS.cosine_seeds([run.cosine for run in r.per_seed], r.seeds) in cap
    assert "cannot be negative there" in cap and cap.endswith(band_words(r.seeds))
    stays = "the mean cosine of residual, 2 blocks stays within 5% from init to trained"
    assert stays in cap and "the mean cosine of residual, 6 blocks falls" in cap


def verdict_words(v, kind):
    """A stack's lesion verdict, as the caption words it over seeds (5 points: the
    small-drop line, LESION_SMALL_DROP)."""
    return WS.LESION_VERDICT_WORDS[v].format(kind=kind, limit="5", need="66.7%")


def _row(worst, learned=True, drop=0.1):
    return {"worst_block": worst, "learned": learned, "worst_drop": drop}


def test_worst_block_seeds_agree_split_tie():
    b2, b3 = (f"deleting block {b} hurts the residual stack most" for b in (2, 3))
    assert WS.worst_block_seeds([_row(2), _row(2), _row(2)], "residual", [0, 1, 2]) == said(
        [b2] * 3, [0, 1, 2]
    )
    split = WS.worst_block_seeds([_row(3), _row(2), _row(2)], "residual", [0, 1, 2])
    assert split == said([b3, b2, b2], [0, 1, 2])
    tie = WS.worst_block_seeds([_row(3), _row(5, learned=False)], "plain", [0, 1])
    unlearned = "the plain stack did not learn, so no deletion can be said to hurt it most"
    assert tie == said(["deleting block 3 hurts the plain stack most", unlearned], [0, 1])
    assert "no deletion lowers" in WS.worst_block_seeds([_row(3, drop=0.0)], "plain", [0])


@pytest.mark.slow
def test_lesion_caption_over_real_seeds():
    # 8 blocks, seeds 0-2: every seed's residual stack "depends on the block", but the
    # block that hurts most is 2 in seeds 0-1 and 4 in seed 2 (issue 25's example of a
    # finding that flips with the seed). Each verdict's sides are 2 accuracy points
    # clear of their lines, and each worst block 2 points clear of the runner-up
    # (measured 10.2, 17.6 and 7.4 points). At the page's defaults (16 blocks) seed 0's
    # worst two blocks, 3 and 4, differ by 0.33 points: too near to pin.
    r = R.lesion(l_depth=8, seeds=3)
    for s, run in zip(r.seeds, r.per_seed, strict=True):
        for kind, verdict in (("residual", "depends on the block"), ("plain", "suffers")):
            row = run.summary[run.summary["kind"] == kind].iloc[0]
            les = run.lesion[run.lesion["kind"] == kind]
            what = f"{kind}, seed {s}"
            assert assert_lesion_clear(row["intact"], les["accuracy"], what=what) == verdict
            if kind == "residual":
                worst = assert_worst_clear(les["block"], les["accuracy"], what=what)
                assert worst == row["worst_block"] == [2, 2, 4][s]
    cap = WS.lesion_seeds_caption([x.summary for x in r.per_seed], r.seeds, r.classes)
    res = r.summary[r.summary["kind"] == "residual"]
    assert said([verdict_words("depends on the block", "residual")] * 3, r.seeds) in cap
    b2, b4 = (f"deleting block {b} hurts the residual stack most" for b in (2, 4))
    assert said([b2, b2, b4], r.seeds) in cap
    assert (
        f"Over seeds 0-2, the residual stack's intact accuracy is {span(res['intact'])}; "
        f"a deletion changes it by {span(-100 * res['mean_drop'])} points on average"
    ) in cap
    assert said([verdict_words("suffers", "plain")] * 3, r.seeds) in cap
    # 4 blocks, 100 steps, seeds 0-1: both seeds' residual stacks suffer (every deletion
    # 11 points or more), block 2 worst (15.7 and 20.5 points over the runner-up).
    r = R.lesion(l_depth=4, l_steps=100, seeds=2)
    for s, run in zip(r.seeds, r.per_seed, strict=True):
        les = run.lesion[run.lesion["kind"] == "residual"]
        intact = les["base_accuracy"].iloc[0]
        what = f"residual, seed {s}"
        assert assert_lesion_clear(intact, les["accuracy"], what=what) == "suffers"
        assert assert_worst_clear(les["block"], les["accuracy"], what=what) == 2
    cap = WS.lesion_seeds_caption([x.summary for x in r.per_seed], r.seeds, r.classes)
    assert said([verdict_words("suffers", "residual")] * 2, r.seeds) in cap
    assert said(["deleting block 2 hurts the residual stack most"] * 2, r.seeds) in cap
    assert "does not shrug a deletion off" in cap
    # One seed: that seed's own sentence, with its numbers.
    one = R.lesion(l_depth=4, l_steps=100, seeds=1, seed=1)
    cap = WS.lesion_seeds_caption([one.per_seed[0].summary], one.seeds, one.classes)
    row = one.summary[one.summary["kind"] == "residual"].iloc[0]
    sentence = rv.shortcuts.lesion_sentence(row, 3)
    assert said([f"{sentence[0].lower()}{sentence[1:-1]}"], one.seeds) in cap


def test_worst_block_seeds_names_tied_blocks_together():
    # A plain stack whose deletions of blocks 2 and 4 both drop it to chance: neither
    # alone "hurts most"; the lesion frame shows the tie.
    les = pd.DataFrame({"kind": "plain", "block": [2, 3, 4], "accuracy": [1 / 3, 0.5, 1 / 3]})
    row = {"worst_block": 2, "learned": True, "worst_drop": 0.6}
    tied = "deleting block 2 or 4 hurts the plain stack most (tied)"
    assert WS.worst_block_seeds([row, row], "plain", [0, 1], [les, les]) == said([tied] * 2, [0, 1])
    alone = les.assign(accuracy=[1 / 3, 0.5, 0.4])
    assert WS.worst_block_seeds([row], "plain", [5], [alone]) == said(
        ["deleting block 2 hurts the plain stack most"], [5]
    )


# ----------------------------------------------------------------- around the sections
@pytest.mark.parametrize(
    ("mode", "full", "notes"),
    [("scaled", True, ["Projecting back acts only with Shortcut = concat."]),
     ("scaled", False, []),
     ("concat", True, ["λ acts only with Shortcut = scaled (here: concat)."]),
     ("add", False, ["λ acts only with Shortcut = scaled (here: add)."]),
     ("none", True, ["λ acts only with Shortcut = scaled (here: none).",
                     "Projecting back acts only with Shortcut = concat.",
                     "Where the shortcut joins: no shortcut here to join."]),
     ("none", False, ["λ acts only with Shortcut = scaled (here: none)."])],
)  # fmt: skip
def test_settings_notes_name_the_shortcut_each_setting_waits_for(mode, full, notes):
    assert W.settings_notes(mode, full) == " ".join(notes)


def test_task_caption_and_code_intro_name_the_seed():
    assert W.task_caption(0, 1) == "The points of seed 0."
    assert W.task_caption(7, 3) == (
        "The points of seed 7; each of the 3 seeds trains on points of its own."
    )
    assert "the same weights as the page's seed 4 (same creation order)" in W.code_intro(4)


@pytest.mark.parametrize(
    ("step", "total", "seeds", "said"),
    [(0, 300, 3, "Seed 5 (1 of 3): step 0 of 100."), (99, 300, 3, "Seed 5 (1 of 3): step 99 of 100."),
     (100, 300, 3, "Seed 6 (2 of 3): step 0 of 100."), (300, 300, 3, "Seed 7 (3 of 3): step 100 of 100."),
     (40, 60, 1, "Seed 5 (1 of 1): step 40 of 60."), (1, 2, 3, "Seed 6 (2 of 3): step 0 of 1."),
     (0, 0, 2, "Seed 5 (1 of 2): step 0 of 1.")],
)  # fmt: skip
def test_seed_progress_counts_every_seeds_steps_in_one_total(step, total, seeds, said):
    # The last seed keeps a step past its share (the total is the seeds' steps summed);
    # fewer steps than seeds, or none, still name a seed and a step.
    assert (
        W.seed_progress(step, total, seeds, 5) == f"{said} The curves below are this seed's so far."
    )


def _trained(stopped=(False,), seconds=(1.25,), diverged=()):
    runs = tuple(
        SimpleNamespace(stopped=st, seconds=sec) for st, sec in zip(stopped, seconds, strict=True)
    )
    curves = pd.DataFrame(
        {"variant": ["plain, 8 blocks", "residual, 8 blocks"], "step": [40, 100], "seed": 3,
         "diverged": [bool(diverged), False], "divergence": ["loss is NaN", ""]}
    )  # fmt: skip
    return SimpleNamespace(per_seed=runs, curves=curves)


def test_final_caption_and_stopped_say_what_the_run_did():
    one = _trained()
    assert not W.stopped(one)
    assert W.final_caption(one) == (
        "After training (1.2 s for all four stacks, lesions and cosines included)."
    )
    many = _trained(stopped=(False, True), seconds=(0.0, 2.5))
    assert W.stopped(many)
    assert W.final_caption(many) == (
        "After training (2.5 s for all four stacks in each of the 2 seeds, lesions and "
        "cosines included). One row per seed and stack. Training was stopped early: the step "
        "column says where each stack ended."
    )


def test_diverged_words_one_warning_per_diverged_stack():
    assert W.diverged_words(_trained()) == []
    assert W.diverged_words(_trained(diverged=True)) == [
        "plain, 8 blocks diverged at step 40 (loss is NaN); training of that stack stopped "
        "there (dashed vertical line)."
    ]
    many = _trained(stopped=(False, False), seconds=(1.0, 1.0), diverged=True)
    assert W.diverged_words(many) == [
        "plain, 8 blocks diverged at step 40 (loss is NaN) in seed 3; training of that stack "
        "stopped there."
    ]


def test_lesion_account_is_the_seeds_caption_then_the_bands():
    r = R.lesion(l_depth=3, l_steps=20, seeds=2)
    runs = r.per_seed
    caption = WS.lesion_seeds_caption(
        [x.summary for x in runs], r.seeds, r.classes, [x.lesion for x in runs]
    )
    assert WS.lesion_account(r) == f"{caption} {band_words(r.seeds)}"
