"""The normalization page's recipes (resviz.recipes.norms): each returns what the
library computes at the section's settings; each wording function
(resviz.words.norms) says what its frame holds, on both outcomes."""

import math
import re

import pandas as pd
import pytest
import torch

from resviz import norms as N
from resviz.hooks import capture
from resviz.recipes import RECIPES
from resviz.recipes import norms as R
from resviz.recipes.core import settings_of
from resviz.words import norms as W
from ui.specs.normalization import SPEC

NUM = r"(-?\d+(?:\.\d+)?(?:e-?\d+)?)"


@pytest.fixture(autouse=True)
def one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def test_every_section_has_a_recipe_taking_the_page_settings():
    assert set(SPEC.recipes) == set(SPEC.sections)
    for name in SPEC.recipes.values():
        assert set(settings_of(RECIPES[name])) - {"seed"} <= SPEC.names, name


def test_four_views_are_the_library_frames_and_the_halves_of_sample_0():
    r = R.four_views(batch=4, tokens=8, d=16, big=100.0, small=0.01, seed=2)
    v = N.apply_norms(N.scaled_batch(4, 8, 16, 100.0, 0.01, 2))
    pd.testing.assert_frame_equal(r.views, N.norm_views(v, 0))
    h = r.halves.set_index("view")
    for view in N.VIEWS:
        first, second = N.half_means(r.views, view)
        assert h.loc[view, "ratio"] == pytest.approx(first / second)
    # abs_max is the largest |value| of each view.
    assert r.stats.set_index("view").loc["raw", "abs_max"] == pytest.approx(
        float(v["raw"].abs().max())
    )
    # RMSNorm divides each row by one positive number: the halves' ratio inside every
    # row is kept (what the caption says), though the sample's ratio moves.
    raw, rms = v["raw"][0].double(), v["RMSNorm"][0].double()
    per_row = lambda t: t[:, :8].abs().mean(1) / t[:, 8:].abs().mean(1)  # noqa: E731
    assert torch.allclose(per_row(rms), per_row(raw), rtol=1e-5)


def test_batchnorm_halves_are_worded_from_the_ratio():
    alike = R.four_views(seed=0)
    assert W.bn_halves_words(alike.halves).startswith("so in sample 0 the halves come out alike")
    # Two samples of two tokens: sample 0 is half the batch and its halves differ
    # by a factor of 1.83 (the old caption called them alike at every setting).
    small = R.four_views(batch=2, tokens=2, d=16, seed=0)
    ratio = float(small.halves.set_index("view").loc["BatchNorm", "ratio"])
    assert not 1 / 1.5 <= ratio <= 1.5
    words = W.bn_halves_words(small.halves)
    assert words.startswith("yet in sample 0 the halves still differ")
    assert float(re.search(rf"differ: {NUM} times", words)[1]) == pytest.approx(ratio, rel=5e-3)


def test_textbook_values_and_the_eps_bound():
    r = R.textbook(d="32", seed=1)
    wide = N.layernorm_gap(N.scaled_batch(8, 16, 32, 10.0, 0.1, 1))
    assert r.measured_max == pytest.approx(wide["measured"].max())
    assert r.factor == pytest.approx(math.sqrt(31 / 32))
    assert set(r.gap["what"]) == {"measured", "predicted"} and len(r.gap) == 2 * len(wide)
    # The measured gap is the formula's within the eps bound times the largest output.
    assert r.fit <= 2 * r.eps_bound * 5 + 1e-6
    assert r.measured_max > 100 * r.fit  # a real difference, not rounding


def test_invariant_rows_name_the_rows_of_the_table():
    r = R.invariances(seed=0)
    assert W.invariant_rows(r.table, "LayerNorm") == "every row"
    assert W.invariant_rows(r.table, "BatchNorm (eval)") == (
        "add a constant to sample 0 (on the other samples), replace samples 1.. by new draws "
        "(on sample 0)"
    )
    t = r.table[r.table["norm"] == "RMSNorm"]
    recentre = t[t["transformation"] == "re-centre the weights W"]["invariant"].item()
    assert not recentre and "re-centre the weights W" in W.invariant_rows(r.table, "RMSNorm")


def test_batch_dependence_words_quote_the_summary():
    r = R.batch_dependence(seed=1)
    s = r.summary.set_index(["mode", "scenario"])["max_abs_change"]
    words = W.batch_change_words(r.summary, "train")
    m = re.search(rf"other samples x10: {NUM}", words)
    assert float(m[1]) == pytest.approx(s["train", "other samples x10"], rel=5e-3)
    assert "batch of 1 token: cannot be normalized" in words
    # Eval mode uses fixed running statistics: nothing moves, exactly.
    assert (s["eval"] == 0).all()
    assert set(r.train["feature"]) == set(range(16))


def test_prepost_words_follow_the_stream():
    r = R.prepost_ln(layers=3, d_model="32", init="default", seed=0)
    post = r.stream[(r.stream["variant"] == "Post-LN") & (r.stream["block"] > 0)]
    assert (post["sq_norm_per_dim"] - 1).abs().max() < 1e-4
    assert W.post_ln_words(r.stream) == "is 1 after every layer"
    tilted = r.stream.assign(sq_norm_per_dim=[1, 0.9, 0.95, 1.2] * 2)
    assert W.post_ln_words(tilted) == "lies between 0.9 and 1.2 after its layers"
    assert W.deepest_ratios(R.prepost_ln(layers=1, seed=0).summary).startswith("Only L = 1")


def test_the_default_init_is_smaller_in_attention_and_ffn_not_in_the_head():
    """The init help text: PyTorch's default init has a smaller std than Xavier's in every
    attention and FFN weight (not in the LM head at d_model = 32, which the old text
    included), and each Pre-LN sublayer then adds less to the stream."""
    for d in (32, 64, 128):
        models = {
            init: N.xiong_encoder(N.xiong_config(4, d, "pre", 0, init))
            for init in ("xavier", "default")
        }
        stds = {
            init: {n: float(w.detach().std()) for n, w in m.named_parameters() if w.dim() == 2}
            for init, m in models.items()
        }
        for name in stds["xavier"]:
            if ".attn." in name or ".ffn." in name:
                assert stds["default"][name] < stds["xavier"][name], (d, name)
        head = stds["default"]["head.weight"] > stds["xavier"]["head.weight"]
        assert head == (d == 32)
        out = {}
        for init, m in models.items():
            x = N.xiong_inputs(m.eval(), 8, 32, 0)
            ids, patch = torch.zeros(x.shape[:2], dtype=torch.long), {"blocks.0.resid_pre": x}
            names = [f"blocks.{i}.{k}" for i in range(4) for k in ("attn_out", "ffn_out")]
            acts = capture(m, ids, names, patch=patch)
            out[init] = {n: float(acts[n].pow(2).sum(-1).mean()) for n in names}
        assert all(out["default"][n] < out["xavier"][n] for n in out["xavier"]), d


# ------------------------------------------------------------------- training words
def _runs(rows: list[tuple[str, int, float, bool]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["variant", "step", "loss", "diverged"])


def test_warmup_words_compare_runs_at_a_step_both_reached():
    # Live: the run without warm-up has finished 3 steps, the warmed-up one is at
    # step 1. The old caption compared their last rows, step 2 against step 1.
    runs = _runs(
        [
            ("Post-LN, no warm-up", 0, 4.0, False),
            ("Post-LN, no warm-up", 1, 3.0, False),
            ("Post-LN, no warm-up", 2, 1.0, False),
            ("Post-LN, warm-up 10", 0, 4.0, False),
            ("Post-LN, warm-up 10", 1, 3.5, False),
        ]
    )
    words = W.warmup_words(runs, 10)
    assert words == (
        "Post-LN at step 1, the last both runs have reached: without warm-up 3, with 3.5. "
    )
    done = pd.concat([runs, _runs([("Post-LN, warm-up 10", 2, 0.5, False)])])
    words = W.warmup_words(done, 10)
    assert words == "Post-LN: with ends lower (0.5 against 1 for without warm-up). "
    diverged = runs.assign(diverged=[False, False, True, False, False])
    words = W.warmup_words(diverged, 10)
    assert words == "Post-LN: without warm-up diverged at step 2; with warm-up ends at 3.5. "


def test_schedule_words_say_when_the_warm_up_outlasts_the_run():
    assert (
        W.schedule_words(0.015, 150, 50) == "once warmed up linearly to it over its first 50 steps"
    )
    words = W.schedule_words(0.015, 20, 150)
    assert "reaches only 0.002" in words and "20-step run" in words
    # The trainer's schedule: lr * min(1, (t + 1) / warmup) at step t.
    r = R.warmup(w_layers=2, w_lr=0.015, w_steps=20, w_warm=150, seed=0)
    warmed = r.runs[r.runs["variant"] == "Post-LN, warm-up 150"]
    assert warmed["lr"].max() == pytest.approx(0.002)


def test_start_end_words_count_the_steps_a_run_had():
    runs = _runs(
        [("a", s, 2.0, False) for s in range(12)] + [("b", s, 1.0 + s, s == 2) for s in range(3)]
    )
    words = W.start_end_words(runs)
    assert words == (
        "Loss at the first step, then its mean over the last 10 steps: a 2 to 2; "
        "b 1 to 2 (mean of its 3 steps)."
    )


def test_cost_is_timed_on_the_seeded_input():
    r = R.cost(t_size="16x128x256", seed=1)
    assert list(r.timing.columns) == [
        "norm",
        "pass",
        "median_ms",
        "min_ms",
        "max_ms",
        "repeats",
        "elements",
    ]
    assert (r.timing["elements"] == 16 * 128 * 256).all() and (r.timing["repeats"] == 7).all()
    assert W.cost_words(r.timing).count("LayerNorm's time") == 2
    with pytest.raises(ValueError):
        R.cost_size("16x128")
