"""The normalization page's whole accounts (resviz.norms.words, training_words,
headline): each is tested here once, on what it adds to the sentences it joins (those
are tested in test_words.py): the numbers it quotes from the frames and settings, on
both outcomes, NaN, inf, ties, zeros, negatives and a single seed."""

import math

import pandas as pd
import pytest

from resviz.core import Result, combine
from resviz.norms import headline as H
from resviz.norms import training_words as NT
from resviz.norms import words as NW
from resviz.norms.settings import Inputs, Warmup
from resviz.norms.training import warmup_models
from resviz.words.seeds import band_words
from tests.unit.norms.test_words import _history, _stability, _stream

NAN, INF = float("nan"), float("inf")


def test_seeds_words_name_one_seed_or_the_range():
    assert NW.seeds_words((7,)) == "seed 7"
    assert NW.seeds_words((0, 1, 2)) == "lowest to highest over seeds 0-2"
    assert NW.seeds_words((1, 3)) == "lowest to highest over seeds 1, 3"


def test_live_and_stopped_captions_count_the_seeds():
    assert NT.seeds_progress_words((0, 1), 3) == (
        "Training seed 1 (2 of 3); the curves hold seeds 0-1 so far."
    )
    notebook = (
        "The notebook of this section reproduces a finished run: run it to the end to download it."
    )
    assert NT.stopped_words((0,), 3) == [
        "Stopped with seed 0 of the 3 seeds asked for: the sentences above count only those.",
        notebook,
    ]
    # Every seed asked for ran (one seed, or all of them): only the notebook's line.
    assert NT.stopped_words((4,), 1) == [notebook]
    assert NT.stopped_words((0, 1), 2) == [notebook]


def test_four_views_intro_and_histograms_quote_the_batch():
    inputs = Inputs(batch=4, tokens=2, d="16", big="100", small="0.01")
    intro = NW.four_views_intro(inputs, 3)
    assert intro.startswith(
        "Gaussian input of 4 samples x 2 tokens x 16 features; features 0 to 7 multiplied by "
        "100, the rest by 0.01. The heatmaps show sample 0 of seed 3's batch"
    )
    views = ["raw", "LayerNorm", "BatchNorm", "RMSNorm"]
    stats = pd.DataFrame({"view": views, "abs_max": [250.0, 0.0, -1.0, NAN], "seed": 0})
    both = NW.histograms_account(stats, inputs, (0,))
    assert both.startswith("All values of seed 0's batch. Raw values mix two scales, x100 and ")
    assert both.endswith(f"after each (seed 0): {NW.abs_max_words(stats)}.")
    same = NW.histograms_account(stats, Inputs(big="1", small="1"), (2, 3))
    assert "Raw values share one scale, x1. " in same
    assert f"(lowest to highest over seeds 2-3): {NW.abs_max_words(stats)}." in same


def _textbook(seed: int, measured: float, fit: float, sigma: float, eps: float) -> Result:
    values = dict(
        n=64,
        factor=math.sqrt(63 / 64),
        measured_max=measured,
        predicted_max=measured,
        approx_max=measured,
        fit=fit,
        sigma_min=sigma,
        eps_bound=eps,
    )
    return Result({"gap": pd.DataFrame({"token": [0], "gap": [measured]})}, values)


def test_textbook_account_quotes_the_extremes_over_the_seeds():
    runs = [_textbook(0, 0.04, 1e-6, 0.5, 2e-5), _textbook(1, 0.05, 3e-6, 0.25, 4e-5)]
    r = combine(runs, (0, 1))
    got = NW.textbook_account(r)
    # sqrt(63/64) = 0.99216; the smallest sigma, the largest bound, fit and gap.
    assert "(n - 1 = 63)" in got and "sqrt((n-1)/n) = 0.99216" in got
    assert "σ = 0.25, that is at most 4e-5" in got
    assert "differ by at most 3e-6, against a gap of up to 0.05. " in got
    assert got.endswith(
        NW.textbook_seeds([0.04, 0.05], [1e-6, 3e-6], (0, 1)) + " " + band_words((0, 1))
    )
    # One seed, a zero gap, a NaN fit: quoted as they are, and the one-seed band.
    one = NW.textbook_account(combine([_textbook(5, 0.0, NAN, 0.0, INF)], (5,)))
    assert "σ = 0, that is at most Inf" in one and "a gap of up to 0. " in one
    assert one.endswith("One run (seed 5): raise Seeds in the sidebar to see the spread.")
    figures = H.textbook_figures(r)
    assert [f.value for f in figures] == ["0.04–0.05"] * 3


def test_prepost_accounts_quote_the_raw_input_and_the_streams():
    runs = [
        Result({"stream": _stream([1, 3]), "raw_stream": _stream([1.5, 4.5]), "grads": None}),
        Result({"stream": _stream([1, 2]), "raw_stream": _stream([1.4, 1.5]), "grads": None}),
    ]
    r = Result({"stream": pd.concat([x.stream for x in runs])}, {}, tuple(runs), (0, 1))
    raw = H.prepost_raw_account(r, 1)
    assert "the input's ||x₀||²/d is 1.4–1.5 for this model (lowest to highest over " in raw
    subject = "under PyTorch's default init the Pre-LN stream's ||x_l||²/d over 1 layer(s)"
    assert raw.endswith(NW.stream_seeds([x.raw_stream for x in runs], (0, 1), subject))
    stream = H.prepost_stream_account(r)
    assert "in every seed it is 1 after every layer." in stream
    assert stream.endswith(band_words((0, 1)))


def test_cost_account_counts_the_calls():
    timing = pd.DataFrame(
        {
            "norm": ["LayerNorm", "RMSNorm"] * 2,
            "pass": ["forward"] * 2 + ["backward"] * 2,
            "median_ms": [2.0, 1.0, 4.0, 4.0],
            "repeats": [7] * 4,
        }
    )
    got = NW.cost_account(timing, "cpu")
    assert got.startswith("Measured on cpu just now: 7 timed calls after one warm-up")
    assert f"Here RMSNorm took {NW.cost_words(timing)}. " in got


def test_warmup_intro_and_account():
    cfg = warmup_models(2)["Post-LN"]
    long_warm = Warmup(w_layers=2, w_steps=20, w_warm=150, w_lr="0.015")
    intro = NT.warmup_intro(long_warm, cfg)
    assert f"(2 layers, d = {cfg.d_model}, {cfg.n_heads} heads)" in intro
    assert f"(vocabulary {cfg.vocab_size}, batch 16 x 16)" in intro
    assert (
        f"rate of 0.015, once at that rate from step 0 and {NT.schedule_words(0.015, 20, 150)}."
        in intro
    )
    history = pd.concat([_history(0, [4, 2, 1], [4, 3, 2]), _history(1, [4, 2, 1], [4, 3, 2])])
    r = Result({"history": history}, {"vocab_size": 64, "w_warm": 10}, (), (0, 1))
    got = NT.warmup_account(r)
    # log 64 = 4.1589: two decimals.
    assert got.startswith("Guessing uniformly costs log 64 = 4.16. " + NT.warmup_seeds(history, 10))
    assert NT.divergence_words(history) in got and got.endswith(band_words((0, 1)))


def test_stability_account_and_presets():
    history = _stability(0, {"neither": ([1, 1e9], 1e9, True), "LN": ([1, 1], 1, False)})
    r = Result({"history": history}, {}, (), (0,))
    got = NT.stability_account(r, ["neither"], "0.1")
    assert got.startswith(NT.stability_finding(history, ["neither"]) + " The targets are")
    assert got.endswith(f"At learning rate 0.1: {NT.divergence_words(history)}")
    assert NT.start_end_words(history) in got
    presets = NT.stability_presets(
        {"s_lr": "0.1", "s_steps": 60}, {"s_lr": "0.001", "s_steps": 100}
    )
    assert "(Post-LN), learning rate 0.1, 60 steps." in presets
    assert "(Pre-LN), learning rate 0.001, 100 steps." in presets


@pytest.mark.parametrize("n", [1, 3])
def test_batch_account_quotes_the_table(n):
    from resviz.recipes import norms

    r = norms.batch_dependence(seeds=n)
    got = NW.batch_account(r)
    assert f"(batch {r.batch_size} x {r.seq_len} tokens x {r.d_model} features" in got
    assert f"({NW.seeds_words(r.seeds)}): {NW.batch_change_words(r.summary, 'train')}. " in got
    assert got.endswith(f"original batch: {NW.batch_change_words(r.summary, 'eval')}.")
