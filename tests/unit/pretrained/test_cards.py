"""Replication cards: each verdict is computed from the live frame and the published
figure, and turns when the data turns (both outcomes tested on made-up frames)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from resviz.pretrained.replication import cards
from resviz.pretrained.replication.published import PUBLISHED


def model(family="GPT-2", n_params=1.5e9, n_layers=6):
    return SimpleNamespace(
        family=SimpleNamespace(name=family), n_params=n_params, n_layers=n_layers,
        architecture="GPT2LMHeadModel",
    )  # fmt: skip


def norms(rate, n=6):
    b = np.arange(n + 1)
    return pd.DataFrame({"block": b, "variant": "stream", "median_norm": 2.0 * rate**b})


def test_every_published_figure_has_a_source_and_a_card():
    assert set(PUBLISHED) == set(cards.CARDS)
    for pub in PUBLISHED.values():
        assert pub.source and pub.model and pub.finding


def test_norm_growth_verdict_turns_with_the_rate():
    same = cards.stream_norms(norms(1.05), model())
    assert same.agrees and "agrees" in same.verdict and same.caveat is None
    flat = cards.stream_norms(norms(1.0), model())
    assert not flat.agrees and "a gap of 4.5 percentage points" in flat.verdict
    assert flat.verdict.endswith("agreement): differs")


def test_caveat_names_family_and_size():
    c = cards.stream_norms(norms(1.05), model("BERT-like encoder", 22.7e6))
    assert "BERT-like encoder where the paper measured GPT-2 XL" in c.caveat
    assert "22.7M parameters against the paper's 1500M" in c.caveat


def test_block_influence_verdict_follows_the_minimum():
    late = pd.DataFrame({"block": [1, 2, 3, 4], "influence": [0.5, 0.3, 0.1, 0.2]})
    early = pd.DataFrame({"block": [1, 2, 3, 4], "influence": [0.5, 0.05, 0.1, 0.2]})
    assert cards.block_influence(late, model(n_layers=4)).agrees
    assert not cards.block_influence(early, model(n_layers=4)).agrees


def deletion(kept, worst_first=True):
    n = len(kept) + 2
    loss = [5.0] + [0.1] * len(kept) + [1.0]
    if not worst_first:
        loss[0] = 0.0
    return pd.DataFrame(
        {
            "block": range(1, n + 1),
            "top1_agreement": [0.2, *kept, 0.5],
            "loss_change": loss,
            "accuracy": [0.05, *(0.5 * k for k in kept), 0.25],
            "accuracy_kept": [0.1, *kept, 0.5],
            "output_cos": 0.9,
        }
    )


@pytest.mark.parametrize(
    ("kept", "agrees", "words"),
    [([0.8, 0.9, 0.85], True, "lies within 72%-95%: agrees"),
     ([0.99, 0.98, 1.0], False, "lies above 72%-95% by 4 points: differs"),
     ([0.3, 0.4, 0.5], False, "lies below 72%-95% by 32 points: differs")],
)  # fmt: skip
def test_deletion_verdict_against_the_published_range(kept, agrees, words):
    c = cards.layer_deletion(deletion(kept), model(n_layers=5))
    assert c.agrees is agrees and words in c.verdict and "block 1 hurts most" in c.verdict
    c2 = cards.layer_deletion(deletion(kept, worst_first=False), model(n_layers=5))
    assert "not block 1" in c2.verdict


def test_rank_collapse_verdict():
    def frame(without):
        return pd.DataFrame(
            {
                "variant": ["with shortcuts", "no shortcuts"],
                "block": [3, 3],
                "residual": [0.8, without],
            }
        )

    assert cards.rank_collapse(frame(0.01), model(n_layers=3)).agrees
    assert not cards.rank_collapse(frame(0.9), model(n_layers=3)).agrees
    assert cards.rank_collapse(frame(float("nan")), model(n_layers=3)).agrees is None


def test_sinks_and_massive_activation_verdicts():
    sinks = pd.DataFrame(
        {"block": [3, 3, 4, 4], "head": [1, 2, 1, 2], "first_token_share": [0.9, 0.8, 0.7, 0.1],
         "uniform_share": 0.1}
    )  # fmt: skip
    assert cards.attention_sinks(sinks, model(n_layers=4)).agrees
    sinks["first_token_share"] = [0.9, 0.2, 0.3, 0.1]
    assert not cards.attention_sinks(sinks, model(n_layers=4)).agrees
    big = pd.DataFrame({"block": [0, 1], "max_abs": [1.0, 3e4], "position": [0, 0], "dim": [1, 2],
                        "ratio": [10.0, 3e4]})  # fmt: skip
    assert cards.massive_activations(big, model()).agrees
    big["ratio"] = [10.0, 50.0]
    c = cards.massive_activations(big, model())
    assert not c.agrees and "3.3 orders of magnitude below" in c.verdict


def test_logit_lens_verdict():
    lens = pd.DataFrame({"block": [0, 1, 2, 3], "agreement": [0.1, 0.3, 0.6, 1.0],
                         "answer_rank": [50, 3, 1, 1]})  # fmt: skip
    c = cards.logit_lens(lens, model(n_layers=3))
    assert c.agrees and "top token from block 2 on" in c.live
    lens["agreement"] = [0.5, 0.4, 0.3, 1.0]
    assert not cards.logit_lens(lens, model(n_layers=3)).agrees


def test_deletion_with_no_right_prediction_says_why():
    # A GPT2LMHeadModel has a head: 0/0 is "no right prediction", not "no head".
    frame = deletion([0.8, 0.9, 0.85])
    frame["accuracy"] = 0.0
    frame["accuracy_kept"] = float("nan")
    c = cards.layer_deletion(frame, model(n_layers=5))
    assert c.agrees is None and "no head" not in c.verdict + c.live
    assert "no right prediction" in c.verdict and "none of this text's tokens right" in c.live
