"""The normalization page's captions state what was measured, in settings where the
sentences they replace were false: "Post-LN without warm-up stays at the loss of guessing;
with warm-up it learns" (at a small learning rate it learns, and beats warm-up), "the
Pre-LN stream grows only from 9.7 to 10.9 over 8 layers" (a figure from another model),
"Raw: the left half dominates" (not when both halves share a scale), "x the batch above"
(the invariance table used a fixed batch)."""

import math
import re

import pandas as pd
import pytest

import resviz as rv
import ui.jobs
from resviz import norms as N
from resviz.core import Result
from resviz.norms import headline as H
from resviz.norms import training_words as NT
from resviz.norms import words as NW
from resviz.norms.words import GROWTH
from tests.app.conftest import (
    NUM,
    clean,
    find_caption,
    find_caption_with,
    find_table,
    open_section,
    recorded_csvs,
)
from tests.margins import AT_INIT, assert_clear, assert_far_past_divergence, printed

PAGE = "app_pages/normalization.py"
pytestmark = pytest.mark.usefixtures("fresh_jobs")


def test_warmup_caption_states_which_run_ends_lower(app, monkeypatch):
    seen = recorded_csvs(monkeypatch)
    at = app(PAGE, section="Warm-up", w_layers="2", w_steps="20", w_warm="10", w_lr="0.001").run()
    at.button(key="warmup:start").click().run()
    assert ui.jobs.REGISTRY.wait(120)
    at.run()
    clean(at)
    final = find_table(at, "variant", "Post-LN, no warm-up").set_index("variant")["final_loss"]
    cap = find_caption(at, "Guessing uniformly costs log 64 = 4.16.")
    assert "stays at the loss of guessing" not in cap
    for place in ("Post-LN", "Pre-LN"):
        no, warm = final[f"{place}, no warm-up"], final[f"{place}, warm-up 10"]
        # Without warm-up ends 20% lower (2.03 and 2.06 against 2.54 and 2.59), checked
        # 10% clear (tests/unit/norms/test_recipes.py measures seeds 0-2).
        assert_clear(no, warm, side="below", margin=0.1, kind="rel", what=f"{place} final loss")
    # The caption is the library's words for the run's curves (the CSV's), one seed.
    values = {"vocab_size": 64, "w_warm": 10}
    assert cap == NT.warmup_account(Result({"history": seen["warmup_training"]}, values, (), (0,)))
    # The old caption said Post-LN without warm-up stays at log 64 and warm-up learns:
    # it ends at 2.03, 36% under log 64 - 1 (checked 20% clear).
    assert_clear(
        final["Post-LN, no warm-up"],
        math.log(64) - 1,
        side="below",
        margin=0.2,
        kind="rel",
        what="Post-LN final loss without warm-up",
    )
    assert "Post-LN without warm-up ends lower" in cap


def _range(values) -> list[float]:
    return [min(values), max(values)]


def test_prepost_sentences_quote_this_model_in_every_seed(app):
    # 6 layers: the raw stream grows 1.35-1.44 times over seeds 0-2, the standardized
    # one 1.45-1.54, each at least 5% over the factor of 1.25 that "grows" takes (at 4
    # layers, the setting this replaced, the raw stream grew 1.2597 and 1.2555 times in
    # seeds 1-2: too near 1.25 to pin).
    L = 6
    at = app(PAGE, section="Pre-LN vs Post-LN", layers=str(L), init="default").run()
    clean(at)
    # The paragraph on the raw stream is part of the section's full account (folded).
    text = find_caption(at, "Without that standardization")
    assert "9.7" not in text and "10.9" not in text
    seeds = range(3)  # the section's default: 3 seeds
    raw = [N.prepost_stream(L, 64, s, "default", standardize=False) for s in seeds]
    raw = [r[r["variant"] == "Pre-LN"]["sq_norm_per_dim"].tolist() for r in raw]
    shown = [N.prepost_stream(L, 64, s, "default") for s in seeds]
    pre = [x[x["variant"] == "Pre-LN"]["sq_norm_per_dim"].tolist() for x in shown]
    for r in raw + pre:
        assert_clear(
            r[-1] / r[0],
            GROWTH,
            side="above",
            margin=AT_INIT,
            kind="factor",
            what="Pre-LN stream growth",
        )
    # The recipe's streams are the library's own (computed above), and the page's
    # paragraphs are the library's words for that run.
    r = rv.recipes.norms.prepost_ln(layers=L, init="default")
    assert r.seeds == (0, 1, 2)
    for x, mine, own in zip(r.per_seed, raw, pre, strict=True):
        q = "variant == 'Pre-LN'"
        assert x.raw_stream.query(q)["sq_norm_per_dim"].tolist() == pytest.approx(mine)
        assert x.stream.query(q)["sq_norm_per_dim"].tolist() == pytest.approx(own)
    assert text == H.prepost_raw_account(r, L)
    assert find_caption(at, "Post-LN ends every layer with a LayerNorm") == (
        H.prepost_stream_account(r)
    )
    # The gradient caption: the library's words on the table the page shows.
    grads = find_table(at, "variant", "Pre-LN", having="ratio_to_L1")
    assert len(grads[grads["n_layers"] == L]) == 6  # two variants, three seeds
    pd.testing.assert_frame_equal(
        grads.reset_index(drop=True), r.grads.reset_index(drop=True), check_dtype=False
    )
    cap = find_caption(at, "Gradient norm of the last layer's second FFN weight")
    assert cap == H.prepost_ratios_account(r)


def test_four_views_and_invariances_follow_the_batch_above(app):
    at = app(PAGE, big="1", small="1", d="16", batch="4").run()
    clean(at)
    cap = find_caption(at, "Mean |value| of the left half")
    expected = []
    for seed in range(3):
        x = N.scaled_batch(4, 16, 16, 1.0, 1.0, seed)[0]
        expected.append(float(x[:, :8].abs().mean() / x[:, 8:].abs().mean()))
    m = re.search(rf"raw {NUM}–{NUM} times", cap)
    assert m and [float(m[1]), float(m[2])] == printed(_range(expected))
    assert all(0.5 < e < 2 for e in expected)  # no half "dominates"
    cap = find_caption(at, "All values of seed 0's batch.")
    assert "share one scale, x1" in cap
    # The invariance table is measured on this batch, and its caption lists its rows.
    open_section(at, "Invariances")
    clean(at)
    table = find_table(at, "transformation", "re-scale the weights W")
    assert sorted(table["seed"].unique()) == [0, 1, 2]
    direct = [N.invariance_table(4, 16, 16, seed=s, big=1.0, small=1.0) for s in range(3)]
    for seed, d in enumerate(direct):
        rms = d[d["norm"] == "RMSNorm"].set_index(["transformation", "measured_on"])
        mine = table[table["seed"] == seed]
        shown = mine.set_index(["transformation", "measured_on"])["RMSNorm"]
        assert shown.to_numpy() == pytest.approx(
            rms.loc[shown.index, "max_abs_change"].to_numpy(), rel=1e-6, abs=1e-12
        )
    cap = find_caption(at, "max |output change| of each norm")
    for norm in N.INVARIANCE_NORMS:
        flags = [d.loc[d["norm"] == norm, "invariant"] for d in direct]
        if all(f.all() for f in flags):  # invariant everywhere in every seed
            assert f"{norm}: every row" in cap or f"holds for {norm} in every row" in cap
        elif not any(f.any() for f in flags):
            assert f"{norm}: no row" in cap or f"holds for {norm} in no row" in cap


def test_batch_dependence_caption_quotes_its_table(app):
    at = app(PAGE, section="Batch dependence").run()
    clean(at)
    summ = find_table(at, "scenario", "other samples x10")
    train = summ[(summ["mode"] == "train") & (summ["scenario"] == "other samples x10")]
    assert len(train) == 3  # a row per seed
    cap = find_caption(at, "The same token, normalized with different batch-mates")
    r = rv.recipes.norms.batch_dependence()
    pd.testing.assert_frame_equal(
        summ.reset_index(drop=True), r.summary.reset_index(drop=True), check_dtype=False
    )
    assert cap == NW.batch_account(r)
    assert "batch of 1 token: cannot be normalized" in cap
    open_section(at, "Cost")
    clean(at)
    cap = find_caption(at, "Measured on cpu just now")
    assert "on CUDA both are fused" not in cap
    assert re.search(rf"Here RMSNorm took {NUM} times LayerNorm's time forward", cap)


# ------------------------------------------- the sweep of issue 23 (each false before)
def test_no_table_prints_0_for_a_value_that_is_not_0(app):
    # The statistics table was rounded to 4 places: LayerNorm's token means (about
    # 1e-8, not 0) showed as 0; the Pre-LN summary lost all but 4 decimals.
    at = app(PAGE).run()
    clean(at)
    stats = find_table(at, "view", "LayerNorm", having="token_mean_absmax")
    stats = stats[stats["seed"] == 0].set_index("view")
    v = N.apply_norms(N.scaled_batch(8, 16, 64, 10.0, 0.1, 0))
    direct = N.norm_stats(v).set_index("view")
    assert stats.loc["LayerNorm", "token_mean_absmax"] > 0
    assert stats.loc["LayerNorm", "token_mean_absmax"] == pytest.approx(
        direct.loc["LayerNorm", "token_mean_absmax"], rel=1e-9
    )
    at = open_section(at, "Pre-LN vs Post-LN")
    clean(at)
    grads = find_table(at, "variant", "Pre-LN", having="grad_norm")
    assert (grads["grad_norm"] != grads["grad_norm"].round(4)).any()


def test_batchnorm_halves_are_called_alike_only_when_they_are(app):
    # Two samples of two tokens, one seed: BatchNorm's halves in sample 0 differ by
    # 1.83 times; the old caption said "so the halves come out alike" at every setting.
    at = app(PAGE, batch="2", tokens="2", d="16", seeds="1").run()
    clean(at)
    cap = find_caption(at, "Mean |value| of the left half")
    assert "come out alike" not in cap
    r = rv.recipes.norms.four_views(batch=2, tokens=2, d=16, seeds=1)
    q = float(r.halves.set_index("view").loc["BatchNorm", "ratio"])
    assert q == pytest.approx(1.83, abs=0.01)
    assert_clear(q, 1.5, side="above", margin=AT_INIT, kind="factor", what="BN halves")
    assert cap == NW.four_views_account([r.halves], r.seeds)


def test_the_page_claims_no_real_activations_and_bn_axes_are_named(app):
    # The first three sections normalize a seeded Gaussian batch, not activations of
    # a model; BatchNorm normalizes each feature over the batch and its tokens.
    at = app(PAGE).run()
    clean(at)
    text = " ".join(m.value for m in at.markdown)
    assert "real activations" not in text
    assert N.VIEW_TITLES["BatchNorm"] == "BatchNorm (each feature over batch)"
    open_section(at, "Invariances")
    cap = find_caption(at, "max |output change| of each norm")
    assert "normalizes each feature over the batch and its tokens" in cap


def test_warm_up_longer_than_the_run_is_said_so(app):
    # 150 warm-up steps in a 20-step run: the rate never reaches the peak. The old
    # text said "warmed up linearly over 150 steps" at "a peak rate of 0.015".
    at = app(PAGE, section="Warm-up", w_steps="20", w_warm="150", w_lr="0.015").run()
    clean(at)
    text = " ".join(m.value for m in at.markdown)
    m = re.search(
        rf"planned over 150 steps, which this 20-step run ends before finishing: "
        rf"its rate reaches only {NUM}",
        text,
    )
    assert m and float(m[1]) == pytest.approx(0.015 * 20 / 150)
    at = app(PAGE, section="Warm-up").run()
    text = " ".join(m.value for m in at.markdown)
    assert "once warmed up linearly to it over its first 40 steps" in text


def test_stability_means_count_the_steps_each_run_had(app, monkeypatch):
    # At learning rate 0.1 two runs diverge within 3 steps; the old caption said each
    # number was the mean "over the last ten steps".
    import ui.views

    seen = {}
    original = ui.views.csv_button

    def record(df, name, label="Download CSV"):
        seen[name] = df
        original(df, name, label)

    monkeypatch.setattr(ui.views, "csv_button", record)
    at = app(PAGE, section="Stability", s_steps="20", s_lr="0.1", s_pos="pre").run()
    at.button(key="stability:start").click().run()
    assert ui.jobs.REGISTRY.wait(120)
    at.run()
    clean(at)
    cap = find_caption_with(at, "The targets are fresh random numbers each step")
    runs = seen["stability_training"]
    short = 0
    for name, run in runs.groupby("variant"):
        n = len(run)
        # Far from the line on any CPU: "neither" and "residual only" blow up at steps 2
        # and 1, 6.6e5 and 520 times past the factor (checked 10); the normalized runs
        # rise at most 3.4e4 times, 29 times under it (checked 10).
        found = rv.first_divergence(run["loss"], run["grad_norm"])
        if found is not None:
            assert_far_past_divergence(found, margin=10)
        else:
            rise = run["loss"].max() / run["loss"].iloc[0]
            assert_clear(
                rise,
                rv.train.DIVERGENCE_FACTOR,
                side="below",
                margin=10,
                kind="factor",
                what=f"{name}: loss over its first",
            )
        if n < 10:
            short += 1
            assert f"{name} " in cap and f"(mean of its {n} steps)" in cap
    assert short, "no run stopped early at this learning rate"


def test_init_help_names_the_weights_it_is_true_of(app):
    # PyTorch's default LM head at d_model = 32 has a larger std than Xavier's; the old
    # help said every weight had a smaller one (tests/unit/norms/test_recipes.py).
    at = app(PAGE, section="Pre-LN vs Post-LN").run()
    helptext = at.selectbox(key="init").help
    assert "whose attention and FFN weights have a smaller std" in helptext


def _unformatted_floats(at) -> list[str]:
    """Float columns a table shows with Streamlit's default 4 decimals (which print 0
    for 3e-5), rather than significant digits."""
    import json

    out = []
    for el in at.dataframe:
        config = json.loads(el.proto.columns or "{}")
        for c in el.value.columns:
            if el.value[c].dtype.kind == "f":
                fmt = config.get(c, {}).get("type_config", {}).get("format", "")
                if not (fmt.endswith("g") or fmt.endswith("e")):
                    out.append(c)
    return out


def test_every_table_shows_significant_digits(app):
    at = app(PAGE).run()
    for section in ("Four views", "Invariances", "Batch dependence", "Pre-LN vs Post-LN"):
        open_section(at, section)
        clean(at)
        assert at.dataframe and not _unformatted_floats(at), section
    at = app(PAGE, section="Warm-up", w_layers="2", w_steps="20", w_warm="10").run()
    at.button(key="warmup:start").click().run()
    assert ui.jobs.REGISTRY.wait(120)
    at.run()
    clean(at)
    summary = find_table(at, "variant", "Post-LN, no warm-up", having="final_loss")
    assert len(summary) == 4 and not _unformatted_floats(at)
