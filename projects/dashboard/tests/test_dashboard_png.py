"""The PNG encoder against an independent decoder written from the specification."""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from navi_dashboard.png import encode_png


def decode_png(data: bytes) -> np.ndarray:
    """Decode an 8-bit RGB, filter-0, non-interlaced PNG, checking every chunk's CRC."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    offset, chunks = 8, []
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        kind, body = data[offset + 4 : offset + 8], data[offset + 8 : offset + 8 + length]
        (crc,) = struct.unpack(">I", data[offset + 8 + length : offset + 12 + length])
        assert crc == zlib.crc32(kind + body) & 0xFFFFFFFF, kind
        chunks.append((kind, body))
        offset += 12 + length
    assert [kind for kind, _ in chunks] == [b"IHDR", b"IDAT", b"IEND"]
    width, height, depth, colour, compression, filtering, interlace = struct.unpack(">IIBBBBB", chunks[0][1])
    assert (depth, colour, compression, filtering, interlace) == (8, 2, 0, 0, 0)
    rows = np.frombuffer(zlib.decompress(chunks[1][1]), dtype=np.uint8).reshape(height, 1 + width * 3)
    assert (rows[:, 0] == 0).all()
    return rows[:, 1:].reshape(height, width, 3)


@given(arrays(np.uint8, st.tuples(st.integers(1, 24), st.integers(1, 24), st.just(3))), st.integers(0, 9))
def test_encode_then_decode_is_identity(image: np.ndarray, level: int) -> None:
    np.testing.assert_array_equal(decode_png(encode_png(image, level)), image)


def test_known_single_pixel_file() -> None:
    png = encode_png(np.array([[[255, 0, 0]]], dtype=np.uint8))
    assert png[12:16] == b"IHDR" and png[16:24] == struct.pack(">II", 1, 1)
    assert png.endswith(b"\x00\x00\x00\x00IEND\xae\x42\x60\x82")  # the constant IEND chunk


@pytest.mark.parametrize(
    ("image", "message"),
    [
        (np.zeros((4, 4, 3), dtype=np.float32), "uint8"),
        (np.zeros((4, 4), dtype=np.uint8), "uint8"),
        (np.zeros((4, 4, 4), dtype=np.uint8), "uint8"),
        (np.zeros((0, 4, 3), dtype=np.uint8), "non-empty"),
    ],
)
def test_bad_images_are_rejected(image: np.ndarray, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        encode_png(image)


def test_bad_level_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"0\.\.9"):
        encode_png(np.zeros((1, 1, 3), dtype=np.uint8), compression=10)
