"""A minimal PNG writer (8-bit RGB, no interlace) with the standard library's zlib.

Navi's environment package has no image library (no Pillow, no matplotlib); a preview needs one
plain RGB image, which is a signature, an IHDR chunk, one zlib stream of filtered rows and IEND.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np

from navi_common.atomic import atomic_write_bytes

_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _chunk(kind: bytes, data: bytes) -> bytes:
    return (
        struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    )


def encode_png(rgb: np.ndarray) -> bytes:
    """PNG bytes of an (H, W, 3) uint8 image.

    Raises:
        ValueError: not an (H, W, 3) uint8 array, or empty.
    """
    if rgb.dtype != np.uint8 or rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.shape[0] == 0 or rgb.shape[1] == 0:
        raise ValueError(f"expected an (H, W, 3) uint8 image, got {rgb.dtype} {rgb.shape}")
    height, width = rgb.shape[:2]
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit truecolour
    rows = np.concatenate([np.zeros((height, 1), np.uint8), rgb.reshape(height, width * 3)], axis=1)
    return (
        _SIGNATURE
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(rows.tobytes(), 6))
        + _chunk(b"IEND", b"")
    )


def write_png(path: str | Path, rgb: np.ndarray) -> Path:
    """Write an (H, W, 3) uint8 image as a PNG file, atomically."""
    return atomic_write_bytes(path, encode_png(rgb))


def decode_png(data: bytes) -> np.ndarray:
    """(H, W, 3) uint8 pixels of a PNG written by :func:`encode_png` (filter type 0 rows only;
    used by the tests to check what was written)."""
    if not data.startswith(_SIGNATURE):
        raise ValueError("not a PNG file")
    offset, width, height, idat = len(_SIGNATURE), 0, 0, b""
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        kind, body = data[offset + 4 : offset + 8], data[offset + 8 : offset + 8 + length]
        if kind == b"IHDR":
            width, height = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        offset += 12 + length
    rows = np.frombuffer(zlib.decompress(idat), dtype=np.uint8).reshape(height, 1 + 3 * width)
    if rows[:, 0].any():
        raise ValueError("only unfiltered rows are supported")
    return rows[:, 1:].reshape(height, width, 3).copy()
