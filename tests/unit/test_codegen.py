"""resviz.codegen: the generated script builds exactly ``rv.build(cfg)``, over a grid of
configs that takes every branch of both templates (each ``#?`` flag both ways)."""

from __future__ import annotations

import itertools
import re

import pytest
import torch

import resviz as rv
from resviz import codegen

ACTIVATIONS = ("relu", "gelu", "tanh", "sigmoid", "identity")
NORMS = ("none", "layer", "rms", "batch")


def _valid(make, **kw):
    try:
        return make(**kw)
    except ValueError:  # e.g. join="before_act" with an FFN block or with concat
        return None


def _stack_grid() -> list[rv.StackConfig]:
    shortcuts = [
        {"residual": "none"},
        {"residual": "add"},
        {"residual": "add", "identity_scale": 0.5},
        {"residual": "scaled", "alpha": 0.3},
        {"residual": "scaled", "alpha": 0.0, "alpha_learnable": True},
        {"residual": "concat"},
        {"residual": "concat", "concat_project": True},
    ]
    grid = []
    axes = itertools.product(shortcuts, ("linear", "ffn"), ("after_act", "before_act"),
                             ("skip", "project"))  # fmt: skip
    for i, (sc, block, join, mismatch) in enumerate(axes):
        cfg = _valid(
            rv.StackConfig, widths=(6, 6, 9, 9, 5), block=block, ffn_mult=2, join=join,
            mismatch=mismatch, activation=ACTIVATIONS[i % 5], out_dim=(None, 3)[i % 2],
            seed=i, **sc,
        )  # fmt: skip
        grid.append(cfg)
    inits = ("default", "kaiming", "xavier", "small")
    axes = itertools.product(NORMS, ("pre", "post"), inits, ("linear", "ffn"))
    for i, (norm, pos, init, block) in enumerate(axes):
        residual = ("add", "scaled", "concat", "none")[i % 4]
        grid.append(rv.StackConfig(depth=3, width=5, norm=norm, norm_position=pos, init=init,
                                   block=block, residual=residual, seed=i))  # fmt: skip
    return [cfg for cfg in grid if cfg is not None]


def _encoder_grid() -> list[rv.EncoderConfig]:
    small = {"n_layers": 2, "d_model": 8, "n_heads": 2, "d_ff": 12, "vocab_size": 11, "max_len": 9}
    grid = []
    axes = itertools.product(NORMS, ("pre", "post"), (True, False), (True, False))
    for i, (norm, pos, residual, ffn) in enumerate(axes):
        grid.append(rv.EncoderConfig(**small, norm=norm, norm_position=pos, residual=residual,
                                     use_ffn=ffn, positional=("none", "learned", "sinusoidal")[i % 3],
                                     dropout=(0.0, 0.1)[i % 2], init=("default", "xavier")[i // 2 % 2],
                                     activation=ACTIVATIONS[i % 5], seed=i))  # fmt: skip
    axes = itertools.product(("none", "learned", "sinusoidal"), ACTIVATIONS, ("default", "xavier"))
    for i, (positional, act, init) in enumerate(axes):
        grid.append(rv.EncoderConfig(**small, positional=positional, activation=act, init=init,
                                     dropout=(0.0, 0.2)[i % 2], seed=100 + i))  # fmt: skip
    return grid


STACKS = _stack_grid()
ENCODERS = _encoder_grid()


def _generated(cfg):
    """The script's namespace. Executes code this library generated from a fixed
    template and a validated config, never user input."""
    code = rv.generate_code(cfg)
    assert "$" not in code and "#?" not in code, "a placeholder or a marker was left"
    namespace = {"__name__": "generated"}
    exec(compile(code, "<generated>", "exec"), namespace)  # noqa: S102
    return code, namespace


def _same_weights(mine: torch.nn.Module, ref: torch.nn.Module) -> None:
    a, b = mine.state_dict(), ref.state_dict()
    assert a.keys() == b.keys()
    for k in a:  # same seed, same creation order: bit-identical weights
        assert torch.equal(a[k], b[k]), k


@pytest.mark.parametrize("cfg", STACKS, ids=range(len(STACKS)))
def test_stack_script_builds_the_same_model(cfg):
    code, ns = _generated(cfg)
    imports = [ln for ln in code.splitlines() if ln.startswith(("import ", "from "))]
    assert imports == ["import torch", "from torch import nn"]
    with torch.random.fork_rng(devices=[]):
        mine = ns["build_model"]()
    ref = rv.build(cfg)
    _same_weights(mine, ref)
    x = torch.randn(7, cfg.in_dim, generator=torch.Generator().manual_seed(cfg.seed))
    with torch.no_grad():
        for train in (True, False):  # batch norm: batch statistics, then running ones
            mine.train(train), ref.train(train)
            assert torch.equal(mine(x), ref(x))


@pytest.mark.parametrize("cfg", ENCODERS, ids=range(len(ENCODERS)))
def test_encoder_script_builds_the_same_model(cfg):
    code, ns = _generated(cfg)
    imports = [ln for ln in code.splitlines() if ln.startswith(("import ", "from "))]
    assert imports == ["import math", "import torch", "from torch import nn"]
    with torch.random.fork_rng(devices=[]):
        mine = ns["build_model"]().eval()
    ref = rv.build(cfg).eval()
    _same_weights(mine, ref)
    fresh = ns["Encoder"]()  # the module names match: strict loading works both ways
    fresh.load_state_dict(ref.state_dict(), strict=True)
    ref.load_state_dict(mine.state_dict(), strict=True)
    x = torch.randint(0, cfg.vocab_size, (3, cfg.max_len), generator=torch.Generator())
    with torch.no_grad():
        assert torch.equal(mine(x), ref(x))
        assert torch.equal(fresh.eval()(x), ref(x))
        outs = []
        for model in (mine.train(), ref.train()):  # the same dropout masks in the same places
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(cfg.seed)
                outs.append(model(x))
        assert torch.equal(*outs)


def test_the_grids_take_every_branch_of_the_templates():
    """Each ``#?`` flag of each family is on for some config of its grid and off for another."""
    for make, grid in ((codegen._stack, STACKS), (codegen._encoder, ENCODERS)):
        seen = [make(cfg)[0] for cfg in grid]
        for flag in seen[0]:
            if flag != "math":  # the encoder always imports math, the stack never
                assert {s[flag] for s in seen} == {True, False}, flag


def test_every_flag_a_template_names_is_defined():
    names = set()
    for name in ("stack.py.tmpl", "encoder.py.tmpl", "shared.py.tmpl"):
        for line in codegen.template(name).splitlines():
            if mark := codegen._MARK.search(line):
                names |= {w.strip().removeprefix("not ").strip() for w in mark["cond"].split(",")}
    stack, encoder = codegen._stack(STACKS[0])[0], codegen._encoder(ENCODERS[0])[0]
    assert names <= set(stack) | set(encoder)
    shared = {
        m["cond"].strip()
        for ln in codegen.template("shared.py.tmpl").splitlines()
        if (m := codegen._MARK.search(ln))
    }
    assert shared <= set(stack) & set(encoder)


def test_both_scripts_run_as_scripts(tmp_path, capsys):
    import runpy

    for i, cfg in enumerate([rv.StackConfig(widths=(4, 6, 5), norm="batch"), ENCODERS[5]]):
        path = tmp_path / f"model{i}.py"
        path.write_text(rv.generate_code(cfg))
        runpy.run_path(str(path), run_name="__main__")
    out = capsys.readouterr().out
    assert re.search(r"\d+ parameters; output \(8, 5\)", out)
    assert "output (2, 9, 11)" in out


def test_old_generator_names_are_the_one_generator():
    assert rv.codegen.generate_code is rv.generate_code is codegen.generate_code
    assert rv.codegen.generate_code is rv.codegen.generate_code is rv.generate_code
    with pytest.raises(TypeError, match="StackConfig or EncoderConfig"):
        rv.generate_code({"depth": 3})


def test_a_placeholder_left_unfilled_raises():
    with pytest.raises(KeyError):
        codegen.render("x = $missing", {}, {})
    with pytest.raises(KeyError):  # an unknown flag
        codegen.render("x = 1  #? nonsense", {}, {})
    flags = {"on": True, "off": False}
    text = "a = 1  #? on\nb = 2  #? not on\nc = 3  #? on, off\nd = 4  #? on, not off"
    assert codegen.render(text, flags, {}) == "a = 1\nd = 4"
