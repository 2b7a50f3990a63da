"""The normalization page's captions state what was measured, in settings where the
sentences they replace were false: "Post-LN without warm-up stays at the loss of guessing;
with warm-up it learns" (at a small learning rate it learns, and beats warm-up), "the
Pre-LN stream grows only from 9.7 to 10.9 over 8 layers" (a figure from another model),
"Raw: the left half dominates" (not when both halves share a scale), "x the batch above"
(the invariance table used a fixed batch)."""

import math
import re

import pytest

import ui.jobs
from resviz import norms as N
from tests.app.conftest import NUM, clean, find_caption, find_table, open_section

PAGE = "app_pages/normalization.py"
pytestmark = pytest.mark.usefixtures("fresh_jobs")


def test_warmup_caption_states_which_run_ends_lower(app):
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
        m = re.search(rf"{place}: (without warm-up|with) ends lower \({NUM} against {NUM} for", cap)
        assert m, cap
        lower, higher = sorted([no, warm])
        assert m[1] == ("without warm-up" if no < warm else "with")
        assert float(m[2]) == pytest.approx(lower, rel=5e-3)
        assert float(m[3]) == pytest.approx(higher, rel=5e-3)
    # The old caption said Post-LN without warm-up stays at log 64 and warm-up learns.
    assert final["Post-LN, no warm-up"] < math.log(64) - 1
    assert "Post-LN: without warm-up ends lower" in cap


def test_prepost_sentences_quote_this_model(app):
    at = app(PAGE, section="Pre-LN vs Post-LN", layers="4", init="default").run()
    clean(at)
    text = " ".join(m.value for m in at.markdown)
    assert "9.7" not in text and "10.9" not in text
    raw = N.prepost_stream(4, 64, 0, "default", standardize=False)
    raw = raw[raw["variant"] == "Pre-LN"]["sq_norm_per_dim"].tolist()
    m = re.search(rf"the input's \|\|x₀\|\|²/d is {NUM} for this model", text)
    assert m and float(m[1]) == pytest.approx(raw[0], rel=5e-3)
    assert re.search(rf"from {NUM} to {NUM}\)? over 4 layer", text)
    end = float(re.search(rf"from {NUM} to {NUM}\)? over 4 layer", text)[2])
    assert end == pytest.approx(raw[-1], rel=5e-3)
    shown = N.prepost_stream(4, 64, 0, "default")
    pre = shown[shown["variant"] == "Pre-LN"]["sq_norm_per_dim"].tolist()
    cap = find_caption(at, "Post-LN ends every layer with a LayerNorm")
    m = re.search(rf"Here Pre-LN's \|\|x_l\|\|²/d .*from {NUM} to {NUM}\)?\.$", cap)
    assert m, cap
    assert float(m[1]) == pytest.approx(pre[0], rel=5e-3)
    assert float(m[2]) == pytest.approx(pre[-1], rel=5e-3)
    # The gradient caption quotes the summary table at the deepest L.
    summary = find_table(at, "variant", "Pre-LN")
    deepest = summary[summary["n_layers"] == 4].set_index("variant")["ratio_to_L1"]
    cap = find_caption(at, "Gradient norm of the last layer's second FFN weight")
    m = re.search(rf"At L = 4 it is {NUM} for Post-LN and {NUM} for Pre-LN; sqrt\(1/4\) = 0.5", cap)
    assert m, cap
    assert float(m[1]) == pytest.approx(deepest["Post-LN"], abs=1e-3, rel=5e-3)
    assert float(m[2]) == pytest.approx(deepest["Pre-LN"], abs=1e-3, rel=5e-3)


def test_four_views_and_invariances_follow_the_batch_above(app):
    at = app(PAGE, big="1", small="1", d="16", batch="4").run()
    clean(at)
    cap = find_caption(at, "Mean |value| of the left half")
    x = N.scaled_batch(4, 16, 16, 1.0, 1.0, 0)[0]
    expected = float(x[:, :8].abs().mean() / x[:, 8:].abs().mean())
    m = re.search(rf"raw {NUM} times", cap)
    assert m and float(m[1]) == pytest.approx(expected, rel=5e-3)
    assert 0.5 < expected < 2  # no half "dominates"
    cap = find_caption(at, "All values of the batch.")
    assert "share one scale, x1" in cap
    # The invariance table is measured on this batch, and its caption lists its rows.
    open_section(at, "Invariances")
    clean(at)
    table = find_table(at, "transformation", "re-scale the weights W")
    direct = N.invariance_table(4, 16, 16, seed=0, big=1.0, small=1.0)
    rms = direct[direct["norm"] == "RMSNorm"].set_index(["transformation", "measured_on"])
    shown = table.set_index(["transformation", "measured_on"])["RMSNorm"]
    assert shown.to_numpy() == pytest.approx(
        rms.loc[shown.index, "max_abs_change"].to_numpy(), rel=1e-6, abs=1e-12
    )
    cap = find_caption(at, "max |output change| of each norm")
    for norm in N.INVARIANCE_NORMS:
        rows = direct[direct["norm"] == norm]
        part = cap.split(f"{norm}: ")[1].split(";")[0].split(". In exact")[0]
        if rows["invariant"].all():
            assert part == "every row"
        elif not rows["invariant"].any():
            assert part == "no row"
        else:
            assert len(part) > 0


def test_batch_dependence_caption_quotes_its_table(app):
    at = app(PAGE, section="Batch dependence").run()
    clean(at)
    summ = find_table(at, "scenario", "other samples x10")
    train = summ[summ["mode"] == "train"].set_index("scenario")["max_abs_change"]
    cap = find_caption(at, "The same token, normalized with different batch-mates")
    m = re.search(rf"other samples x10: {NUM};", cap)
    assert m and float(m[1]) == pytest.approx(train["other samples x10"], rel=5e-3)
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
    stats = find_table(at, "view", "LayerNorm", having="token_mean_absmax").set_index("view")
    v = N.apply_norms(N.scaled_batch(8, 16, 64, 10.0, 0.1, 0))
    direct = N.norm_stats(v).set_index("view")
    assert stats.loc["LayerNorm", "token_mean_absmax"] > 0
    assert stats.loc["LayerNorm", "token_mean_absmax"] == pytest.approx(
        direct.loc["LayerNorm", "token_mean_absmax"], rel=1e-9
    )
    at = open_section(at, "Pre-LN vs Post-LN")
    clean(at)
    summary = find_table(at, "variant", "Pre-LN", having="grad_norm_mean")
    assert (summary["grad_norm_mean"] != summary["grad_norm_mean"].round(4)).any()


def test_batchnorm_halves_are_called_alike_only_when_they_are(app):
    # Two samples of two tokens: BatchNorm's halves in sample 0 differ by 1.83 times;
    # the old caption said "so the halves come out alike" at every setting.
    at = app(PAGE, batch="2", tokens="2", d="16").run()
    clean(at)
    cap = find_caption(at, "Mean |value| of the left half")
    assert "come out alike" not in cap
    m = re.search(rf"the halves still differ: {NUM} times", cap)
    assert m and float(m[1]) == pytest.approx(1.83, abs=0.01)
    at = app(PAGE).run()
    assert "the halves come out alike (within a factor of 1.5)" in find_caption(
        at, "Mean |value| of the left half"
    )


def test_the_page_claims_no_real_activations_and_bn_axes_are_named(app):
    # The first three sections normalize a seeded Gaussian batch, not activations of
    # a model; BatchNorm normalizes each feature over the batch and its tokens.
    at = app(PAGE).run()
    clean(at)
    text = " ".join(m.value for m in at.markdown)
    assert "real activations" not in text
    assert N.VIEW_TITLES["BatchNorm"] == "BatchNorm (each feature over batch and tokens)"
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
    assert "once warmed up linearly to it over its first 50 steps" in text


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
    at = app(PAGE, section="Stability", s_steps="20", s_lr="0.1").run()
    at.button(key="stability:start").click().run()
    assert ui.jobs.REGISTRY.wait(120)
    at.run()
    clean(at)
    cap = find_caption(at, "The targets are fresh random numbers each step")
    runs = seen["stability_training"]
    short = 0
    for name, run in runs.groupby("variant"):
        n = len(run)
        if n < 10:
            short += 1
            assert f"{name} " in cap and f"(mean of its {n} steps)" in cap
    assert short, "no run stopped early at this learning rate"


def test_init_help_names_the_weights_it_is_true_of(app):
    # PyTorch's default LM head at d_model = 32 has a larger std than Xavier's; the old
    # help said every weight had a smaller one (tests/unit/recipes/test_norms.py).
    at = app(PAGE, section="Pre-LN vs Post-LN").run()
    helptext = at.selectbox(key="normalization:init").help
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
