"""Timings of the experiments behind each page's default view (pytest-benchmark).

Run with ``make bench``; figures go to benchmarks/RESULTS.md by hand, with the
machine they came from. Nothing here asserts on time.
"""

import dataclasses

import resviz as rv

STACK = rv.StackConfig()
ENCODER = rv.EncoderConfig(n_layers=12, d_model=128, n_heads=4, d_ff=512)
STABILITY = rv.StackConfig(depth=4, width=128, block="ffn", activation="gelu", norm="layer")


def test_gradient_norms_default(benchmark):
    benchmark(rv.train.gradient_norms, STACK)


def test_forward_signal_default(benchmark):
    benchmark(rv.shortcuts.forward_decomposition, rv.StackConfig(depth=16, activation="relu"))


def test_stream_norms_12_layers(benchmark):
    benchmark(rv.train.stream_norms, ENCODER)


def test_train_compare_stability_2x2(benchmark):
    variants = {
        f"res={r},ln={n}": dataclasses.replace(
            STABILITY, residual="add" if r else "none", norm="layer" if n else "none"
        )
        for r in (True, False)
        for n in (True, False)
    }
    benchmark.pedantic(rv.train_compare, args=(variants,), kwargs={"steps": 100}, rounds=3)
