"""The model walk shared by both wire layouts (single msgpack payload, multipart frames).

Both layouts write the same map of fields; they differ only in where an array's bytes live (inline
``data: bin`` or a separate frame). Writers implement :class:`ArrayWriter`; decoders pass a function
that finds an array's bytes. Everything else, including every check on untrusted input, is here once.
"""

from __future__ import annotations

import struct
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable
from functools import cache
from typing import Any, TypeVar

import msgpack
import numpy as np

from navi_contracts.arrays import ArraySpec
from navi_contracts.errors import ContractError
from navi_contracts.model_base import WireModel, array_specs, nested_models
from navi_contracts.models import MODELS_BY_KIND
from navi_contracts.settings import ContractLimits

M = TypeVar("M", bound=WireModel)

ALLOWED_DTYPES: dict[str, np.dtype[Any]] = {
    name: np.dtype(name) for name in ("<f4", "<f8", "<i4", "<i8", "|b1", "|u1")
}
"""Every dtype a wire array may declare; anything else is refused before looking at the data."""

MAX_RANK = 8
UNEXPECTED_DECODE_ERRORS = (ValueError, TypeError, OverflowError, KeyError, IndexError, RecursionError)
"""Errors a bug in the decoder could leak; they are converted so callers only see ContractError."""

DataSource = Callable[[str, str, dict[str, Any]], Any]
"""(model path, field name, array map) -> the buffer holding the array's bytes."""

_LITTLE_ENDIAN_HOST = sys.byteorder == "little"


@cache
def default_limits() -> ContractLimits:
    """The limits from the environment and ``.env``, read once per process."""
    return ContractLimits()


def as_contract_error(exc: BaseException) -> ContractError:
    """Wrap an unexpected decoder exception: a decoder of untrusted bytes has one error type."""
    return ContractError(f"undecodable message: {type(exc).__name__}: {exc}")


def as_byte_view(data: Any) -> memoryview:
    """``data`` as a flat byte memoryview (no copy); anything else is a ContractError."""
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


# --------------------------------------------------------------------------- encoding


class ArrayWriter(ABC):
    """Collects msgpack framing bytes; subclasses decide where array bytes go.

    Framing is appended to ``framing`` (a bytearray: appending is cheaper than packer calls) with
    per-class precomputed keys; only scalar values go through the C packer (``pack``).
    """

    framing: bytearray
    pack: Callable[[Any], bytes]

    def __init__(self) -> None:
        self.framing = bytearray()
        self.pack = msgpack.Packer(use_bin_type=True).pack

    @abstractmethod
    def write_array(self, array: np.ndarray) -> None:
        """Write the map describing ``array`` (and place its bytes)."""

    def write_number(self, type_byte: bytes, packed: bytes) -> None:
        """Write a scalar field's int64 or float64 (``type_byte`` then its 8 big-endian bytes)."""
        self.framing += type_byte
        self.framing += packed


def wire_array(array: np.ndarray) -> np.ndarray:
    """``array`` as C-contiguous little-endian data (no copy when it already is)."""
    if array.flags.c_contiguous and (
        array.dtype.byteorder in "<|" or (_LITTLE_ENDIAN_HOST and array.dtype.isnative)
    ):
        return array
    return np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))


def flat_bytes(array: np.ndarray) -> memoryview:
    """A C-contiguous array's bytes as a flat byte view (no copy). [...] -> [n bytes]."""
    if array.size:
        return array.data.cast("B")
    return memoryview(b"")  # memoryview.cast refuses zeros in the shape


_SCALAR, _ARRAY, _NESTED = 0, 1, 2
INT64_LIMIT = 1 << 63
PACK_INT64 = struct.Struct(">q").pack
PACK_FLOAT64 = struct.Struct(">d").pack


@cache
def _encode_plan(cls: type[WireModel]) -> tuple[bytes, tuple[tuple[bytes, str, int], ...]]:
    """(map header + kind entry, ((packed key, field name, role), ...)) for ``cls``, built once."""
    packer = msgpack.Packer(use_bin_type=True)
    fields = cls.model_fields
    prefix = packer.pack_map_header(1 + len(fields)) + packer.pack("kind") + packer.pack(cls.WIRE_KIND)
    specs, nested = array_specs(cls), nested_models(cls)
    plan = tuple(
        (packer.pack(name), name, _ARRAY if name in specs else _NESTED if name in nested else _SCALAR)
        for name in fields
    )
    return prefix, plan


def write_model(writer: ArrayWriter, model: WireModel) -> None:
    """Write ``model`` as ``{"kind", <fields>...}``, recursing into nested models.

    Scalar int and float fields always take 9 bytes (msgpack int64 / float64), whatever the value:
    a stream's layout then never changes with its counters, which keeps the decoder's layout
    templates and the encoder's layout plans valid for the whole stream.
    """
    cls = type(model)
    if not isinstance(model, WireModel) or not cls.WIRE_KIND:
        raise ContractError(f"can only encode wire models, got {cls.__name__}")
    prefix, plan = _encode_plan(cls)
    writer.framing += prefix
    values = model.__dict__
    for key, name, role in plan:
        value = values[name]
        writer.framing += key  # re-read each time: write_array may start a new framing buffer
        if value is None:
            writer.framing += b"\xc0"
        elif role == _ARRAY:
            writer.write_array(value)
        elif role == _NESTED:
            write_model(writer, value)
        elif type(value) is int and -INT64_LIMIT <= value < INT64_LIMIT:
            writer.write_number(b"\xd3", PACK_INT64(value))
        elif type(value) is float:
            writer.write_number(b"\xcb", PACK_FLOAT64(value))
        else:
            writer.framing += writer.pack(value)


# --------------------------------------------------------------------------- decoding


def model_class_for(raw: Any, expected: type[WireModel] | None) -> type[WireModel]:
    """The model class named by a decoded top-level map's ``kind``, checked against ``expected``."""
    if not isinstance(raw, dict):
        raise ContractError(f"message must be a msgpack map, got {type(raw).__name__}")
    kind = raw.get("kind")
    cls = MODELS_BY_KIND.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ContractError(f"unknown message kind {kind!r} (known: {sorted(MODELS_BY_KIND)})")
    if expected is not None and cls is not expected:
        raise ContractError(f"expected kind {expected.WIRE_KIND!r}, got {kind!r}")
    return cls


def _array_error(where: str, name: str, raw: dict[str, Any], spec: ArraySpec) -> ContractError:
    """The precise reason an array map failed the fast checks (only built on failure)."""
    field = f"{where}.{name}"
    dtype = ALLOWED_DTYPES.get(raw["dtype"]) if isinstance(raw["dtype"], str) else None
    if dtype is None:
        return ContractError(
            f"{field}: dtype {raw['dtype']!r} is not allowed (allowed: {sorted(ALLOWED_DTYPES)})"
        )
    if dtype != spec.np_dtype:
        return ContractError(f"{field}: dtype must be {spec.np_dtype.name}, got {dtype.name}")
    shape = raw["shape"]
    if not isinstance(shape, list) or len(shape) > MAX_RANK:
        return ContractError(f"{field}: shape must be a list of at most {MAX_RANK} ints")
    if not all(type(size) is int and size >= 0 for size in shape):
        return ContractError(f"{field}: shape must hold non-negative ints, got {shape}")
    return ContractError(f"{field}: expected {len(spec.dims)} dimensions {spec.dims}, got shape {shape}")


def decode_array(
    where: str, name: str, raw: Any, spec: ArraySpec, *, limits: ContractLimits, data_source: DataSource
) -> np.ndarray:
    """Validate an array map and wrap its bytes without copying.

    The success path avoids building strings and helper calls: it runs for every array of every
    message. Error messages are composed only when a check fails.

    Args:
        where: path of the owning model, for error messages.
        name: the field name.
        raw: the decoded array map.
        spec: what the field requires.
        limits: size limits.
        data_source: finds the bytes (inline bin or a frame).

    Returns:
        A read-only array of ``spec``'s dtype viewing the received bytes.
    """
    if type(raw) is not dict:
        raise ContractError(f"{where}.{name}: an array must be a map with keys dtype, shape, data")
    data = data_source(where, name, raw)
    shape = raw["shape"]
    if raw["dtype"] != spec.wire_dtype or type(shape) is not list or len(shape) != len(spec.dims):
        raise _array_error(where, name, raw, spec)
    count = 1
    for size in shape:
        if type(size) is not int or size < 0:
            raise ContractError(f"{where}.{name}: shape must hold non-negative ints, got {shape}")
        count *= size
    if count > limits.max_array_elements:
        raise ContractError(
            f"{where}.{name}: shape {shape} has {count} elements, limit is {limits.max_array_elements}"
        )
    if spec.dims[0] == "B" and shape[0] > limits.max_batch:
        raise ContractError(f"{where}.{name}: batch {shape[0]} exceeds the limit of {limits.max_batch}")
    dtype = spec.np_dtype
    if len(data) != count * dtype.itemsize:
        raise ContractError(
            f"{where}.{name}: data has {len(data)} bytes, shape {shape} of {dtype.name} "
            f"needs {count * dtype.itemsize}"
        )
    # Zero copy: a read-only view of the received buffer. [n bytes] -> shape.
    array = np.frombuffer(data, dtype=dtype, count=count)
    if dtype.kind == "b" and count and _maximum(array.view(np.uint8), axis=None) > 1:
        raise ContractError(f"{where}.{name}: bool data must be bytes 0 or 1")
    return array.reshape(shape)


_maximum = np.maximum.reduce


def decode_model(raw: Any, cls: type[M], limits: ContractLimits, where: str, data_source: DataSource) -> M:
    """Turn a decoded field map into a validated model.

    Args:
        raw: the decoded map (consumed).
        cls: the model class (kind and schema version are checked against it).
        limits: size limits.
        where: path for error messages, e.g. ``StepResult.observation``.
        data_source: finds array bytes.

    Returns:
        The model, validated exactly as on construction.
    """
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
            raw[name] = decode_array(where, name, value, specs[name], limits=limits, data_source=data_source)
        elif name in nested:
            raw[name] = decode_model(value, nested[name], limits, f"{where}.{name}", data_source)
        elif isinstance(value, memoryview | bytes):
            raise ContractError(f"{where}.{name}: unexpected binary value")
    if len(raw.get("payload") or ()) > limits.max_payload_entries:
        raise ContractError(f"{where}.payload: more than {limits.max_payload_entries} entries")
    return cls(**raw)
