"""The replication cards' twins and intervals (issue 34): on random models of every
family no card says training made a finding; on the Sonnets GPT-2 each card's verdict
holds over 10 held-out windows; each card's statistic is the figure its frame shows, and
the deletion's and similarity's inputs match transformers' own forward pass."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("transformers")

import torch  # noqa: E402

from resviz import pretrained as P  # noqa: E402
from resviz.pretrained import recipes as R  # noqa: E402
from resviz.pretrained.replication import cards  # noqa: E402
from resviz.pretrained.replication import evidence as E  # noqa: E402
from tests.pretrained_tiny import FAMILY_CONFIGS, TEXT, save_tiny  # noqa: E402

FRAMES = {
    "stream_norms": P.stream_norms,
    "block_influence": P.block_influence,
    "layer_similarity": P.layer_similarity,
    "layer_deletion": P.layer_deletion,
    "logit_lens": P.logit_lens,
    "rank_collapse": P.rank_collapse,
    "attention_sinks": P.attention_sinks,
    "massive_activations": P.massive_activations,
}


def all_cards(m, tw, text):
    """Every card of ``m`` on ``text`` beside its twin ``tw`` (keys the model has)."""
    tr, tt = P.trace(m, text), P.trace(tw, text)
    out = {}
    for key, frame_of in FRAMES.items():
        if key == "logit_lens" and not m.decoder:
            continue
        if key == "layer_deletion" and m.unembedding is None:
            continue
        ev, te = R.EVIDENCE[key](tr), R.EVIDENCE[key](tt)
        out[key] = (cards.card(key, frame_of(tr), m, ev, te), ev, frame_of(tr))
    return out


@pytest.fixture(scope="module")
def random_families(tmp_path_factory):
    """Every family as a random model (seeds 1 and 2) with its twin (seed 0)."""
    root = tmp_path_factory.mktemp("twins")
    got = {}
    for family in FAMILY_CONFIGS:
        for seed in (1, 2):
            m = P.load(save_tiny(family, root / f"{family}{seed}", seed=seed))
            got[family, seed] = all_cards(m, P.random_twin(m, 0), TEXT[:300])
    return got


@pytest.mark.slow
def test_no_card_credits_training_on_random_weights(random_families):
    said = {}
    for (family, seed), got in random_families.items():
        assert set(got) >= {"stream_norms", "block_influence", "rank_collapse"}, family
        for key, (card, _, _) in got.items():
            said[family, seed, key] = card.outcome
            assert card.outcome in cards.OUTCOMES
            assert card.outcome != cards.TRAINING, (family, seed, key, card.verdict)
            assert "agrees, and training made it" not in card.verdict
            assert card.twin and card.interval and card.equation
    # Random weights still show findings: architecture at work, said as such.
    assert cards.ARCHITECTURE in said.values()


def test_the_twin_is_seeded_and_leaves_torch_alone():
    m = P.load(P.tiny_gpt2_path())
    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    a, b, c = P.random_twin(m, 0), P.random_twin(m, 0), P.random_twin(m, 1)
    assert torch.equal(torch.rand(1), before)  # the process's random state is untouched
    k = "transformer.h.0.attn.c_attn.weight"
    pa, pb, pc = (dict(t.model.named_parameters())[k] for t in (a, b, c))
    assert torch.equal(pa, pb) and not torch.equal(pa, pc)
    # GPT-2's own init: N(0, 0.02); the trained weights are not it.
    assert float(pa.std()) == pytest.approx(0.02, rel=0.02)
    assert a.model.config.to_dict() == m.model.config.to_dict()
    assert a.tokenizer is m.tokenizer and a.n_params == m.n_params


HELD_OUT_WINDOWS, WINDOW = 10, 128


@pytest.fixture(scope="module")
def sonnet_windows():
    m = P.load(P.tiny_gpt2_path())
    tw = P.random_twin(m, 0)
    ids = m.tokenizer(P.sonnets_split()[1])["input_ids"]
    assert len(ids) >= HELD_OUT_WINDOWS * WINDOW
    texts = [
        m.tokenizer.decode(ids[i * WINDOW : (i + 1) * WINDOW]) for i in range(HELD_OUT_WINDOWS)
    ]
    return m, [all_cards(m, tw, t) for t in texts]


@pytest.mark.slow
@pytest.mark.parametrize("key", list(FRAMES))
def test_verdicts_hold_over_held_out_windows(sonnet_windows, key):
    """No window decides against another: "agrees" and "differs" never both occur
    (undecided may sit beside either)."""
    _, windows = sonnet_windows
    decided = {w[key][0].agrees for w in windows} - {None}
    assert len(decided) <= 1, [w[key][0].verdict for w in windows]
    for w in windows:
        card, ev, _ = w[key]
        assert str(WINDOW - (key in ("layer_deletion", "attention_sinks"))) in ev.basis


def test_each_statistic_is_its_frames_figure(sonnet_windows):
    m, windows = sonnet_windows
    got = windows[0]
    L = m.n_layers
    norms = got["stream_norms"]
    assert norms[1].value == pytest.approx(P.norm_growth(norms[2]), rel=1e-9)
    infl = got["block_influence"][2].set_index("block")["influence"]
    first, deep = infl[infl.index <= L / 2].min(), infl[infl.index > L / 2].min()
    assert got["block_influence"][1].value == pytest.approx(first - deep, rel=1e-9)
    sim = got["layer_similarity"][2].pivot(index="block_a", columns="block_b", values="angular")
    spans = [float(sim.loc[a, a + 1]) for a in range(L)]
    assert got["layer_similarity"][1].value == pytest.approx(
        min(spans[: L // 2]) - min(spans[L // 2 :]), rel=1e-9
    )
    dele = got["layer_deletion"][2]
    middle = dele[(dele["block"] > 1) & (dele["block"] < L)]["accuracy_kept"]
    assert got["layer_deletion"][1].value == pytest.approx(float(middle.median()), rel=1e-9)
    lens = got["logit_lens"][2]["agreement"].to_numpy()
    assert got["logit_lens"][1].value == pytest.approx(lens[L - 1] - lens[0], rel=1e-9)
    rc = got["rank_collapse"][2]
    last = rc[rc["block"] == L].set_index("variant")["residual"]
    ratio = last["no shortcuts"] / last["with shortcuts"]
    assert got["rank_collapse"][1].value == pytest.approx(ratio, rel=1e-6)
    sinks = got["attention_sinks"][2]
    share = float((sinks[sinks["block"] > 2]["first_token_share"] > 0.5).mean())
    assert got["attention_sinks"][1].value == share
    massive = got["massive_activations"][2]
    orders = math.log10(float(massive["ratio"].max()))
    assert got["massive_activations"][1].value == pytest.approx(orders, rel=1e-9)


def test_inputs_match_transformers_own_forward():
    """The deletion's full-model right predictions are transformers' own argmax against
    the next token; the similarity's last-token angular distance is arccos/pi of
    transformers' hidden states (x_l for l < L: before the final norm)."""
    m = P.load(P.tiny_gpt2_path())
    tr = P.trace(m, R.DEFAULT_TEXT)
    _, correct = P.layer_deletion_correct(tr)
    with torch.inference_mode():
        out = m.model(input_ids=tr.ids[None], output_hidden_states=True)
    own = (out.logits[0].argmax(-1)[:-1] == tr.ids[1:]).numpy()
    assert np.array_equal(correct[0], own) and 0 < own.sum() < own.size
    hs = out.hidden_states
    a, b = hs[1][0, -1].double(), hs[2][0, -1].double()
    d = math.acos(float(a @ b / (a.norm() * b.norm()))) / math.pi
    ang = E.angular(tr.stream, 1)
    assert float(ang[1, -1]) == pytest.approx(d, rel=1e-6)
    assert 0 < d < 0.5


@pytest.mark.parametrize(
    ("low", "high", "value", "want"),
    [(0.8, 0.9, 0.85, True), (0.5, 0.7, 0.6, False), (0.96, 1.2, 1.0, False),
     (0.6, 0.8, 0.75, None), (0.5, 1.2, 0.8, None), (-math.inf, math.inf, 0.8, None),
     (math.nan, math.nan, 0.8, None), (0.72, 0.95, math.nan, None), (0.72, 0.72, 0.72, True)],
)  # fmt: skip
def test_judge_on_edges(low, high, value, want):
    band = E.Band(0.72, 0.95)
    assert E.judge(E.Evidence(value, low, high, 10, "10 tokens"), band) is want


def test_open_edges_and_ties():
    pos = E.Band(0, math.inf, open_low=True)
    assert E.judge(E.Evidence(0.0, 0.0, 0.0, 9, "9 tokens"), pos) is False  # a tie is not "lower"
    assert E.judge(E.Evidence(0.1, -0.1, 0.2, 9, "9 tokens"), pos) is None
    assert E.judge(E.Evidence(0.1, 0.05, math.inf, 9, "9 tokens"), pos) is True


@pytest.mark.parametrize("n", [0, 1, 2, 7])
def test_a_text_too_short_decides_nothing(n):
    """Under 8 positions no interval decides, however far inside or outside the band
    (one or two tokens give an interval of zero width); the card says why."""
    band = E.Band(0.72, 0.95)
    assert E.judge(E.Evidence(0.85, 0.85, 0.85, n, f"{n} tokens"), band) is None
    assert E.judge(E.Evidence(0.1, 0.1, 0.1, n, f"{n} tokens"), band) is None
    assert E.judge(E.Evidence(0.85, 0.85, 0.85, 8, "8 tokens"), band) is True
    m = P.load(P.tiny_gpt2_path())
    if n < 2:
        return
    tr = P.trace(m, m.tokenizer.decode(m.tokenizer(R.DEFAULT_TEXT)["input_ids"][:n]))
    ev = R.EVIDENCE["stream_norms"](tr)
    assert tr.n_tokens == ev.n == n
    card = cards.card("stream_norms", P.stream_norms(tr), m, ev, None)
    assert card.agrees is None and card.outcome == cards.UNDECIDED
    assert card.verdict.endswith(
        f"undecided (it rests on {ev.basis}: fewer than 8 positions, too few to judge)"
    )


@pytest.mark.parametrize(
    ("trained", "twin", "want"),
    [(True, False, cards.TRAINING), (True, True, cards.ARCHITECTURE), (True, None, cards.HOLDS),
     (False, True, cards.NOT), (False, False, cards.NOT), (None, False, cards.UNDECIDED)],
)  # fmt: skip
def test_outcome_credits_training_only_against_a_decided_twin(trained, twin, want):
    assert cards.outcome(trained, twin) == want


def test_accuracy_kept_on_few_or_no_right_tokens():
    none = np.zeros((4, 30), bool)
    ev = E.accuracy_kept(none, 3)
    assert math.isnan(ev.value) and "0 of them right" in ev.basis
    few = none.copy()
    few[:, :4] = True  # 4 right, all kept: 100%, but 4 tokens cannot bound it
    ev = E.accuracy_kept(few, 3)
    assert ev.value == 1.0 and (ev.low, ev.high) == (-math.inf, math.inf)
    assert E.judge(ev, cards.RULES["layer_deletion"].band) is None
    many = np.zeros((4, 200), bool)
    many[0, :100] = True
    many[2, :80] = True  # block 2 keeps 80 of the 100: 80%
    ev = E.accuracy_kept(many, 3)
    assert ev.value == pytest.approx(0.8) and ev.low < 0.8 < ev.high
    assert E.judge(ev, cards.RULES["layer_deletion"].band) is True


def test_card_words_on_missing_twins_and_unbounded_intervals():
    from types import SimpleNamespace

    m = SimpleNamespace(
        family=SimpleNamespace(name="GPT-2"), n_params=1.5e9, n_layers=6,
        architecture="GPT2LMHeadModel", decoder=True,
    )  # fmt: skip
    b = np.arange(7)
    norms = __import__("pandas").DataFrame(
        {"block": b, "variant": "stream", "median_norm": 2.0 * 1.045**b}
    )
    inside = E.Evidence(1.045, 1.035, 1.055, 20, "20 tokens")
    c = cards.stream_norms(norms, m, inside, "none: it does not fit")
    assert c.outcome == cards.HOLDS and c.twin == "none: it does not fit"
    assert c.verdict.endswith("without a random twin, whether training made it cannot be told")
    nan_twin = E.Evidence(float("nan"), float("nan"), float("nan"), 20, "20 tokens")
    c = cards.stream_norms(norms, m, inside, nan_twin)
    assert c.outcome == cards.HOLDS and "no value on 20 tokens" in c.twin
    assert "NaN" not in c.verdict + c.twin
    wide = E.Evidence(1.045, -math.inf, math.inf, 3, "3 tokens")
    c = cards.stream_norms(norms, m, wide, E.Evidence(1.2, 1.15, 1.25, 20, "20 tokens"))
    assert c.agrees is None and c.outcome == cards.UNDECIDED
    assert "interval unbounded" in c.interval and "undecided" in c.verdict
    assert "inf" not in c.interval.lower().replace("infinite", "")
    made = cards.stream_norms(norms, m, inside, E.Evidence(1.2, 1.15, 1.25, 20, "20 tokens"))
    assert made.outcome == cards.TRAINING
    assert "agrees, and training made it (trained 1.045x, random 1.2x)" in made.verdict


@pytest.mark.parametrize(("n", "block"), [(20, 5), (128, 16), (7, 3), (5, 1), (3, 10)])
def test_block_resamples_draw_runs_of_neighbours(n, block):
    """Each resample draws n positions in runs of ``block`` consecutive positions (the
    last run cut to fit); a block of 1 is the plain bootstrap, draw for draw."""
    w = E.block_resamples(n, block, boot=50, seed=3)
    assert w.shape == (50, n) and np.all(w.sum(1) == n)
    b = min(block, n)
    rng = np.random.default_rng(3)
    starts = rng.integers(0, n - b + 1, size=(50, -(-n // b)))
    for row, st in zip(w, starts, strict=True):
        idx = np.concatenate([np.arange(s, s + b) for s in st])[:n]
        assert np.array_equal(row, np.bincount(idx, minlength=n))
    assert np.array_equal(E.resamples(n, boot=50, seed=3), E.block_resamples(n, 1, 50, 3))


def test_collapse_interval_draws_runs_of_a_quarter_of_the_text_at_most():
    """The basis names the run length: 16 tokens, or a quarter of a shorter text."""
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(40, 8, generator=g), torch.randn(40, 8, generator=g) * 0.1 + 1
    assert E.collapse_ratio(a, b, 1e-5).basis == "40 tokens, drawn in runs of 10"
    a, b = torch.randn(128, 8, generator=g), torch.randn(128, 8, generator=g) * 0.1 + 1
    ev = E.collapse_ratio(a, b, 1e-5)
    assert ev.basis == "128 tokens, drawn in runs of 16" and ev.low <= ev.high
    assert E.collapse_ratio(a[:3], b[:3], 1e-5).basis == "3 tokens"
