"""Every section's "Reproduce in a notebook" download, executed by a real Jupyter
kernel: its tables equal the section's CSVs.

Each section is opened by deep link in AppTest with settings that differ from the
defaults where the page has them (a non-default seed), its CSV downloads and its
notebook are captured, the notebook runs in a fresh kernel (``import resviz as rv``
from the checkout), and every table it declares is compared with the CSV of the
same name. A section whose tables come from a background run is opened with short
settings and its run started and awaited first (``SECTION_SETUP``); a timing CSV is checked
for its columns only (``TIMINGS``)."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pandas as pd
import pytest
from nbclient import NotebookClient

import ui.jobs
import ui.notebook
import ui.views
from tests.app.conftest import SECTION_CASES, SECTION_IDS, section_params

ROOT = Path(__file__).resolve().parents[2]

# Timings: a wall-clock measurement differs between the page's run and the notebook's,
# so the timing part of these CSVs is left out of the comparison and the rest is still
# compared. CSV name -> the part compared (applied to both tables). Add entries, one
# per CSV, and leave the others' in place.
TIMING_EXEMPT: dict[str, Callable[[pd.DataFrame], pd.DataFrame]] = {
    # Encoder playground, Model: the model card's measured "forward latency" row.
    "model_card": lambda df: df[df["quantity"] != "forward latency"].reset_index(drop=True),
}

# Pages whose sections export notebooks (all of them, once converted).
ALL_CASES = [(p, s) for p, s in SECTION_CASES if s is not None]
ALL_IDS = [i for (p, s), i in zip(SECTION_CASES, SECTION_IDS, strict=True) if s is not None]

# The notebooks run in a kernel by `make test`: at least one section of every page, and
# every way a section records its notebook (Section.run, a large result, a background
# run awaited, a result the page computed itself, a user's text, a trained checkpoint's
# recipe, a live-recorded training run). Every section's notebook makes the page's own
# recipe calls (tests/app/test_sections.py, every section, no kernel);
# RESVIZ_NOTEBOOKS_ALL=1 runs all of them here (about 14 minutes of the suite on 2 cores:
# run it before a stop that changes the notebooks or the recipes' frames).
KERNEL = {
    "skip_connections-Signal",
    "skip_connections-Lesion",
    "gradient_flow-Per layer",
    "gradient_flow-Depth sweep",
    "gradient_flow-Shattered",
    "normalization-Four views",
    "normalization-Cost",
    "normalization-Stability",
    "sinusoidal_encoding-Matrix",
    "encoder_playground-Attention",
    "encoder_playground-Model",
    "pretrained-Stream norms",
    "pretrained-Attention sinks",
    "pretrained-Who writes what",
}
assert KERNEL <= set(ALL_IDS), "a section named above is not a section"
RUN_ALL = os.environ.get("RESVIZ_NOTEBOOKS_ALL") == "1"
CASES = [c for c, i in zip(ALL_CASES, ALL_IDS, strict=True) if RUN_ALL or i in KERNEL]
IDS = [i for i in ALL_IDS if RUN_ALL or i in KERNEL]


# CSVs that hold a wall-clock timing, measured anew by every run: a notebook cannot
# reproduce their numbers, so it declares no frame for them. Each is named here with
# the notebook variable that holds the same table: the notebook must still run and
# produce it, with the CSV's columns and number of rows.
TIMINGS: dict[str, str] = {
    "norm_timing": "r.timing",  # LayerNorm versus RMSNorm on this device
}


def _csv_text(data) -> str:
    return data.decode("utf-8") if isinstance(data, bytes) else data.to_csv(index=False)


@pytest.fixture
def capture(monkeypatch):
    csvs: dict[str, str] = {}
    notebooks: list[ui.notebook.Notebook] = []
    original_csv = ui.views.csv_button
    original_download = ui.notebook.Notebook.download

    def record_csv(df, name, label="Download CSV"):  # noqa: ANN001, ANN202
        csvs[name] = _csv_text(df)
        original_csv(df, name, label)

    def record_nb(self, name):  # noqa: ANN001, ANN202
        notebooks.append(self)
        original_download(self, name)

    monkeypatch.setattr(ui.views, "csv_button", record_csv)
    monkeypatch.setattr(ui.notebook.Notebook, "download", record_nb)
    return csvs, notebooks


# Refuse, in the kernel's Python, every connection to another machine; note each try.
GUARD = """
import ipaddress, os, socket

_LOG = os.environ["RESVIZ_NET_LOG"]


def _local(host):
    if host in ("localhost", "", None):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _refuse(what, address):
    with open(_LOG, "a") as f:
        f.write(f"{what} {address!r}\\n")
    raise OSError(101, f"network blocked by the test: {address!r}")


_connect, _connect_ex, _getaddrinfo = (
    socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo
)


def connect(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6) and not _local(address[0]):
        _refuse("connect", address)
    return _connect(self, address)


def connect_ex(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6) and not _local(address[0]):
        _refuse("connect_ex", address)
    return _connect_ex(self, address)


def getaddrinfo(host, *args, **kwargs):
    if not _local(host if isinstance(host, str) else None):
        _refuse("getaddrinfo", host)
    return _getaddrinfo(host, *args, **kwargs)


socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo = (
    connect, connect_ex, getaddrinfo
)
"""


def timed_of(csvs: dict[str, str]) -> dict[str, str]:
    """The timing tables (CSV name -> notebook variable) among a section's CSVs."""
    return {name: var for name, var in TIMINGS.items() if name in csvs}


@dataclass(frozen=True)
class Run:
    """One executed notebook: the folder holding each table it wrote (``<name>.csv``)
    and the notebook with its outputs (``executed.ipynb``, kept on disk: its charts
    carry Vega's JavaScript inline), and the connections its kernel tried."""

    out: Path
    tried: tuple[str, ...]

    @property
    def nb(self) -> nbformat.NotebookNode:
        return nbformat.read(self.out / "executed.ipynb", as_version=4)


# A section's notebook runs once per test process: this file compares its tables with
# the page's CSVs and test_notebooks_offline.py checks its charts from the same run
# (tests/conftest.py schedules the two files together).
_RUNS: dict[str, Run] = {}


def execute(nb_json: dict, work: Path, extra: dict[str, str] | None = None) -> Run:
    """The notebook run in a fresh kernel whose Python refuses every connection that
    is not to this machine (a sitecustomize guard: the kernel's own ZeroMQ sockets are
    not Python's), with each declared table (and each ``extra`` one, CSV name ->
    variable) written to ``work``; once per notebook and ``extra``: a later call
    returns the first run."""
    key = json.dumps([nb_json, sorted((extra or {}).items())], sort_keys=True)
    if key not in _RUNS:
        _RUNS[key] = _execute(nb_json, work, extra or {})
    return _RUNS[key]


def _execute(nb_json: dict, work: Path, extra: dict[str, str]) -> Run:
    guard = work / "guard"
    guard.mkdir()
    (guard / "sitecustomize.py").write_text(GUARD)
    log = work / "network.log"
    log.write_text("")
    nb = nbformat.reads(json.dumps(nb_json), as_version=4)
    frames = {**nb_json["metadata"]["resviz"]["frames"], **extra}
    dump = "\n".join(
        f"{var}.to_csv({str(work / (name + '.csv'))!r}, index=False)"
        for name, var in frames.items()
    )
    nb.cells.append(nbformat.v4.new_code_cell(dump))
    env = {
        **os.environ,
        "PYTHONPATH": f"{guard}{os.pathsep}{ROOT}",
        "OMP_NUM_THREADS": "1",
        "RESVIZ_NET_LOG": str(log),
    }
    client = NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(work)}}
    )
    with _environ(env):
        client.execute()
    nbformat.write(nb, work / "executed.ipynb")
    return Run(work, tuple(log.read_text().splitlines()))


class _environ:
    def __init__(self, env: dict[str, str]) -> None:
        self.env, self.saved = env, dict(os.environ)

    def __enter__(self) -> None:
        os.environ.update(self.env)

    def __exit__(self, *exc: object) -> None:
        os.environ.clear()
        os.environ.update(self.saved)


def start_and_wait(button: str, timeout: float = 240):
    """A background-run section's setup: press its Start button and wait for the run,
    so that the CSVs compared are the final result's."""

    def setup(at) -> None:  # noqa: ANN001
        at.button(key=button).click().run()
        assert ui.jobs.REGISTRY.wait(timeout), f"{button}: the run did not finish"

    return setup


# (page, section) -> (extra URL settings that keep its run short, setup after the first run).
SECTION_SETUP = {
    ("app_pages/gradient_flow.py", "Depth sweep"): (
        {"width": "8"},
        start_and_wait("gradflow_sweep:start"),
    ),
    ("app_pages/gradient_flow.py", "Training"): (
        {"steps": "20"},
        start_and_wait("gradflow_train:start"),
    ),
    ("app_pages/normalization.py", "Warm-up"): (
        {"w_layers": "2", "w_steps": "20", "w_warm": "10"},
        start_and_wait("warmup:start"),
    ),
    ("app_pages/normalization.py", "Stability"): (
        {"s_steps": "20"},
        start_and_wait("stability:start"),
    ),
    # The default run (100 steps, two 6-layer models) takes under 10 s.
    ("app_pages/encoder_playground.py", "Training"): ({}, start_and_wait("playground_train:start")),
    ("app_pages/skip_connections.py", "Degradation"): (
        {"shallow": "2", "deep": "4", "steps": "60"},
        start_and_wait("degradation:start"),
    ),
    ("app_pages/pretrained.py", "Layer deletion"): (
        {},
        start_and_wait("pretrained_deletion:start"),
    ),
    ("app_pages/pretrained.py", "Where the answer travels"): (
        {},
        start_and_wait("pretrained_patching:start"),
    ),
    ("app_pages/pretrained.py", "Delete, then heal"): (
        {"steps": "10"},
        start_and_wait("pretrained_heal:start"),
    ),
    ("app_pages/pretrained.py", "Depth ladder"): ({}, start_and_wait("pretrained_ladder:start")),
    ("app_pages/skip_connections.py", "Lesion"): (
        {"l_depth": "4", "l_steps": "100"},
        start_and_wait("lesion:start"),
    ),
}


@pytest.mark.parametrize(("page", "section"), CASES, ids=IDS)
def test_section_notebook_reproduces_its_csvs(app, capture, tmp_path, page, section):
    csvs, notebooks = capture
    params, setup = SECTION_SETUP.get((page, section), ({}, None))
    at = app(page, seed="3", **section_params(section), **params).run()
    assert not at.exception, [e.value for e in at.exception]
    if setup is not None:
        setup(at)
        csvs.clear()
        notebooks.clear()
        at.run()  # the section as drawn from the finished run
        assert not at.exception, [e.value for e in at.exception]
    assert notebooks, f"{page} / {section} offers no notebook"
    assert at.get("download_button")
    for i, nb in enumerate(notebooks):
        assert nb.section == section
        declared = nb.frames
        timed = timed_of(csvs)
        assert declared or timed, "a notebook that declares no table checks nothing"
        reproduced = set().union(*(n.frames for n in notebooks)) | set(TIMINGS)
        missing = sorted(set(csvs) - reproduced)
        assert not missing, f"CSVs no notebook reproduces: {missing}"
        assert not set(declared) & set(TIMINGS), "a timing cannot be compared value by value"
        work = tmp_path / f"nb{i}"
        work.mkdir()
        out = execute(nb.to_json(), work, timed).out
        for name in declared:
            got = pd.read_csv(out / f"{name}.csv")
            want = pd.read_csv(io.StringIO(csvs[name]))
            if name in TIMING_EXEMPT:
                got, want = TIMING_EXEMPT[name](got), TIMING_EXEMPT[name](want)
            pd.testing.assert_frame_equal(got, want, check_exact=False, rtol=1e-9, atol=1e-12)
        for name in timed:
            got = pd.read_csv(out / f"{name}.csv")
            want = pd.read_csv(io.StringIO(csvs[name]))
            assert list(got.columns) == list(want.columns) and len(got) == len(want), name


def test_user_text_enters_a_notebook_only_as_a_literal(app, capture):
    csvs, notebooks = capture
    evil = "x'); import os; os.system('echo pwned'); ('"
    at = app("app_pages/sinusoidal_encoding.py", text=evil).run()
    assert not at.exception
    (nb,) = notebooks
    code = "\n".join(c["source"] for c in nb.to_json()["cells"] if c["cell_type"] == "code")
    assert f"text={evil!r}," in code  # the recipe call's argument, a Python literal
    compile(code, "notebook", "exec")  # still valid Python: the text stayed a string
