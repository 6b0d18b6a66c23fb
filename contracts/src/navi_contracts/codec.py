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
from typing import Any, TypeVar, overload

import msgpack
import numpy as np

from navi_contracts.codec_common import (
    UNEXPECTED_DECODE_ERRORS,
    ArrayWriter,
    as_contract_error,
    decode_model,
    default_limits,
    model_class_for,
    wire_array,
    write_model,
)
from navi_contracts.errors import ContractError
from navi_contracts.model_base import WireModel
from navi_contracts.msgpack_view import MsgpackView
from navi_contracts.settings import ContractLimits

M = TypeVar("M", bound=WireModel)

_BIN32 = struct.Struct(">BI")
_INLINE_BYTES = 4096  # arrays this small go through the packer; a separate join piece costs more


class _PieceWriter(ArrayWriter):
    """Collects msgpack framing from a Packer and raw array buffers, then joins them once."""

    def __init__(self) -> None:
        self.packer = msgpack.Packer(autoreset=False, use_bin_type=True)
        self._pieces: list[Any] = []

    def write_array(self, array: np.ndarray) -> None:
        contiguous = wire_array(array)
        packer = self.packer
        packer.pack_map_header(3)
        packer.pack("dtype")
        packer.pack(contiguous.dtype.str)
        packer.pack("shape")
        packer.pack(list(contiguous.shape))
        packer.pack("data")
        # [...] -> [n bytes]: a flat byte view that the packer or bytes.join copies directly.
        flat = contiguous.reshape(-1).view(np.uint8).data
        if len(flat) < _INLINE_BYTES:
            packer.pack(flat)
            return
        self._pieces.append(packer.bytes())
        packer.reset()
        self._pieces.append(_BIN32.pack(0xC6, len(flat)))
        self._pieces.append(flat)

    def finish(self) -> bytes:
        self._pieces.append(self.packer.bytes())
        return b"".join(self._pieces)


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


def _as_byte_view(data: Any) -> memoryview:
    if type(data) is memoryview and data.format == "B" and data.ndim == 1:
        return data  # the common case (a received ZeroMQ frame): nothing to convert
    if not isinstance(data, bytes | bytearray | memoryview):
        raise ContractError(f"expected bytes, bytearray or memoryview, got {type(data).__name__}")
    view = memoryview(data)
    if view.format != "B" or view.ndim != 1:
        if not view.c_contiguous:
            raise ContractError("payload buffer must be contiguous")
        view = view.cast("B")
    return view


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
    view = _as_byte_view(data)
    if len(view) > limits.max_message_bytes:
        raise ContractError(f"message of {len(view)} bytes exceeds the limit of {limits.max_message_bytes}")
    try:
        reader = MsgpackView(
            view, max_container=max(limits.max_payload_entries, 64), max_str_bytes=limits.max_string_bytes
        )
        raw = reader.read_all()
        cls = model_class_for(raw, expected)
        return decode_model(raw, cls, limits, cls.__name__, _inline_data)
    except ContractError:
        raise
    except UNEXPECTED_DECODE_ERRORS as exc:
        raise as_contract_error(exc) from exc
