"""The skip-connections page's sentences, worded from its recipes' results.

Each function takes a result of :mod:`resviz.shortcuts.recipes` (and the settings it
was computed at, by URL name) and returns the caption the page shows under it: every
figure comes from the result, every claim holds for the settings given.

A result may hold several seeds (``r.per_seed``). Every sentence that states a
direction (the norm rises, the deeper stack trains worse, the cosine falls, which
deleted block hurts most) is worded from each seed's own outcome with
:func:`resviz.words.seeds.seeds_sentence`: stated when the seeds agree, with how many
do, and the split shown when they do not. Numbers over several seeds are quoted as
their lowest to highest (:func:`resviz.words.seeds.span`); one seed's numbers name the seed.

The page's other sentences are here too (the last part): its notes on the settings, the
Stack section's texts and the trained sections' run notes (progress, table caption,
divergence warnings).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from resviz.words.numbers import format_number
from resviz.words.seeds import band_words, seeds_sentence, span
from resviz.words.seeds import seed_progress as words_seed_progress
from resviz.words.sentences import trend, trend_outcome, value_range

if TYPE_CHECKING:
    from resviz.core import Result

__all__ = [
    "STACK_INTRO",
    "STOPPED_NOTE",
    "code_intro",
    "diverged_words",
    "final_caption",
    "seed_progress",
    "settings_notes",
    "stopped",
    "task_caption",
    "stack_norm_rule",
    "paths_caption",
    "per_arm",
    "share_caption",
    "shortcut_table_caption",
    "signal_caption",
    "trend_seeds",
]


def per_arm(turns: float) -> str:
    """``"1 turn per arm"``, ``"2 turns per arm"``."""
    return f"{turns:g} turn{'' if turns == 1 else 's'} per arm"


def shortcut_table_caption(
    r: Result, v: Mapping[str, Any], seed_widths: tuple[int, ...] = (25, 25, 43, 43, 54, 54)
) -> str:
    """Under the Stack section's table (:func:`resviz.shortcuts.recipes.stack`): how many
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
            f"preset of widths {', '.join(map(str, seed_widths))} has blocks that do."
        )
    return (
        f"{r.with_shortcut} of {r.blocks} blocks have a shortcut; {r.projections} of them "
        f"are projections. {changes}"
    )


def signal_caption(r: Result, v: Mapping[str, Any]) -> str:
    """Under the Signal section's norms (:func:`resviz.shortcuts.recipes.signal`): the
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
    seeds = r.seeds or None
    for name in dict.fromkeys(r.signal["variant"]):
        who = (
            "without a shortcut"
            if name == "plain" or mode == "none"
            else f"with the shortcut ({mode})"
        )
        per = [run.signal[run.signal["variant"] == name] for run in r.per_seed]
        labels = [f"block {b}" for b in per[0]["block"]]
        parts.append(trend_seeds([g["norm"] for g in per], labels, f"the mean norm {who}", seeds))
    parts.append(band_words(_seeds(seeds, len(r.per_seed))))
    return " ".join(parts)


def share_caption(r: Result) -> str:
    """Under the Signal section's identity share and cosine: their definitions and
    their measured ranges."""
    t = r.terms
    many = "seed" in t.columns and t["seed"].nunique() > 1
    labels = [
        f"block {row.block}, seed {row.seed}" if many else f"block {row.block}"
        for row in t.itertuples()
    ]
    subject = "over the seeds, identity_share" if many else "here identity_share"
    return (
        "identity_share = ||s||^2 / (||s||^2 + ||u||^2), where a block joins the shortcut "
        "term s and the update u (y = s + u, inside the activation when joined before it): "
        "how much of the sum is the shortcut term (1 for ReZero at init, where u = 0). "
        "cosine = cos(s, u): near 0 means each block adds a direction orthogonal to what "
        "the stream holds. Whether that holds is measured, at init here and after training "
        "in the Degradation section (no cosine where a block has no shortcut, or with "
        "concat, which places x and f(x) side by side instead of adding them). "
        + value_range(t["identity_share"], labels, subject)
        + " "
        + value_range(t["cosine"], labels, "the cosine")
        + " "
        + band_words(_seeds(r.seeds or None, len(r.per_seed)))
    )


def paths_caption(r: Result) -> str:
    """Under the Paths section's bars (:func:`resviz.shortcuts.recipes.paths`): the
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


# ------------------------------------------------------------------ over seeds
def _clause(sentence: str) -> str:
    """A sentence as a clause: first letter lower case, final full stop dropped."""
    s = sentence.strip()
    s = s[:-1] if s.endswith(".") else s
    return s[:1].lower() + s[1:]


def _seeds(seeds: Sequence[int] | None, n: int) -> tuple[int, ...]:
    return tuple(seeds) if seeds else tuple(range(n))


def trend_seeds(
    per_seed: Sequence[Sequence[float]],
    labels: Sequence[str],
    subject: str,
    seeds: Sequence[int] | None = None,
    flat: float = 1.5,
) -> str:
    """How ``subject`` changes from the first label to the last, in every seed.

    ``per_seed``: one sequence of values per seed (one per label). One seed: its
    :func:`resviz.words.trend` sentence, as that seed's. Several: each seed's
    direction (:func:`resviz.words.sentences.trend_outcome`), stated when they agree
    (``"In 3 of 3 seeds the mean norm rises from block 1 to block 16 (block 1:
    7.9–8.1; block 16: 1.1e4–1.3e4)"``), the split when they do not."""
    ss = _seeds(seeds, len(per_seed))
    vals = [[float(x) for x in v] for v in per_seed]
    outcomes = [trend_outcome(v, flat) for v in vals]
    if len(vals) == 1:
        return seeds_sentence(
            outcomes, {outcomes[0]: _clause(trend(vals[0], labels, subject, flat))}, ss
        )
    first, last = labels[0], labels[-1]
    says = {}
    for o in set(outcomes):
        mine = [v for v, oo in zip(vals, outcomes, strict=True) if oo == o]
        if o in ("rises", "falls"):
            says[o] = (
                f"{subject} {o} from {first} to {last} ({first}: "
                f"{span([v[0] for v in mine])}; {last}: {span([v[-1] for v in mine])})"
            )
        elif o == "flat":
            lo, hi = min(min(v) for v in mine), max(max(v) for v in mine)
            most = max(max(v) / min(v) for v in mine)
            says[o] = (
                f"{subject} stays within a factor of {format_number(flat)} from {first} to "
                f"{last} (at most {format_number(most)} in any of them; values {span([lo, hi])})"
            )
        elif o == "returns":
            says[o] = f"{subject} ends where it starts ({span([v[0] for v in mine])})"
        elif o == "not finite":
            says[o] = f"{subject} reaches a value that is not finite"
        else:
            says[o] = f"{subject} has no change to show ({o})"
    return seeds_sentence(outcomes, says, ss)


def stack_norm_rule(residual: str, join: str = "after_act", concat_project: bool = False) -> str:
    """How a block's output norm relates to its input's, for this shortcut (algebra,
    true for every weight): the sentence a forward-signal chart can rest on."""
    if residual == "none":
        return (
            "Without a shortcut, a block outputs f(x) alone: its norm is whatever the weights "
            "and activation make of the previous one."
        )
    if join == "before_act":
        return (
            "Joined before the activation, y = act(x + u): the activation acts on the sum, "
            "so the input is not passed on unchanged."
        )
    if residual == "concat":
        rule = "||[x, f]||^2 = ||x||^2 + ||f||^2: the input's norm is kept"
        if concat_project:
            rule += ", and then the projection P maps [x, f] back to the width"
        return f"Concatenating, {rule}."
    return (
        "With y = x + u, ||y||^2 = ||x||^2 + ||u||^2 + 2<x, u>: the norm can fall only "
        "where u points against x."
    )


# ------------------------------------------------------------------ around the sections
def settings_notes(mode: str, full: bool) -> str:
    """Which of the stack's settings wait for another shortcut than ``mode`` (drawn
    disabled, keeping their value): λ for scaled, projecting back for concat (in the
    full stack's settings, ``full``), and where to join when there is no shortcut."""
    notes = [] if mode == "scaled" else [f"λ acts only with Shortcut = scaled (here: {mode})."]
    if full and mode != "concat":
        notes.append("Projecting back acts only with Shortcut = concat.")
    if full and mode == "none":
        notes.append("Where the shortcut joins: no shortcut here to join.")
    return " ".join(notes)


STACK_INTRO = (
    "Which blocks got a shortcut, read off the built model. Where a block changes the "
    "width, an identity shortcut cannot be added: with add or scaled it is either "
    "dropped (*skip*) or replaced by a projection `P x` with its own weights "
    "(*project*). Concat needs neither: it joins x and f(x) side by side, whatever "
    "their widths."
)


def code_intro(seed: int) -> str:
    """Above the Stack section's generated code: what it needs and which weights."""
    return (
        "The PyTorch code for exactly this stack. It needs only `torch`; `build_model()` "
        f"creates the same weights as the page's seed {seed} (same creation order)."
    )


def task_caption(seed: int, seeds: int) -> str:
    """Under the spirals a trained section learns: whose points they are."""
    return f"The points of seed {seed}" + (
        f"; each of the {seeds} seeds trains on points of its own." if seeds > 1 else "."
    )


def seed_progress(step: int, total: int, seeds: int, first_seed: int) -> str:
    """:func:`resviz.words.seeds.seed_progress` for a live run of ``seeds`` seeds whose
    recipe counts every seed's steps in one ``total`` (seed k of n: k*steps + step),
    and that the curves are that seed's."""
    said = words_seed_progress(step, total // max(seeds, 1), seeds, first_seed)
    return f"{said} The curves below are this seed's so far."


STOPPED_NOTE = (
    "The run on screen was stopped early; this notebook trains every step, so its numbers "
    "go further than the page's."
)


def stopped(r: Result) -> bool:
    """Whether any seed's training was stopped early."""
    return any(run.stopped for run in r.per_seed)


def diverged_words(r: Result) -> list[str]:
    """One warning per stack whose training diverged (a Degradation result): where, why,
    and in which seed where there are several."""
    many = len(r.per_seed) > 1
    return [
        f"{row.variant} diverged at step {row.step} ({row.divergence})"
        + (f" in seed {row.seed}" if many else "")
        + "; training of that stack stopped there"
        + (" (dashed vertical line)." if not many else ".")
        for row in r.curves[r.curves["diverged"].astype(bool)].itertuples()
    ]


def final_caption(r: Result) -> str:
    """Under the Degradation section's final table: the time the four stacks took, the
    rows' meaning over seeds, and whether training was stopped early."""
    many = len(r.per_seed) > 1
    seconds = sum(run.seconds for run in r.per_seed)
    return (
        f"After training ({seconds:.1f} s for all four stacks"
        + (f" in each of the {len(r.per_seed)} seeds" if many else "")
        + ", lesions and cosines included)."
        + (" One row per seed and stack." if many else "")
        + (
            " Training was stopped early: the step column says where each stack ended."
            if stopped(r)
            else ""
        )
    )
