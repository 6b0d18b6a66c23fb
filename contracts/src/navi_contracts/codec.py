"""msgpack codec for wire models, with zero-copy array decoding.

Wire format: one msgpack map ``{"kind", "schema_version", <fields>...}``; nested models are nested maps
of the same form; every numpy array is ``{"dtype": "<f4", "shape": [..], "data": bin}`` (little-endian,
C order).

Encoding copies each array exactly once: the msgpack framing is produced in small pieces and joined
with the raw array buffers by one ``bytes.join``. Decoding copies nothing: :class:`MsgpackView` hands
out ``bin`` payloads as slices of the received buffer and ``np.frombuffer`` wraps them, so decoded
arrays are read-only and keep the buffer alive.
"""

from __future__ import annotations

import math
import struct
from functools import cache
from typing import Any, TypeVar, overload

import msgpack
import numpy as np

from navi_contracts.arrays import ArraySpec
from navi_contracts.errors import ContractError
from navi_contracts.model_base import WireModel, array_specs, nested_models
from navi_contracts.models import MODELS_BY_KIND
from navi_contracts.msgpack_view import MsgpackView
from navi_contracts.settings import ContractLimits

M = TypeVar("M", bound=WireModel)

ALLOWED_DTYPES: dict[str, np.dtype[Any]] = {
    name: np.dtype(name) for name in ("<f4", "<f8", "<i4", "<i8", "|b1", "|u1")
}
"""Every dtype a wire array may declare; anything else is refused before looking at the data."""

_ARRAY_KEYS = frozenset(("dtype", "shape", "data"))
_MAX_RANK = 8
_BIN32 = struct.Struct(">BI")


@cache
def default_limits() -> ContractLimits:
    """The limits from the environment and ``.env``, read once per process."""
    return ContractLimits()


# --------------------------------------------------------------------------- encoding


class _PieceWriter:
    """Collects msgpack framing from a Packer and raw array buffers, then joins them once."""

    def __init__(self) -> None:
        self.packer = msgpack.Packer(autoreset=False, use_bin_type=True)
        self._pieces: list[Any] = []

    def raw_bin(self, data: memoryview) -> None:
        self._flush()
        self._pieces.append(_BIN32.pack(0xC6, len(data)))
        self._pieces.append(data)

    def _flush(self) -> None:
        self._pieces.append(self.packer.bytes())
        self.packer.reset()

    def finish(self) -> bytes:
        self._flush()
        return b"".join(self._pieces)


def _write_array(writer: _PieceWriter, array: np.ndarray) -> None:
    wire_dtype = array.dtype.newbyteorder("<")
    contiguous = np.ascontiguousarray(array, dtype=wire_dtype)
    packer = writer.packer
    packer.pack_map_header(3)
    packer.pack("dtype")
    packer.pack(wire_dtype.str)
    packer.pack("shape")
    packer.pack(list(contiguous.shape))
    packer.pack("data")
    # [...] -> [n bytes]: a flat byte view so bytes.join can copy it directly.
    writer.raw_bin(contiguous.reshape(-1).view(np.uint8).data)


def _write_model(writer: _PieceWriter, model: WireModel) -> None:
    cls = type(model)
    specs, nested = array_specs(cls), nested_models(cls)
    packer = writer.packer
    packer.pack_map_header(1 + len(cls.model_fields))
    packer.pack("kind")
    packer.pack(cls.WIRE_KIND)
    for name in cls.model_fields:
        value = getattr(model, name)
        packer.pack(name)
        if value is None:
            packer.pack(None)
        elif name in specs:
            _write_array(writer, value)
        elif name in nested:
            _write_model(writer, value)
        else:
            packer.pack(value)


def encode(model: WireModel) -> bytes:
    """Serialise a wire model to msgpack bytes.

    Args:
        model: any :class:`WireModel` instance (already validated by construction).

    Returns:
        The payload bytes (one copy of each array's data).
    """
    if not isinstance(model, WireModel) or not type(model).WIRE_KIND:
        raise ContractError(f"can only encode wire models, got {type(model).__name__}")
    writer = _PieceWriter()
    _write_model(writer, model)
    return writer.finish()


# --------------------------------------------------------------------------- decoding


def _as_byte_view(data: Any) -> memoryview:
    if not isinstance(data, bytes | bytearray | memoryview):
        raise ContractError(f"expected bytes, bytearray or memoryview, got {type(data).__name__}")
    view = memoryview(data)
    if view.ndim != 1 or view.itemsize != 1:
        if not view.c_contiguous:
            raise ContractError("payload buffer must be contiguous")
        view = view.cast("B")
    elif view.format != "B":
        view = view.cast("B")
    return view


def _decode_shape(field: str, raw: Any, spec: ArraySpec, limits: ContractLimits) -> tuple[int, ...]:
    if not isinstance(raw, list) or len(raw) > _MAX_RANK:
        raise ContractError(f"{field}: shape must be a list of at most {_MAX_RANK} ints")
    if not all(type(size) is int and size >= 0 for size in raw):
        raise ContractError(f"{field}: shape must hold non-negative ints, got {raw}")
    if len(raw) != len(spec.dims):
        raise ContractError(f"{field}: expected {len(spec.dims)} dimensions {spec.dims}, got shape {raw}")
    count = math.prod(raw)
    if count > limits.max_array_elements:
        raise ContractError(
            f"{field}: shape {raw} has {count} elements, limit is {limits.max_array_elements}"
        )
    if spec.dims and spec.dims[0] == "B" and raw[0] > limits.max_batch:
        raise ContractError(f"{field}: batch {raw[0]} exceeds the limit of {limits.max_batch}")
    return tuple(raw)


def _decode_array(field: str, raw: Any, spec: ArraySpec, limits: ContractLimits) -> np.ndarray:
    if not isinstance(raw, dict) or raw.keys() != _ARRAY_KEYS:
        raise ContractError(f"{field}: an array must be a map with keys dtype, shape, data")
    dtype = ALLOWED_DTYPES.get(raw["dtype"]) if isinstance(raw["dtype"], str) else None
    if dtype is None:
        raise ContractError(
            f"{field}: dtype {raw['dtype']!r} is not allowed (allowed: {sorted(ALLOWED_DTYPES)})"
        )
    if dtype != spec.np_dtype:
        raise ContractError(f"{field}: dtype must be {spec.np_dtype.name}, got {dtype.name}")
    shape = _decode_shape(field, raw["shape"], spec, limits)
    data = raw["data"]
    if not isinstance(data, memoryview):
        raise ContractError(f"{field}: data must be msgpack bin")
    count = math.prod(shape)
    if len(data) != count * dtype.itemsize:
        raise ContractError(
            f"{field}: data has {len(data)} bytes, shape {list(shape)} of {dtype.name} "
            f"needs {count * dtype.itemsize}"
        )
    if dtype == np.bool_ and count and np.frombuffer(data, dtype=np.uint8).max() > 1:
        raise ContractError(f"{field}: bool data must be bytes 0 or 1")
    # Zero copy: a read-only view of the received buffer. [n bytes] -> shape.
    return np.frombuffer(data, dtype=dtype, count=count).reshape(shape)


def _decode_model(raw: Any, cls: type[M], limits: ContractLimits, where: str) -> M:
    if not isinstance(raw, dict):
        raise ContractError(f"{where}: expected a {cls.WIRE_KIND} map, got {type(raw).__name__}")
    kind = raw.pop("kind", None)
    if kind != cls.WIRE_KIND:
        raise ContractError(f"{where}: expected kind {cls.WIRE_KIND!r}, got {kind!r}")
    version = raw.get("schema_version")
    if version != cls.SCHEMA_VERSION:
        raise ContractError(
            f"{where}: {cls.WIRE_KIND} schema_version mismatch: "
            f"expected {cls.SCHEMA_VERSION}, got {version!r}"
        )
    specs, nested = array_specs(cls), nested_models(cls)
    for name, value in raw.items():
        if value is None:
            continue
        if name in specs:
            raw[name] = _decode_array(f"{where}.{name}", value, specs[name], limits)
        elif name in nested:
            raw[name] = _decode_model(value, nested[name], limits, f"{where}.{name}")
        elif isinstance(value, memoryview):
            raise ContractError(f"{where}.{name}: unexpected binary value")
    if len(raw.get("payload") or ()) > limits.max_payload_entries:
        raise ContractError(f"{where}.payload: more than {limits.max_payload_entries} entries")
    return cls(**raw)


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
    reader = MsgpackView(
        view, max_container=max(limits.max_payload_entries, 64), max_str_bytes=limits.max_string_bytes
    )
    try:
        raw = reader.read_all()
        if not isinstance(raw, dict):
            raise ContractError(f"message must be a msgpack map, got {type(raw).__name__}")
        kind = raw.get("kind")
        cls = MODELS_BY_KIND.get(kind) if isinstance(kind, str) else None
        if cls is None:
            raise ContractError(f"unknown message kind {kind!r} (known: {sorted(MODELS_BY_KIND)})")
        if expected is not None and cls is not expected:
            raise ContractError(f"expected kind {expected.WIRE_KIND!r}, got {kind!r}")
        return _decode_model(raw, cls, limits, cls.__name__)
    except ContractError:
        raise
    except (ValueError, TypeError, OverflowError, KeyError, IndexError, RecursionError) as exc:
        # Safety net: a decoder of untrusted bytes must fail with its one error type.
        raise ContractError(f"undecodable message: {type(exc).__name__}: {exc}") from exc
