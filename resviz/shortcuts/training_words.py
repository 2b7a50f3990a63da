"""The skip-connections page's training sections over seeds: He et al.'s degradation
(does the deeper plain stack train worse than the shallow one, and the residual
one?), the cosine between shortcut and update before and after training, and Veit et
al.'s lesion study (which deleted block hurts most). Each direction is worded from
every seed's outcome (:func:`resviz.words.seeds.seeds_sentence`): stated with how many
seeds show it, the split shown when they disagree.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from resviz.shortcuts.words import _clause, _seeds, per_arm
from resviz.words.numbers import format_number
from resviz.words.seeds import band_words, seeds_label, seeds_sentence, span
from resviz.words.sentences import change, compare, order

if TYPE_CHECKING:
    from resviz.core import Result
    from resviz.shortcuts.degradation import DegradationConfig, LesionConfig

__all__ = [
    "cosine_caption",
    "degradation_caption",
    "degradation_intro",
    "lesion_intro",
    "DEPTH_OUTCOMES",
    "LESION_VERDICT_WORDS",
    "cosine_seeds",
    "degradation_seeds",
    "lesion_account",
    "lesion_seeds_caption",
    "seeds_run_words",
    "worst_block_seeds",
]


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
    stack ended higher, in every seed (:func:`degradation_seeds`)."""
    return (
        f"Cross-entropy and error on all {r.n_points:,} training points, every "
        f"{r.eval_every} steps; guessing one of {r.classes} classes at random gives error "
        f"{r.classes - 1}/{r.classes} on average. He et al.'s degradation is a deeper plain "
        "stack ending higher than a shallower one. "
        + degradation_seeds([run.curves for run in r.per_seed], r.shallow, r.deep, r.seeds or None)
        + " "
        + band_words(_seeds(r.seeds or None, len(r.per_seed)))
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
        + cosine_seeds([run.cosine for run in r.per_seed], r.seeds or None)
        + " "
        + band_words(_seeds(r.seeds or None, len(r.per_seed)))
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


DEPTH_OUTCOMES = {1: "worse", -1: "better", 0: "same", None: "not finite"}


def degradation_seeds(
    curves_per_seed: Sequence[pd.DataFrame],
    shallow: int,
    deep: int,
    seeds: Sequence[int] | None = None,
    rtol: float = 0.05,
) -> str:
    """The degradation chart in words, from every seed: for plain and for residual,
    did the deeper stack end with a higher loss than the shallower one (at each
    stack's last evaluation; within ``rtol``: about the same)?

    Each frame has ``kind, depth, step, loss`` (:func:`resviz.train_degradation`'s
    curves, complete or in progress). One seed: both losses and the factor, as that
    seed's; several: how many seeds show each outcome, and the final losses' spread."""
    ss = _seeds(seeds, len(curves_per_seed))
    lasts = [
        c.groupby(["kind", "depth"], sort=False).tail(1).set_index(["kind", "depth"])
        for c in curves_per_seed
    ]
    steps = [int(x) for last in lasts for x in last["step"]]
    if not steps:
        return "No evaluation yet."
    lo, hi = min(steps), max(steps)
    parts = [
        f"At each stack's last evaluation ({f'step {hi}' if lo == hi else f'steps {lo} to {hi}'}):"
    ]
    for kind in ("plain", "residual"):
        pairs = [
            (float(last.loc[(kind, deep), "loss"]), float(last.loc[(kind, shallow), "loss"]))
            if (kind, shallow) in last.index and (kind, deep) in last.index
            else None
            for last in lasts
        ]
        if any(p is None for p in pairs):
            continue  # a stack without an evaluation yet (a run still starting)
        outcomes = [DEPTH_OUTCOMES[order(d, s, rtol)] for d, s in pairs]  # type: ignore[misc]
        verdict = {
            "worse": f"the deeper {kind} stack trains worse (degradation)",
            "better": f"the deeper {kind} stack trains better",
            "same": "depth makes little difference",
            "not finite": "the two cannot be compared",
        }
        if len(pairs) == 1:
            d, s = pairs[0]  # type: ignore[misc]
            head = compare(
                f"the {deep}-block {kind} stack", d, f"the {shallow}-block one", s, "the loss", rtol
            )
            parts.append(
                seeds_sentence(
                    outcomes, {outcomes[0]: f"{_clause(head)}, so {verdict[outcomes[0]]}"}, ss
                )
            )
            continue
        says = {
            "worse": f"the {deep}-block {kind} stack ends with the higher loss, so {verdict['worse']}",
            "better": f"the {deep}-block {kind} stack ends with the lower loss, so {verdict['better']}",
            "same": f"the two {kind} stacks end within {rtol:.0%} of each other, so {verdict['same']}",
            "not finite": f"a {kind} stack's loss is not finite, so {verdict['not finite']}",
        }
        parts.append(seeds_sentence(outcomes, says, ss))
        parts.append(
            f"Final loss of the {kind} stacks, lowest to highest seed: {deep} blocks "
            f"{span([d for d, _ in pairs])}, {shallow} blocks {span([s for _, s in pairs])}."  # type: ignore[misc]
        )
    return " ".join(parts)


def cosine_seeds(
    frames_per_seed: Sequence[pd.DataFrame], seeds: Sequence[int] | None = None
) -> str:
    """How the mean cosine over the blocks changes from init to trained, per variant,
    from every seed (frames with ``variant, stage, cosine``; stages ``init`` and
    ``trained``; NaN left out). A variant with no finite cosine in any seed is left
    out (nothing of it is drawn)."""
    ss = _seeds(seeds, len(frames_per_seed))
    variants = list(dict.fromkeys(v for f in frames_per_seed for v in f["variant"]))
    out = []
    for name in variants:
        means = []
        for f in frames_per_seed:
            g = f[f["variant"] == name]
            m = {}
            for st in ("init", "trained"):
                vals = g.loc[g["stage"] == st, "cosine"].astype(float)
                vals = vals[vals.map(math.isfinite)]
                m[st] = float(vals.mean()) if len(vals) else None
            means.append(m)
        if all(m["init"] is None and m["trained"] is None for m in means):
            continue
        outcomes = []
        for m in means:
            if m["init"] is None or m["trained"] is None:
                outcomes.append("missing")
            else:
                sign = order(m["trained"], m["init"])
                outcomes.append({1: "rises", -1: "falls", 0: "stays", None: "missing"}[sign])
        subject = f"the mean cosine of {name}"
        if len(means) == 1:
            m = means[0]
            text = (
                f"{name} has no finite cosine at {'init' if m['init'] is None else 'trained'}"
                if outcomes[0] == "missing"
                else _clause(change(m["init"], m["trained"], subject))  # type: ignore[arg-type]
            )
            out.append(seeds_sentence(outcomes, {outcomes[0]: text}, ss))
            continue
        says = {}
        for o in set(outcomes):
            mine = [m for m, oo in zip(means, outcomes, strict=True) if oo == o]
            if o == "missing":
                says[o] = f"{name} has no finite cosine at init or after training"
                continue
            inits = [m["init"] for m in mine if m["init"] is not None]  # None: only "missing"
            trained = [m["trained"] for m in mine if m["trained"] is not None]
            nums = f"(init {span(inits)}; trained {span(trained)})"
            verb = {"rises": "rises", "falls": "falls", "stays": "stays within 5%"}[o]
            says[o] = f"{subject} {verb} from init to trained {nums}"
        out.append(seeds_sentence(outcomes, says, ss))
    return " ".join(out)


LESION_VERDICT_WORDS = {
    "barely changes": "the {kind} stack barely changes: every deletion costs at most {limit} points",
    "depends on the block": "for the {kind} stack it depends on the block: some deletions cost "
    "at most {limit} points, others more",
    "suffers": "the {kind} stack suffers: every deletion costs more than {limit} points",
    "did not learn": "the {kind} stack did not learn the task (it needs accuracy {need}), so its "
    "lesion shows nothing",
}


def _blocks_words(blocks: Sequence[int]) -> str:
    """``"block 3"``, ``"block 2 or 5"``, ``"block 2, 5 or 7"``."""
    b = [str(int(x)) for x in blocks]
    return "block " + (b[0] if len(b) == 1 else ", ".join(b[:-1]) + " or " + b[-1])


def worst_block_seeds(
    rows: Sequence[Any],
    kind: str,
    seeds: Sequence[int] | None = None,
    lesions: Sequence[pd.DataFrame] | None = None,
) -> str:
    """Which deleted block hurts the ``kind`` stack most, from every seed's
    :func:`resviz.lesion_summary` row: it moves with the seed (with 8 blocks the residual
    stack's worst block is 2, 2, 4 in seeds 0-2), so it is stated only
    where the seeds agree. With each seed's lesion frame (``lesions``: ``kind, block,
    accuracy``), blocks tied for the lowest accuracy are named together. A seed whose
    stack did not learn, or that no deletion hurts, says so instead of naming a block."""
    ss = _seeds(seeds, len(rows))
    outcomes, says = [], {}
    for i, row in enumerate(rows):
        if not bool(row["learned"]):
            o = "did not learn"
            says[o] = f"the {kind} stack did not learn, so no deletion can be said to hurt it most"
        elif float(row["worst_drop"]) <= 0:
            o = "none"
            says[o] = f"no deletion lowers the {kind} stack's accuracy"
        else:
            worst = [int(row["worst_block"])]
            if lesions is not None:
                g = lesions[i][lesions[i]["kind"] == kind]
                worst = [int(b) for b in g.loc[g["accuracy"] == g["accuracy"].min(), "block"]]
            o = _blocks_words(worst)
            tied = " (tied)" if len(worst) > 1 else ""
            says[o] = f"deleting {o} hurts the {kind} stack most{tied}"
        outcomes.append(o)
    return seeds_sentence(outcomes, says, ss)


def lesion_seeds_caption(
    summaries: Sequence[pd.DataFrame],
    seeds: Sequence[int] | None = None,
    classes: int = 3,
    lesions: Sequence[pd.DataFrame] | None = None,
) -> str:
    """What the lesion chart shows, from every seed's :func:`resviz.lesion_summary`:
    for each stack its verdict on every deletion (:func:`resviz.lesion_verdict`) and
    which block hurts it most, each stated where the seeds agree and split where they
    do not. One seed: that seed's :func:`resviz.lesion_sentence` with its numbers;
    several: the spread of the intact accuracy and of the mean and worst drop.
    ``lesions``: each seed's lesion frame, to name blocks tied for the worst."""
    # resviz.shortcuts imports resviz.words: the lesion's own verdict and sentence are
    # read at call time, never at import.
    from resviz.shortcuts.lesions import (
        LESION_SMALL_DROP,
        format_accuracy,
        learned_accuracy,
        lesion_sentence,
        lesion_verdict,
    )

    ss = _seeds(seeds, len(summaries))
    need = format_accuracy(learned_accuracy(classes))
    limit = format_number(100 * LESION_SMALL_DROP)
    parts = [
        "Veit et al. (2016): each trained stack with one block deleted (x_{l+1} = x_l), "
        f"scored on the training points; chance is 1/{classes}. A stack counts as having "
        f"learned the task at accuracy {need} or more (halfway from chance to perfect), and "
        f"a deletion as small when it costs at most {limit} accuracy points."
    ]
    kinds = list(dict.fromkeys(k for s in summaries for k in s["kind"]))
    for kind in kinds:
        rows = [s[s["kind"] == kind].iloc[0] for s in summaries]
        verdicts = [lesion_verdict(row) for row in rows]
        if len(rows) == 1:
            parts.append(
                seeds_sentence(
                    verdicts, {verdicts[0]: _clause(lesion_sentence(rows[0], classes))}, ss
                )
            )
        else:
            says = {
                v: w.format(kind=kind, limit=limit, need=need)
                for v, w in LESION_VERDICT_WORDS.items()
            }
            parts.append(seeds_sentence(verdicts, says, ss))
            parts.append(
                f"Over {seeds_label(ss)}, the {kind} stack's intact accuracy is "
                f"{span([r['intact'] for r in rows])}; a deletion changes it by "
                f"{span([-100 * float(r['mean_drop']) for r in rows])} points on average and "
                f"{span([-100 * float(r['worst_drop']) for r in rows])} at worst."
            )
        if all(v == "did not learn" for v in verdicts):
            continue
        parts.append(worst_block_seeds(rows, kind, ss, lesions))
        top = max(set(verdicts), key=verdicts.count)
        agreed = verdicts.count(top) >= (len(verdicts) if len(verdicts) <= 3 else len(verdicts) - 1)
        if kind == "plain":
            parts.append("A plain stack has a single path, and every deletion cuts it.")
        elif agreed and top == "barely changes":
            parts.append(
                "Deleting one of its blocks removes only the paths through that block's "
                "branch, half of them; the other half still reach the output."
            )
        elif agreed and top == "suffers":
            parts.append(
                "At these settings it does not shrug a deletion off the way Veit et al.'s "
                "deep residual networks did."
            )
    return " ".join(parts)


def seeds_run_words(seeds: Sequence[int]) -> str:
    """Which seeds a trained section ran: ``"Trained from seed 0."`` or ``"Trained from
    seeds 0-2, one run each."``"""
    if len(seeds) == 1:
        return f"Trained from {seeds_label(seeds)}."
    return f"Trained from {seeds_label(seeds)}, one run each."


def lesion_account(r: Result) -> str:
    """Under the Lesion section's chart: :func:`lesion_seeds_caption` of every seed's
    run, then what the band over the seeds is (:func:`resviz.words.seeds.band_words`)."""
    runs = r.per_seed
    summaries, lesions = [run.summary for run in runs], [run.lesion for run in runs]
    return lesion_seeds_caption(summaries, r.seeds, r.classes, lesions) + " " + band_words(r.seeds)
