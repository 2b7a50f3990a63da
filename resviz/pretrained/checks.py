"""The checks :func:`resviz.pretrained.load` makes before it allocates a weight, and
the refusal they raise (:class:`PretrainedError`).

The memory budget (:func:`max_bytes_default`, :func:`memory_estimate`) takes the larger
of two counts: the parameters the architecture builds from ``config.json``, counted on
a model instantiated on PyTorch's ``meta`` device (shapes only, no storage; tied weights
once, as the loaded model holds them; :func:`_built_shapes`), and the numbers in the
safetensors headers (:func:`count_parameters`, or the hub's metadata). Every parameter
the config builds must find a stored tensor of its shape (:func:`_check_weights`). Only
the headers are read, and ``transformers`` is imported only when a check needs it, so
this module imports with nothing but torch.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import math
import os
import struct
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import torch

# The extra, from a checkout (resviz is not on the package index under that name: a plain
# `pip install 'resviz[pretrained]'` would fetch someone else's package, or nothing).
INSTALL_HINT = (
    "pip install '.[pretrained]' in a checkout of resviz (or pip install transformers safetensors)"
)
# The memory budget for the loaded models and their measurements (see memory_estimate):
# one load must fit it, and the server's cache (resviz.pretrained.cache) holds
# models whose estimates together fit it. RESVIZ_MAX_MODEL_MB overrides it. 1 GiB
# holds GPT-2 small (124M parameters).
DEFAULT_MAX_BYTES = 1024 * 2**20
PAGE_FACTOR = 2.0
# The most blocks a config.json may ask for: the model is instantiated on the meta
# device (no storage, but one Python module per layer) to count its parameters.
MAX_BLOCKS = 512
# transformers 5 swaps process-wide functions while it builds a model (from_pretrained
# replaces PreTrainedModel.tie_weights and torch's init functions with no-ops, then puts
# them back; the default dtype is set and restored): a model built in another thread
# meanwhile comes out untied, and two overlapping swaps can leave the no-ops in place.
# Every build here (the meta count and the load) holds this lock.
_BUILD_LOCK = threading.Lock()


class PretrainedError(Exception):
    """A refusal with a message for the user (no traceback needed to act on it)."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind  # extra | path | hub | budget | architecture | weights | text | answer


def max_bytes_default() -> int:
    """The memory budget for one model: ``RESVIZ_MAX_MODEL_MB`` (megabytes) or 1 GiB."""
    raw = os.environ.get("RESVIZ_MAX_MODEL_MB", "")
    return (
        int(float(raw) * 2**20) if raw.strip().replace(".", "", 1).isdigit() else DEFAULT_MAX_BYTES
    )


def model_roots() -> list[Path]:
    """The folders a server lets its users load model folders from
    (``RESVIZ_MODEL_ROOTS``, separated by ``os.pathsep``); empty: any folder, and hub
    names (a user's own machine, a notebook)."""
    raw = os.environ.get("RESVIZ_MODEL_ROOTS", "")
    return [Path(r).expanduser() for r in raw.split(os.pathsep) if r.strip()]


OUTSIDE_ROOTS = (
    "This server loads model folders only from the folders it allows: give the path of "
    "a model folder inside one of them."
)


def check_within_roots(path: str, roots: list[Path]) -> None:
    """Raise :class:`PretrainedError` (kind ``path``) unless ``path``, with ``~`` and
    every link resolved, is inside one of ``roots`` (none given: anything passes).
    The message is the same whether or not the path exists, so it tells nothing about
    the rest of the server's disk; a hub name is refused alike."""
    if not roots:
        return
    try:
        real = Path(os.path.realpath(Path(path.strip()).expanduser()))
    except (OSError, ValueError):  # a NUL byte, a path too long
        raise PretrainedError(OUTSIDE_ROOTS, "path") from None
    for root in roots:
        top = Path(os.path.realpath(root))
        if path.strip() and (real == top or top in real.parents):
            return
    raise PretrainedError(OUTSIDE_ROOTS, "path")


def require_extra() -> None:
    """Raise :class:`PretrainedError` (kind ``extra``) unless the optional packages are
    installed; imports nothing."""
    if importlib.util.find_spec("transformers") is None or (
        importlib.util.find_spec("safetensors") is None
    ):
        raise PretrainedError(
            "Real pretrained models need the optional packages transformers and safetensors: "
            f"{INSTALL_HINT}",
            "extra",
        )


def _require_transformers() -> Any:
    require_extra()
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    return transformers


def safetensors_files(folder: Path) -> list[Path]:
    """The weight files of a local checkpoint (one file, or the shards an index names)."""
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        names = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        return [folder / n for n in names]
    return sorted(folder.glob("*.safetensors"))


def count_parameters(files: list[Path]) -> int:
    """Numbers stored in safetensors files, read from their headers only."""
    return sum(math.prod(shape) for shape in _stored_shapes(files))


def _stored_shapes(files: list[Path]) -> list[tuple[int, ...]]:
    """The shape of every tensor in safetensors files, from their headers only. A header
    that claims more data than its file holds is refused (kind ``weights``): the counts
    read from it are then the checkpoint's own."""
    shapes: list[tuple[int, ...]] = []
    for f in files:
        with f.open("rb") as fh:
            (size,) = struct.unpack("<Q", fh.read(8))
            if size > 100 * 2**20:
                raise PretrainedError(
                    "A .safetensors file there is not a safetensors file.", "weights"
                )
            header = json.loads(fh.read(size))
        data = f.stat().st_size - 8 - size
        end = 0
        for name, meta in header.items():
            if name != "__metadata__":
                shapes.append(tuple(int(d) for d in meta["shape"]))
                end = max(end, int(meta["data_offsets"][1]))
        if end > data:
            raise PretrainedError(
                "A .safetensors file there is cut short: its header names more data than "
                "the file holds.",
                "weights",
            )
    return shapes


def float32_bytes(n_numbers: int) -> int:
    return 4 * n_numbers


def _mb(n: float) -> str:
    return f"{n / 2**20:,.0f} MB"


def _count(n: int, what: str) -> str:
    """``n`` numbers of ``what`` for a message: exact below a million, else in millions."""
    if n >= 10**6:
        return f"{n / 1e6:,.1f}M {what}s"
    return f"{n:,} {what}" + ("" if n == 1 else "s")


def _built_shapes(transformers: Any, config: Any, architecture: str) -> list[tuple[int, ...]]:
    """The shape of every parameter ``architecture`` builds from ``config``, each tied
    parameter once (``model.parameters()``, as the loaded model holds them): the class
    is instantiated on the ``meta`` device, which gives shapes without storage.
    ``torch.device`` as a context is per thread, so other sessions' tensors are not
    affected."""
    blocks = getattr(config, "num_hidden_layers", None)
    if not isinstance(blocks, int) or not 0 < blocks <= MAX_BLOCKS:
        shown = f" ({blocks:,} blocks)" if isinstance(blocks, int) else ""
        raise PretrainedError(
            f"config.json does not give a number of blocks from 1 to {MAX_BLOCKS}{shown}; "
            "resviz loads models up to that depth.",
            "architecture",
        )
    cls = getattr(transformers, architecture)
    try:
        with _BUILD_LOCK, torch.device("meta"):
            model = cls._from_config(
                copy.deepcopy(config), dtype=torch.float32, attn_implementation="eager"
            )
        return [tuple(p.shape) for p in model.parameters()]
    except Exception as exc:  # noqa: BLE001 - any failure to build reads the same to a user
        raise PretrainedError(
            f"config.json does not describe a model {architecture} can build "
            f"({type(exc).__name__}).",
            "path",
        ) from None


def _check_weights(built: list[tuple[int, ...]], stored: list[tuple[int, ...]]) -> None:
    """Every parameter the config builds needs a stored tensor of its shape (names are
    not compared: ``transformers`` renames some keys when it loads them). A tied output
    head is one parameter, so it needs no tensor of its own; extra stored tensors (old
    buffers, a pooler the class does not use) are allowed."""
    missing = Counter(built) - Counter(stored)
    if missing:
        n_built = sum(math.prod(s) for s in built)
        n_stored = sum(math.prod(s) for s in stored)
        n_missing = sum(missing.values())
        raise PretrainedError(
            "The weights do not match config.json: it builds a model of "
            f"{_count(n_built, 'parameter')} in {len(built):,} tensors, and the .safetensors "
            f"weights hold {_count(n_stored, 'number')} in {len(stored):,} tensors; "
            f"{n_missing:,} of the model's tensors have no stored tensor of their shape. "
            "Save the model with its own config (save_pretrained).",
            "weights",
        )


def memory_estimate(n_params: int) -> int:
    """Resident memory one loaded model and a full page of measurements take, beyond the
    Python process itself: ``PAGE_FACTOR`` x its float32 weights. Measured on GPT-2 small
    (124M parameters, 475 MB of weights, 128 tokens): 0.96 GB over the imports, 2.0x the
    weights (benchmarks/pretrained_page.py, benchmarks/RESULTS.md).

    ``n_params`` is the larger of what ``config.json`` builds and what the weights hold."""
    return int(PAGE_FACTOR * float32_bytes(n_params))


def _check_budget(n_params: int, max_bytes: int) -> None:
    need = memory_estimate(n_params)
    if need > max_bytes:
        raise PretrainedError(
            f"This model has {n_params / 1e6:,.0f}M parameters ({_mb(float32_bytes(n_params))} "
            f"in float32); loading it and measuring takes about {_mb(need)}, over this "
            f"server's budget of {_mb(max_bytes)} for the models it holds at once. Pick a "
            "smaller model (or raise RESVIZ_MAX_MODEL_MB where you run resviz yourself).",
            "budget",
        )


def _hub_unreachable(why: str) -> PretrainedError:
    return PretrainedError(
        f"No such folder here, and the Hugging Face hub is unreachable ({why}), so the "
        "model cannot be downloaded. Give the path of a local folder holding config.json, "
        "model.safetensors and the tokenizer files.",
        "hub",
    )


def _hub_shapes(name: str) -> tuple[int, list[tuple[int, ...]] | None]:
    """A hub checkpoint's stored numbers and tensor shapes, from its safetensors
    headers (no download); the shapes are None where the hub's answer lacks them."""
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        raise _hub_unreachable("HF_HUB_OFFLINE is set")
    import huggingface_hub as hub

    try:
        meta = hub.get_safetensors_metadata(name)
    except (hub.errors.RepositoryNotFoundError, hub.errors.NotASafetensorsRepoError) as exc:
        raise PretrainedError(
            f"The hub has no safetensors checkpoint by that name ({type(exc).__name__}).",
            "path",
        ) from None
    except Exception as exc:  # noqa: BLE001 - any network failure reads the same to a user
        raise _hub_unreachable(type(exc).__name__) from None
    n = sum(int(v) for v in meta.parameter_count.values())
    try:
        shapes = [
            tuple(int(d) for d in t.shape)
            for f in meta.files_metadata.values()
            for t in f.tensors.values()
        ]
    except (AttributeError, TypeError, ValueError):
        shapes = None
    return n, shapes
