"""The memory budget of real models: what config.json builds is counted before anything
is allocated, weights that do not match it are refused, and the process-wide cache
never holds (or keeps alive) models whose estimates together pass the budget.

The counts are checked against the loaded models' own ``sum(p.numel() for p in
model.parameters())`` and against GPT-2's closed form; the memory against the kernel's
high-water mark of a fresh process (``ru_maxrss``)."""

from __future__ import annotations

import gc
import json
import math
import shutil
import struct
import subprocess
import sys
import threading
import weakref
from pathlib import Path

import pytest

pytest.importorskip("transformers")

import torch  # noqa: E402
import transformers  # noqa: E402
from safetensors.torch import load_file, save_file  # noqa: E402

from resviz import pretrained as P  # noqa: E402
from resviz.pretrained import cache as C  # noqa: E402
from resviz.pretrained import loading as L  # noqa: E402
from resviz.pretrained import recipes as R  # noqa: E402
from tests.pretrained_tiny import save_tiny  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
FAMILIES = ["bert", "roberta", "gpt2", "gpt_neox", "llama", "mistral", "qwen2"]
TEXT = "The quick brown fox jumps over the lazy dog."
MEDIUM = dict(n_layer=24, n_embd=1024, n_head=16, vocab_size=50257, n_positions=1024)
BIG = 2**50  # a budget nothing reaches


def gpt2_closed_form(n_layer: int, n_embd: int, vocab_size: int, n_positions: int, **_) -> int:
    """GPT-2's parameters, the output head tied to the token embedding: wte + wpe, per
    block ln_1, c_attn, c_proj, ln_2, c_fc, c_proj (12 d^2 + 13 d), and ln_f."""
    d = n_embd
    return vocab_size * d + n_positions * d + n_layer * (12 * d * d + 13 * d) + 2 * d


def medium_folder(folder: Path) -> Path:
    """GPT-2 medium's config.json and the Sonnets GPT-2's tokenizer files, no weights."""
    transformers.GPT2Config(**MEDIUM).save_pretrained(folder)
    for f in P.tiny_gpt2_path().iterdir():
        if f.name.startswith("tokenizer"):
            shutil.copy(f, folder / f.name)
    return folder


def tiny_weights(path: Path) -> Path:
    """A valid safetensors file of 76 bytes: one float32 number."""
    save_file({"tiny.w": torch.zeros(1)}, str(path))
    assert path.stat().st_size == 76
    return path


def medium_weights(path: Path) -> None:
    """GPT-2 medium's weights as save_pretrained writes them (every tensor of
    GPT2LMHeadModel but the tied head, float32), all zeros: the header is written and
    the file extended to its full length, a sparse file that takes no disk."""
    with torch.device("meta"):
        model = transformers.GPT2LMHeadModel(transformers.GPT2Config(**MEDIUM))
    header, offset = {}, 0
    for name, t in model.state_dict().items():
        if name != "lm_head.weight":
            header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, 0]}
            offset += 4 * t.numel()
            header[name]["data_offsets"][1] = offset
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    with path.open("wb") as fh:
        fh.write(struct.pack("<Q", len(raw)) + raw)
        fh.truncate(8 + len(raw) + offset)


# A fresh interpreter: the Sonnets GPT-2 loaded first (every import a load needs is done,
# as on a server after its first visitor), then the high-water mark before and after
# each refused load. ru_maxrss is in kB on Linux.
PROBE = """
import json, resource, sys
from resviz import pretrained as P
P.load(P.tiny_gpt2_path())
for folder in sys.argv[1:]:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    try:
        P.load(folder)
        kind = message = None
    except P.PretrainedError as err:
        kind, message = err.kind, err.message
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"kind": kind, "message": message, "growth_mb": (after - before) / 1024}))
"""


@pytest.fixture(scope="module")
def probes(tmp_path_factory) -> dict[str, dict]:
    """GPT-2 medium's config beside 76 bytes of weights ("tiny") and beside weights
    that match it ("matching"), each loaded in one fresh process."""
    root = tmp_path_factory.mktemp("medium")
    tiny = medium_folder(root / "tiny")
    tiny_weights(tiny / "model.safetensors")
    matching = medium_folder(root / "matching")
    medium_weights(matching / "model.safetensors")
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(tiny), str(matching)],
        capture_output=True, text=True, cwd=ROOT, timeout=300, check=True,
    )  # fmt: skip
    lines = [json.loads(line) for line in out.stdout.strip().splitlines()[-2:]]
    return {"tiny": lines[0], "matching": lines[1], "folder": matching}


@pytest.fixture
def no_model_is_built(monkeypatch):
    """Fail if any model class is asked to load weights."""

    def refuse(*_a, **_k):
        raise AssertionError("from_pretrained called")

    monkeypatch.setattr(transformers.PreTrainedModel, "from_pretrained", refuse)


# ------------------------------------------------ a small file beside a large config


@pytest.mark.slow
def test_tiny_weights_beside_gpt2_medium_config_are_refused_before_allocating(probes):
    """The audit's folder: a 76-byte weights file beside GPT-2 medium's config loaded
    355M parameters (the process grew by 1.4 GB under a 1 GiB budget). Refused now,
    before anything is allocated."""
    probe = probes["tiny"]
    assert probe["kind"] == "weights"
    n = gpt2_closed_form(**MEDIUM)
    assert n == 354_823_168
    assert probe["message"].startswith(
        f"The weights do not match config.json: it builds a model of {n / 1e6:.1f}M "
        "parameters in 292 tensors, and the .safetensors weights hold 1 number in 1 tensors"
    )
    assert probe["growth_mb"] < 100, probe  # GPT-2 medium in float32 is 1,354 MB


def test_gpt2_medium_that_matches_its_config_is_refused_on_its_count(probes):
    """Weights that match: the budget (1 GiB) is checked on what config.json builds,
    GPT-2 medium's closed form, before anything is allocated."""
    n = gpt2_closed_form(**MEDIUM)
    plan = L._plan(probes["folder"], BIG)  # matches: every parameter has its stored tensor
    assert plan.n_params == plan.n_stored == n
    assert plan.need == 2 * 4 * n
    probe = probes["matching"]
    assert probe["kind"] == "budget"
    assert probe["message"].startswith(
        f"This model has 355M parameters ({4 * n / 2**20:,.0f} MB in float32); loading it "
        f"and measuring takes about {8 * n / 2**20:,.0f} MB, over this server's budget of "
        "1,024 MB"
    )
    assert probe["growth_mb"] < 100, probe


def test_a_header_that_claims_more_than_its_file_is_refused(tmp_path, no_model_is_built):
    folder = medium_folder(tmp_path / "medium")
    medium_weights(folder / "model.safetensors")
    with (folder / "model.safetensors").open("r+b") as fh:
        fh.truncate(10**6)  # the header names 1.4 GB of data
    with pytest.raises(P.PretrainedError, match="cut short") as e:
        P.load(folder, max_bytes=BIG)
    assert e.value.kind == "weights"


def test_too_deep_a_config_is_refused_before_it_is_built(tmp_path, no_model_is_built):
    folder = medium_folder(tmp_path / "deep")
    cfg = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**cfg, "n_layer": 100_000}))
    tiny_weights(folder / "model.safetensors")
    with pytest.raises(P.PretrainedError, match="from 1 to 512") as e:
        P.load(folder, max_bytes=BIG)
    assert e.value.kind == "architecture"


# ------------------------------------------------------- the count, against the model


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny")
    return {f: save_tiny(f, root / f) for f in FAMILIES}


@pytest.mark.parametrize("family", FAMILIES)
def test_config_count_is_the_loaded_models_own(folders, family):
    """What config.json builds, counted on the meta device, is the really loaded
    model's ``sum(p.numel() for p in model.parameters())`` (tied weights once)."""
    plan = L._plan(folders[family], BIG)
    m = P.load(folders[family])
    own = sum(p.numel() for p in m.model.parameters())
    assert plan.n_params == own == m.n_params
    assert m.weight_bytes == 4 * own and plan.need == 8 * own
    if family == "gpt2":
        cfg = m.config
        assert own == gpt2_closed_form(cfg.n_layer, cfg.n_embd, cfg.vocab_size, cfg.n_positions)


def test_shipped_models_count_as_they_load():
    """The Sonnets GPT-2 (940,800 parameters, docs/pretrained.md) and, when installed,
    all-MiniLM-L6-v2, whose file also stores a position-ids buffer (512 numbers)."""
    tiny = P.tiny_gpt2_path()
    plan = L._plan(tiny, BIG)
    assert plan.n_params == plan.n_stored == 940_800
    assert plan.n_params == gpt2_closed_form(4, 128, 1024, 128)
    demo = P.demo_model_path()
    if demo is not None:
        plan = L._plan(demo, BIG)
        m = P.load(demo)
        assert plan.n_params == sum(p.numel() for p in m.model.parameters())
        assert plan.n_stored == plan.n_params + 512


# ------------------------------------------------------------ weights vs config.json


def _rewrite(folder: Path, drop: str | None = None, add: dict | None = None) -> None:
    tensors = load_file(str(folder / "model.safetensors"))
    if drop is not None:
        del tensors[drop]
    save_file({**tensors, **(add or {})}, str(folder / "model.safetensors"))


def test_an_untied_head_must_be_stored_a_tied_one_need_not(tmp_path, no_model_is_built):
    untied = save_tiny("llama", tmp_path / "untied")  # Llama: tie_word_embeddings False
    assert not transformers.AutoConfig.from_pretrained(untied).tie_word_embeddings
    _rewrite(untied, drop="lm_head.weight")
    with pytest.raises(P.PretrainedError, match="1 of the model's tensors") as e:
        P.load(untied, max_bytes=BIG)
    assert e.value.kind == "weights"
    tied = save_tiny("llama", tmp_path / "tied", tie_word_embeddings=True)
    with pytest.raises(KeyError):  # save_pretrained stores the tied head once
        load_file(str(tied / "model.safetensors"))["lm_head.weight"]
    plan = L._plan(tied, BIG)
    assert plan.n_params == plan.n_stored


def test_extra_stored_tensors_are_allowed_and_counted(tmp_path):
    """An old GPT-2 file stores each block's causal-mask buffer; transformers ignores it,
    and the budget counts it (the larger of the two counts)."""
    folder = save_tiny("gpt2", tmp_path / "old")
    before = L._plan(folder, BIG)
    _rewrite(folder, add={"transformer.h.0.attn.bias": torch.ones(1, 1, 128, 128)})
    plan = L._plan(folder, BIG)
    assert plan.n_params == before.n_params
    assert plan.n_stored == before.n_params + 128 * 128
    assert plan.need == 8 * plan.n_stored
    assert P.load(folder).n_params == before.n_params


def test_hub_weights_are_compared_with_the_config(monkeypatch, no_model_is_built, tmp_path):
    """The hub path reads the same shapes from the hub's safetensors metadata."""
    import huggingface_hub as hub
    from huggingface_hub.utils._safetensors import (
        SafetensorsFileMetadata,
        SafetensorsRepoMetadata,
        TensorInfo,
    )

    medium_folder(tmp_path / "cfg")
    info = TensorInfo(dtype="F32", shape=[1], data_offsets=(0, 4))
    files = {"model.safetensors": SafetensorsFileMetadata({}, {"tiny.w": info})}
    meta = SafetensorsRepoMetadata(None, False, {"tiny.w": "model.safetensors"}, files)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(hub, "get_safetensors_metadata", lambda _name: meta)
    real = transformers.AutoConfig.from_pretrained
    monkeypatch.setattr(
        transformers.AutoConfig, "from_pretrained", lambda *_a, **k: real(tmp_path / "cfg", **k)
    )
    with pytest.raises(P.PretrainedError, match="do not match config.json") as e:
        P.load("some-org/gpt2-medium", max_bytes=BIG)
    assert e.value.kind == "weights"


# ------------------------------------------------------------ the process-wide cache


@pytest.fixture
def empty_cache():
    def clear():
        with C._LOCK:
            C._MODELS.clear()
            C._TRACES.clear()
            C._ALIVE.clear()
            C._NEEDS.clear()
        gc.collect()

    clear()
    yield
    clear()


@pytest.fixture
def one_at_a_time(folders, monkeypatch, empty_cache):
    """A budget that holds either tiny GPT-2 or tiny Llama, not both."""
    needs = {f: 8 * L._plan(folders[f], BIG).n_params for f in ("gpt2", "llama")}
    budget = max(needs.values()) * 1.25
    assert sum(needs.values()) > budget
    monkeypatch.setenv("RESVIZ_MAX_MODEL_MB", repr(budget / 2**20))
    return P.max_bytes_default()


def _held_bytes() -> int:
    return sum(C._NEEDS[k] for k in C._MODELS)


def test_loading_another_model_releases_the_first(folders, one_at_a_time):
    a = R.loaded(R.FOLDER, str(folders["gpt2"]))
    R.traced(R.FOLDER, str(folders["gpt2"]), TEXT)  # its trace holds it too
    gone = weakref.ref(a)
    del a
    b = R.loaded(R.FOLDER, str(folders["llama"]))
    gc.collect()
    assert gone() is None  # released, its trace with it: the memory is free
    assert list(C._MODELS.values()) == [b]
    assert all(tr.model is b for tr in C._TRACES.values())
    assert _held_bytes() == 8 * b.n_params <= one_at_a_time


def test_small_models_are_held_together(folders, monkeypatch, empty_cache):
    monkeypatch.setenv("RESVIZ_MAX_MODEL_MB", "1")
    a = R.loaded(R.FOLDER, str(folders["gpt2"]))
    b = R.loaded(R.FOLDER, str(folders["llama"]))
    assert list(C._MODELS.values()) == [a, b]
    assert R.loaded(R.FOLDER, str(folders["gpt2"])) is a  # loaded once
    assert _held_bytes() == 8 * (a.n_params + b.n_params) <= 2**20


def test_a_released_model_still_in_use_counts(folders, one_at_a_time, monkeypatch):
    """A released model that a run still holds still takes memory: the next load waits
    for it (WAIT_S), then is refused; asked for again, it is held again, not copied."""
    monkeypatch.setattr(C, "WAIT_S", 0.3)
    a = R.loaded(R.FOLDER, str(folders["gpt2"]))
    with pytest.raises(P.PretrainedError, match="still using another model") as e:
        R.loaded(R.FOLDER, str(folders["llama"]))
    assert e.value.kind == "budget"
    assert not C._MODELS  # a was released from the cache, but is alive here
    assert R.loaded(R.FOLDER, str(folders["gpt2"])) is a
    del a
    b = R.loaded(R.FOLDER, str(folders["llama"]))
    assert list(C._MODELS.values()) == [b]


@pytest.mark.slow
def test_sessions_loading_at_once_stay_within_the_budget(folders, one_at_a_time, monkeypatch):
    """Four threads (Streamlit's sessions) load the two models in turn; every load finds
    the models alive plus the new one within the budget."""
    seen: list[int] = []
    build = L._build

    def counted(plan):
        seen.append(C._alive_bytes() + plan.need)  # under the cache's lock
        return build(plan)

    monkeypatch.setattr(L, "_build", counted)
    errors: list[BaseException] = []

    def session(i: int) -> None:
        try:
            for j in range(3):
                family = ("gpt2", "llama")[(i + j) % 2]
                assert R.loaded(R.FOLDER, str(folders[family])).n_params > 0
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=session, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert seen and max(seen) <= one_at_a_time
    assert _held_bytes() <= one_at_a_time


def test_traces_kept_within_their_share(folders, monkeypatch, empty_cache):
    m = R.loaded(R.FOLDER, str(folders["gpt2"]))
    texts = [f"{TEXT} {i}" for i in range(5)]
    for t in texts:
        R.traced(R.FOLDER, str(folders["gpt2"]), t)
    kept = list(C._TRACES.values())
    assert kept[-1].text == texts[-1]  # the newest always
    size = sum(C._trace_bytes(tr) for tr in kept)
    assert len(kept) == 1 or size <= C.TRACE_SHARE * m.weight_bytes
    # One trace's storage: stream (L+1, T, C), attention (L, H, T, T), logits (T, V),
    # the last hidden state (T, C) and the ids (T,), float32 and int64.
    tr = kept[-1]
    cfg, t = m.config, tr.n_tokens
    want = (
        4
        * (
            (cfg.n_layer + 1) * t * cfg.n_embd
            + cfg.n_layer * cfg.n_head * t * t
            + t * cfg.vocab_size
            + t * cfg.n_embd
        )
        + 8 * t
    )
    assert C._trace_bytes(tr) == want
    assert math.isfinite(size)
