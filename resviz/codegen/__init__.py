"""``generate_code(cfg)``: a standalone PyTorch script for any config resviz builds.

One generator, one template per model family. ``templates/stack.py.tmpl`` and
``templates/encoder.py.tmpl`` read like the scripts they produce; what both
families share (the header docstring listing the config, the imports,
``FeatureBatchNorm``, the sinusoidal table, ``build_model`` and the ``__main__``
block) is written once, as the sections of ``templates/shared.py.tmpl`` (a line
``#: name`` starts a section). A template is :class:`string.Template` text plus one
rule, so no template language is needed:

* a line ending in ``#? flag`` is kept only when the config sets that flag (``#? not
  flag``: only when it does not; ``#? a, b``: only when both hold), without the
  marker. Each family's flags are named in :func:`_stack` and :func:`_encoder`.
* ``$name`` is then filled in: numbers from the config, the few expressions that
  vary inside a line (:data:`ACTIVATIONS`, :data:`NORMS`, the encoder's sublayer
  sums) and the shared sections by name. A placeholder left unfilled raises
  ``KeyError``: no script leaves with a hole. Blank lines left by dropped lines
  collapse to at most two.

The scripts create the modules :mod:`resviz.models` creates, with the same names,
in the same order, from the same seed, so ``build_model()`` returns
``rv.build(cfg)``'s state-dict keys and weights (``tests/unit/test_codegen.py``
checks a grid of configs). The encoder's blocks are the seed fact
``x = x + sublayer(norm(x))`` (Pre-LN) / ``x = norm(x + sublayer(x))`` (Post-LN);
its ``init="xavier"`` is Xiong et al. (2020)'s initialisation.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import string
from importlib import resources

from resviz.config import EncoderConfig, StackConfig

# The expressions both families write for an activation and a norm layer.
ACTIVATIONS = {
    "relu": "nn.ReLU()",
    "gelu": "nn.GELU()",
    "tanh": "nn.Tanh()",
    "sigmoid": "nn.Sigmoid()",
    "identity": "nn.Identity()",
}
NORMS = {
    "layer": "nn.LayerNorm({dim})",
    "rms": "nn.RMSNorm({dim}, eps=1e-5)",
    "batch": "FeatureBatchNorm({dim})",
}

_MARK = re.compile(r"(?:^|\s+)#\?\s*(?P<cond>[\w ,]+?)\s*$")
_SECTION = re.compile(r"^#: (\w+)\n", re.M)

Flags = dict[str, bool]
Values = dict[str, object]


@functools.cache
def template(name: str) -> str:
    """The text of ``templates/{name}`` (read from the installed package)."""
    return resources.files(__package__).joinpath("templates", name).read_text(encoding="utf-8")


@functools.cache
def _shared_sections() -> dict[str, str]:
    parts = _SECTION.split(template("shared.py.tmpl"))  # ["", name, text, name, text, ...]
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def _holds(cond: str, flags: Flags) -> bool:
    for item in cond.split(","):
        name = item.strip()
        want = not name.startswith("not ")
        if flags[name.removeprefix("not ").strip()] != want:  # KeyError: an unknown flag
            return False
    return True


def render(text: str, flags: Flags, values: Values) -> str:
    """Fill one template: keep the lines whose ``#?`` flags hold (marker removed),
    substitute every ``$name``, and collapse runs of blank lines to two."""
    kept = []
    for line in text.splitlines():
        mark = _MARK.search(line)
        if mark is None:
            kept.append(line)
        elif _holds(mark["cond"], flags):
            kept.append(line[: mark.start()])
    filled = string.Template("\n".join(kept)).substitute(values)
    return re.sub(r"\n\s*\n(\s*\n)+", "\n\n\n", filled).strip("\n")


def _config_lines(cfg: StackConfig | EncoderConfig) -> str:
    return "\n".join(f"    {f.name} = {getattr(cfg, f.name)!r}" for f in dataclasses.fields(cfg))


def _stack(c: StackConfig) -> tuple[Flags, Values]:
    shortcut = c.residual in ("add", "scaled")
    normal_init = c.init in ("kaiming", "xavier")
    flags = {
        "linear": c.block == "linear",
        "ffn": c.block == "ffn",
        "plain": c.residual == "none",
        "add": c.residual == "add",
        "scaled": c.residual == "scaled",
        "concat": c.residual == "concat",
        "concat_project": c.residual == "concat" and c.concat_project,
        "project": shortcut and c.mismatch == "project",
        "skip": shortcut and c.mismatch == "skip",
        # The shortcut joins W x + b inside the activation: y = act(x + W x + b).
        "act_inside": shortcut and c.join == "before_act",
        "alpha_learnable": c.alpha_learnable,
        "identity_scale": c.residual == "add" and c.identity_scale != 1,
        "norm": c.norm != "none",
        "pre_norm": c.norm != "none" and c.norm_position == "pre",
        "post_norm": c.norm != "none" and c.norm_position == "post",
        "batch_norm": c.norm == "batch",
        "out_dim": c.out_dim is not None,
        "init": c.init != "default",
        "normal_init": normal_init,
        "kaiming": c.init == "kaiming",
        "xavier": c.init == "xavier",
        "small": c.init == "small",
        "math": False,
    }
    w = c.layer_widths
    residual_text = {
        "none": "no shortcut (plain)",
        "add": "add: y = x + f(x)",
        "scaled": f"scaled: y = x + alpha * f(x), alpha = {c.alpha:g}"
        + (" (learnable)" if c.alpha_learnable else " (fixed)"),
        "concat": "concat: y = [x, f(x)]" + (" then a projection" if c.concat_project else ""),
    }[c.residual]
    norm_dim = "w_in" if c.norm_position == "pre" else "self.out_width"
    init_doc = {
        "kaiming": "Kaiming-normal weights (ReLU gain) and zero biases in every block",
        "xavier": "Xavier-normal weights and zero biases in every block",
        "small": "Near-zero branches: each block's last layer (weight, bias) times 0.01",
        "default": "",
    }[c.init]
    values = {
        "title": f"A {c.n_blocks}-block {c.block} stack, {residual_text}.",
        "widths": f"[{w[0]}] * {len(w)}" if len(set(w)) == 1 else str(list(w)),
        "ffn_mult": c.ffn_mult,
        "out_dim": c.out_dim,
        "identity_scale": repr(float(c.identity_scale)),
        "alpha": repr(float(c.alpha)),
        "activation": ACTIVATIONS[c.activation],
        "out_width": "w_in + w_out  # [x, f(x)] side by side"
        if flags["concat"] and not c.concat_project
        else "w_out",
        "norm": NORMS.get(c.norm, "").format(dim=norm_dim),
        "h": "h" if flags["pre_norm"] else "x",
        "scale": "IDENTITY_SCALE * " if flags["identity_scale"] else "",
        "init_doc": init_doc + ".",
        "last_layer": "fc" if c.block == "linear" else "fc2",
        "model_class": "Net",
        "example_input": "torch.randn(8, WIDTHS[0])",
    }
    return flags, values


def _sublayer(call: str, norm: str | None, pre: bool, residual: bool) -> str:
    """One encoder sublayer's sum, e.g. Pre-LN ``x + self.attn(self.norm1(x))``."""
    if pre:
        out = call.format(f"self.{norm}(x)" if norm else "x")
        return f"x + {out}" if residual else out
    summed = f"x + {call.format('x')}" if residual else call.format("x")
    return f"self.{norm}({summed})" if norm else summed


def _encoder(c: EncoderConfig) -> tuple[Flags, Values]:
    norm = c.norm != "none"
    pre = c.norm_position == "pre"
    flags = {
        "ffn": c.use_ffn,
        "dropout": c.dropout > 0,
        "norm": norm,
        "final_norm": norm and pre,
        "batch_norm": c.norm == "batch",
        "learned": c.positional == "learned",
        "sinusoidal": c.positional == "sinusoidal",
        "positions": c.positional != "none",
        "init": c.init == "xavier",
        "math": True,
    }
    if not c.residual:
        rule = "no residual: x = sublayer(...)"
    elif not norm:
        rule = "residual sum x = x + sublayer(...)"
    else:
        rule = "Pre-LN: x = x + sublayer(norm(x))" if pre else "Post-LN: x = norm(x + sublayer(x))"
    attn = "self.dropout(self.attn({}))" if flags["dropout"] else "self.attn({})"
    values: Values = {
        "title": f"A {c.n_layers}-layer transformer encoder. Block: {rule}.",
        "dropout": repr(c.dropout),
        "activation": ACTIVATIONS[c.activation],
        "norm": NORMS.get(c.norm, "").format(dim="D_MODEL"),
        "attn_sublayer": _sublayer(attn, "norm1" if norm else None, pre, c.residual),
        "ffn_sublayer": _sublayer("self.ffn({})", "norm2" if norm else None, pre, c.residual),
        "model_class": "Encoder",
        "example_input": "torch.randint(0, VOCAB_SIZE, (2, min(16, MAX_LEN)))",
    }
    for name in ("vocab_size", "max_len", "d_model", "n_heads", "n_layers", "d_ff"):
        values[name] = getattr(c, name)
    return flags, values


def generate_code(cfg: StackConfig | EncoderConfig) -> str:
    """A self-contained script (only torch) for exactly ``cfg``; its ``build_model()``
    seeds torch with ``cfg.seed`` and creates ``rv.build(cfg)``'s modules in the same
    order, so it returns the same weights and state-dict keys. Running the script
    prints the parameter count and the output shape for a random batch."""
    if isinstance(cfg, StackConfig):
        name, (flags, values) = "stack.py.tmpl", _stack(cfg)
    elif isinstance(cfg, EncoderConfig):
        name, (flags, values) = "encoder.py.tmpl", _encoder(cfg)
    else:
        raise TypeError(
            f"generate_code() takes a StackConfig or EncoderConfig, not {type(cfg).__name__}."
        )
    values |= {"seed": cfg.seed, "config_lines": _config_lines(cfg)}
    for section, text in _shared_sections().items():
        values[section] = render(text, flags, values)
    return render(template(name), flags, values) + "\n"


__all__ = ["generate_code"]
