"""The single-payload encoder's pieces: msgpack framing plus raw array buffers, joined once.

Large arrays are not packed: their buffers become pieces of one ``bytes.join`` (the encoder's one
copy), each starting 8-byte aligned in the payload. Both the generic encoder and the layout plans of
:mod:`navi_contracts.fast_encode` write through :class:`PieceWriter`, so both produce the same bytes.
"""

from __future__ import annotations

import struct
from functools import lru_cache
from typing import Any

import msgpack
import numpy as np

from navi_contracts.codec_common import ArrayWriter, flat_bytes, wire_array

_BIN32 = struct.Struct(">BI")
INLINE_BYTES = 4096  # arrays this small go through the packer; a separate join piece costs more


class PieceWriter(ArrayWriter):
    """Collects msgpack framing and raw array buffers, then joins them once.

    Large arrays start at an 8-byte aligned offset of the payload: numpy's vectorised reductions
    (the range checks every receiver runs) are several times slower on unaligned views. The
    padding is made of valid, merely non-minimal msgpack headers (see :func:`aligned_header`).
    """

    def __init__(self) -> None:
        super().__init__()
        self._pieces: list[Any] = []
        self._offset = 0  # bytes in self._pieces

    def write_array(self, array: np.ndarray) -> None:
        contiguous = wire_array(array)
        flat = flat_bytes(contiguous)
        nbytes = len(flat)
        inline = self.add_array_header(contiguous, nbytes)
        if inline:
            self.framing += flat
            return
        self._pieces.append(self.framing)
        self._pieces.append(flat)
        self._offset += len(self.framing) + nbytes
        self.framing = bytearray()

    def add_array_header(self, array: np.ndarray, nbytes: int) -> bool:
        """Append the array map's header (data follows it); True when the data goes inline.

        Small arrays get the minimal header (their bytes are copied into the framing); large ones
        the header that puts their data 8-byte aligned, given the bytes written so far.
        """
        if nbytes < INLINE_BYTES:
            self.framing += small_array_header(array.dtype, array.shape, nbytes)
            return True
        misalignment = (self._offset + len(self.framing)) % ALIGN
        self.framing += aligned_header(array.dtype, array.shape, nbytes, misalignment)
        return False

    def finish(self) -> bytes:
        self._pieces.append(self.framing)
        return b"".join(self._pieces)


@lru_cache(maxsize=512)
def small_array_header(dtype: np.dtype[Any], shape: tuple[int, ...], nbytes: int) -> bytes:
    """Minimal ``{"dtype", "shape", "data": bin-header}`` for an inline array (data follows)."""
    packer = msgpack.Packer(use_bin_type=True)
    if nbytes < 0x100:
        bin_header = bytes((0xC4, nbytes))
    else:
        bin_header = struct.pack(">BH", 0xC5, nbytes) if nbytes < 0x10000 else _BIN32.pack(0xC6, nbytes)
    return b"".join(
        (
            packer.pack_map_header(3),
            packer.pack("dtype"),
            packer.pack(dtype.str),
            packer.pack("shape"),
            packer.pack(list(shape)),
            packer.pack("data"),
            bin_header,
        )
    )


ALIGN = 8
# Padding p (0..7) as (extra bytes in the dtype string header, shape array16 header, "data" key str8):
# fixstr/str8/str16/str32 headers add 0/1/2/4 bytes, array16 over fixarray adds 2, str8 over fixstr 1.
_PADDING = {0: (0, False, False), 1: (1, False, False), 2: (2, False, False), 3: (2, False, True),
            4: (4, False, False), 5: (4, False, True), 6: (4, True, False), 7: (4, True, True)}  # fmt: skip


def _str_header(extra: int, size: int) -> bytes:
    """A msgpack string header for ``size`` bytes, ``extra`` bytes longer than the minimal one."""
    if extra == 0:
        return bytes((0xA0 | size,))
    if extra == 1:
        return bytes((0xD9, size))
    return struct.pack(">BH", 0xDA, size) if extra == 2 else struct.pack(">BI", 0xDB, size)


@lru_cache(maxsize=512)  # a stream repeats a handful of (dtype, shape) pairs: build each header once
def aligned_header(dtype_: np.dtype[Any], shape: tuple[int, ...], nbytes: int, misalignment: int) -> bytes:
    """``{"dtype", "shape", "data": bin32-header}`` such that the data lands 8-byte aligned."""
    dtype = dtype_.str
    shape_items = b"".join(msgpack.packb(size) for size in shape)
    plain = 1 + 6 + 1 + len(dtype) + 6 + 1 + len(shape_items) + 5 + 5
    dtype_extra, shape16, key8 = _PADDING[-(misalignment + plain) % ALIGN]
    return b"".join(
        (
            b"\x83\xa5dtype",
            _str_header(dtype_extra, len(dtype)),
            dtype.encode(),
            b"\xa5shape",
            struct.pack(">BH", 0xDC, len(shape)) if shape16 else bytes((0x90 | len(shape),)),
            shape_items,
            b"\xd9\x04data" if key8 else b"\xa4data",
            _BIN32.pack(0xC6, nbytes),
        )
    )
