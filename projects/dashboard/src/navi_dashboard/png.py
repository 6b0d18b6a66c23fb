"""A minimal PNG encoder (8-bit RGB, no interlace) built on zlib.

The observation image is tiny (256x48 by default), so one PNG per pushed frame costs well under a
millisecond and is shared by every browser tab. Writing the format by hand keeps the dashboard free
of an imaging dependency; browsers decode it natively.
"""

from __future__ import annotations

import struct
import zlib

import numpy as np

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_COLOR_TYPE_RGB = 2
_BIT_DEPTH = 8
_FILTER_NONE = 0


def _chunk(kind: bytes, data: bytes) -> bytes:
    """One PNG chunk: length, type, data, CRC-32 over type and data."""
    crc = zlib.crc32(data, zlib.crc32(kind)) & 0xFFFFFFFF
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)


def encode_png(rgb: np.ndarray, compression: int = 1) -> bytes:
    """Encode an RGB image as PNG bytes.

    Args:
        rgb: uint8 array of shape (H, W, 3); H and W at least 1.
        compression: zlib level 0-9; level 1 is the fastest and the images compress well anyway.

    Returns:
        The complete PNG file as bytes.

    Raises:
        ValueError: wrong dtype, shape or compression level.
    """
    if rgb.dtype != np.uint8 or rgb.ndim != 3 or rgb.shape[2] != 3:
        raise ValueError(f"encode_png needs uint8 (H, W, 3), got {rgb.dtype} {rgb.shape}")
    height, width = int(rgb.shape[0]), int(rgb.shape[1])
    if height < 1 or width < 1:
        raise ValueError(f"encode_png needs a non-empty image, got {rgb.shape}")
    if not 0 <= compression <= 9:
        raise ValueError(f"zlib compression level must be in 0..9, got {compression}")
    # Every scanline starts with its filter byte; "none" keeps encoding a single memcpy + deflate.
    scanlines = np.empty((height, 1 + width * 3), dtype=np.uint8)  # [H, 1 + W*3]
    scanlines[:, 0] = _FILTER_NONE
    scanlines[:, 1:] = rgb.reshape(height, width * 3)  # [H, W, 3] -> [H, W*3]
    header = struct.pack(">IIBBBBB", width, height, _BIT_DEPTH, _COLOR_TYPE_RGB, 0, 0, 0)
    return b"".join(
        (
            _SIGNATURE,
            _chunk(b"IHDR", header),
            _chunk(b"IDAT", zlib.compress(scanlines.tobytes(), compression)),
            _chunk(b"IEND", b""),
        )
    )
