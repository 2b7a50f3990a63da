"""Heatmaps as PNG images, with no imaging library (stdlib ``zlib`` and ``struct``, plus numpy).

A 226x226 similarity matrix is 51k Vega rectangles, which a browser draws
slowly; the same matrix as one PNG is a few kilobytes and draws at once. Cells
go through a diverging blue-white-red colormap (ColorBrewer RdBu, 11 classes,
with the centre made pure white so that 0 reads as "nothing"): ``vmin`` is dark
blue, the midpoint white, ``vmax`` dark red; NaN is grey. Row 0 of the matrix is
the top row of the image and column 0 the left column, as in ``imshow``.

PNG layout (ISO/IEC 15948): the 8-byte signature, then chunks
``length | type | data | crc32(type + data)``: ``IHDR`` (width, height, bit
depth 8, colour type 2 = RGB), one ``IDAT`` holding the zlib stream of the
rows, each row prefixed by filter byte 0 (none), and an empty ``IEND``.
"""

from __future__ import annotations

import base64
import math
import struct
import zlib

import numpy as np
import torch

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# 16M pixels is 48 MiB of RGB before compression: enough for any page, small
# enough that a slider cannot exhaust memory.
MAX_PIXELS = 1 << 24
NAN_RGB = (160, 160, 160)

# Blue (low) to red (high), i.e. matplotlib's "RdBu_r": low values are cold.
_RDBU_LOW_TO_HIGH = np.array(
    [
        (0x05, 0x30, 0x61),
        (0x21, 0x66, 0xAC),
        (0x43, 0x93, 0xC3),
        (0x92, 0xC5, 0xDE),
        (0xD1, 0xE5, 0xF0),
        (0xFF, 0xFF, 0xFF),
        (0xFD, 0xDB, 0xC7),
        (0xF4, 0xA5, 0x82),
        (0xD6, 0x60, 0x4D),
        (0xB2, 0x18, 0x2B),
        (0x67, 0x00, 0x1F),
    ],
    dtype=np.float64,
)
CMAPS = {"RdBu": _RDBU_LOW_TO_HIGH, "RdBu_r": _RDBU_LOW_TO_HIGH[::-1].copy()}


def _as_matrix(matrix: object) -> np.ndarray:
    if isinstance(matrix, torch.Tensor):
        if matrix.is_complex():
            raise ValueError(f"matrix must be real, got dtype {matrix.dtype}.")
        matrix = matrix.detach().to("cpu", torch.float64).numpy()
    if not isinstance(matrix, np.ndarray):
        raise ValueError(
            f"matrix must be a numpy array or torch tensor, got {type(matrix).__name__}."
        )
    if matrix.dtype.kind not in "biuf":
        raise ValueError(f"matrix must hold real numbers, got dtype {matrix.dtype}.")
    if matrix.ndim != 2 or matrix.shape[0] < 1 or matrix.shape[1] < 1:
        raise ValueError(f"matrix must be 2-D and non-empty, got shape {matrix.shape}.")
    return matrix.astype(np.float64, copy=False)


def _check_limit(name: str, value: float | None) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | np.floating | np.integer):
        raise ValueError(f"{name} must be a number or None, got {value!r}.")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}.")
    return float(value)


def _limits(values: np.ndarray, vmin: float | None, vmax: float | None) -> tuple[float, float]:
    vmin, vmax = _check_limit("vmin", vmin), _check_limit("vmax", vmax)
    finite = values[np.isfinite(values)]
    if vmin is None and vmax is None:
        # Symmetric so that white means 0 and the two hues are comparable.
        m = float(np.abs(finite).max()) if finite.size else 0.0
        m = m if m > 0 else 1.0
        return -m, m
    if vmin is None:
        assert vmax is not None  # both None returned above
        vmin = min(float(finite.min()), vmax) if finite.size else vmax - 1.0
    elif vmax is None:  # (not both: vmin was None, so vmax was given)
        vmax = max(float(finite.max()), vmin) if finite.size else vmin + 1.0
    if vmin > vmax:
        raise ValueError(f"vmin={vmin} is above vmax={vmax}: swap them.")
    return vmin, vmax


# Colours are looked up in a table rather than interpolated per cell, which
# is several times faster on million-cell matrices. An odd size puts t = 0,
# 0.5 and 1 exactly on entries, so vmin, the midpoint and vmax get the stop
# colours themselves; 1025 levels are finer than 8-bit colour can show.
_LUT_SIZE = 1025


def _interpolate(t: np.ndarray, stops: np.ndarray) -> np.ndarray:
    x = t * (len(stops) - 1)
    left = np.minimum(np.floor(x).astype(np.intp), len(stops) - 2)
    frac = (x - left)[..., None]
    return np.rint(stops[left] * (1.0 - frac) + stops[left + 1] * frac).astype(np.uint8)


_LUTS = {name: _interpolate(np.linspace(0.0, 1.0, _LUT_SIZE), s) for name, s in CMAPS.items()}


def _lut(cmap: str) -> np.ndarray:
    if cmap not in _LUTS:
        raise ValueError(f"cmap={cmap!r} is unknown: choose one of {sorted(CMAPS)}.")
    return _LUTS[cmap]


def _colorize(values: np.ndarray, lo: float, hi: float, lut: np.ndarray) -> np.ndarray:
    # Linear in [lo, hi]; with lo == hi every cell is the midpoint.
    t = (values - lo) / (hi - lo) if hi > lo else np.full_like(values, 0.5)
    nan = np.isnan(t)
    t[nan] = 0.5
    np.clip(t, 0.0, 1.0, out=t)  # +-inf clip to the ends
    rgb = lut[np.rint(t * (_LUT_SIZE - 1)).astype(np.intp)]
    rgb[nan] = NAN_RGB
    return rgb


def to_rgb(
    matrix: np.ndarray | torch.Tensor,
    vmin: float | None = None,
    vmax: float | None = None,
    cmap: str = "RdBu",
) -> np.ndarray:
    """The ``[H, W, 3]`` uint8 colours :func:`to_png` would write, at scale 1.

    A value ``v`` sits at ``t = (v - vmin) / (vmax - vmin)`` (clipped to [0, 1])
    along the colormap; NaN is grey. With both limits ``None`` they are
    ``-+max|finite value|``, so 0 is white; a single ``None`` limit is taken
    from the data.
    """
    values = _as_matrix(matrix)
    lut = _lut(cmap)
    lo, hi = _limits(values, vmin, vmax)
    return _colorize(values, lo, hi, lut)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def to_png(
    matrix: np.ndarray | torch.Tensor,
    vmin: float | None = None,
    vmax: float | None = None,
    cmap: str = "RdBu",
    scale: int = 1,
) -> bytes:
    """Encode a 2-D matrix as an RGB PNG, each cell a ``scale x scale`` block of pixels.

    Colours as in :func:`to_rgb`: ``vmin`` dark blue, midpoint white, ``vmax``
    dark red (``cmap="RdBu_r"`` reverses them), NaN grey. Nearest-neighbour
    ``scale`` keeps cell edges sharp where a browser would blur them. Images
    over ``MAX_PIXELS`` pixels raise ``ValueError``.
    """
    if isinstance(scale, bool) or not isinstance(scale, int) or scale < 1:
        raise ValueError(f"scale must be a whole number >= 1, got {scale!r}.")
    values = _as_matrix(matrix)
    h, w = values.shape[0] * scale, values.shape[1] * scale
    if h * w > MAX_PIXELS:
        raise ValueError(
            f"a {h}x{w} image is more than {MAX_PIXELS} pixels: lower scale or slice the matrix."
        )
    rgb = to_rgb(values, vmin, vmax, cmap)
    if scale > 1:
        rgb = np.repeat(np.repeat(rgb, scale, axis=0), scale, axis=1)
    # Filter type 0 on every row: heatmaps are flat runs, which zlib already
    # squeezes well, and it keeps the encoder trivial to check.
    raw = np.concatenate([np.zeros((h, 1), dtype=np.uint8), rgb.reshape(h, w * 3)], axis=1)
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    return (
        PNG_SIGNATURE
        + _chunk(b"IHDR", ihdr)
        + _chunk(b"IDAT", zlib.compress(raw.tobytes(), 6))
        + _chunk(b"IEND", b"")
    )


def png_data_url(png: bytes) -> str:
    """``"data:image/png;base64,..."`` for an ``<img src>`` or ``st.markdown``."""
    if not isinstance(png, bytes | bytearray) or not bytes(png[:8]) == PNG_SIGNATURE:
        raise ValueError("png must be the bytes of a PNG image, e.g. from to_png().")
    return "data:image/png;base64," + base64.b64encode(bytes(png)).decode("ascii")


def colorbar_stops(
    vmin: float, vmax: float, n: int = 11, cmap: str = "RdBu"
) -> list[tuple[float, str]]:
    """``n`` evenly spaced ``(value, "#rrggbb")`` pairs from ``vmin`` to ``vmax``.

    The same colours :func:`to_png` gives those values, for a legend or a CSS
    ``linear-gradient`` beside the image.
    """
    lo, hi = _check_limit("vmin", vmin), _check_limit("vmax", vmax)
    if lo is None or hi is None:
        raise ValueError("colorbar_stops needs both vmin and vmax; use the image's limits.")
    if lo > hi:
        raise ValueError(f"vmin={lo} is above vmax={hi}: swap them.")
    if isinstance(n, bool) or not isinstance(n, int) or not 2 <= n <= 1024:
        raise ValueError(f"n={n!r} must be a whole number from 2 to 1024.")
    values = np.linspace(lo, hi, n)
    rgb = _colorize(values, lo, hi, _lut(cmap))
    return [(float(v), "#{:02x}{:02x}{:02x}".format(*c)) for v, c in zip(values, rgb, strict=True)]
