"""resviz.pretrained on tiny random models of every family, saved and loaded by path.

Every recipe's numbers are checked against a direct computation from the model's own
``output_hidden_states`` / ``output_attentions`` (or from the model with a block
removed from its list, for deletion), on a separately loaded copy of the same folder.
"""

from __future__ import annotations

import copy
import json
import math

import numpy as np
import pytest
import torch

pytest.importorskip("transformers")

import transformers  # noqa: E402

import resviz as rv  # noqa: E402
from resviz import pretrained as P  # noqa: E402
from tests.pretrained_tiny import save_tiny  # noqa: E402

FAMILIES = ["bert", "roberta", "gpt2", "gpt_neox", "llama", "mistral", "qwen2"]
TEXT = "The quick brown fox jumps over the lazy dog, and the dog sleeps."


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny")
    return {f: save_tiny(f, root / f) for f in FAMILIES}


@pytest.fixture(scope="module", params=FAMILIES)
def case(request, folders):
    """(loaded model, its trace, an independent copy with every state before the final norm)."""
    family = request.param
    p = P.load(folders[family])
    tr = P.trace(p, TEXT)
    ref = getattr(transformers, p.architecture).from_pretrained(
        folders[family], attn_implementation="eager"
    )
    ref.eval()
    return p, tr, ref


def _direct(p, ref, ids, drop_final_norm: bool = True):
    """``output_hidden_states`` / ``output_attentions`` of the reference copy; with the
    final norm swapped for the identity, so the last state is x_L itself."""
    model = copy.deepcopy(ref)
    if drop_final_norm and p.family.final_norm:
        setattr(p.family.base_of(model), p.family.final_norm, torch.nn.Identity())
    with torch.no_grad():
        out = model(input_ids=ids[None], output_hidden_states=True, output_attentions=True)
    return torch.stack([h[0] for h in out.hidden_states]), out


def test_every_family_loads_as_its_own_class(case):
    p, tr, ref = case
    assert type(p.model) is type(ref)
    assert p.model.config._attn_implementation == "eager"
    assert all(t.dtype == torch.float32 for t in p.model.parameters())
    from safetensors import safe_open

    with safe_open(str(p.name) + "/model.safetensors", "pt") as f:
        stored = sum(math.prod(f.get_slice(k).get_shape()) for k in f.keys())
    assert p.n_params == stored and p.weight_bytes == 4 * stored
    assert tr.stream.shape == (p.n_layers + 1, tr.n_tokens, p.d_model)


def test_stream_is_the_models_hidden_states(case):
    p, tr, ref = case
    states, _ = _direct(p, ref, tr.ids)
    torch.testing.assert_close(tr.stream, states, rtol=1e-5, atol=1e-5)
    # With the final norm in place, the model's last hidden state is final_norm(x_L).
    with_norm, _ = _direct(p, ref, tr.ids, drop_final_norm=False)
    last = tr.stream[-1] if p.final_norm is None else p.final_norm(tr.stream[-1])
    torch.testing.assert_close(last, with_norm[-1], rtol=1e-5, atol=1e-5)


def test_stream_norms_and_influence_match_a_direct_computation(case):
    p, tr, ref = case
    states, _ = _direct(p, ref, tr.ids)
    norms = P.stream_norms(tr)
    raw = norms[norms["variant"] == "stream"]
    direct = states.double().norm(dim=-1)
    np.testing.assert_allclose(raw["mean_norm"], direct.mean(-1).numpy(), rtol=1e-6)
    np.testing.assert_allclose(raw["median_norm"], direct.median(-1).values.numpy(), rtol=1e-6)
    assert list(raw["block"]) == list(range(p.n_layers + 1))
    assert ("final norm applied" in set(norms["variant"])) == p.decoder
    infl = P.block_influence(tr)
    cos = torch.nn.functional.cosine_similarity(states[:-1].double(), states[1:].double(), dim=-1)
    np.testing.assert_allclose(infl["cos"], cos.mean(-1).numpy(), rtol=1e-6)
    np.testing.assert_allclose(infl["influence"], 1 - cos.mean(-1).numpy(), atol=1e-9)
    assert list(infl["block"]) == list(range(1, p.n_layers + 1))
    sim = P.layer_similarity(tr).pivot(index="block_a", columns="block_b", values="cos")
    for a in range(p.n_layers + 1):
        for b in range(p.n_layers + 1):
            c = torch.nn.functional.cosine_similarity(
                states[a].double(), states[b].double(), dim=-1
            )
            assert sim.loc[a, b] == pytest.approx(float(c.mean()), abs=1e-9)


def test_norm_growth_is_the_geometric_rate():
    import pandas as pd

    blocks = np.arange(0, 7)
    frame = pd.DataFrame({"block": blocks, "variant": "stream", "median_norm": 3.0 * 1.045**blocks})
    frame.loc[0, "median_norm"] = 100.0  # the embeddings are left out of the fit
    assert P.norm_growth(frame) == pytest.approx(1.045, rel=1e-12)


def test_attention_sinks_match_output_attentions(case):
    p, tr, ref = case
    _, out = _direct(p, ref, tr.ids)
    att = torch.stack([a[0] for a in out.attentions]).double()
    sinks = P.attention_sinks(tr)
    direct = att[:, :, 1:, 0].mean(-1)
    np.testing.assert_allclose(sinks["first_token_share"], direct.numpy().ravel(), rtol=1e-5)
    assert sinks["head"].max() == p.n_heads and sinks["block"].max() == p.n_layers
    T = tr.n_tokens
    expected = np.mean([1 / (q + 1) for q in range(1, T)]) if p.decoder else 1 / T
    assert sinks["uniform_share"].iloc[0] == pytest.approx(expected)


def test_massive_activations_match_the_stream(case):
    p, tr, ref = case
    states, _ = _direct(p, ref, tr.ids)
    m = P.massive_activations(tr)
    for b in range(p.n_layers + 1):
        a = states[b].double().abs()
        assert m.loc[b, "max_abs"] == pytest.approx(float(a.max()), rel=1e-6)
        t, c = int(m.loc[b, "position"]), int(m.loc[b, "dim"])
        assert a[t, c] == pytest.approx(float(a.max()), rel=1e-6)
        assert m.loc[b, "ratio"] == pytest.approx(float(a.max() / a.flatten().median()), rel=1e-5)


def test_logit_lens_decodes_each_state_with_the_models_head(case):
    p, tr, ref = case
    if not p.decoder:
        with pytest.raises(P.PretrainedError, match="decoder"):
            P.logit_lens(tr)
        return
    states, _ = _direct(p, ref, tr.ids)
    lens = P.logit_lens(tr)
    with torch.no_grad():
        final = ref(input_ids=tr.ids[None]).logits[0].double()
        norm = getattr(p.family.base_of(ref), p.family.final_norm)
        per_layer = ref.get_output_embeddings()(norm(states)).double()
    answer = int(final[-1].argmax())
    probs = torch.softmax(per_layer[:, -1], -1)
    np.testing.assert_allclose(lens["answer_prob"], probs[:, answer].numpy(), rtol=1e-5)
    # The last row is the model's own output distribution.
    assert lens["answer_prob"].iloc[-1] == pytest.approx(
        float(torch.softmax(final[-1], -1)[answer]), rel=1e-5
    )
    assert lens["answer_rank"].iloc[-1] == 1 and lens["agreement"].iloc[-1] == 1.0
    for b in range(p.n_layers + 1):
        rank = 1 + int((per_layer[b, -1] > per_layer[b, -1, answer]).sum())
        assert lens.loc[b, "answer_rank"] == rank
        agree = float((per_layer[b].argmax(-1) == final.argmax(-1)).double().mean())
        assert lens.loc[b, "agreement"] == pytest.approx(agree)


def _no_cache(p):
    return {"use_cache": False} if p.decoder else {}


def _without_block(p, ref, block):
    """A copy of the reference model whose block list lacks ``block`` (from 1)."""
    model = copy.deepcopy(ref)
    base = p.family.base_of(model)
    parent, name = (
        p.family.blocks.rsplit(".", 1) if "." in p.family.blocks else ("", p.family.blocks)
    )
    owner = base if not parent else getattr(base, parent)
    layers = getattr(owner, name)
    del layers[block - 1]
    for attr in ("num_hidden_layers", "n_layer"):
        if hasattr(model.config, attr):
            setattr(model.config, attr, len(layers))
    return model


def test_layer_deletion_matches_a_model_without_the_block(case):
    p, tr, ref = case
    seen = []
    frame = P.layer_deletion(tr, progress=lambda d, n: seen.append((d, n)))
    assert seen == [(b, p.n_layers) for b in range(1, p.n_layers + 1)]
    with torch.no_grad():
        full = ref(input_ids=tr.ids[None], output_hidden_states=True, **_no_cache(p))
    logp0 = torch.log_softmax(full.logits[0].double(), -1)
    ids = tr.ids
    tgt, sl = (ids[1:], slice(0, -1)) if p.decoder else (ids, slice(None))
    loss0 = float(-logp0[sl].gather(-1, tgt[:, None]).mean())
    for b in range(1, p.n_layers + 1):
        with torch.no_grad():
            cut = _without_block(p, ref, b)(
                input_ids=ids[None], output_hidden_states=True, **_no_cache(p)
            )
        logp = torch.log_softmax(cut.logits[0].double(), -1)
        row = frame[frame["block"] == b].iloc[0]
        agree = float((cut.logits[0].argmax(-1) == full.logits[0].argmax(-1)).double().mean())
        assert row["top1_agreement"] == pytest.approx(agree)
        loss = float(-logp[sl].gather(-1, tgt[:, None]).mean())
        assert row["loss_change"] == pytest.approx(loss - loss0, abs=1e-5)
        cos = torch.nn.functional.cosine_similarity(
            cut.hidden_states[-1][0].double(), full.hidden_states[-1][0].double(), dim=-1
        )
        assert row["output_cos"] == pytest.approx(float(cos.mean()), abs=1e-6)
    # Hooks are gone: the model is whole again.
    again = P.forward(p, tr.ids)
    torch.testing.assert_close(again.stream, tr.stream)


def test_layer_deletion_stops_when_asked(case):
    p, tr, _ = case
    calls = []
    frame = P.layer_deletion(
        tr, progress=lambda d, n: calls.append(d), should_stop=lambda: len(calls) >= 1
    )
    assert list(frame["block"]) == [1]


def test_rank_collapse_with_shortcuts_uses_the_toy_encoders_definition(case):
    p, tr, ref = case
    states, _ = _direct(p, ref, tr.ids)
    frame = P.rank_collapse(tr)
    with_s = frame[frame["shortcuts"]]
    acts = {"blocks.0.resid_pre": states[0][None]}
    acts |= {f"blocks.{i}.resid_post": states[i + 1][None] for i in range(p.n_layers)}
    toy = rv.encoder.rank_collapse(acts, type("Cfg", (), {"n_layers": p.n_layers})())
    np.testing.assert_allclose(with_s["residual"], toy["residual"], rtol=1e-6)
    np.testing.assert_allclose(with_s["cosine"], toy["cosine"], rtol=1e-6, atol=1e-9)
    assert frame[~frame["shortcuts"]]["block"].tolist() == list(range(p.n_layers + 1))


def test_without_shortcuts_each_block_is_its_sublayers_alone(case):
    """With the shortcuts removed, a block's output is what its sub-layers alone give,
    read from the sub-layers' own inputs and outputs (observer hooks registered first,
    so they see the sub-layers' original outputs)."""
    p, tr, _ = case
    fam = p.family
    block = p.blocks[1]
    from resviz.pretrained.families import _get, first

    seen: dict[str, torch.Tensor] = {}
    hooks = []
    if p.decoder:
        a_mod, m_mod = _get(block, fam.attention), _get(block, fam.mlp)
        hooks.append(
            a_mod.register_forward_hook(lambda m, a, o: seen.__setitem__("a", first(o).clone()))
        )
        hooks.append(
            m_mod.register_forward_pre_hook(lambda m, a: seen.__setitem__("m_in", a[0].clone()))
        )
        hooks.append(
            m_mod.register_forward_hook(lambda m, a, o: seen.__setitem__("m", first(o).clone()))
        )
    else:
        so, bo = _get(block, "attention.output"), _get(block, "output")
        hooks.append(
            so.register_forward_pre_hook(lambda m, a: seen.__setitem__("so_in", a[0].clone()))
        )
        hooks.append(so.register_forward_hook(lambda m, a, o: seen.__setitem__("h", o.clone())))
        hooks.append(
            bo.register_forward_pre_hook(lambda m, a: seen.__setitem__("bo_in", a[0].clone()))
        )
    hooks.append(
        block.register_forward_hook(lambda m, a, o: seen.__setitem__("y", first(o).clone()))
    )
    try:
        with fam.without_shortcuts(p.model):
            P.forward(p, tr.ids)
    finally:
        for h in hooks:
            h.remove()
    if not p.decoder:
        so, bo = _get(block, "attention.output"), _get(block, "output")
        with torch.no_grad():
            h = so.LayerNorm(so.dense(seen["so_in"]))
            y = bo.LayerNorm(bo.dense(seen["bo_in"]))
        torch.testing.assert_close(seen["h"], h)
        torch.testing.assert_close(seen["y"], y)
        return
    if getattr(p.config, "use_parallel_residual", False):
        torch.testing.assert_close(seen["y"], seen["a"] + seen["m"])
    else:
        norm2 = _get(block, {"gpt2": "ln_2"}.get(p.config.model_type, "post_attention_layernorm"))
        with torch.no_grad():
            torch.testing.assert_close(seen["m_in"], norm2(seen["a"]))
        torch.testing.assert_close(seen["y"], seen["m"])


def test_collapse_measures_closed_forms():
    same = torch.ones(5, 4) * torch.tensor([1.0, -2.0, 3.0, 0.5])
    assert P.collapse_measures(same) == (0.0, pytest.approx(1.0))
    eye = torch.eye(4)  # orthogonal tokens: cosine 0; ||X - 1 m^T|| / ||X|| = sqrt(3/4)
    r, c = P.collapse_measures(eye)
    assert r == pytest.approx(math.sqrt(0.75)) and c == pytest.approx(0.0)


# ---------------------------------------------------------------- refusals


def test_wrong_path_and_missing_parts(tmp_path, folders):
    with pytest.raises(P.PretrainedError, match="No model folder") as e:
        P.load(tmp_path / "nowhere")
    assert e.value.kind == "path"
    with pytest.raises(P.PretrainedError, match="config.json"):
        P.load(tmp_path)
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "config.json").write_text((folders["gpt2"] / "config.json").read_text())
    (bare / "pytorch_model.bin").write_bytes(b"not read")
    with pytest.raises(P.PretrainedError, match="pickle") as e:
        P.load(bare)
    assert e.value.kind == "weights"
    with pytest.raises(P.PretrainedError, match="Give a model"):
        P.load("  ")


def test_hub_name_offline_says_the_hub_is_unreachable(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(P.PretrainedError, match="hub is unreachable") as e:
        P.load("openai-community/gpt2")
    assert e.value.kind == "hub"


def test_too_large_is_refused_before_loading(folders, monkeypatch):
    p = P.load(folders["gpt2"])
    calls = []
    monkeypatch.setattr(
        transformers.GPT2LMHeadModel, "from_pretrained", lambda *a, **k: calls.append(1)
    )
    with pytest.raises(P.PretrainedError, match="over this server's budget") as e:
        P.load(folders["gpt2"], max_bytes=8 * p.n_params - 1)  # 2x the float32 weights
    assert e.value.kind == "budget" and not calls
    monkeypatch.undo()
    assert P.load(folders["gpt2"], max_bytes=8 * p.n_params).n_params == p.n_params


def test_unsupported_architecture(tmp_path, folders):
    odd = tmp_path / "odd"
    odd.mkdir()
    for f in folders["gpt2"].iterdir():
        (odd / f.name).write_bytes(f.read_bytes())
    cfg = json.loads((odd / "config.json").read_text())
    cfg["architectures"] = ["GPT2ForSequenceClassification"]
    (odd / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(P.PretrainedError, match="not supported") as e:
        P.load(odd)
    assert e.value.kind == "architecture"
    t5 = tmp_path / "t5"
    transformers.AutoConfig.for_model(
        "t5", d_model=8, num_layers=1, num_heads=1, d_ff=8, d_kv=4
    ).save_pretrained(t5)
    (t5 / "model.safetensors").write_bytes((odd / "model.safetensors").read_bytes())
    with pytest.raises(P.PretrainedError, match="t5 is not supported"):
        P.load(t5)


def test_missing_extra_has_a_clear_message(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda n, *a: None if n == "transformers" else real(n, *a)
    )
    with pytest.raises(P.PretrainedError) as e:
        P.load("anything")
    assert e.value.kind == "extra"
    # The checkout's extra (resviz is not on the index by that name), or the two packages.
    assert "pip install '.[pretrained]' in a checkout of resviz" in e.value.message
    assert "pip install transformers safetensors" in e.value.message


def test_empty_text_is_refused(folders):
    p = P.load(folders["gpt2"])
    with pytest.raises(P.PretrainedError, match="Type some text"):
        P.trace(p, "   ")


def test_long_text_is_cut_to_max_tokens(folders):
    p = P.load(folders["gpt2"])
    tr = P.trace(p, "the fox " * 400, max_tokens=64)
    assert tr.truncated and tr.n_tokens == 64


def test_broken_folders_are_refused_with_a_message(tmp_path, folders):
    import shutil

    def copy(name):
        d = tmp_path / name
        shutil.copytree(folders["gpt2"], d)
        return d

    no_tok = copy("no_tokenizer")
    (no_tok / "tokenizer.json").unlink()
    with pytest.raises(P.PretrainedError, match="no tokenizer files"):
        P.load(no_tok)
    bad_cfg = copy("bad_config")
    (bad_cfg / "config.json").write_text("{not json")
    with pytest.raises(P.PretrainedError, match="config.json could not be read"):
        P.load(bad_cfg)
    bad_st = copy("bad_weights")
    (bad_st / "model.safetensors").write_bytes(b"\x10" + b"\x00" * 7 + b'{"a": 1}        ')
    with pytest.raises(P.PretrainedError, match="not a readable safetensors"):
        P.load(bad_st)
    wrong = copy("wrong_shapes")
    cfg = json.loads((wrong / "config.json").read_text())
    cfg["n_embd"] = 64
    (wrong / "config.json").write_text(json.dumps(cfg))
    # Refused before loading: no stored tensor has a width-64 parameter's shape.
    with pytest.raises(P.PretrainedError, match="do not match config.json") as e:
        P.load(wrong)
    assert e.value.kind == "weights"
