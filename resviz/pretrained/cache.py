"""The models and traces the Pretrained models page's recipes share
(:mod:`resviz.pretrained.recipes`): each checkpoint loaded once per process, within
one memory budget for every session together; and the settings that name them.

The picker's choices (:data:`TINY`, the depth ladder's :data:`SIBLINGS`, :data:`DEMO`,
:data:`FOLDER`) are a :class:`Checkpoint`'s ``model``; the text it reads is a
:class:`Reading`; Who writes what's position and tokens a :class:`Target` (groups of
settings, :mod:`resviz.settings`: the recipes take them, the page draws them). The
choices name what to load (:func:`source_of`); :func:`loaded` loads it (every check of
:func:`resviz.pretrained.load` first) and holds it, releasing the least recently used
models until it fits; :func:`traced` keeps the last few traces of the held models;
:func:`about` says what the sections may say of a trace.
"""

from __future__ import annotations

import gc
import os
import threading
import time
import weakref
from collections import OrderedDict
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from resviz.pretrained import loading as _loading
from resviz.pretrained.checks import (
    PretrainedError,
    check_within_roots,
    max_bytes_default,
    memory_estimate,
    model_roots,
    require_extra,
)
from resviz.pretrained.loading import Pretrained, demo_model_path, ladder_paths, tiny_gpt2_path
from resviz.pretrained.observe import MAX_TOKENS, Trace, trace
from resviz.settings import Settings, choice, whole
from resviz.settings import text as text_box

# The model picker's choices (the URL's ``model`` values: :class:`Checkpoint`).
TINY, DEMO, FOLDER = "Sonnets GPT-2 (ours)", "all-MiniLM-L6-v2", "a model folder"
# The depth ladder's siblings of the Sonnets GPT-2 (resviz.pretrained.ladder_paths), by
# block count: every section measures them as it measures the 4-block model.
SIBLINGS = {n: f"Sonnets GPT-2, {n} block{'s' if n > 1 else ''}" for n in (1, 2, 8)}
DEFAULT_TEXT = "Shall I compare thee to a summer's day? Thou art more lovely and more"
# Clean and corrupted prompts the page proposes: lines of the Sonnets (the training
# split) with "you" changed to "thou" a few tokens before the end, so the answer has to
# travel from that word to the last position: the Sonnets GPT-2 continues the clean
# prompt with " your" and the corrupted one with " thy" (logit differences +1.01 and
# -3.31, +1.93 and -2.01, +0.89 and -3.16). Each pair makes as many tokens as the
# other in the Sonnets GPT-2's tokenizer.
PAIRS: tuple[tuple[str, str], ...] = (
    ("And you must live, drawn by", "And thou must live, drawn by"),
    ("Now stand you on the top of", "Now stand thou on the top of"),
    ("Sets you most rich in", "Sets thou most rich in"),
)


@dataclass(frozen=True)
class Checkpoint(Settings):
    """Which model a section measures: the picker's choice, and for :data:`FOLDER` the
    folder on the server (or a hub name) it loads from."""

    model: str = choice(TINY, (TINY, DEMO, FOLDER, *SIBLINGS.values()), label="Model")
    path: str = text_box(
        "",
        300,
        label="Model folder on this server (or a Hugging Face hub name, where the hub is "
        "reachable)",
    )

    def picked(self) -> Checkpoint:
        """As the recipes take it: the path only with :data:`FOLDER` (another model
        does not read it)."""
        return self if self.model == FOLDER else replace(self, path="")

    def loaded(self) -> Pretrained:
        """The model (:func:`loaded`)."""
        return loaded(self.model, self.path)

    def traced(self, reading: Reading) -> Trace:
        """Its trace of the text (:func:`traced`)."""
        return traced(self.model, self.path, reading.text)


@dataclass(frozen=True)
class Reading(Settings):
    """The text the model reads (every section that traces one)."""

    text: str = text_box(DEFAULT_TEXT, 2000, label="Text the model reads")


@dataclass(frozen=True)
class Target(Settings):
    """Who writes what: the position whose prediction is split into its parts (from 0;
    -1 the last) and the two tokens (empty: the model's top prediction there and the
    best other token)."""

    position: int = whole(
        -1,
        -1,
        255,
        box=True,
        label="Position (from 0; -1 the last)",
        help="The token position whose prediction is split into its parts.",
    )
    token: str = text_box("", 40, label="Token (empty: the top prediction)")
    versus: str = text_box("", 40, label="Against (empty: the best other)")


def about(tr: Trace) -> dict[str, Any]:
    """What every section's sentences may say about the model and the text."""
    m = tr.model
    return {
        "describe": m.describe(),
        "architecture": m.architecture,
        "n_layers": m.n_layers,
        "decoder": m.decoder,
        "has_head": m.unembedding is not None,
        "has_final_norm": m.final_norm is not None,
        "n_tokens": tr.n_tokens,
        "truncated": tr.truncated,
        "max_tokens": MAX_TOKENS,
        "first_token": tr.tokens[0],
    }


def source_of(model: str, path: str = "") -> str | None:
    """Where the ``model`` choice loads from: its shipped folder (the Sonnets GPT-2, a
    sibling, the demo encoder), or ``path`` for :data:`FOLDER`; None when there is
    nothing to load (no such package, no path)."""
    depth = {name: n for n, name in SIBLINGS.items()}.get(model)
    if model == TINY:
        found = tiny_gpt2_path()
    elif depth is not None:
        found = ladder_paths().get(depth)
    elif model == DEMO:
        found = demo_model_path()
    elif model == FOLDER:
        if path.strip():
            check_within_roots(path, model_roots())  # a server's allowed folders
        return path.strip() or None
    else:
        raise PretrainedError("Pick one of the models offered.", "path")
    return None if found is None else str(found)


def _stamp(source: str) -> int | None:
    """The latest modification time (ns) of a local folder's files; None for a hub
    name. A model saved again in the same folder is loaded again."""
    folder = Path(source).expanduser()
    if not folder.is_dir():
        return None
    try:
        times = [e.stat().st_mtime_ns for e in os.scandir(folder) if e.is_file()]
    except OSError:
        return None
    return max(times, default=folder.stat().st_mtime_ns)


# Loaded models by (source, mtime, memory budget), the newest last: every section,
# session and lesson measure of one process shares them (Streamlit runs every session
# in a thread of one process). The models held together never need more than the
# budget: their estimates (_NEEDS: resviz.pretrained.memory_estimate of the larger of
# what config.json builds and what the weights hold) are summed, and before a model is
# loaded the least recently used ones are released until it fits beside the rest
# (and beside at most MAX_MODELS - 1 others).
# A released model that something still uses (a page in the middle of its run, a
# background layer deletion) still takes memory, so _ALIVE follows every model loaded
# here through a weak reference: a load waits up to WAIT_S for those to go, and is
# refused if they do not. Traces hold their model: a released model's traces go with
# it, and only a held model's are kept. _LOCK guards all of it.
_Key = tuple[str, int | None, int]
_MODELS: OrderedDict[_Key, Pretrained] = OrderedDict()
_ALIVE: dict[_Key, weakref.ref[Pretrained]] = {}
_NEEDS: dict[_Key, int] = {}
_TRACES: OrderedDict[tuple[int, str], Trace] = OrderedDict()
MAX_MODELS, MAX_TRACES = 2, 8  # and never more than the budget holds
# The traces kept for one model hold at most this share of its float32 weights (its
# newest trace is always kept): they are part of the measurements memory_estimate
# counts (a GPT-2 small trace of 256 tokens is about 100 MB, mostly its logits).
TRACE_SHARE = 0.25
WAIT_S, POLL_S = 15.0, 0.25
_LOCK = threading.Lock()


def _release(key: _Key) -> None:
    gone = _MODELS.pop(key)
    for k in [k for k, tr in _TRACES.items() if tr.model is gone]:
        del _TRACES[k]


def _make_room(need: int, budget: int, keep: _Key | None = None) -> None:
    """Release the least recently used models (never ``keep``) until one more,
    needing ``need``, fits beside the rest (in the budget, and in ``MAX_MODELS``)."""
    while True:
        others = [k for k in _MODELS if k != keep]
        if not others or not (
            len(_MODELS) >= MAX_MODELS or sum(_NEEDS[k] for k in _MODELS) + need > budget
        ):
            return
        _release(others[0])


def _alive_bytes() -> int:
    """The estimates of every model loaded here that is still in memory, held or not
    (after a garbage collection, so that a released model nothing uses is gone)."""
    gc.collect()
    for k in [k for k, ref in _ALIVE.items() if ref() is None]:
        del _ALIVE[k], _NEEDS[k]
    return sum(_NEEDS[k] for k in _ALIVE)


def _reuse(key: _Key, budget: int) -> Pretrained | None:
    """The model under ``key`` if it is in memory (held, or released but still in use:
    held again, no second copy), else None."""
    if key in _MODELS:
        _MODELS.move_to_end(key)
        return _MODELS[key]
    ref = _ALIVE.get(key)
    m = None if ref is None else ref()
    if m is not None:
        _make_room(_NEEDS[key], budget)
        _MODELS[key] = m
    return m


def _mb(n: int) -> str:
    return f"{n / 2**20:,.0f} MB"


def loaded(model: str = TINY, path: str = "") -> Pretrained:
    """The checkpoint the settings name, loaded once per process (by its path, its
    files' modification time and the memory budget). Raises
    :class:`resviz.pretrained.PretrainedError` with a message a user can act on.

    The process holds models within one memory budget
    (:func:`resviz.pretrained.max_bytes_default`) for every session together: loading
    one releases the least recently used others until it fits beside the rest, and
    waits (up to ``WAIT_S`` seconds) for released models still in use to go."""
    require_extra()
    source = source_of(model, path)
    if source is None:
        if model == FOLDER:
            raise PretrainedError("Give a model folder (or a hub name).", "path")
        raise PretrainedError(f"{model} is not installed here: pick another model.", "path")
    budget = max_bytes_default()
    key = (source, _stamp(source), budget)
    with _LOCK:
        m = _reuse(key, budget)
    if m is not None:
        return m
    plan = _loading._plan(source, budget)  # every refusal, before anything is allocated
    deadline = time.monotonic() + WAIT_S
    while True:
        with _LOCK:
            m = _reuse(key, budget)  # another session may have loaded it meanwhile
            if m is not None:
                return m
            _make_room(plan.need, budget)
            if _alive_bytes() + plan.need <= budget:
                m = _loading._build(plan)
                _MODELS[key], _ALIVE[key], _NEEDS[key] = m, weakref.ref(m), plan.need
                return m
        if time.monotonic() >= deadline:
            raise PretrainedError(
                "This server is still using another model (a page or a layer deletion "
                f"that has not finished), and it holds at most {_mb(budget)} of models at "
                f"once; this one needs about {_mb(plan.need)}. Try again in a minute.",
                "budget",
            )
        time.sleep(POLL_S)


def _trace_bytes(tr: Trace) -> int:
    run = tr.run
    parts = (run.stream, run.attentions, run.logits, run.last_hidden, tr.ids)
    return sum(t.untyped_storage().nbytes() for t in parts if t is not None)


def _keep_trace(key: tuple[int, str], tr: Trace) -> None:
    """Keep ``tr`` if its model is held, within ``MAX_TRACES`` and ``TRACE_SHARE``."""
    m = tr.model
    if not any(h is m for h in _MODELS.values()):
        return  # released meanwhile: a kept trace would keep the model in memory
    _TRACES[key] = tr
    _TRACES.move_to_end(key)
    while len(_TRACES) > MAX_TRACES:
        _TRACES.popitem(last=False)
    own = [k for k, t in _TRACES.items() if t.model is m]
    while len(own) > 1 and sum(_trace_bytes(_TRACES[k]) for k in own) > (
        TRACE_SHARE * m.weight_bytes
    ):
        del _TRACES[own.pop(0)]


def traced(model: str = TINY, path: str = "", text: str = DEFAULT_TEXT) -> Trace:
    """:func:`resviz.pretrained.trace` of ``text`` through the model, kept for the
    page's other sections (the last few texts).

    Only a held model's traces are kept, at most ``TRACE_SHARE`` of its float32
    weights together (the newest always)."""
    return _trace_of(loaded(model, path), text)


def _trace_of(m: Pretrained, text: str) -> Trace:
    """``m``'s trace of ``text``: the kept one, or a new one, kept."""
    key = (id(m), text)
    with _LOCK:
        tr = _TRACES.get(key)
        if tr is not None and tr.model is m:
            _TRACES.move_to_end(key)
            return tr
    tr = trace(m, text)
    with _LOCK:
        _keep_trace(key, tr)
    return tr


def twin_loaded(model: str = TINY, path: str = "", seed: int = 0) -> Pretrained:
    """The random-weights twin of the checkpoint the settings name
    (:func:`resviz.pretrained.loading.random_twin`, torch seeded with ``seed``), held
    like a loaded model, in the same budget: it may release other models, never its
    own checkpoint, and it is refused (kind ``budget``) at once, without waiting, when
    it does not fit beside that checkpoint."""
    m = loaded(model, path)
    budget = max_bytes_default()
    source = source_of(model, path)
    own = (str(source), _stamp(str(source)), budget)
    key = (f"{source}\0random twin, seed {seed}", own[1], budget)
    need = memory_estimate(m.n_params)
    with _LOCK:
        t = _reuse(key, budget)
        if t is not None:
            return t
        _make_room(need, budget, keep=own)
        if _alive_bytes() + need > budget:
            raise PretrainedError(
                f"its random twin needs about {_mb(need)} beside the model, over this "
                f"server's {_mb(budget)} for models",
                "budget",
            )
        t = _loading.random_twin(m, seed)
        _MODELS[key], _ALIVE[key], _NEEDS[key] = t, weakref.ref(t), need
        return t


def twin_traced(
    model: str = TINY, path: str = "", text: str = DEFAULT_TEXT, seed: int = 0
) -> Trace:
    """:func:`traced` for the random twin (:func:`twin_loaded`)."""
    return _trace_of(twin_loaded(model, path, seed), text)
