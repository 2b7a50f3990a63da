"""Each section's headline (resviz/<topic>/headline.py): the seeds' agreement in one short
line, worded for NaN, Inf, ties, zeros, negatives and one seed. Gradient flow and
skip connections here; the other pages in test_headline_pages.py. The agreement phrase
itself ("In 3 of 3 seeds", "The seeds disagree on") is tested in test_seeds.py: here
each topic's clause, compared through :mod:`tests.unit.words.agree`."""

import math

import pandas as pd

from resviz.core import Result
from resviz.gradients import headline as G
from resviz.shortcuts import headline as K
from resviz.words.headline import Figure, Headline
from tests.unit.words.agree import headline, sentence, split

INF, NAN = math.inf, math.nan


# ------------------------------------------------------------------ gradient flow
def test_per_layer_quotes_each_stack_and_the_median_gains():
    h = G.per_layer([-2.5, -2.4, -2.6], [0.4, 0.43, 0.41], [0, 1, 2], 10)
    assert h.line == headline(
        "the plain stack's gradient shrinks 250–400 times on its way back through 10 blocks; "
        "the residual stack's grows 2.5–2.7 times",
        [0, 1, 2],
    )
    assert h.figures == (
        Figure("||dL/dx_0|| / ||dL/dx_L||, plain (median of 3 seeds)", "0.00316"),
        Figure("||dL/dx_0|| / ||dL/dx_L||, residual (median of 3 seeds)", "2.57"),
    )
    # Negative gains of the residual stack (it shrinks), a plain stack that grows.
    assert G.per_layer([1.0, 2.0, 1.5], [-1.0, -0.5, -2], [0, 1, 2], 3).line == headline(
        "the plain stack's gradient grows 10–100 times on its way back through 3 blocks; the "
        "residual stack's shrinks 3.2–100 times",
        [0, 1, 2],
    )


def test_per_layer_one_seed_and_values_that_are_not_finite():
    h = G.per_layer([-2.5], [0.4], [0], 1, names=("plain: f(x)", "residual: x + f(x)"))
    assert h.line == headline(
        "the plain stack's gradient shrinks 320 times on its way back through 1 block; the "
        "residual stack's grows 2.5 times",
        [0],
    )
    assert [f.label for f in h.figures] == [
        "||dL/dx_0|| / ||dL/dx_L||, plain: f(x)",
        "||dL/dx_0|| / ||dL/dx_L||, residual: x + f(x)",
    ]
    # NaN, a gradient of exactly 0 (log10 -inf), Inf and a gain of exactly 1 (log10 0).
    h = G.per_layer([NAN, -INF, 0.0], [INF, 0.0, -1.0], [0, 1, 2], 5)
    assert h.line == split(
        "how the two gradients change",
        {
            "plain cannot be measured, residual overflows float64": [0],
            "plain shrinks, residual keeps its size": [1],
            "plain keeps its size, residual shrinks": [2],
        },
    )
    assert h.figures[0].value == "not finite"  # never "NaN" as a figure


def test_derivation_matches_differs_zero_and_nan():
    assert G.derivation([-9.03, -9.02, -9.031], -9.031, [0, 1, 2]).line == headline(
        "the measured gain at x_0 matches λ^L within 2.6%", [0, 1, 2]
    )
    topic = "whether the gain follows λ^L"
    assert G.derivation([-3.0, -3.1, -9.03], -9.031, [0, 1, 2]).line == split(
        topic, {"differs": [0, 1], "matches": [2]}
    )
    assert G.derivation([-3.0, -3.1], -9.031, [0, 1]).line == headline(
        "the measured gain at x_0 is 8.5e5–1.1e6 times λ^L", [0, 1]
    )
    # λ = 0: λ^L is exactly 0 (log10 -inf), the gain exactly 0 too, or not.
    assert G.derivation([-INF, -5.0], -INF, [0, 1]).line == split(
        topic, {"both 0": [0], "λ^L is 0, the gain not": [1]}
    )
    assert G.derivation([NAN], 0.0, [3], (Figure("a", "b"),)) == Headline(
        headline("the measured gain at x_0 is not finite: no comparison with λ^L", [3]),
        (Figure("a", "b"),),
    )


def _sweep(rows):
    return pd.DataFrame(rows, columns=["seed", "activation", "depth", "variant", "log10_gain"])


def test_sweep_compares_the_stacks_at_the_deepest_depth():
    rows = []
    for s in (0, 1):
        for act in ("tanh", "relu"):
            for d, (p, r) in ((1, (-0.1, 0.1)), (50, (-20, 0.3))):
                rows += [(s, act, d, "plain", p), (s, act, d, "residual", r)]
    h = G.sweep(_sweep(rows), "log10_gain", "gain", [0, 1], ("tanh", "sigmoid", "relu", "gelu"))
    assert h.line == headline(
        "the residual stack keeps the larger gain at depth 50, under both activations", [0, 1]
    )
    assert h.figures == (Figure("plain, depth 50", "1e-20"), Figure("residual, depth 50", "2"))


def test_sweep_zeros_nan_mixed_and_nothing_yet():
    # Both exactly 0 (log10 -inf) under tanh: level; NaN under relu: no comparison there.
    rows = [
        (0, "tanh", 5, "plain", -INF),
        (0, "tanh", 5, "residual", -INF),
        (0, "relu", 5, "plain", NAN),
        (0, "relu", 5, "residual", 1.0),
    ]
    h = G.sweep(_sweep(rows), "log10_gain", "gain", [0], ("tanh", "relu"))
    assert h.line == headline(
        "a gain at depth 5 is not finite, so the stacks cannot be compared there", [0]
    )
    assert h.figures[0].value == "0 (and NaN)"
    rows = [
        (0, "tanh", 5, "plain", 2.0),
        (0, "tanh", 5, "residual", -1.0),
        (0, "relu", 5, "plain", -3.0),
        (0, "relu", 5, "residual", 1.0),
    ]
    assert G.sweep(_sweep(rows), "log10_gain", "gain", [0], ("tanh", "relu")).line == headline(
        "which stack keeps the larger gain at depth 5 depends on the activation", [0]
    )
    assert (
        G.sweep(_sweep([(0, "tanh", 5, "plain", 1.0)]), "log10_gain", "g", [0], ("tanh",)) is None
    )


def _curves(spec):
    rows = []
    for seed, variant, losses, diverged in spec:
        for i, loss in enumerate(losses):
            rows.append((seed, variant, i, loss, diverged and i == len(losses) - 1))
    return pd.DataFrame(rows, columns=["seed", "variant", "step", "loss", "diverged"])


def test_training_says_which_run_ends_lowest():
    c = _curves(
        [
            (s, v, loss, False)
            for s in (0, 1)
            for v, loss in (("plain", [1, 0.5, 0.4]), ("res", [1, 0.2, 0.1]))
        ]
    )
    assert G.loss_race(c).line == headline('"res" has the lowest loss over its last steps', [0, 1])
    assert G.loss_race_words(c) == "Mean loss over each run's last 10 steps: " + sentence(
        '"res" has the lowest loss (plain: 0.633; res: 0.433)', [0, 1]
    )


def test_training_ties_divergence_nan_and_negative_losses():
    tie = _curves([(0, "plain", [1, 0.5, 0.4], False), (0, "res", [1, 0.5, 0.41], False)])
    assert G.loss_race(tie).line == headline("the two lowest runs end level, within 5%", [0])
    gone = _curves([(0, "plain", [1, NAN], True), (0, "res", [1, INF], True)])
    assert G.loss_race(gone).line == headline("every run diverged", [0])
    neg = _curves([(0, "plain", [1, -0.5], False), (0, "res", [1, 0.0], False)])
    assert G.loss_race_words(neg) == "Mean loss over each run's last 10 steps: " + sentence(
        '"plain" has the lowest loss (plain: 0.25; res: 0.5)', [0]
    )
    # A frame without a seed column is the given seed's.
    one = _curves([(0, "a", [2.0], False), (0, "b", [1.0], False)]).drop(columns="seed")
    assert G.loss_race(one, seed=4).line == headline(
        '"b" has the lowest loss over its last steps', [4]
    )


def test_shattered_says_which_net_is_smoother_at_the_deepest():
    lag = pd.DataFrame(
        {
            "seed": [0, 0, 1, 1],
            "depth": [2, 50, 2, 50],
            "plain lag-1 autocorrelation": [0.9, 0.01, 0.9, -0.02],
            "residual lag-1 autocorrelation": [0.9, 0.95, 0.9, 0.96],
        }
    )
    h = G.shattered(lag, [0, 1])
    assert h.line == headline("at depth 50 the residual net's df/dx is the smoother one", [0, 1])
    assert [f.value for f in h.figures] == ["-0.02 to 0.01", "0.95–0.96"]
    one = pd.DataFrame(
        {
            "depth": [50],
            "plain lag-1 autocorrelation": [NAN],
            "residual lag-1 autocorrelation": [0.5],
        }
    )
    assert G.shattered(one, [4]).line == headline(
        "at depth 50 a correlation is undefined (a constant gradient)", [4]
    )
    zero = one.assign(
        **{"plain lag-1 autocorrelation": [0.0], "residual lag-1 autocorrelation": [0.0]}
    )
    assert G.shattered(zero, [0]).line == headline(
        "at depth 50 the two nets' df/dx are about as smooth, within 5%", [0]
    )


# ------------------------------------------------------------------ skip connections
def test_stack_counts_the_shortcuts_by_kind():
    table = pd.DataFrame({"shortcut": ["none", "identity", "projection", "identity"]})
    assert K.stack(table).line == "3 of 4 blocks have a shortcut (2 identity, 1 projection)."
    assert K.stack(pd.DataFrame({"shortcut": ["none"] * 3})).line == (
        "None of the 3 blocks has a shortcut: every block outputs f(x) alone."
    )


def test_paths_count_and_mean_length():
    assert K.paths(16, 16) == Headline(
        "16 shortcuts unroll the 16 blocks into 2^16 paths; on average a path passes through "
        "8 of them.",
        (Figure("paths through the stack", "65,536"), Figure("mean path length", "8")),
    )
    assert K.paths(4, 1).line.startswith("1 shortcut unrolls the 4 blocks into 2^1 paths")
    assert K.paths(5, 0).line == "With no shortcut there is one path, through all 5 blocks."
    assert K.paths(64, 60).figures[0].value == "2^60"  # too long to spell out


def _signal(pairs, seeds):
    def frame(seed, plain, res):
        rows = [(seed, "plain", b + 1, v) for b, v in enumerate(plain)]
        rows += [(seed, "shortcut: add", b + 1, v) for b, v in enumerate(res)]
        return pd.DataFrame(rows, columns=["seed", "variant", "block", "norm"])

    frames = [frame(s, p, r) for s, (p, r) in zip(seeds, pairs, strict=True)]
    runs = tuple(Result({"signal": f.drop(columns="seed")}) for f in frames)
    if len(runs) == 1:
        return runs[0]
    return Result({"signal": pd.concat(frames)}, runs=runs, seeds=tuple(seeds))


def test_signal_says_where_each_stacks_norm_goes():
    h = K.signal(_signal([([3, 1, 0.3], [8, 50, 170]), ([3, 1, 0.4], [8, 40, 150])], [0, 1]), "add")
    assert h.line == headline(
        "the mean norm over 3 blocks falls 7.5–10 times without a shortcut and rises 19–21 "
        "times with it (add)",
        [0, 1],
    )
    assert h.figures == (
        Figure("mean norm after block 3, without a shortcut", "0.3–0.4"),
        Figure("mean norm after block 3, with the shortcut (add)", "150–170"),
    )
    assert K.signal(_signal([([3, 3.1, 3.2], [8, 8, 8])], [0]), "add").line == headline(
        "the mean norm over 3 blocks stays within a factor of 1.5 without a shortcut and stays "
        "within a factor of 1.5 with it (add)",
        [0],
    )


def test_signal_nan_inf_zeros_and_negatives_split_the_seeds():
    r = _signal([([3, NAN, 1], [8, INF, 8]), ([0, 0, 0], [-1, -2, -3])], [0, 1])
    h = K.signal(r, "add")
    assert h.line == split(
        "where the norm goes",
        {
            "not finite without a shortcut, not finite with it (add)": [0],
            "returns without a shortcut, falls with it (add)": [1],
        },
    )
    assert h.figures[1].value == "-3 to 8"


def _degradation(losses):
    rows = [(kind, depth, 100, loss) for (kind, depth), loss in losses.items()]
    return pd.DataFrame(rows, columns=["kind", "depth", "step", "loss"])


def test_degradation_says_what_depth_does_to_each_stack():
    curves = [
        _degradation(
            {("plain", 4): 0.1, ("plain", 16): 0.5, ("residual", 4): 0.1, ("residual", 16): 0.05}
        ),
        _degradation(
            {("plain", 4): 0.1, ("plain", 16): 0.5, ("residual", 4): 0.1, ("residual", 16): 0.1}
        ),
    ]
    h = K.degradation(curves, 4, 16, [0, 1])
    assert h.line == split(
        "what depth does",
        {
            "deeper plain worse, deeper residual better": [0],
            "deeper plain worse, deeper residual level": [1],
        },
    )
    assert h.figures == (
        Figure("final loss, plain, 16 blocks", "0.5"),
        Figure("final loss, residual, 16 blocks", "0.05–0.1"),
    )
    both = [curves[0], curves[0].copy()]
    assert K.degradation(both, 4, 16, [0, 1]).line == headline(
        "the 16-block plain stack ends above the 4-block one (degradation); the 16-block "
        "residual stack ends below its 4-block twin",
        [0, 1],
    )


def test_degradation_nan_zero_and_not_yet_evaluated():
    nan = _degradation(
        {("plain", 4): NAN, ("plain", 16): 0.5, ("residual", 4): 0.0, ("residual", 16): 0.0}
    )
    assert K.degradation([nan], 4, 16, [0]).line == headline(
        "the 16-block plain stack cannot be compared with the 4-block one; the 16-block "
        "residual stack ends level with its 4-block twin",
        [0],
    )
    h = K.degradation([_degradation({("plain", 4): 0.3})], 4, 16, [0])
    assert h.line.startswith(headline("the 16-block plain stack has no ", [0])[:-1])
    assert h.figures == ()


def _summary(plain, residual):
    cols = ["kind", "learned", "small_deletions", "deletions", "mean_drop"]
    return pd.DataFrame([("plain", *plain), ("residual", *residual)], columns=cols)


def test_lesion_says_each_stacks_verdict():
    summaries = [
        _summary((True, 0, 7, 0.6), (True, 7, 7, 0.01)),
        _summary((True, 0, 7, 0.5), (True, 7, 7, -0.02)),  # a deletion that helps: negative
    ]
    h = K.lesion(summaries, [0, 1])
    assert h.line == headline(
        "the plain stack suffers from every deleted block and the residual stack barely "
        "notices any deleted block",
        [0, 1],
    )
    assert [f.value for f in h.figures] == ["50–60", "-2 to 1"]
    assert K.lesion([_summary((False, 0, 7, 0.0), (True, 3, 7, 0.1))], [5]).line == headline(
        "the plain stack did not learn the task and the residual stack minds some deleted "
        "blocks, not others",
        [5],
    )
