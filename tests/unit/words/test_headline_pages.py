"""Each section's headline (resviz/<topic>/headline.py) for normalization, sinusoidal
encoding, the encoder playground and pretrained models: worded for NaN, Inf, ties,
zeros, negatives and one seed. The agreement phrase itself is tested in test_seeds.py:
here each topic's clause, compared through :mod:`tests.unit.words.agree`."""

import math

import pandas as pd
import pytest

from resviz.encoder import headline as E
from resviz.norms import headline as N
from resviz.norms import words as NW
from resviz.positional import headline as P
from resviz.pretrained import headline as T
from resviz.pretrained.stream.travel import travel
from resviz.words.headline import Figure
from tests.unit.words.agree import headline, split

INF, NAN = math.inf, math.nan


# ------------------------------------------------------------------------ normalization
def _halves(raw, ln, bn, rms):
    return pd.DataFrame(
        {"view": ["raw", "LayerNorm", "BatchNorm", "RMSNorm"], "ratio": [raw, ln, bn, rms]}
    )


def test_four_views_says_whether_batchnorm_evens_the_halves():
    h = N.four_views([_halves(100, 12, 1.0, 100), _halves(104, 10, 1.03, 97)], [0, 1])
    assert h.line == headline(
        "BatchNorm brings sample 0's two halves within a factor of 1.5; after RMSNorm the "
        "ratio is 97–100, after LayerNorm 10–12",
        [0, 1],
    )
    assert h.figures == (
        Figure("left half ÷ right half, raw", "100–104"),
        Figure("left half ÷ right half, BatchNorm", "1–1.03"),
    )
    # Inf, NaN and 0 among the ratios, and a split.
    h = N.four_views(
        [_halves(INF, NAN, 2.0, 0.0), _halves(1, 1, 0.5, 1), _halves(1, 1, 1, 1)], [0, 1, 2]
    )
    seeds = split("BatchNorm", {"further apart": [0, 1], "within 1.5": [2]})
    assert h.line == seeds[:-1] + "; after RMSNorm the ratio is 0–1, after LayerNorm 1 (and NaN)."
    assert h.figures[0].value == "1 (and Inf)"


def test_textbook_gap_against_the_misfit():
    assert N.textbook([0.04, 0.039], [1e-5, 1e-5], [0, 1]).line == headline(
        "the largest gap between the two LayerNorms is 0.039–0.04, as the formulas predict: "
        "not the same function",
        [0, 1],
    )
    assert N.textbook([1e-7], [1e-7], [0]).line == headline(
        "the two LayerNorms differ by at most 1e-7, too little to tell them apart", [0]
    )


def _table(counts):
    rows = [(norm, i < k) for norm, k in counts.items() for i in range(4)]
    return pd.DataFrame(rows, columns=["norm", "invariant"])


def test_invariances_count_the_rows_each_norm_ignores():
    norms = ("LayerNorm", "RMSNorm")
    same = [_table({"LayerNorm": 4, "RMSNorm": 2})] * 3
    assert N.invariances(same, norms, [0, 1, 2]).line == headline(
        "LayerNorm is invariant in 4 of the 4 rows, RMSNorm in 2", [0, 1, 2]
    )
    two = [_table({"LayerNorm": 4, "RMSNorm": 2}), _table({"LayerNorm": 4, "RMSNorm": 0})]
    assert N.invariances(two, norms, [0, 1]).line == split(
        "the counts of invariant rows",
        {"(LayerNorm 4, RMSNorm 2)": [0], "(LayerNorm 4, RMSNorm 0)": [1]},
    )


def _batch(seed, train, ev):
    rows = [
        (seed, "original batch", "train", 0.0),
        (seed, "redrawn", "train", train),
        (seed, "original batch", "eval", 0.0),
        (seed, "redrawn", "eval", ev),
    ]
    return pd.DataFrame(rows, columns=["seed", "scenario", "mode", "max_abs_change"])


def test_batch_dependence_modes_ties_and_nan():
    h = N.batch(pd.concat([_batch(0, 3.0, 0.0), _batch(1, 2.0, 0.0)]), [0, 1])
    assert h.line == headline(
        "the batch-mates move the token's output more in training mode than in eval mode", [0, 1]
    )
    assert h.figures == (
        Figure("largest change, train mode", "2–3"),
        Figure("largest change, eval mode", "0"),
    )
    assert N.batch(_batch(0, NAN, 0.0), [0]).line == headline(
        "a mode has no batch that can be normalized", [0]
    )
    assert N.batch(_batch(0, 0.0, 0.0).drop(columns="seed"), [0]).line == headline(
        "the batch-mates move the token's output as much in both modes", [0]
    )


def _stream(pre, post):
    rows = [("Pre-LN", b, v) for b, v in enumerate(pre)]
    rows += [("Post-LN", b, v) for b, v in enumerate(post)]
    return pd.DataFrame(rows, columns=["variant", "block", "sq_norm_per_dim"])


def test_prepost_says_how_the_pre_ln_stream_changes():
    h = N.prepost([_stream([1, 3, 6], [1, 1, 1]), _stream([1, 3, 6.5], [1, 1, 1.0001])], [0, 1], 2)
    assert h.line == headline(
        "Pre-LN's ||x_l||²/d grows 6–6.5 times over 2 layers; Post-LN's is 1 after every layer",
        [0, 1],
    )
    assert N.prepost([_stream([1, 1.1, 1.2], [1, 1, 1])], [0], 1).line == headline(
        "Pre-LN's ||x_l||²/d ends within a factor of 1.25 of its start over 1 layer; Post-LN's "
        "is 1 after every layer",
        [0],
    )
    # A stream from exactly 0 up grows by no finite factor; 0 to 0 is level.
    zero = N.prepost([_stream([0, 0, 1], [1, 1, 1]), _stream([2, 1, 0.5], [1, 1, 1])], [0, 1], 2)
    seeds = split("Pre-LN's stream", {"grows": [0], "falls": [1]})
    assert zero.line == seeds[:-1] + "; Post-LN's is 1 after every layer."
    flat = N.prepost([_stream([0, 0, 0], [1, 1, 1])], [0], 2)
    assert flat.line.startswith(
        "In the one seed run (seed 0) Pre-LN's ||x_l||²/d ends within a factor of 1.25"
    )


@pytest.mark.parametrize("end", [NAN, math.inf, -math.inf])
def test_prepost_headline_and_account_decide_a_stream_that_is_not_finite_alike(end):
    """Issue 46: a NaN stream was 'level' in the headline and 'not finite' in the account
    under it. Both now read one decision (norms.words.stream_outcomes)."""
    streams = [_stream([1, 2, end], [1, 1, 1]), _stream([1, 3, 6], [1, 1, 1])]
    h = N.prepost(streams, [0, 1], 2)
    assert h.line.startswith("The seeds split evenly on Pre-LN's stream:"), h.line
    assert "not finite in 1" in h.line and "grows in 1" in h.line, h.line
    account = NW.stream_seeds(streams, (0, 1), "Pre-LN's ||x_l||²/d")
    assert "not finite" in account and "grows" in account, account
    assert NW.stream_outcomes(streams)[2] == ["not finite", "grows"]
    one = N.prepost(streams[:1], [0], 2)
    assert one.line.startswith(
        "In the one seed run (seed 0) Pre-LN's ||x_l||²/d is not finite at an end"
    ), one.line


def _history(seed, without, with_, diverged=False):
    rows = []
    for name, losses, div in (
        ("Post-LN, no warm-up", without, diverged),
        ("Post-LN, warm-up 5", with_, False),
    ):
        rows += [(seed, name, i, x, div and i == len(losses) - 1) for i, x in enumerate(losses)]
    return pd.DataFrame(rows, columns=["seed", "variant", "step", "loss", "diverged"])


def test_warmup_lower_diverged_and_nothing_yet():
    both = pd.concat([_history(0, [3, 2, 1], [3, 2, 0.5]), _history(1, [3, 2, 1], [3, 2, 0.5])])
    assert N.warmup(both, 5).line == headline("Post-LN ends lower with warm-up", [0, 1])
    assert N.warmup(_history(0, [3, NAN], [3, 2, 0.5], diverged=True), 5).line == headline(
        "Post-LN diverges without warm-up only", [0]
    )
    assert N.warmup(_history(0, [], []), 5) is None


def test_cost_ratios_per_pass_and_a_zero_time():
    t = pd.DataFrame(
        {
            "norm": ["LayerNorm", "LayerNorm", "RMSNorm", "RMSNorm"],
            "pass": ["forward", "backward"] * 2,
            "median_ms": [1.0, 2.0, 0.5, 3.0],
        }
    )
    h = N.cost(t, "cpu")
    assert h.line == (
        "Timed on cpu just now, RMSNorm takes 0.5 times LayerNorm's time forward and 1.5 times "
        "backward."
    )
    assert h.figures[0] == Figure("RMSNorm ÷ LayerNorm, forward", "0.5")
    zero = N.cost(t.assign(median_ms=[0.0, 2.0, 0.0, 3.0]), "cuda")
    assert zero.figures[0].value == "not timed (LayerNorm at 0 ms)"  # never "NaN"
    assert zero.line == (
        "Timed on cuda just now, RMSNorm takes an untimed multiple forward and 1.5 times backward."
    )


def _stab(seed, losses, grads, diverged=()):
    """One seed's Stability history: per variant its losses and gradient norms."""
    rows = []
    for v, ls in losses.items():
        for i, (loss, g) in enumerate(zip(ls, grads[v], strict=True)):
            rows.append(dict(seed=seed, variant=v, step=i, loss=loss, grad_norm=g,
                             diverged=v in diverged and i == len(ls) - 1))  # fmt: skip
    return pd.DataFrame(rows)


NO_NORM = ["residual only", "neither"]
LOSS = {"residual only": [2, 9e9], "neither": [2, 5e8], "res + LN": [2, 1], "LN only": [2, 1]}
GRAD = {"residual only": [1, 1e5], "neither": [1, 1e4], "res + LN": [0.3, 0.3], "LN only": [1, 1]}


def test_stability_says_which_stacks_diverge_over_seeds():
    both = pd.concat([_stab(s, LOSS, GRAD, NO_NORM) for s in (0, 1, 2)])
    assert N.stability(both, NO_NORM).line == headline(
        "the stacks without a norm diverge and those with one do not", [0, 1, 2]
    )
    calm = {k: [2, 1] for k in LOSS}
    one = N.stability(_stab(4, calm, GRAD), NO_NORM)  # no divergence, 10^4+ times larger
    assert one.line == headline(
        "no stack diverges, and those without a norm draw gradients 10 or more times larger", [4]
    )
    tie = {k: [1.0, 1.0] for k in LOSS}  # equal gradients: no direction
    two = pd.concat([_stab(0, calm, tie), _stab(1, LOSS, GRAD, ["neither"])])
    assert N.stability(two, NO_NORM).line == split(
        "which stacks diverge",
        {"none diverges, gradients alike": [0], 'only "neither" diverges': [1]},
    )
    with_norm_only = {k: v for k, v in LOSS.items() if k not in NO_NORM}
    assert N.stability(_stab(0, with_norm_only, tie), NO_NORM).line == headline(
        "no stack diverges", [0]
    )
    assert N.stability(_stab(0, {}, {}), NO_NORM) is None


# ------------------------------------------------------------------ sinusoidal encoding
def test_table_matrix_and_waves():
    f = pd.DataFrame({"i": [0, 0, 1, 1], "frequency": [1.0, 1.0, 0.1, 0.1]})
    assert P.table(4, f).line == (
        "4 tokens, 4 columns: the first pair turns 1 rad per position, the last 0.1 rad."
    )
    assert P.table(1, f.iloc[:2]).line == (
        "1 token, 2 columns: one (sin, cos) pair, turning 1 rad per position."
    )
    assert P.matrix(100, 0.0049).line == (
        "Over 100 positions the first pair turns through 99 rad, the last through 0.0049 rad, "
        "2.02e4 times less: the waves slow from left to right."
    )
    assert P.matrix(2, 0.0).figures[1] == Figure("last pair turns (rad)", "0")
    assert P.waves(pd.DataFrame({"wavelength": [6.28, 62.8, 628]})).line == (
        "The wavelengths grow by the same factor from pair to pair: from 6.28 to 628 over 3 pairs."
    )
    assert P.waves(pd.DataFrame({"wavelength": [6.28]})).line == "One pair, of wavelength 6.28."


def test_relative_falls_or_rises_again():
    assert P.relative(1e-13, [], 100).line == (
        "PE(p)·PE(q) depends on p - q alone, to within 1e-13, and it falls at every step over "
        "these 100 offsets."
    )
    assert P.relative(0.0, [44, 50], 100).line == (
        "PE(p)·PE(q) depends on p - q alone, to within 0, but it rises again at 2 of 100 "
        "offsets (first at 44)."
    )


def test_alternatives_and_embeddings():
    norms = pd.DataFrame(
        {
            "seed": [0, 0, 1, 1] * 2,
            "position": [0, 9] * 4,
            "scheme": ["sinusoidal"] * 4 + ["integer index"] * 4,
            "norm": [16, 16, 16, 16, 0, 288, 0, 288],
        }
    )
    assert P.alternatives(norms, 512).line == (
        "The sinusoidal encoding's norm is sqrt(d/2) = 16 at every position; the integer "
        "index's grows as k·sqrt(d), to 288 at position 9."
    )

    def parts(tok, pos, total):
        rows = [(i, "token", x) for i, x in enumerate(tok)]
        rows += [(i, "position", x) for i, x in enumerate(pos)]
        rows += [(i, "sum", x) for i, x in enumerate(total)]
        return pd.DataFrame(rows, columns=["position", "part", "norm"])

    h = P.embeddings([parts([3, 4], [4, 3], [5, 5.5]), parts([3, 4], [4, 3], [5.1, 5])], [0, 1])
    assert h.line == (
        "Added, not concatenated: the sum's norm is within 1–5% of sqrt(||e||² + ||p||²) on "
        "average, at most 10% (over seeds 0-1)."
    )
    # All zeros: no gap can be measured.
    assert P.embeddings([parts([0], [0], [0])], [3]).figures == (
        Figure("mean gap", "NaN%"),
        Figure("largest gap", "NaN%"),
    )


# ------------------------------------------------------------------- encoder playground
def test_model_and_attention():
    assert E.model(1, 32, "9.1k", "1.2 MFLOP", 1).line == (
        "1 layer of width 32: 9.1k parameters, 1.2 MFLOP per forward pass over your 1 token."
    )
    att = pd.DataFrame({"seed": [0, 0, 1, 1], "weight": [0.5, 0.5, 0.9, 0.1]})
    assert E.attention(att, 2, 1, 1).line == (
        "In layer 1, head 1 the largest weight is 1–1.8 times uniform attention (1/2), over "
        "seeds 0-1."
    )
    assert E.attention(att.iloc[:2], 2, 2, 3).line.endswith("(1/2), in seed 0.")


def _enc_stream(seed, first, values):
    n = len(values)
    return pd.DataFrame(
        {
            "seed": seed,
            "block": range(1, n + 1),
            "sublayer": "attn",
            "input_norm": [first] + [NAN] * (n - 1),
            "stream_norm": values,
        }
    )


def test_stream_rises_stays_and_a_split_with_nan_zeros_and_negatives():
    two = pd.concat([_enc_stream(0, 1.0, [2, 4]), _enc_stream(1, 1.0, [2, 3])])
    assert E.stream(two).line == headline(
        "the mean token norm rises 3–4 times over 2 sublayers", [0, 1]
    )
    assert E.stream(_enc_stream(0, 1.0, [1.1, 1.2])).line == headline(
        "the mean token norm stays within a factor of 1.2 over 2 sublayers", [0]
    )
    odd = pd.concat(
        [_enc_stream(0, 1.0, [NAN, 4]), _enc_stream(1, 0.0, [0, 0]), _enc_stream(2, -1.0, [-2, -4])]
    )
    assert E.stream(odd).line == split(
        "the stream's norm", {"not finite": [0], "ends where it starts": [1], "falls": [2]}
    )


def _collapse(seed, values):
    rows = [(seed, v, has, b, d) for v, (has, ds) in values.items() for b, d in enumerate(ds)]
    return pd.DataFrame(rows, columns=["seed", "variant", "shortcuts", "block", "residual"])


def test_collapse_with_and_without_shortcuts():
    def four(a, b, c, d):
        return {
            "your model": (True, a),
            "your model, no shortcuts": (False, b),
            "attention only, shortcuts": (True, c),
            "attention only, no shortcuts": (False, d),
        }

    frames = [
        _collapse(0, four([0.8, 0.8], [0.8, 1e-15], [0.8, 0.7], [0.8, 0.0])),
        _collapse(1, four([0.8, 0.79], [0.8, 1e-15], [0.8, 0.7], [0.8, 0.0])),
    ]
    h = E.collapse(pd.concat(frames))
    assert h.line == headline(
        "the tokens end further from rank one with shortcuts than without, in your model and "
        "in attention alone",
        [0, 1],
    )
    assert h.figures[1] == Figure(
        "distance from rank one after block 1, your model, no shortcuts", "< 1e-13"
    )
    # Residuals off: the twin has the shortcuts; NaN and a distance under rounding.
    off = {
        "your model": (False, [0.8, 0.1]),
        "your model, shortcuts": (True, [0.8, 0.1]),
        "attention only, shortcuts": (True, [0.8, NAN]),
        "attention only, no shortcuts": (False, [0.8, 1e-20]),
    }
    assert E.collapse(_collapse(0, off)).line == headline(
        "your model's tokens end about as far from rank one with shortcuts as without; "
        "attention alone's cannot be compared with and without shortcuts (a value is not "
        "finite)",
        [0],
    )


def _race(seed, a, b):
    rows = [(seed, "your model", i, x) for i, x in enumerate(a)]
    rows += [(seed, "other", i, x) for i, x in enumerate(b)]
    return pd.DataFrame(rows, columns=["seed", "variant", "step", "loss"])


def test_loss_race_ties_inf_none_and_negatives():
    two = pd.concat([_race(0, [3, 1], [3, 2]), _race(1, [3, 1], [3, 1.02])])
    h = E.loss_race(two, "your model", "other")
    assert h.line == split("which model ends lower", {'"your model" lower': [0], "level": [1]})
    assert h.figures[1] == Figure("final loss, other (mean of the last 10 steps)", "2.01–2.5")
    assert E.loss_race(_race(0, [3, INF], [3, 2]), "your model", "other").line == headline(
        'a final loss of "your model" or "other" is not finite', [0]
    )
    assert E.loss_race(_race(0, [3], []), "your model", "other").figures == ()
    assert E.loss_race(_race(0, [-1, -2], [0, 0]), "your model", "other").line == headline(
        '"your model" ends with the lower loss', [0]
    )


# ------------------------------------------------------------------- pretrained models
def test_stream_norms_grow_shrink_or_stay():
    n = pd.DataFrame(
        {
            "variant": ["stream"] * 3 + ["final norm applied"] * 3,
            "block": [0, 1, 2] * 2,
            "median_norm": [2, 10, 60, 1, 1, 1],
        }
    )
    h = T.norms(n, 2, 3.5)
    assert h.line == (
        "The stream's median token norm grows 30 times over 2 blocks: from 2 (embeddings) to 60."
    )
    assert h.figures[1] == Figure("fitted factor per block, blocks 1-2", "3.5")
    assert len(T.norms(n, 2, NAN).figures) == 1  # no factor fitted
    down = n.assign(median_norm=[2, 1, 0.5, 1, 1, 1])
    assert "shrinks 4 times" in T.norms(down, 2, 0.7).line
    zero = n.assign(median_norm=[0, 1, 0, 1, 1, 1])
    assert T.norms(zero, 2, NAN).line == (
        "The stream's median token norm ends about where it starts over 2 blocks: from 0 "
        "(embeddings) to 0."
    )


def test_influence_similarity_deletion_and_lens():
    infl = pd.DataFrame({"block": [1, 2, 3], "influence": [0.4, 0.02, -0.01]})
    assert T.influence(infl).line == (
        "Block 1 turns the stream most (1 - cos = 0.4), block 3 least (-0.01)."
    )
    sim = pd.DataFrame(
        {"block_a": [0, 0], "block_b": [1, 2], "angular": [0.1, 0.42], "cos": [0.9, 0.25]}
    )
    assert T.similarity(sim, 2).figures == (
        Figure("angular distance, embeddings to block 2", "0.42"),
    )
    dele = pd.DataFrame({"block": [1, 2, 3], "accuracy_kept": [0.2, 0.9, 0.95]})
    assert T.deletion(dele, "accuracy_kept").line == (
        "Deleting block 1 costs the most: accuracy kept 0.2 (without block 3: 0.95)."
    )
    lens = pd.DataFrame({"answer_token": [" the"] * 3, "answer_prob": [1e-5, 0.01, 0.6]})
    assert T.lens(lens, 2, lambda t: f"`{t}`").line == (
        "The answer ` the` is the top token from block 2 on; its probability goes from 1e-5 "
        "(embeddings) to 0.6 (the output)."
    )


def test_pretrained_collapse_rounding_nan_and_one_token():
    def frame(w, wo):
        return pd.DataFrame(
            {
                "variant": ["with shortcuts", "no shortcuts"] * 2,
                "block": [0, 0, 4, 4],
                "residual": [0.9, 0.9, w, wo],
            }
        )

    def value(x):
        return "< 1e-6" if abs(x) < 1e-6 else f"{x:.3g}"

    assert T.collapse(frame(0.7, 1e-9), 10, value, 1e-6).line == (
        "With its shortcuts the model ends further from rank one than without them."
    )
    assert T.collapse(frame(0.0, 0.0), 10, value, 1e-6).line == (
        "With and without its shortcuts the distances are rounding."
    )
    assert T.collapse(frame(0.0, 0.0), 10, value).line == (
        "With its shortcuts the model ends about as far from rank one as without them."
    )
    assert T.collapse(frame(NAN, 0.1), 10, value).line == (
        "A distance is not finite: the two cannot be compared."
    )
    assert (
        T.collapse(frame(0.7, 0.1), 1, value).line == "One token is its own mean: no rank to lose."
    )


def test_sinks_attribution_and_patching():
    sinks = pd.DataFrame(
        {"block": [1, 1, 2, 2], "head": [1, 2, 1, 2], "first_token_share": [0.9, 0.2, 0.6, 0.5]}
    )
    massive = pd.DataFrame({"block": [0, 1, 2], "ratio": [3, 120, 40]})
    assert T.sinks(sinks, massive).line == (
        "2 of 4 heads put more than half their attention on the first token; the largest "
        "activation is 120 times the median (block 1)."
    )
    parts = pd.DataFrame(
        {
            "part": ["embeddings", "attention", "mlp", "attention", "mlp", "bias"],
            "label": ["x_0", "L1 attn", "L1 mlp", "L2 attn", "L2 mlp", "bias"],
            "logit": [1, -5, 2, 3, 0.5, 0.1],
            "share": [0.1, 0.2, NAN, -0.6, 0.1, NAN],
        }
    )
    assert T.attribution(parts, True).line == (
        "The largest single write to the logit (by size) is L1 attn's: -5."
    )
    assert T.attribution(parts, False).figures == (Figure("L2 attn, share", "-0.6"),)
    patched = pd.DataFrame(
        {"block": [0, 0, 1, 1, 2, 2], "position": [0, 1] * 3,
         "recovered": [1.0, 0.0, 0.2, 0.7, 0.0, 1.0]}
    )  # fmt: skip
    assert T.patching(travel(patched, [0], 1, 2)).line == (
        "The answer starts at the changed word (position 0); from block 1 on, patching the "
        "last position (position 1) recovers more of it than any changed word: 0.7 of the "
        "gap, against 0.2."
    )
