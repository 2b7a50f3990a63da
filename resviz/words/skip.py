"""The skip-connections page's sentences, worded from its recipes' results.

Each function takes a result of :mod:`resviz.recipes.shortcuts` (and the settings it
was computed at, by URL name) and returns the caption the page shows under it: every
figure comes from the result, every claim holds for the settings given. The lesion
study's sentences are :func:`resviz.lesion_caption` (with the lesion code).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from resviz.words.runs import degradation_summary, stack_norm_rule, stage_change
from resviz.words.sentences import trend, value_range

if TYPE_CHECKING:
    from resviz.recipes.core import Result
    from resviz.shortcuts.degradation import DegradationConfig, LesionConfig

__all__ = [
    "cosine_caption",
    "degradation_caption",
    "degradation_intro",
    "lesion_intro",
    "paths_caption",
    "per_arm",
    "share_caption",
    "shortcut_table_caption",
    "signal_caption",
]


def per_arm(turns: float) -> str:
    """``"1 turn per arm"``, ``"2 turns per arm"``."""
    return f"{turns:g} turn{'' if turns == 1 else 's'} per arm"


def shortcut_table_caption(
    r: Result, v: Mapping[str, Any], seed_widths: tuple[int, ...] = (25, 25, 43, 43, 54, 54)
) -> str:
    """Under the Stack section's table (:func:`resviz.recipes.shortcuts.stack`): how many
    blocks got a shortcut, and whether *Where widths differ* matters for this stack."""
    if r.width_changes:
        changes = (
            f"{r.width_changes} of the {r.blocks} blocks change the width: *Where widths "
            "differ* decides what they get"
            + (" (concat needs neither)." if v["mode"] == "concat" else ".")
        )
    else:
        changes = (
            "No block here changes the width, so *Where widths differ* changes nothing; the "
            f"seed network preset (widths {', '.join(map(str, seed_widths))}) has blocks "
            "that do."
        )
    return (
        f"{r.with_shortcut} of {r.blocks} blocks have a shortcut; {r.projections} of them "
        f"are projections. {changes}"
    )


def signal_caption(r: Result, v: Mapping[str, Any]) -> str:
    """Under the Signal section's norms (:func:`resviz.recipes.shortcuts.signal`): the
    algebra of the shortcut, the blocks it holds in, and each curve's measured trend."""
    mode = v["mode"]
    parts = ["256 Gaussian inputs at init.", stack_norm_rule("none")]
    if mode != "none":
        parts.append(stack_norm_rule(mode, v["join"], bool(v["project"])))
        if mode in ("add", "scaled") and v["join"] == "after_act":
            if r.identity_blocks < r.blocks:
                parts.append(
                    f"That holds in the {r.identity_blocks} of {r.blocks} blocks whose "
                    "shortcut is the identity."
                )
    for name, g in r.signal.groupby("variant", sort=False):
        who = (
            "here, without a shortcut"
            if name == "plain" or mode == "none"
            else f"with the shortcut ({mode})"
        )
        parts.append(trend(g["norm"], [f"block {b}" for b in g["block"]], f"{who}, the mean norm"))
    return " ".join(parts)


def share_caption(r: Result) -> str:
    """Under the Signal section's identity share and cosine: their definitions and
    their measured ranges."""
    t = r.terms
    labels = [f"block {b}" for b in t["block"]]
    return (
        "identity_share = ||s||^2 / (||s||^2 + ||u||^2), where a block joins the shortcut "
        "term s and the update u (y = s + u, inside the activation when joined before it): "
        "how much of the sum is the shortcut term (1 for ReZero at init, where u = 0). "
        "cosine = cos(s, u): near 0 means each block adds a direction orthogonal to what "
        "the stream holds. Whether that holds is measured, at init here and after training "
        "in the Degradation section (no cosine where a block has no shortcut, or with "
        "concat, which places x and f(x) side by side instead of adding them). "
        + value_range(t["identity_share"], labels, "here identity_share")
        + " "
        + value_range(t["cosine"], labels, "the cosine")
    )


def paths_caption(r: Result) -> str:
    """Under the Paths section's bars (:func:`resviz.recipes.shortcuts.paths`): the
    count of paths and their lengths, for the blocks that have a shortcut."""
    k, n = r.with_shortcut, r.blocks
    forced = n - k
    if k:
        text = (
            f"Unroll every shortcut: each of the {k} blocks with one is either skipped or "
            f"passed through, so there are 2^{k} = {2**k:,} paths, and C({k}, j) of them pass "
            f"through j of those branches: Binomial({k}, 1/2), mean {k / 2:g}."
        )
        if forced:
            text += (
                f" The {forced} blocks without a shortcut must be passed through, so a path "
                f"through j of those branches has length j + {forced}."
            )
    else:
        text = f"No block has a shortcut: there is one path, through all {n} blocks."
    return text + (
        " This is Veit et al.'s unrolled view: a later branch receives the sum of the "
        "earlier paths, so the paths are not independent"
        + (
            "; joined before the activation, even the route that skips a branch passes "
            "through the activation."
            if r.before_act
            else "."
        )
    )


def degradation_intro(dcfg: DegradationConfig) -> str:
    """Above the Degradation section: what is trained, from its config."""
    return (
        "He et al. (2016, Fig. 1): a deeper plain network trained *worse* than a shallow "
        "one, not because it overfit but because it was harder to optimize. Here four "
        f"stacks of width {dcfg.width} learn to tell apart {dcfg.classes} interleaved "
        f"spirals ({dcfg.n_points:,} points, built in, {per_arm(dcfg.turns)}): "
        f"{dcfg.shallow} and {dcfg.deep} blocks, plain and with the shortcut "
        f"({dcfg.residual}), from the same seed on the same batches (Adam). The first "
        "block maps the 2-d points to the width"
        + (
            " and, like every concat block here, is projected back to the width."
            if dcfg.residual == "concat"
            else " and has no shortcut (the widths differ)."
        )
    )


def degradation_caption(r: Result) -> str:
    """Under the Degradation section's curves: what they are, and whether each deeper
    stack ended higher (:func:`resviz.degradation_summary`)."""
    return (
        f"Cross-entropy and error on all {r.n_points:,} training points, every "
        f"{r.eval_every} steps; guessing one of {r.classes} classes at random gives error "
        f"{r.classes - 1}/{r.classes} on average. He et al.'s degradation is a deeper plain "
        "stack ending higher than a shallower one. "
        + degradation_summary(r.curves, r.shallow, r.deep)
    )


def cosine_caption(r: Result, v: Mapping[str, Any]) -> str:
    """Under the Degradation section's cosine at init and trained."""
    # ReLU after the activation: block 1 outputs relu(...) >= 0 and every later block
    # adds a >= 0 times relu(...) to it, so stream and update are both non-negative.
    relu = v["act"] == "relu" and v["join"] == "after_act" and r.residual != "concat"
    return (
        "cos(shortcut, update) per block on the spiral points, at init and after training. "
        "Block 1 maps 2-d points to the width, so it has no cosine. Values near 0 would "
        "support the 'each block adds an orthogonal feature' reading"
        + (
            "; with ReLU joined after the activation, stream and update are both "
            "non-negative at init, so the cosine cannot be negative there. "
            if relu
            else ". "
        )
        + "Mean over the blocks, at init and trained: "
        + stage_change(r.cosine, "cosine", "variant", "stage", "init", "trained", "the cosine")
    )


def lesion_intro(lcfg: LesionConfig, degradation_turns: float) -> str:
    """Above the Lesion section: Veit et al.'s finding and what is trained here."""
    return (
        "Veit et al. (2016) deleted single blocks from trained networks: deleting most "
        "single blocks barely hurt a residual network (its downsampling blocks excepted), "
        "while deleting a layer of a plain VGG network broke it. Here a plain and a "
        f"residual stack of {lcfg.depth} blocks (width {lcfg.width}, with the activation "
        f"and init chosen above, the residual one with the shortcut ({lcfg.residual}); "
        f"Adam at {lcfg.lr:g}) learn spirals with {per_arm(lcfg.turns)}, fewer than the "
        f"Degradation section's {per_arm(degradation_turns)}, because a lesion only says "
        "something about a stack that learned its task. Then each block but the first is "
        "deleted in turn (x_{l+1} = x_l) and the stack is scored again. The first block "
        "maps the 2-d points to the width and cannot be deleted."
    )
