"""Recipes of the skip-connections page, one per section (see ``resviz/core.py``).

A residual block outputs ``x + f(x)``: the input passes on unchanged and the block adds
an update. The five sections build a stack from the page's settings (URL names) and
measure it: the block and its generated code (:func:`stack`), the forward signal at
init (:func:`signal`), the unrolled paths (:func:`paths`, Veit et al. 2016), He et
al.'s degradation experiment (:func:`degradation`) and Veit et al.'s lesion study
(:func:`lesion`). The two trained sections take ``progress`` and ``should_stop``.

Seeds: Stack and Paths are structure and counting (no ``seeds``: two seeds give the
same frames); Signal runs 3 seeds by default (``seeds=``), Degradation and Lesion
train one (``seeds=1``, more on request, one run each); every seed's rows stand
under a ``seed`` column and ``r.per_seed`` holds each seed's own result.

    r = rv.recipes.shortcuts.lesion(
        rv.shortcuts.Block(mode="add"), rv.shortcuts.LesionRun(l_depth=16), seed=0, seeds=3
    )
    r.summary  # one row per seed and stack: intact accuracy, mean and worst deletion

The settings come in groups (:mod:`resviz.shortcuts.settings`: :class:`Stack`,
:class:`Block`, :class:`DegradationRun`, :class:`LesionRun`), or by their fields' names
(``lesion(l_depth=16, seed=0)``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
import torch

from resviz.codegen import generate_code
from resviz.core import SEEDS_TRAINING, Answer, Result, combine, measure, recipe
from resviz.models import build, reseed
from resviz.shortcuts import decomposition as D
from resviz.shortcuts import degradation as G
from resviz.shortcuts import lesions as LS
from resviz.shortcuts import structure as SC
from resviz.shortcuts.settings import Block, DegradationRun, LesionRun, Stack
from resviz.words.numbers import format_number

Progress = Callable[[pd.DataFrame, int, int], None] | None
ShouldStop = Callable[[], bool] | None


# ------------------------------------------------------------------ Stack
# Structure only (the table, the formula): the seed sets the code's SEED line alone,
# so the section takes no seeds (tests check that two seeds give the same frames).
@recipe(seeds=None)
def stack(stack: Stack = Stack(), *, seed: int = 0) -> Result:
    """Stack: which blocks got a shortcut (read off the model, built on the meta device:
    no weights), the block as LaTeX and the torch-only code that builds this stack.

    Frame ``shortcuts`` (:func:`resviz.shortcut_table`). Values: ``formula``, ``code``,
    ``blocks``, ``with_shortcut`` (blocks with any shortcut), ``projections``, and
    ``width_changes`` (blocks whose nominal input and output widths differ, where an
    identity shortcut cannot be added)."""
    cfg = stack.config(seed)
    table = SC.shortcut_table(cfg)
    w = cfg.layer_widths
    return Result(
        {"shortcuts": table},
        {
            "formula": SC.block_formula(cfg),
            "code": generate_code(cfg),
            "blocks": len(table),
            "with_shortcut": int((table["shortcut"] != "none").sum()),
            "projections": int((table["shortcut"] == "projection").sum()),
            "width_changes": sum(a != b for a, b in zip(w, w[1:], strict=False)),
        },
    )


# ------------------------------------------------------------------ Signal
@recipe
def signal(stack: Stack = Stack(), *, seed: int = 0, device: str | torch.device = "cpu") -> Result:
    """Signal: the forward signal at init, layer by layer, of the stack and its plain
    twin, on 256 standard Gaussian inputs (weights and inputs from ``seed``).

    Frames: ``signal`` (:func:`resviz.skip.compare_signal`: every column of
    :func:`resviz.layer_decomposition` per ``variant``), ``terms`` (the stack with the
    shortcut: ``block, shortcut_norm, update_norm, identity_share, cosine``) and
    ``shares`` (``terms`` long, for one chart). Values: ``blocks`` and
    ``identity_blocks`` (blocks whose shortcut is the identity, x passed on as it is)."""
    cfg = stack.config(seed)
    sig = D.compare_signal(cfg, seed=seed, device=device)
    terms = D.shortcut_terms(sig)
    table = SC.shortcut_table(cfg)
    return Result(
        {"signal": sig, "terms": terms, "shares": D.share_long(terms)},
        {
            "blocks": len(table),
            "identity_blocks": int((table["shortcut"] == "identity").sum()),
        },
    )


def _signal_over_seeds(
    seeds: list[int], stack: Stack = Stack(), *, device: str | torch.device = "cpu"
) -> Result | None:
    """:func:`signal` over ``seeds``, with the same numbers as one run per seed (a test
    checks them exactly) in less time: the shortcut table (structure, alike in every
    seed) made once, and each variant's stack built once and then redrawn per seed
    (:func:`resviz.models.reseed`) instead of built again. None off the CPU (a stack
    redrawn there would draw other numbers): then the seeds run one by one."""
    if torch.device(device).type != "cpu":
        return None
    cfg = stack.config(seeds[0])
    table = SC.shortcut_table(cfg)
    values = {
        "blocks": len(table),
        "identity_blocks": int((table["shortcut"] == "identity").sum()),
    }
    models = {name: build(c).eval() for name, c in D.signal_variants(cfg).items()}
    runs = []
    for k, s in enumerate(seeds):
        parts = {}
        for name, model in models.items():
            if k:
                reseed(model, s)
            # forward_decomposition's batch: 256 standard Gaussian inputs from the seed.
            x = torch.randn(256, cfg.in_dim, generator=torch.Generator().manual_seed(s))
            parts[name] = D.layer_decomposition(model, x)
        sig = D.signal_frame(parts)
        terms = D.shortcut_terms(sig)
        runs.append(Result({"signal": sig, "terms": terms, "shares": D.share_long(terms)}, values))
    return combine(runs, seeds)


signal.batched = _signal_over_seeds


@measure("skip_last_block_term", of=signal, choices=("shortcut", "update"))
def last_block_term(r: Result) -> Answer:
    """In the last block's y = s + u, which term holds most of it: "shortcut" when its
    identity_share (``||s||^2 / (||s||^2 + ||u||^2)``) is above 1/2, else "update"."""
    last = r.terms.iloc[-1]
    share = float(last["identity_share"])
    block = int(last["block"])
    num = format_number
    if float(last["shortcut_norm"]) == 0.0:  # no shortcut in this block
        return Answer(
            "update",
            f"Block {block} has no shortcut: its output is the update alone "
            f"(mean ||u|| {num(last['update_norm'])}), identity_share = 0.",
        )
    answer = "shortcut" if share > 0.5 else "update"
    return Answer(
        answer,
        f"At block {block}, identity_share = {num(share)} (mean ||s|| "
        f"{num(last['shortcut_norm'])}, mean ||u|| {num(last['update_norm'])}): most of "
        f"the squared norm of s and u is the {answer}'s.",
    )


# ------------------------------------------------------------------ Paths
# Combinatorics of the shortcuts: nothing random, no seeds.
@recipe(seeds=None)
def paths(stack: Stack = Stack(), *, seed: int = 0) -> Result:
    """Paths: the unrolled stack's path lengths (Veit et al. 2016), counted exactly.

    Frame ``paths``: the lengths some path has, ``length, count`` (exact, as text:
    C(64, 32) is above 2^53), ``fraction``, ``binomial_pmf`` and ``paths`` (the
    fraction, as the chart draws it). Values: ``blocks``, ``with_shortcut`` (the k of
    2^k paths) and ``before_act`` (a shortcut joined before the activation)."""
    cfg = stack.config(seed)
    table = SC.shortcut_table(cfg)
    bars = SC.path_bars(SC.path_lengths(cfg))
    return Result(
        {"paths": SC.path_table(bars)},
        {
            "blocks": len(table),
            "with_shortcut": int((table["shortcut"] != "none").sum()),
            "before_act": cfg.join == "before_act" and cfg.residual in ("add", "scaled"),
        },
    )


# ------------------------------------------------------------------ trained sections
def _trained(dcfg: G.SpiralStacksConfig, result: G.DegradationResult) -> dict[str, Any]:
    """The values a trained section's sentences need."""
    return {
        "seconds": result.seconds,
        "stopped": bool(result.attrs.get("stopped")),
        "classes": dcfg.classes,
        "n_points": dcfg.n_points,
        "turns": dcfg.turns,
        "eval_every": dcfg.eval_every,
        "residual": dcfg.residual,
        "width": dcfg.width,
    }


@recipe(seeds=SEEDS_TRAINING)
def degradation(
    block: Block = Block(),
    run: DegradationRun = DegradationRun(),
    *,
    seed: int = 0,
    device: str | torch.device = "cpu",
    progress: Progress = None,
    should_stop: ShouldStop = None,
) -> Result:
    """Degradation (He et al. 2016, Fig. 1): shallow and deep stacks of width 32, plain
    and with the shortcut (add where ``mode`` is none), trained with Adam from ``seed``
    on the same batches of spirals (:func:`resviz.train_degradation`).

    ``progress(curves_so_far, step, steps)`` at every evaluation; ``should_stop()``
    ends training early (``values["stopped"]``). Frames: ``task`` (the spirals),
    ``curves`` (loss and error on all points every ``eval_every`` steps), ``final``
    (where each stack ended) and ``cosine`` (the residual stacks' cos(shortcut,
    update) per block, at init and trained)."""
    dcfg = run.config(block)
    result = G.train_degradation(dcfg, seed, device, progress, should_stop)
    return Result(
        {
            "task": G.task_frame(dcfg, seed),
            "curves": result.curves,
            "final": G.final_table(result),
            "cosine": G.cosine_stages(result),
        },
        {**_trained(dcfg, result), "shallow": dcfg.shallow, "deep": dcfg.deep},
    )


@recipe(seeds=SEEDS_TRAINING)
def lesion(
    block: Block = Block(),
    run: LesionRun = LesionRun(),
    *,
    seed: int = 0,
    device: str | torch.device = "cpu",
    progress: Progress = None,
    should_stop: ShouldStop = None,
) -> Result:
    """Lesion (Veit et al. 2016): a plain and a residual stack of ``l_depth`` blocks
    learn spirals with one turn per arm, then each block but the first (2-d to the
    width) is deleted in turn, ``x_{l+1} = x_l``, and the stack scored again on all
    the points (:func:`resviz.train_lesion`).

    Frames: ``task``, ``curves`` (training), ``lesion`` (accuracy with each block
    deleted) and ``summary`` (:func:`resviz.lesion_summary`: intact, mean and worst
    deletion, how many deletions are small)."""
    lcfg = run.config(block)
    result = G.train_lesion(lcfg, seed, device, progress, should_stop)
    return Result(
        {
            "task": G.task_frame(lcfg, seed),
            "curves": result.curves,
            "lesion": result.lesion,
            "summary": LS.lesion_summary(result.lesion, lcfg.classes),
        },
        _trained(lcfg, result),
    )


@measure(
    "skip_residual_lesion",
    of=lesion,
    choices=("barely changes", "depends on the block", "suffers", "did not learn"),
)
def residual_lesion(r: Result) -> Answer:
    """What deleting one block does to the trained residual stack, judged on every
    deletion as the caption judges it (:func:`resviz.lesion_verdict`)."""
    res = r.summary[r.summary["kind"] == "residual"].iloc[0]
    return Answer(LS.lesion_verdict(res), LS.lesion_sentence(res, r.classes))
