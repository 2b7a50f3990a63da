"""One block's Jacobian at init: the singular values of its branch ``J = df/dx`` and of
the whole block ``I + J`` (``s I + J`` for a scaled shortcut), the local fact behind
the gradient-flow derivation ``dL/dx_l = dL/dx_{l+1} (I + J_l)`` (He et al. 2016,
Identity Mappings in Deep Residual Networks, section 3).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd
import torch

from resviz.config import StackConfig
from resviz.data import make_batch
from resviz.gradients.layers import PLAIN, _float64_device, _stacked
from resviz.hooks import tap
from resviz.models import build


def block_jacobian(
    cfg: StackConfig,
    block: int = 1,
    seed: int = 0,
    batch_size: int = 32,
    sample: int = 0,
    device: torch.device | str | None = None,
) -> pd.DataFrame:
    """Singular values of one block's Jacobians at init: block ``l`` (counted from 1
    at the input side) as a whole, ``dx_l/dx_{l-1}``, and its branch ``J = df/dx_{l-1}``.

    The block's input ``x_{l-1}`` comes from running a Gaussian batch through the
    blocks before it; the Jacobian is taken for one ``sample`` of that batch with the
    others held fixed (batch norm couples the samples through the batch
    statistics). For ``y = s x + f(x)`` the block Jacobian is ``s I + J``.

    One row per singular value: ``matrix`` (``"block"`` or ``"branch J"``),
    ``index`` (0 = largest) and ``sigma``. ``attrs`` holds the spectral norms
    ``block_norm`` and ``branch_norm``. Everything runs in float64 (the float32
    weights cast exactly), so a singular value far below the largest is measured,
    not lost to float32's rounding (about 1e-7 of the largest).
    """
    if isinstance(block, bool) or not isinstance(block, int) or not 1 <= block <= cfg.n_blocks:
        raise ValueError(f"block={block!r} is out of range: choose 1 to {cfg.n_blocks}.")
    if not 0 <= sample < batch_size:
        raise ValueError(f"sample={sample} is out of range: choose 0 to {batch_size - 1}.")
    dev = _float64_device(device)
    model = build(cfg, dev)
    model.train()
    gen = torch.Generator().manual_seed(seed)
    x, _ = make_batch(cfg, batch_size, 1, gen)
    # The blocks before it in float64, one at a time (their float32 weights cast
    # exactly), so x_{l-1} is the float64 input without a float64 copy of the stack.
    h = x.to(dev, torch.float64)
    with torch.no_grad():
        for i in range(block - 1):
            h = model.blocks[i].to(torch.float64)(h)
            model.blocks[i].to(torch.float32)
    module = model.blocks[block - 1].to(torch.float64)
    # Only this block is needed from here on: free the others' weights (all of a
    # 100 x 512 stack's are 105 MB) before the Jacobian's own working memory.
    del model

    def run(v: torch.Tensor, which: str, live: dict[str, torch.Tensor]) -> torch.Tensor:
        batch = torch.cat([h[:sample], v[None], h[sample + 1 :]])
        out = module(batch)
        return (out if which == "block" else live["branch_out"])[sample]

    # One backward per row, not vmap: vmap's batched rows hold [width, batch, width]
    # intermediates (about 70 MB more at width 512) and, at one torch thread per
    # caller (the server's policy), were slower too: 2.6 s against 1.4 s at width 512.
    with tap(module, ["branch_out"], live=True) as live:
        jac = {
            "block": torch.autograd.functional.jacobian(
                lambda v: run(v, "block", live), h[sample], vectorize=False
            ),
            "branch J": torch.autograd.functional.jacobian(
                lambda v: run(v, "branch", live), h[sample], vectorize=False
            ),
        }
    rows = []
    norms = {}
    for name, m in jac.items():
        sv = torch.linalg.svdvals(m.detach().double().cpu()).numpy()
        norms[name] = float(sv[0])
        rows += [{"matrix": name, "index": i, "sigma": float(v)} for i, v in enumerate(sv)]
    out = pd.DataFrame(rows)
    out.attrs["block_norm"] = norms["block"]
    out.attrs["branch_norm"] = norms["branch J"]
    return out


def jacobian_norms(
    spectra: Mapping[str, pd.DataFrame], per_layer: Mapping[str, pd.DataFrame] | None = None
) -> pd.DataFrame:
    """One row per stack: the spectral norms (largest singular values) of the branch
    Jacobian ``J`` and of the block Jacobian, from :func:`block_jacobian` frames by
    label, and, given its :func:`layer_gradients` frame, beside the whole stack's
    gain ``||dL/dx_0|| / ||dL/dx_L||``."""
    rows = []
    for name, sv in spectra.items():
        top = sv.groupby("matrix")["sigma"].max()
        row = {
            "variant": name,
            "||J|| (branch)": float(top["branch J"]),
            "||block Jacobian||": float(top["block"]),
        }
        if per_layer is not None:
            row["||dL/dx_0|| / ||dL/dx_L||"] = float(per_layer[name]["gain"].iloc[0])
        rows.append(row)
    return pd.DataFrame(rows)


def jacobian_spectrum(
    spectra: Mapping[str, pd.DataFrame], without_shortcut: Sequence[str] = (PLAIN,)
) -> pd.DataFrame:
    """Every singular value, from :func:`block_jacobian` frames by label, one curve each:
    ``variant``, ``matrix``, ``index``, ``sigma`` and ``curve`` (the label up to its
    colon and the matrix: ``"plain, branch J"``, ``"residual, I + J"``). A stack
    named in ``without_shortcut`` has one curve: its block Jacobian is its branch's."""
    out = _stacked(spectra)
    plain = out["variant"].isin(list(without_shortcut)) & (out["matrix"] == "block")
    out = out[~plain].reset_index(drop=True)
    kind = out["variant"].str.split(":").str[0]
    out["curve"] = kind + ", " + out["matrix"]
    out.loc[out["matrix"] == "block", "curve"] = kind + ", I + J"
    return out[["variant", "matrix", "index", "sigma", "curve"]]
