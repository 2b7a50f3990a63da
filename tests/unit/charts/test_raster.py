"""Tests for resviz.charts.raster: decode the PNG by hand and look at its pixels."""

from __future__ import annotations

import base64
import math
import struct
import zlib

import numpy as np
import pytest
import torch

from resviz.charts import raster as raster

BLUE_END = (0x05, 0x30, 0x61)
RED_END = (0x67, 0x00, 0x1F)
WHITE = (255, 255, 255)


def decode(png: bytes) -> np.ndarray:
    """A minimal PNG reader for what to_png writes: 8-bit RGB, filter 0, no interlace."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, []
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos : pos + 4])
        kind = png[pos + 4 : pos + 8]
        data = png[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", png[pos + 8 + length : pos + 12 + length])
        assert crc == zlib.crc32(kind + data), kind
        chunks.append((kind, data))
        pos += 12 + length
    kinds = [k for k, _ in chunks]
    assert kinds[0] == b"IHDR" and kinds[-1] == b"IEND" and b"IDAT" in kinds
    width, height, depth, color, comp, filt, interlace = struct.unpack(">IIBBBBB", chunks[0][1])
    assert (depth, color, comp, filt, interlace) == (8, 2, 0, 0, 0)
    raw = zlib.decompress(b"".join(d for k, d in chunks if k == b"IDAT"))
    rows = np.frombuffer(raw, dtype=np.uint8).reshape(height, 1 + 3 * width)
    assert (rows[:, 0] == 0).all()  # filter type "none" on every row
    return rows[:, 1:].reshape(height, width, 3)


def test_header_and_known_pixels():
    m = np.array([[-2.0, 0.0, 2.0], [1.0, math.nan, -1.0]])
    png = raster.to_png(m)
    (width, height) = struct.unpack(">II", png[16:24])  # IHDR data starts at byte 16
    assert (width, height) == (3, 2)
    img = decode(png)
    assert img.shape == (2, 3, 3)
    assert tuple(img[0, 0]) == BLUE_END  # min -> blue end
    assert tuple(img[0, 1]) == WHITE  # 0 -> white (symmetric default limits)
    assert tuple(img[0, 2]) == RED_END  # max -> red end
    assert tuple(img[1, 1]) == raster.NAN_RGB  # NaN -> grey
    r, g, b = (int(c) for c in img[1, 0])  # +1: a light red
    assert r > b and r > g and r > 200
    r, g, b = (int(c) for c in img[1, 2])  # -1: a light blue
    assert b > r and b > 200


def test_default_limits_are_symmetric_around_zero():
    img = decode(raster.to_png(np.array([[0.0, 0.5, 4.0]])))
    assert tuple(img[0, 0]) == WHITE  # not blue: the range is [-4, 4], not [0, 4]
    assert tuple(img[0, 2]) == RED_END
    img = decode(raster.to_png(np.array([[-4.0, 0.0, 1.0]])))  # the negative side sets the range
    assert tuple(img[0, 0]) == BLUE_END
    assert tuple(img[0, 1]) == WHITE
    assert tuple(img[0, 2]) != RED_END and img[0, 2, 0] > img[0, 2, 2]


def test_explicit_limits_clip_and_infinities():
    m = torch.tensor([[-10.0, 0.5, 10.0, math.inf, -math.inf]])
    img = decode(raster.to_png(m, vmin=0.0, vmax=1.0))
    assert tuple(img[0, 0]) == BLUE_END
    assert tuple(img[0, 1]) == WHITE  # the midpoint of [vmin, vmax]
    assert tuple(img[0, 2]) == RED_END
    assert tuple(img[0, 3]) == RED_END
    assert tuple(img[0, 4]) == BLUE_END


def test_reversed_cmap():
    img = decode(raster.to_png(np.array([[-1.0, 1.0]]), cmap="RdBu_r"))
    assert tuple(img[0, 0]) == RED_END and tuple(img[0, 1]) == BLUE_END


def test_scale_repeats_cells_and_orientation():
    m = np.array([[1.0, -1.0, 0.0], [0.0, 0.0, 0.0]])
    png = raster.to_png(m, scale=4)
    assert struct.unpack(">II", png[16:24]) == (12, 8)
    img = decode(png)
    assert (img[:4, :4] == img[0, 0]).all() and tuple(img[0, 0]) == RED_END  # row 0 at the top
    assert (img[:4, 4:8] == img[0, 4]).all() and tuple(img[0, 4]) == BLUE_END
    assert (img[4:] == 255).all()
    np.testing.assert_array_equal(img[::4, ::4], raster.to_rgb(m))


def test_large_matrix_is_fast_and_small():
    gen = torch.Generator().manual_seed(0)
    m = torch.randn(512, 512, generator=gen)
    png = raster.to_png(m)
    img = decode(png)
    assert img.shape == (512, 512, 3)
    np.testing.assert_array_equal(img, raster.to_rgb(m))
    smooth = torch.outer(torch.linspace(-1, 1, 226), torch.linspace(-1, 1, 226))
    assert len(raster.to_png(smooth)) < 226 * 226 * 3 / 4


def test_constant_and_all_nan_matrices():
    assert (decode(raster.to_png(np.zeros((3, 3)))) == 255).all()
    assert (decode(raster.to_png(np.full((2, 2), math.nan))) == raster.NAN_RGB).all()
    # equal limits put everything at the midpoint instead of dividing by zero
    assert (decode(raster.to_png(np.ones((2, 2)), vmin=1.0, vmax=1.0)) == 255).all()
    assert decode(raster.to_png(np.array([[True, False]]))).shape == (1, 2, 3)


def test_data_url_round_trip():
    png = raster.to_png(np.eye(3))
    url = raster.png_data_url(png)
    assert url.startswith("data:image/png;base64,")
    assert base64.b64decode(url.split(",", 1)[1]) == png
    with pytest.raises(ValueError, match="PNG"):
        raster.png_data_url(b"GIF89a")


def test_colorbar_stops():
    stops = raster.colorbar_stops(-1.0, 1.0, 3)
    assert stops == [(-1.0, "#053061"), (0.0, "#ffffff"), (1.0, "#67001f")]
    # the bar shows the colours the image uses for the same values
    values = np.linspace(-3.0, 5.0, 9)
    rgb = raster.to_rgb(values[None, :], vmin=-3.0, vmax=5.0)[0]
    got = raster.colorbar_stops(-3.0, 5.0, 9)
    assert [v for v, _ in got] == pytest.approx(values.tolist())
    assert [c for _, c in got] == ["#{:02x}{:02x}{:02x}".format(*c) for c in rgb]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"matrix": np.zeros(3)}, "2-D"),
        ({"matrix": np.zeros((0, 3))}, "2-D"),
        ({"matrix": [[1.0]]}, "numpy array or torch tensor"),
        ({"matrix": np.array([["a"]])}, "real numbers"),
        ({"matrix": torch.zeros(2, 2, dtype=torch.complex64)}, "real"),
        ({"matrix": np.zeros((2, 2)), "vmin": 1.0, "vmax": 0.0}, "swap"),
        ({"matrix": np.zeros((2, 2)), "vmin": math.nan}, "finite"),
        ({"matrix": np.zeros((2, 2)), "vmax": "1"}, "number"),
        ({"matrix": np.zeros((2, 2)), "cmap": "jet"}, "cmap"),
        ({"matrix": np.zeros((2, 2)), "scale": 0}, "scale"),
        ({"matrix": np.zeros((2, 2)), "scale": 1.5}, "scale"),
        ({"matrix": np.zeros((5000, 5000))}, "pixels"),
        ({"matrix": np.zeros((100, 100)), "scale": 100}, "pixels"),
    ],
)
def test_bad_input_raises_value_error(kwargs, match):
    with pytest.raises(ValueError, match=match):
        raster.to_png(**kwargs)


def test_bad_colorbar_arguments():
    for args in ((1.0, 0.0, 3), (0.0, 1.0, 1), (None, 1.0, 3), (0.0, math.inf, 3)):
        with pytest.raises(ValueError):
            raster.colorbar_stops(*args)
