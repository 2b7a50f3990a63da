"""Sentences of the normalization page's training sections (warm-up, stability),
worded from every seed's run: the schedule, which run ends lower and by how much,
where a run starts and ends, and which runs diverged. Numbers over seeds are quoted as
their range (:func:`resviz.norms.words.span`); a direction is stated with how many
seeds show it (:func:`resviz.words.seeds.seeds_sentence`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from resviz.config import EncoderConfig
from resviz.core import Result
from resviz.norms.settings import Warmup
from resviz.norms.words import SEED
from resviz.words.numbers import format_number, lower_words
from resviz.words.seeds import band_words, seeds_label, seeds_sentence, seeds_sentence_by, span


def schedule_words(w_lr: float, w_steps: int, w_warm: int) -> str:
    """The warmed-up run's schedule, ``lr * min(1, (t + 1) / w_warm)`` at step t: where
    it reaches the peak, or the rate it ends at when the run is shorter."""
    w_lr, w_steps, w_warm = float(w_lr), int(w_steps), int(w_warm)
    if w_warm <= w_steps:
        return f"once warmed up linearly to it over its first {w_warm} steps"
    last = w_lr * w_steps / w_warm
    return (
        f"once with a linear warm-up planned over {w_warm} steps, which this {w_steps}-step "
        f"run ends before finishing: its rate reaches only {format_number(last)}"
    )


def _warmup_outcome(a: pd.DataFrame, b: pd.DataFrame) -> tuple[str, dict[str, float]]:
    """One seed's comparison of the runs without (``a``) and with (``b``) warm-up:
    an outcome key and the numbers its sentence quotes."""
    da, db = bool(a["diverged"].any()), bool(b["diverged"].any())
    if da or db:
        key = "both diverged" if da and db else "without diverged" if da else "with diverged"
        nums: dict[str, float] = {}
        if da:
            nums["step_a"] = int(a.loc[a["diverged"], "step"].iloc[0])
        if db:
            nums["step_b"] = int(b.loc[b["diverged"], "step"].iloc[0])
        return key, nums
    sa, sb = int(a["step"].iloc[-1]), int(b["step"].iloc[-1])
    s = min(sa, sb)
    la = float(a.loc[a["step"] == s, "loss"].iloc[0])
    lb = float(b.loc[b["step"] == s, "loss"].iloc[0])
    when = "ends" if sa == sb else "so far"
    words = lower_words("without", la, "with", lb)
    low = (
        "level"
        if " end level " in words
        else "without"
        if words.startswith("without ends lower")
        else "with"
        if words.startswith("with ends lower")
        else "nonfinite"
    )
    return f"{low} {when}", {"la": la, "lb": lb, "step": s}


def _warmup_sentence(
    place: str, outcomes: list[str], nums: list[dict[str, float]], seeds: list[int]
) -> str:
    """One placement's :func:`warmup_seeds` sentence from each seed's outcome."""

    def of(o: str, k: str) -> list[float]:
        return [x[k] for x, y in zip(nums, outcomes, strict=True) if y == o]

    says = {}
    for o in set(outcomes):
        if o.endswith("diverged"):
            parts = []
            if o in ("without diverged", "both diverged"):
                parts.append(f"{place} without warm-up diverged (at step {span(of(o, 'step_a'))})")
            if o in ("with diverged", "both diverged"):
                parts.append(f"{place} with warm-up diverged (at step {span(of(o, 'step_b'))})")
            if o == "without diverged":
                parts.append("with warm-up did not")
            if o == "with diverged":
                parts.append("without warm-up did not")
            says[o] = ", ".join(parts)
            continue
        low, when = o.split(" ", 1)
        la, lb = span(of(o, "la")), span(of(o, "lb"))
        head = (
            f"{place} "
            if when == "ends"
            else f"at step {span(of(o, 'step'))}, the last both runs have reached, {place} "
        )
        verb = "ends" if when == "ends" else "is"
        if low == "level":
            verb = "end" if when == "ends" else "are"
            says[o] = f"{head}without and with warm-up {verb} level ({la} and {lb})"
        elif low == "nonfinite":
            says[o] = f"{head}has losses that are not both finite ({la} without, {lb} with)"
        else:
            lower = "without warm-up" if low == "without" else "with warm-up"
            says[o] = f"{head}{lower} {verb} lower ({la} without, {lb} with)"
    return seeds_sentence(outcomes, says, seeds)


def warmup_seeds(history: pd.DataFrame, w_warm: int) -> str:
    """Per placement, how the run without warm-up compares with the run with it, in
    every seed the frame holds: which ends lower (their final losses), which
    diverged and at which step, or, for runs still going, which is lower at the
    last step both have reached; with how many seeds show each."""
    w = int(w_warm)
    out = []
    frame = history if SEED in history.columns else history.assign(seed=0)
    for place in ("Post-LN", "Pre-LN"):
        names = (f"{place}, no warm-up", f"{place}, warm-up {w}")
        outcomes, nums, seeds = [], [], []
        for seed, g in frame.groupby(SEED, sort=True):
            a, b = (g[g["variant"] == n].sort_values("step") for n in names)
            if not len(a) or not len(b):
                continue
            o, x = _warmup_outcome(a, b)
            outcomes.append(o)
            nums.append(x)
            seeds.append(int(seed))
        if not outcomes:
            continue
        out.append(_warmup_sentence(place, outcomes, nums, seeds))
    return (" ".join(out) + " ") if out else ""


def start_end_words(history: pd.DataFrame) -> str:
    """Each run's first loss and its mean over its last ten steps (all its steps when
    it ran fewer), from the data; over several seeds, each as its range."""
    frame = history if SEED in history.columns else history.assign(seed=0)
    n_seeds = frame[SEED].nunique()
    parts = []
    for name, run in frame.groupby("variant", sort=False):
        firsts, tails, short = [], [], []
        for seed, g in run.groupby(SEED, sort=True):
            loss = g.sort_values("step")["loss"]
            k = min(10, len(loss))
            firsts.append(float(loss.iloc[0]))
            tails.append(float(loss.tail(k).mean()))
            if k < 10:
                short.append((int(seed), k))
        note = ""
        if short and n_seeds == 1:
            note = f" (mean of its {short[0][1]} steps)"
        elif short and len(short) == n_seeds and len({k for _, k in short}) == 1:
            note = f" (mean of its {short[0][1]} steps in each seed)"
        elif short:
            note = " (" + ", ".join(f"seed {s}: mean of its {k} steps" for s, k in short) + ")"
        parts.append(f"{name}: {span(firsts)}, then {span(tails)}{note}")
    return "Loss at the first step, then its mean over the last 10 steps. " + "; ".join(parts) + "."


def divergence_words(history: pd.DataFrame) -> str:
    """Which runs diverged, at which step and why: one seed's frame as
    :func:`resviz.train.divergence.divergence_note` says it; several seeds' with how
    many seeds each run diverged in, and where."""
    # Imported here: resviz.words is imported by resviz.train's own modules.
    from resviz.train.divergence import definition, divergence_note

    if SEED not in history.columns or history[SEED].nunique() == 1:
        return divergence_note(history.drop(columns=SEED, errors="ignore"))
    if not len(history) or "diverged" not in history:
        return ""
    n = history[SEED].nunique()
    hit = history[history["diverged"].fillna(False).astype(bool)]
    names = list(dict.fromkeys(history["variant"]))
    if not len(hit):
        return f"No run diverged in any of the {n} seeds ({definition()})."
    parts = []
    for v in names:
        mine = hit[hit["variant"] == v].drop_duplicates(subset=[SEED]).sort_values(SEED)
        if not len(mine):
            continue
        why = mine["divergence"] if "divergence" in mine else pd.Series("", index=mine.index)
        at = [
            f"at step {int(t)}" + (f" ({w})" if w else "")
            for t, w in zip(mine["step"], why.fillna(""), strict=True)
        ]
        where = ", ".join(
            f"{a} in {seeds_label([int(x) for x, b in zip(mine[SEED], at, strict=True) if b == a])}"
            for a in dict.fromkeys(at)
        )
        parts.append(f"{v} in {len(mine)} of {n} seeds ({where})")
    ok = [v for v in names if v not in set(hit["variant"])]
    out = f"Diverged ({definition()}): " + "; ".join(parts) + "."
    if ok:
        out += f" Did not diverge in any of the {n} seeds: " + ", ".join(ok) + "."
    return out


def _and(names: Sequence[str]) -> str:
    """``"a"``, ``"a and b"``, ``"a, b and c"``."""
    names = list(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


# Above this factor between the largest gradient norms of the stacks without a norm
# and those with one, a run where nothing diverged is said to part by its gradients.
GRAD_PART = 10.0


def _stability_outcome(
    g: pd.DataFrame, no_norm: Sequence[str]
) -> tuple[str, dict[str, dict[str, float]]]:
    """One seed's stability runs: an outcome key and, per run, the numbers its
    sentence quotes (``step``: where it diverged; ``tail``: its mean loss over its
    last 10 steps; ``grad``: its largest total gradient norm)."""
    runs: dict[str, dict[str, float]] = {}
    for name, run in g.groupby("variant", sort=False):
        run = run.sort_values("step")
        flag = run["diverged"] if "diverged" in run else pd.Series(False, index=run.index)
        bad = run[flag.fillna(False).astype(bool)]
        runs[str(name)] = {
            "tail": float(run["loss"].tail(10).mean()),
            "grad": float(run["grad_norm"].max()),
            **({"step": float(bad["step"].iloc[0])} if len(bad) else {}),
        }
    names = list(runs)
    without = [n for n in names if n in set(no_norm)]
    with_ = [n for n in names if n not in set(no_norm)]
    hit = [n for n in names if "step" in runs[n]]
    if hit:
        if without and with_ and hit == without:
            return "without diverged", runs
        if hit == names:
            return "all diverged", runs
        return "diverged: " + "|".join(hit), runs
    if without and with_:
        g_without = max(runs[n]["grad"] for n in without)
        g_with = max(runs[n]["grad"] for n in with_)
        if g_without >= GRAD_PART * g_with and g_without > g_with:
            return "larger without", runs
        if g_with >= GRAD_PART * g_without and g_with > g_without:
            return "larger with", runs
    return "alike", runs


def stability_finding(history: pd.DataFrame, no_norm: Sequence[str]) -> str:
    """What the Stability section's runs show, worded from every seed's runs
    (``no_norm``: the variants without a norm): which runs diverged, and whether
    those are exactly the stacks without a norm; where nothing diverged, whether the
    largest gradient norms of the stacks without a norm and of those with one are
    :data:`GRAD_PART` times apart or more, and where every run's loss ends (its mean
    over its last 10 steps). A direction is stated with how many seeds show it
    (:func:`resviz.words.seeds.seeds_sentence`)."""
    frame = history if SEED in history.columns else history.assign(seed=0)
    if not len(frame):
        return ""
    outcomes, runs, seeds = [], [], []
    for seed, g in frame.groupby(SEED, sort=True):
        o, r = _stability_outcome(g, no_norm)
        outcomes.append(o)
        runs.append(r)
        seeds.append(int(seed))

    def phrase(o: str, ix: list[int]) -> str:
        mine = [runs[i] for i in ix]
        names = list(mine[0])
        without = [n for n in names if n in set(no_norm)]
        with_ = [n for n in names if n not in set(no_norm)]

        def of(key: str, among: Sequence[str]) -> str:
            return span([r[n][key] for r in mine for n in among if key in r[n]])

        def top(among: Sequence[str]) -> str:
            """The largest gradient norm of any run in ``among``, per seed."""
            return span([max(r[n]["grad"] for n in among) for r in mine])

        if o == "without diverged":
            return (
                f"the stacks without a norm ({_and(without)}) diverged, at step "
                f"{of('step', without)}, and those with one ({_and(with_)}) did not: their "
                f"loss over the last 10 steps is {of('tail', with_)}"
            )
        if o == "all diverged":
            return f"every run diverged, at step {of('step', names)}"
        if o.startswith("diverged: "):
            hit = o.removeprefix("diverged: ").split("|")
            rest = [n for n in names if n not in hit]
            return f"{_and(hit)} diverged, at step {of('step', hit)}, and {_and(rest)} did not"
        tails = f"every run's loss over its last 10 steps is {of('tail', names)}"
        if o == "alike" and not (without and with_):
            return f"no run diverged; {tails}"
        if o == "alike":
            return (
                "no run diverged, and the largest gradient norm of the stacks without a norm "
                f"({top(without)}) and of those with one ({top(with_)}) are less than "
                f"{GRAD_PART:g} times apart; {tails}"
            )
        big, small = (without, with_) if o == "larger without" else (with_, without)
        who = "without a norm" if o == "larger without" else "with a norm"
        return (
            f"no run diverged, and the stacks {who} drew the larger gradients (largest norm "
            f"{top(big)}, against {top(small)}); {tails}"
        )

    out = seeds_sentence_by(outcomes, seeds, phrase)
    return out[0].upper() + out[1:]


# ---------------------------------------------------------------- whole accounts
def warmup_intro(training: Warmup, cfg: EncoderConfig) -> str:
    """What the warm-up section trains (``cfg``: its Post-LN model), and how."""
    t = training
    return (
        f"Post-LN and Pre-LN encoders ({t.w_layers} layers, d = {cfg.d_model}, {cfg.n_heads} "
        f"heads) are trained to copy their input tokens (vocabulary {cfg.vocab_size}, batch "
        f"16 x 16) with Adam at a peak rate of {float(t.w_lr):g}, once at that rate from step "
        f"0 and {schedule_words(float(t.w_lr), t.w_steps, t.w_warm)}. In each seed both models "
        "are built from that seed, and each is trained twice, without and with warm-up, on the "
        "same batches; more Seeds (sidebar) train all four runs again per seed."
    )


def warmup_account(r: Result) -> str:
    """The warm-up curves: the loss of guessing, which run ends lower, and divergence."""
    return (
        f"Guessing uniformly costs log {r.vocab_size} = {math.log(r.vocab_size):.2f}. "
        + warmup_seeds(r.history, r.w_warm)
        + "Xiong et al. explain why Post-LN needs warm-up at large learning rates: at init its "
        "gradients near the output are large, so full-size early steps can throw it off, while "
        "Pre-LN's are not. " + divergence_words(r.history) + " " + band_words(r.seeds)
    )


def stability_presets(default: Mapping[str, Any], tutorial: Mapping[str, Any]) -> str:
    """What the stability section's two preset buttons set, and what they show."""
    d, t = default, tutorial
    return (
        f"**Where they part**: LayerNorm after each block (Post-LN), learning rate {d['s_lr']}, "
        f"{d['s_steps']} steps. At every seed we ran (0 to 9) the two stacks without a norm "
        "blow up within 2 steps; the two with one settle near the loss floor of 1. **As in the "
        "tutorial notebook** this experiment comes from (a tutorial on transformer components): "
        f"LayerNorm before each block (Pre-LN), learning rate {t['s_lr']}, {t['s_steps']} steps. "
        "At that gentle rate all four losses end near the floor, within 0.03 of it at every "
        "seed we ran (0 to 4)."
    )


STABILITY_INTRO = (
    "The experiment, from a tutorial notebook on transformer components: 4 FFN blocks `W2 "
    "gelu(W1 x)` of width 128, regression of random targets from random inputs (batch 16 x 32), "
    "Adam, every variant from the same seed on the same batches."
)


def stability_account(r: Result, no_norm: Sequence[str], lr: float) -> str:
    """The stability curves against the loss floor, each run's start and end, and
    which runs diverged at learning rate ``lr``."""
    return (
        stability_finding(r.history, no_norm)
        + " The targets are fresh random numbers each step, independent of the inputs, so the "
        "best a run can do is a loss of 1 in expectation (predict 0; one batch can dip a little "
        "below it); the curves show where each run's loss goes against that floor and how large "
        f"its gradients grow. {band_words(r.seeds)} {start_end_words(r.history)} At learning "
        f"rate {float(lr):g}: {divergence_words(r.history)}"
    )


def seeds_progress_words(seeds: Sequence[int], n: int) -> str:
    """A live run over ``n`` seeds, ``seeds`` drawn so far (the last one training)."""
    return (
        f"Training seed {seeds[-1]} ({len(seeds)} of {n}); the curves hold "
        f"{seeds_label(seeds)} so far."
    )


def stopped_words(seeds: Sequence[int], n: int) -> list[str]:
    """Captions for a run stopped with ``seeds`` of ``n``: what its sentences count
    (where seeds are missing), and that only a finished run makes a notebook."""
    short = [
        f"Stopped with {seeds_label(seeds)} of the {n} seeds asked for: the sentences above "
        "count only those."
    ]
    return (short if len(seeds) < n else []) + [
        "The notebook of this section reproduces a finished run: run it to the end to download it."
    ]


__all__ = [
    "GRAD_PART",
    "STABILITY_INTRO",
    "divergence_words",
    "schedule_words",
    "seeds_progress_words",
    "stability_account",
    "stability_presets",
    "stability_finding",
    "start_end_words",
    "stopped_words",
    "warmup_account",
    "warmup_intro",
    "warmup_seeds",
]
