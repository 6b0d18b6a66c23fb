"""msgpack codec for wire models, with zero-copy array decoding.

Wire format: one msgpack map ``{"kind", "schema_version", <fields>...}``; nested models are nested maps
of the same form; every numpy array is ``{"dtype": "<f4", "shape": [..], "data": bin}`` (little-endian,
C order).

Encoding copies each large array exactly once: the msgpack framing is produced in small pieces and
joined with the raw array buffers by one ``bytes.join``. Decoding copies nothing: :class:`MsgpackView`
hands out ``bin`` payloads as slices of the received buffer and ``np.frombuffer`` wraps them, so
decoded arrays are read-only and keep the buffer alive. The model walk and all validation are shared
with the multipart form in :mod:`navi_contracts.codec_frames`.
"""

from __future__ import annotations

import struct
from functools import lru_cache
from typing import Any, TypeVar, overload

import msgpack
import numpy as np

from navi_contracts import codec_template
from navi_contracts.codec_common import (
    UNEXPECTED_DECODE_ERRORS,
    ArrayWriter,
    as_byte_view,
    as_contract_error,
    decode_model,
    default_limits,
    flat_bytes,
    model_class_for,
    wire_array,
    write_model,
)
from navi_contracts.errors import ContractError
from navi_contracts.fast_arrays import inline_data
from navi_contracts.fast_build import FAST_PATH, fast_decode
from navi_contracts.model_base import WireModel
from navi_contracts.msgpack_view import MsgpackView
from navi_contracts.settings import ContractLimits

M = TypeVar("M", bound=WireModel)

_BIN32 = struct.Struct(">BI")
_INLINE_BYTES = 4096  # arrays this small go through the packer; a separate join piece costs more


class _PieceWriter(ArrayWriter):
    """Collects msgpack framing and raw array buffers, then joins them once.

    Large arrays start at an 8-byte aligned offset of the payload: numpy's vectorised reductions
    (the range checks every receiver runs) are several times slower on unaligned views. The
    padding is made of valid, merely non-minimal msgpack headers (see :func:`_aligned_header`).
    """

    def __init__(self) -> None:
        super().__init__()
        self._pieces: list[Any] = []
        self._offset = 0  # bytes in self._pieces

    def write_array(self, array: np.ndarray) -> None:
        contiguous = wire_array(array)
        flat = flat_bytes(contiguous)
        nbytes = len(flat)
        if nbytes < _INLINE_BYTES:
            self.framing += _small_array_header(contiguous.dtype, contiguous.shape, nbytes)
            self.framing += flat
            return
        framing = self.framing
        framing += _aligned_header(
            contiguous.dtype, contiguous.shape, nbytes, (self._offset + len(framing)) % _ALIGN
        )
        self._pieces.append(framing)
        self._pieces.append(flat)
        self._offset += len(framing) + nbytes
        self.framing = bytearray()

    def finish(self) -> bytes:
        self._pieces.append(self.framing)
        return b"".join(self._pieces)


@lru_cache(maxsize=512)
def _small_array_header(dtype: np.dtype[Any], shape: tuple[int, ...], nbytes: int) -> bytes:
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


_ALIGN = 8
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
def _aligned_header(dtype_: np.dtype[Any], shape: tuple[int, ...], nbytes: int, misalignment: int) -> bytes:
    """``{"dtype", "shape", "data": bin32-header}`` such that the data lands 8-byte aligned."""
    dtype = dtype_.str
    shape_items = b"".join(msgpack.packb(size) for size in shape)
    plain = 1 + 6 + 1 + len(dtype) + 6 + 1 + len(shape_items) + 5 + 5
    dtype_extra, shape16, key8 = _PADDING[-(misalignment + plain) % _ALIGN]
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


def encode(model: WireModel) -> bytes:
    """Serialise a wire model to msgpack bytes.

    Args:
        model: any :class:`WireModel` instance (already validated by construction).

    Returns:
        The payload bytes (one copy of each array's data).
    """
    writer = _PieceWriter()
    write_model(writer, model)
    return writer.finish()


_INLINE_KEYS = frozenset(("dtype", "shape", "data"))


def _inline_data(where: str, name: str, raw: dict[str, Any]) -> Any:
    if raw.keys() != _INLINE_KEYS:
        raise ContractError(f"{where}.{name}: an array must be a map with keys dtype, shape, data")
    data = raw["data"]
    if type(data) is not memoryview:
        raise ContractError(f"{where}.{name}: data must be msgpack bin")
    return data


@overload
def decode(
    data: bytes | bytearray | memoryview, expected: type[M], limits: ContractLimits | None = None
) -> M: ...
@overload
def decode(
    data: bytes | bytearray | memoryview, expected: None = None, limits: ContractLimits | None = None
) -> WireModel: ...
def decode(
    data: bytes | bytearray | memoryview,
    expected: type[WireModel] | None = None,
    limits: ContractLimits | None = None,
) -> WireModel:
    """Decode untrusted bytes into a validated wire model.

    Args:
        data: the payload. Decoded arrays are read-only views into it (zero copy).
        expected: the model class the caller needs; any other kind is refused.
        limits: size limits; default: :func:`default_limits`.

    Returns:
        The model, validated exactly as on construction.

    Raises:
        ContractError: for any malformed, truncated, oversized, wrongly typed, wrong-shape,
            wrong-kind or wrong-version payload (and only this error).
    """
    limits = limits or default_limits()
    view = as_byte_view(data)
    if len(view) > limits.max_message_bytes:
        raise ContractError(f"message of {len(view)} bytes exceeds the limit of {limits.max_message_bytes}")
    try:
        raw = codec_template.parse(view, limits) if FAST_PATH.enabled else None
        learn = raw is None
        if learn:
            reader = MsgpackView(
                view, max_container=max(limits.max_payload_entries, 64), max_str_bytes=limits.max_string_bytes
            )
            raw = reader.read_all()
        cls = model_class_for(raw, expected)
        model = fast_decode(cls, raw, limits, inline_data)
        if model is None:
            return decode_model(raw, cls, limits, cls.__name__, _inline_data)
        if learn:  # a layout the fast path accepts: later payloads like it skip the walk
            codec_template.learn(view, limits)
        return model
    except ContractError:
        raise
    except UNEXPECTED_DECODE_ERRORS as exc:
        raise as_contract_error(exc) from exc
