"""Who writes what (resviz.pretrained.stream.attribution) on tiny random models of every family,
saved and loaded by path, and on the shipped Sonnets GPT-2: the parts add up to the
model's own logit, the heads to their attention, and bad input gets a message."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")

from resviz import pretrained as P  # noqa: E402
from resviz.pretrained import recipes as R  # noqa: E402
from tests.pretrained_tiny import save_tiny  # noqa: E402

FAMILIES = ["bert", "roberta", "gpt2", "gpt_neox", "llama", "mistral", "qwen2"]
TEXT = "The quick brown fox jumps over the lazy dog, and the dog sleeps."


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    root = tmp_path_factory.mktemp("attribution")
    return {f: P.trace(P.load(save_tiny(f, root / f)), TEXT) for f in FAMILIES}


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("position", [0, 4, -1])
def test_parts_add_up_to_the_logit(traces, family, position):
    tr = traces[family]
    a = P.logit_attribution(tr, position=position)
    parts = a.parts
    t = position % tr.n_tokens
    assert a.position == t and a.position_token == tr.tokens[t]
    assert list(parts["part"][:3]) == ["embeddings", "attention", "mlp"]
    if not tr.model.decoder:
        # Post-LN: no linear path to the logit; each write's share of its pre-norm sum.
        assert not a.linear and parts["logit"].isna().all()
        writes = parts[parts["part"] != "embeddings"]
        assert writes["share"].notna().all() and (writes["share"].abs() < 10).all()
        return
    assert a.linear
    assert a.rest < 1e-4  # x_L is x_0 plus every write
    logits = tr.run.logits[t].double()
    k = int(logits.argmax())
    assert a.token == tr.model.tokenizer.decode([k])
    assert a.logit == pytest.approx(float(logits[k]), abs=1e-5)
    # The identity: every part plus the final norm's bias is the logit.
    assert parts["logit"].sum() == pytest.approx(a.logit, abs=1e-5)
    assert parts["cumulative"].iloc[-1] == pytest.approx(a.logit, abs=1e-5)
    assert parts["logit_diff"].sum() == pytest.approx(a.logit_diff, abs=1e-5)
    assert parts["share"].sum() == pytest.approx(1, abs=1e-6)  # projections on x_L
    # Centred (TransformerLens's center_unembed): the parts sum to the logit less its
    # mean over the vocabulary, and each part moves by its write against the mean row.
    assert parts["logit_centred"].sum() == pytest.approx(a.logit - float(logits.mean()), abs=1e-5)
    assert a.heads["logit_centred"].groupby(a.heads["block"]).sum().to_numpy() == pytest.approx(
        parts[parts["part"] == "attention"]["logit_centred"].to_numpy(), abs=1e-6
    )
    # A block's heads (with the projection's bias, head 0) add up to its attention.
    attn = parts[parts["part"] == "attention"].set_index("block")["logit"]
    heads = a.heads.groupby("block")["logit"].sum()
    assert heads.to_numpy() == pytest.approx(attn.to_numpy(), abs=1e-6)
    assert set(a.heads["head"]) >= set(range(1, tr.model.n_heads + 1))


def test_chosen_tokens_and_the_difference(traces):
    tr = traces["gpt2"]
    tok = tr.model.tokenizer
    t1, t2 = tok.decode([tr.ids[3]]), tok.decode([tr.ids[5]])
    a = P.logit_attribution(tr, position=2, token=t1, versus=t2)
    logits = tr.run.logits[2].double()
    k1, k2 = int(tr.ids[3]), int(tr.ids[5])
    assert (a.token, a.versus) == (t1, t2)
    assert a.logit_diff == pytest.approx(float(logits[k1] - logits[k2]), abs=1e-5)
    assert a.parts["logit_diff"].sum() == pytest.approx(a.logit_diff, abs=1e-5)


@pytest.mark.parametrize(
    ("kw", "words"),
    [
        (dict(position=99), "outside this text's"),
        (dict(position=-99), "outside this text's"),
        (dict(token="zqxjzqxjzqxj"), "not one token"),
        (dict(versus="zqxjzqxjzqxj"), "The second token"),
    ],
)
def test_bad_input_gets_a_message(traces, kw, words):
    with pytest.raises(P.PretrainedError) as err:
        P.logit_attribution(traces["gpt2"], **kw)
    assert words in err.value.message and err.value.kind == "text"


def test_sonnets_gpt2_adds_up_to_its_logit():
    """The audit in issue 35: x_0 0.069, blocks 2.365, 1.893, 0.375, 0.075, final-norm
    bias 1.065, which sum to the model's logit 5.8421."""
    r = R.logit_attribution()
    parts = r.parts
    per_block = parts[parts["part"].isin(["attention", "mlp"])].groupby("block")["logit"].sum()
    assert per_block.round(3).tolist() == [2.365, 1.893, 0.375, 0.075]
    assert parts["logit"].iloc[0] == pytest.approx(0.069, abs=5e-4)
    assert parts["logit"].iloc[-1] == pytest.approx(1.065, abs=5e-4)
    assert parts["logit"].sum() == pytest.approx(r.logit, abs=1e-5)
    assert r.logit == pytest.approx(5.8421, abs=1e-4)
    words = R.attribution_words(r)
    assert "together 5.8421" in words and "the model's logit is 5.8421" in words
