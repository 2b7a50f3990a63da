import dataclasses
import math

import pytest
import torch

import resviz as rv


def test_stack_shapes_and_concat_growth():
    x = torch.randn(5, 16)
    assert rv.build(rv.StackConfig(depth=3, width=16))(x).shape == (5, 16)
    # concat without projection: every block appends its output to its input.
    concat = rv.build(rv.StackConfig(depth=3, width=16, residual="concat"))
    assert concat(x).shape == (5, 16 + 3 * 16)
    assert [b.out_width for b in concat.blocks] == [32, 48, 64]
    proj = rv.build(rv.StackConfig(depth=3, width=16, residual="concat", concat_project=True))
    assert proj(x).shape == (5, 16)


def test_rezero_block_is_exactly_identity_at_init():
    cfg = rv.StackConfig(depth=8, width=32, residual="scaled", alpha=0.0, alpha_learnable=True)
    model = rv.build(cfg)
    x = torch.randn(4, 32)
    assert torch.equal(model(x), x)
    assert any(n.endswith("alpha") for n, _ in model.named_parameters())


def test_residual_block_formula():
    cfg = rv.StackConfig(depth=1, width=8, activation="tanh", identity_scale=0.5)
    model = rv.build(cfg)
    x = torch.randn(3, 8)
    fc = model.blocks[0].fc
    expected = 0.5 * x + torch.tanh(x @ fc.weight.T + fc.bias)
    torch.testing.assert_close(model(x), expected)
    before = rv.build(rv.StackConfig(depth=1, width=8, activation="relu", join="before_act"))
    fc = before.blocks[0].fc
    torch.testing.assert_close(before(x), torch.relu(x + x @ fc.weight.T + fc.bias))


def test_mismatched_widths_skip_or_project():
    widths = (25, 25, 43, 43, 54, 54)
    skip = rv.build(rv.StackConfig(widths=widths, mismatch="skip"))
    assert [b.has_shortcut for b in skip.blocks] == [True, False, True, False, True]
    proj = rv.build(rv.StackConfig(widths=widths, mismatch="project"))
    assert [b.projected for b in proj.blocks] == [False, True, False, True, False]
    assert proj(torch.randn(2, 25)).shape == (2, 54)


def test_same_seed_same_weights_different_seed_different():
    a = rv.build(rv.EncoderConfig(seed=3))
    b = rv.build(rv.EncoderConfig(seed=3))
    c = rv.build(rv.EncoderConfig(seed=4))
    for (n, p), (_, q), (_, r) in zip(
        a.named_parameters(), b.named_parameters(), c.named_parameters(), strict=True
    ):
        assert torch.equal(p, q), n
    assert not torch.equal(a.embed.weight, c.embed.weight)


def test_build_does_not_disturb_global_rng():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    rv.build(rv.EncoderConfig())
    assert torch.equal(torch.rand(3), expected)


def test_encoder_shapes_and_attention_rows_sum_to_one():
    cfg = rv.EncoderConfig(n_layers=2, d_model=32, n_heads=4, d_ff=64, vocab_size=50)
    model = rv.build(cfg).eval()
    tokens = torch.randint(0, 50, (3, 7))
    acts = rv.capture(model, tokens)
    assert acts["output"].shape == (3, 7, 50)
    pattern = acts["blocks.1.attn_pattern"]
    assert pattern.shape == (3, 4, 7, 7)
    torch.testing.assert_close(pattern.sum(-1), torch.ones(3, 4, 7))


def test_pre_ln_stream_equations_hold_exactly():
    cfg = rv.EncoderConfig(n_layers=3, d_model=32, n_heads=4, d_ff=64, vocab_size=50)
    acts = rv.capture(rv.build(cfg).eval(), torch.randint(0, 50, (2, 9)))
    for i in range(3):
        b = f"blocks.{i}"
        assert torch.equal(acts[f"{b}.resid_mid"], acts[f"{b}.resid_pre"] + acts[f"{b}.attn_out"])
        assert torch.equal(acts[f"{b}.resid_post"], acts[f"{b}.resid_mid"] + acts[f"{b}.ffn_out"])
    for i in range(2):
        assert torch.equal(acts[f"blocks.{i}.resid_post"], acts[f"blocks.{i + 1}.resid_pre"])


def test_post_ln_normalizes_the_stream():
    cfg = rv.EncoderConfig(n_layers=2, d_model=32, n_heads=4, d_ff=64, norm_position="post")
    model = rv.build(cfg).eval()
    acts = rv.capture(model, torch.randint(0, 1000, (2, 9)))
    mid = acts["blocks.0.resid_mid"]
    expected = model.blocks[0].norm1(acts["blocks.0.resid_pre"] + acts["blocks.0.attn_out"])
    torch.testing.assert_close(mid, expected)
    # LayerNorm with unit gain: every token has mean 0 and (biased) variance 1.
    torch.testing.assert_close(mid.mean(-1), torch.zeros(2, 9), atol=1e-5, rtol=0)
    torch.testing.assert_close(mid.var(-1, unbiased=False), torch.ones(2, 9), atol=1e-3, rtol=0)


def test_no_residual_and_attention_only_variants():
    cfg = rv.EncoderConfig(n_layers=2, d_model=32, n_heads=4, residual=False, use_ffn=False)
    acts = rv.capture(rv.build(cfg).eval(), torch.randint(0, 1000, (2, 5)))
    assert "blocks.0.ffn_out" not in acts
    assert torch.equal(acts["blocks.0.resid_mid"], acts["blocks.0.attn_out"])


def test_batch_norm_normalizes_each_feature_over_batch_and_tokens():
    norm = rv.models.make_norm("batch", 6).train()
    x = torch.randn(4, 5, 6) * torch.arange(1, 7) + 3
    y = norm(x).reshape(-1, 6)
    torch.testing.assert_close(y.mean(0), torch.zeros(6), atol=1e-5, rtol=0)
    torch.testing.assert_close(y.var(0, unbiased=False), torch.ones(6), atol=1e-3, rtol=0)


def test_padding_mask_blocks_attention_to_padding():
    cfg = rv.EncoderConfig(n_layers=1, d_model=16, n_heads=2, d_ff=32)
    model = rv.build(cfg).eval()
    tokens = torch.randint(0, 1000, (1, 6))
    mask = torch.tensor([[False, False, False, False, True, True]])
    acts = rv.capture(model, (tokens, mask))
    assert torch.all(acts["blocks.0.attn_pattern"][..., 4:] == 0)


def test_scaled_shortcut_before_the_activation_uses_alpha():
    """y = act(x + alpha (W x + b)): alpha = 0 gives act(x), not act(x + W x + b)."""
    cfg = rv.StackConfig(depth=1, width=6, join="before_act", residual="scaled", alpha=0.0)
    model = rv.build(cfg)
    x = torch.randn(4, 6)
    assert torch.equal(model(x), torch.tanh(x))
    half = rv.build(dataclasses.replace(cfg, alpha=0.5))
    fc = half.blocks[0].fc
    assert torch.allclose(half(x), torch.tanh(x + 0.5 * fc(x)), atol=1e-6)


def test_xavier_init_gives_each_of_wq_wk_wv_its_own_xavier_std():
    # Xiong et al. (2020) initialise W_Q, W_K, W_V as d x d matrices: std sqrt(2 / (d + d)).
    # Xavier on the fused d x 3d weight would give sqrt(2 / (d + 3d)) = sqrt(1 / (2d)),
    # 29% smaller; with 512^2 samples per matrix the std is known to about 0.2%.
    d = 512
    cfg = rv.EncoderConfig(n_layers=2, d_model=d, n_heads=8, d_ff=1024, vocab_size=16,
                           max_len=8, init="xavier")  # fmt: skip
    model = rv.build(cfg).requires_grad_(False)
    want, fused = math.sqrt(2 / (d + d)), math.sqrt(1 / (2 * d))
    for block in model.blocks:
        qkv = block.attn.qkv
        for w in qkv.weight.chunk(3):  # W_Q, W_K, W_V: (d, d) each
            assert w.shape == (d, d)
            assert abs(float(w.mean())) < 0.01 * want
            assert float(w.std()) == pytest.approx(want, rel=0.02)
            assert abs(float(w.std()) - fused) > 0.2 * want
        assert float(qkv.bias.abs().max()) == 0.0
        fc1 = block.ffn.fc1.weight
        assert float(fc1.std()) == pytest.approx(math.sqrt(2 / (d + 1024)), rel=0.02)
        assert float(block.attn.proj.weight.std()) == pytest.approx(want, rel=0.02)
    # The default keeps PyTorch's U(-1/sqrt(d), 1/sqrt(d)): std 1/sqrt(3d).
    plain = rv.build(dataclasses.replace(cfg, init="default")).requires_grad_(False)
    std = float(plain.blocks[0].attn.qkv.weight.std())
    assert std == pytest.approx(1 / math.sqrt(3 * d), rel=0.02)
    # Seeded like every build: same config, same weights.
    assert torch.equal(rv.build(cfg).blocks[1].attn.qkv.weight, model.blocks[1].attn.qkv.weight)


def test_normalization_page_model_is_rv_build_of_its_config():
    from resviz import norms as N

    for init in N.XIONG_INITS:
        cfg = N.xiong_config(3, 32, "pre", seed=5, init=init)
        assert cfg.init == init
        a = N.xiong_encoder(cfg).state_dict()
        b = rv.build(cfg).state_dict()
        assert all(torch.equal(a[k], b[k]) for k in a)
    with pytest.raises(ValueError, match="init"):
        N.xiong_config(3, 32, "pre", seed=5, init="kaiming")


# ------------------------------------------- norm placement: one function each
def _exact(a, b):
    torch.testing.assert_close(a, b, rtol=0, atol=0)


def _stack_block_by_formula(b, cfg, x):
    """Every hook point of one stack block, written out from StackConfig's formulas:
    h = norm(x) (pre) or x; f = W h + b (joined before the act) or act(W h + b); the
    terms s and u, y = s + u (concat: side by side, projected), act(y) before the act;
    norm(y) (post)."""
    pre = cfg.norm_position == "pre"
    h = b.norm(x) if pre else x
    z = b.fc(h) if cfg.block == "linear" else b.fc2(b.act(b.fc1(h)))
    f = b.act(z) if cfg.block == "linear" and cfg.join == "after_act" else z
    out = {"resid_pre": x, "branch_out": f}
    if b.shortcut is None:
        y = u = f
    else:
        s = b.shortcut(x)
        scaled = cfg.residual == "scaled"
        out["shortcut_out"] = s
        out["shortcut_term"] = s if scaled else cfg.identity_scale * s
        out["update_term"] = u = b.alpha * f if scaled else f
        if cfg.residual == "concat":
            y = torch.cat([out["shortcut_term"], u], dim=-1)
            y = b.concat_proj(y) if b.concat_proj is not None else y
        else:
            y = out["shortcut_term"] + u
    out["update_term"] = u
    y = b.act(y) if cfg.join == "before_act" else y
    out["resid_post"] = y if pre else b.norm(y)
    return out


STACKS = [
    dict(residual="add", identity_scale=0.5, norm="layer", norm_position="pre"),
    dict(residual="add", join="before_act", norm="rms", norm_position="post"),
    dict(residual="scaled", alpha=0.3, block="ffn", norm="batch", norm_position="post"),
    dict(residual="scaled", alpha=0.3, join="before_act", norm="layer", norm_position="pre"),
    dict(residual="concat", concat_project=True, norm="layer", norm_position="post"),
    dict(residual="concat", norm="rms", norm_position="pre"),
    dict(residual="none", norm="layer", norm_position="post"),
    dict(residual="add", mismatch="project", norm="none", norm_position="post"),
]


@pytest.mark.parametrize("kw", STACKS, ids=lambda kw: "-".join(map(str, kw.values())))
def test_stack_hooks_hold_the_formula_bit_for_bit(kw):
    cfg = rv.StackConfig(widths=(6, 6, 8, 8), activation="gelu", seed=4, **kw)
    model = rv.build(cfg).eval()
    placement = {"pre": rv.models.pre_norm, "post": rv.models.post_norm}[cfg.norm_position]
    assert all(b.placement is placement for b in model.blocks)
    x = torch.randn(5, 6, generator=torch.Generator().manual_seed(1))
    acts = rv.capture(model, x)
    with torch.no_grad():
        for i, b in enumerate(model.blocks):
            want = _stack_block_by_formula(b, cfg, x)
            got = {k.split(".", 2)[2]: v for k, v in acts.items() if k.startswith(f"blocks.{i}.")}
            assert set(got) == set(want)
            for name, value in want.items():
                _exact(got[name], value)
            x = want["resid_post"]
        _exact(acts["output"], model.head(x))


@pytest.mark.parametrize("residual", [True, False])
@pytest.mark.parametrize("position", ["pre", "post"])
@pytest.mark.parametrize("use_ffn", [True, False])
def test_encoder_hooks_hold_the_formula_bit_for_bit(residual, position, use_ffn):
    """x + F(norm(x)) (pre) or norm(x + F(x)) (post) per sublayer, F alone without the
    shortcut; in training mode, so dropout draws in the same order too."""
    cfg = rv.EncoderConfig(n_layers=2, d_model=8, n_heads=2, d_ff=16, vocab_size=11,
                           dropout=0.2, residual=residual, norm_position=position,
                           use_ffn=use_ffn)  # fmt: skip
    model = rv.build(cfg).train()
    tokens = torch.randint(0, 11, (3, 6), generator=torch.Generator().manual_seed(2))
    torch.manual_seed(7)
    acts = rv.capture(model, tokens)
    join = (lambda x, f: x + f) if residual else (lambda x, f: f)
    pre = position == "pre"
    torch.manual_seed(7)
    with torch.no_grad():
        x = model.drop(model.embed(tokens) + model.pos[:6])
        for i, b in enumerate(model.blocks):
            _exact(acts[f"blocks.{i}.resid_pre"], x)
            a = b.dropout(b.attn(b.norm1(x) if pre else x))
            x = join(x, a) if pre else b.norm1(join(x, a))
            _exact(acts[f"blocks.{i}.attn_out"], a)
            _exact(acts[f"blocks.{i}.resid_mid"], x)
            if use_ffn:
                f = b.ffn(b.norm2(x) if pre else x)
                x = join(x, f) if pre else b.norm2(join(x, f))
                _exact(acts[f"blocks.{i}.ffn_out"], f)
            _exact(acts[f"blocks.{i}.resid_post"], x)
        _exact(acts["output"], model.head(model.final_norm(x)))
