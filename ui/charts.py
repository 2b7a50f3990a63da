"""``resviz.charts`` for the pages: the same builders, memoised by what they draw.

A page rebuilds every chart on every run, and a chart costs 5-25 ms of Python
(Altair validates as it builds; a log axis with flagged points is a layered
chart) plus its conversion to a Vega-Lite dict. Most runs redraw charts whose
data has not changed: another visitor's default view, a widget elsewhere on the
page. Here each builder call is keyed by a fingerprint of its arguments (the
bytes of every frame and array, the values of everything else); a repeated call
returns the chart built the first time, and ``ui.views`` reuses its converted
dict. Keys are content, never object identity, so a stale chart cannot be
served; arguments that cannot be fingerprinted are built as usual. Shared by
every session and bounded (``MAX_ENTRIES``, least recently used out first).

The memoised charts are shared: callers must not mutate them (Altair's methods,
``.properties`` and ``.configure_*`` included, return copies).
"""

from __future__ import annotations

import functools
import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from resviz import charts as _charts
from resviz.charts import FONT_SIZE, HEIGHT, PALETTE, TITLE_SIZE, mark_nonfinite, style

__all__ = [
    "FONT_SIZE",
    "HEIGHT",
    "PALETTE",
    "TITLE_SIZE",
    "bars",
    "grid_heatmap",
    "heatmap",
    "histograms",
    "image_heatmap",
    "line",
    "mark_nonfinite",
    "scatter",
    "style",
]

# The five default views draw about 45 charts; a chart and its converted dict
# hold its data twice (as a frame and as Arrow bytes), about 100 KB for a
# 1,600-point training curve, so a full memo is a few MB to ~13 MB.
MAX_ENTRIES = 128


class _Unkeyable(TypeError):
    pass


def _feed(h: Any, obj: object) -> None:
    """Feed ``obj``'s content into the hash ``h``; raise ``_Unkeyable`` for types
    whose content is not known here."""
    if obj is None or isinstance(obj, (bool, int, float, str)):
        h.update(repr((type(obj).__name__, obj)).encode())
    elif isinstance(obj, (list, tuple)):
        h.update(f"{type(obj).__name__}[{len(obj)}".encode())
        for x in obj:
            _feed(h, x)
        h.update(b"]")
    elif isinstance(obj, dict):
        h.update(f"dict[{len(obj)}".encode())
        for k in sorted(obj, key=repr):
            _feed(h, k)
            _feed(h, obj[k])
        h.update(b"]")
    elif isinstance(obj, pd.DataFrame):
        h.update(repr((list(obj.columns), [str(t) for t in obj.dtypes], obj.shape)).encode())
        h.update(pd.util.hash_pandas_object(obj, index=True).to_numpy().tobytes())
    elif isinstance(obj, np.ndarray):
        h.update(repr((obj.dtype.str, obj.shape)).encode())
        h.update(np.ascontiguousarray(obj).tobytes())
    else:
        raise _Unkeyable(type(obj).__name__)


def fingerprint(*args: object, **kwargs: object) -> str | None:
    """A digest of the arguments' content, or None where one cannot be taken."""
    h = hashlib.blake2b(digest_size=20)
    try:
        _feed(h, args)
        _feed(h, kwargs)
    except _Unkeyable:
        return None
    return h.hexdigest()


class _Memo:
    def __init__(self, max_entries: int) -> None:
        self.max_entries = max_entries
        self._charts: OrderedDict[str, Any] = OrderedDict()
        # id(chart) -> chart, for the charts in ``_charts`` (which keep them alive).
        self._live: dict[int, Any] = {}
        # id(chart) -> (chart, spec JSON without data, Arrow datasets).
        self._specs: dict[int, tuple[Any, str, dict[str, bytes]]] = {}
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get_or_build(self, key: str, build: Callable[[], Any]) -> Any:
        with self._lock:
            chart = self._charts.get(key)
            if chart is not None:
                self._charts.move_to_end(key)
                self.hits += 1
                return chart
        chart = build()  # outside the lock: two sessions may build the same chart once each
        with self._lock:
            self.misses += 1
            if key in self._charts:  # built meanwhile by another session: keep the first
                self._charts.move_to_end(key)
                return self._charts[key]
            self._charts[key] = chart
            self._live[id(chart)] = chart
            while len(self._charts) > self.max_entries:
                _, old = self._charts.popitem(last=False)
                self._live.pop(id(old), None)
                self._specs.pop(id(old), None)
        return chart

    def spec(self, chart: object) -> dict[str, Any] | None:
        """A fresh copy of the converted dict of a memoised chart, if converted."""
        with self._lock:
            entry = self._specs.get(id(chart))
        if entry is None or entry[0] is not chart:
            return None
        out = json.loads(entry[1])
        if entry[2]:
            out["datasets"] = dict(entry[2])
        return out

    def remember_spec(self, chart: object, spec: dict[str, Any]) -> None:
        """Keep ``spec`` for ``chart`` if ``chart`` is one of the memoised charts."""
        with self._lock:
            if self._live.get(id(chart)) is not chart:
                return  # composed or built elsewhere: nothing to keep
        datasets = spec.get("datasets", {})
        if not all(isinstance(v, bytes) for v in datasets.values()):
            return  # inline (non-Arrow) data: not worth the bookkeeping
        text = json.dumps({k: v for k, v in spec.items() if k != "datasets"})
        with self._lock:
            if self._live.get(id(chart)) is chart:  # not evicted meanwhile
                self._specs[id(chart)] = (chart, text, dict(datasets))

    def clear(self) -> None:
        with self._lock:
            self._charts.clear()
            self._live.clear()
            self._specs.clear()
            self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._charts)


MEMO = _Memo(MAX_ENTRIES)
# Image heatmaps carry their picture: a 1,000 x 1,024 PNG is 1.6 MB as a data URL,
# held twice once converted. They get a memo of their own, small, so that they cannot
# fill the shared one (128 such charts would be 400 MB). Their converted dicts are
# not kept (``ui.views`` keeps MEMO's only): converting the largest takes ~45 ms.
IMAGES = _Memo(16)


def _memoised(fn: Callable[..., Any], memo: _Memo = MEMO) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        key = fingerprint(fn.__name__, *args, **kwargs)
        if key is None:
            return fn(*args, **kwargs)
        return memo.get_or_build(key, lambda: fn(*args, **kwargs))

    return wrapper


line = _memoised(_charts.line)
bars = _memoised(_charts.bars)
heatmap = _memoised(_charts.heatmap)
image_heatmap = _memoised(_charts.image_heatmap, IMAGES)
grid_heatmap = _memoised(_charts.grid_heatmap)
histograms = _memoised(_charts.histograms)
scatter = _memoised(_charts.scatter)
# The encoder playground's attention maps and shares.
attention_map = _memoised(_charts.attention_map)
share_bars = _memoised(_charts.share_bars)
