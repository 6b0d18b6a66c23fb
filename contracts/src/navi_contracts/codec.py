"""The wire codec: one small msgpack header frame plus one raw frame per array.

A message is the frames ``[header, array_0, array_1, ...]`` (after the topic frame on PUB/SUB), the
pattern of pyzmq's ``serialsocket`` example. The header is a msgpack map
``{"kind", "schema_version", <field>: <value>, ...}``: scalar fields as themselves, nested models as
nested maps of the same form, every array as ``{"dtype": "<f4", "shape": [4, 256, 48]}``. Arrays take
the frames after the header in the order the header lists them (depth first); their bytes are
little-endian and C order.

Nothing is copied: the encoder hands out read-only views of the model's arrays, the decoder wraps
each received frame with ``np.ndarray(shape, dtype, buffer=frame)`` (read-only arrays that keep the
frames alive). Untrusted input is checked before it is used: frame count and total size, header size
and msgpack container sizes, then per array its dtype, rank, element count and batch against the
limits and the frame's byte count against the shape, all before a single array exists. The model is
then built the normal way, so a decoded message passes exactly the validation (value ranges,
cross-field sizes) of one built in code. Any bad input raises
:class:`~navi_contracts.errors.ContractError`, and only that.

:func:`encode` / :func:`decode` carry the same frames as one buffer (recordings, replays):
``b"NAVI"``, the frame count (u32), each frame's length (u64), then the frames, each starting at an
8-byte aligned offset so numpy's checks run on aligned data.
"""

from __future__ import annotations

import math
import struct
import sys
from collections.abc import Iterator, Sequence
from functools import cache
from typing import Any, TypeVar, overload

import msgpack
import numpy as np
from pydantic import ValidationError

from navi_contracts.arrays import ArraySpec
from navi_contracts.errors import ContractError, format_validation_error
from navi_contracts.limits import ContractLimits
from navi_contracts.model_base import WireModel, array_specs, nested_models
from navi_contracts.models import MODELS_BY_KIND

M = TypeVar("M", bound=WireModel)
Frame = bytes | bytearray | memoryview

MAX_ARRAY_FRAMES = 64
"""More array frames than any model has; a message claiming more is refused before parsing."""
MAX_HEADER_BYTES = 1 << 20
"""The header holds no bulk data (a 1024-entry telemetry payload fits); capping it bounds the
Python objects a hostile header can make the unpacker create."""
ALLOWED_DTYPES = ("<f4", "<f8", "<i4", "<i8", "|b1", "|u1")
"""Every dtype a wire array may declare; anything else is refused before looking at the data."""

_ARRAY_KEYS = frozenset(("dtype", "shape"))
_MAGIC = b"NAVI"
_COUNT = struct.Struct("<4sI")  # magic, frame count
_BIG_ENDIAN_HOST = sys.byteorder == "big"
_maximum = np.maximum.reduce
_UINT8 = np.dtype(np.uint8)
# Errors a malformed but well-framed header can still provoke (a non-str key passed as a keyword,
# a number pydantic cannot take...); converted so callers only ever see ContractError.
_UNEXPECTED = (ValueError, TypeError, OverflowError, KeyError, IndexError, RecursionError)


@cache
def default_limits() -> ContractLimits:
    """The limits from the environment and ``.env``, read once per process."""
    return ContractLimits()


def encode_frames(model: WireModel, copy: bool = False) -> list[Frame]:
    """Serialise ``model`` as ``[header, array bytes...]``.

    Args:
        model: any wire model (already validated by construction).
        copy: return each array's bytes as a copy, so the caller may write into its arrays while
            the frames are still queued for sending. By default the frames are read-only views of
            the model's arrays (zero copy).

    Returns:
        Frame 0 is the msgpack header; frames 1.. hold the arrays.
    """
    cls = type(model)
    if not isinstance(model, WireModel) or not cls.WIRE_KIND:
        raise ContractError(f"can only encode wire models, got {cls.__name__}")
    frames: list[Frame] = [b""]
    header = _header(model, frames)
    try:
        frames[0] = msgpack.packb(header)
    except (TypeError, ValueError, OverflowError) as exc:  # e.g. an int past uint64
        raise ContractError(f"cannot encode {cls.__name__}: {exc}") from exc
    if copy:
        return [frames[0], *(bytes(view) for view in frames[1:])]
    return frames


@cache
def _field_roles(cls: type[WireModel]) -> dict[str, ArraySpec | type[WireModel]]:
    """Field name -> its ArraySpec or nested model class, for the array and nested-model fields of
    ``cls`` in declaration order; the other fields are scalars, sent as they are."""
    roles: dict[str, ArraySpec | type[WireModel]] = {**array_specs(cls), **nested_models(cls)}
    return {name: roles[name] for name in cls.model_fields if name in roles}


def _header(model: WireModel, frames: list[Frame]) -> dict[str, Any]:
    """The header map of ``model``; its arrays' bytes (C order, little-endian) go to ``frames``."""
    # Every field in declaration order (pydantic's __dict__ order, also _field_roles'), so the arrays
    # below take their frames in the order the header lists them.
    header: dict[str, Any] = {"kind": model.WIRE_KIND, **model.__dict__}
    for name, role in _field_roles(type(model)).items():
        value = header[name]
        if value is None:
            continue
        if type(role) is ArraySpec:
            data = value.data  # a memoryview of the array (also of a strided one)
            if data.c_contiguous and value.dtype == role.np_dtype and not _BIG_ENDIAN_HOST:
                dtype = role.wire_dtype  # the usual case: a validated array, sent as it is
            else:
                value = _wire_array(value)
                data, dtype = value.data, value.dtype.str
            header[name] = {"dtype": dtype, "shape": data.shape}  # msgpack packs tuples as arrays
            frames.append(data)
        else:
            header[name] = _header(value, frames)
    return header


def _wire_array(array: np.ndarray) -> np.ndarray:
    """A C-ordered little-endian copy of ``array`` (for strided or big-endian arrays only)."""
    return np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))


def encode(model: WireModel) -> bytes:
    """``model`` as one buffer (the frames of :func:`encode_frames`, joined; one copy of each array)."""
    return join_frames(encode_frames(model))


def join_frames(frames: Sequence[Frame]) -> bytes:
    """Join a message's frames into one buffer: magic, count, lengths, then 8-byte aligned frames."""
    lengths = [memoryview(frame).nbytes for frame in frames]
    parts: list[Frame] = [_COUNT.pack(_MAGIC, len(frames)), struct.pack(f"<{len(frames)}Q", *lengths)]
    for frame, length in zip(frames, lengths, strict=True):
        parts.append(frame)
        if length % 8:
            parts.append(bytes(8 - length % 8))
    return b"".join(parts)


def _byte_view(data: Any) -> memoryview:
    """``data`` as a flat byte memoryview (no copy); anything else is a ContractError."""
    if type(data) is memoryview and data.format == "B" and data.ndim == 1 and data.c_contiguous:
        return data  # the common case (a received ZeroMQ frame): nothing to convert
    try:
        view = memoryview(data)
    except TypeError:
        raise ContractError(f"expected bytes, bytearray or memoryview, got {type(data).__name__}") from None
    if not view.c_contiguous:
        raise ContractError("a frame must be a contiguous buffer")
    return view.cast("B") if view.nbytes else memoryview(b"")


def split_frames(data: Frame) -> list[memoryview]:
    """The frames inside a buffer made by :func:`encode` / :func:`join_frames` (views, no copy).

    Raises:
        ContractError: not such a buffer, truncated, or with bytes after the last frame.
    """
    view = _byte_view(data)
    if len(view) < _COUNT.size:
        raise ContractError(f"truncated message: {len(view)} bytes")
    magic, count = _COUNT.unpack_from(view)
    if magic != _MAGIC:
        raise ContractError(f"not a Navi message: starts with {bytes(view[:4])!r}, not {_MAGIC!r}")
    if not 1 <= count <= 1 + MAX_ARRAY_FRAMES:
        raise ContractError(f"expected 1 to {1 + MAX_ARRAY_FRAMES} frames, got {count}")
    start = _COUNT.size + 8 * count
    if len(view) < start:
        raise ContractError(f"truncated message: {len(view)} bytes cannot hold {count} frame lengths")
    frames = []
    for length in struct.unpack_from(f"<{count}Q", view, _COUNT.size):
        if start + length > len(view):
            raise ContractError(f"truncated message: a frame of {length} bytes runs past the end")
        frames.append(view[start : start + length])
        start += length + (-length % 8)
    if start != len(view):
        raise ContractError(f"{len(view) - start} trailing bytes after the last frame")
    return frames


@overload
def decode(data: Frame, expected: type[M], limits: ContractLimits | None = None) -> M: ...
@overload
def decode(data: Frame, expected: None = None, limits: ContractLimits | None = None) -> WireModel: ...
def decode(
    data: Frame, expected: type[WireModel] | None = None, limits: ContractLimits | None = None
) -> WireModel:
    """Decode a buffer made by :func:`encode` into a validated model (arrays view ``data``).

    Args:
        data: the untrusted bytes.
        expected: the model class required; any other kind is refused.
        limits: size limits; default: :func:`default_limits`.

    Returns:
        The model, validated exactly as on construction.

    Raises:
        ContractError: for anything malformed, and only this error.
    """
    limits = limits or default_limits()
    view = _byte_view(data)
    if len(view) > limits.max_message_bytes:
        raise ContractError(f"message of {len(view)} bytes exceeds the limit of {limits.max_message_bytes}")
    return decode_frames(split_frames(view), expected, limits)


@overload
def decode_frames(frames: Sequence[Frame], expected: type[M], limits: ContractLimits | None = None) -> M: ...
@overload
def decode_frames(
    frames: Sequence[Frame], expected: None = None, limits: ContractLimits | None = None
) -> WireModel: ...
def decode_frames(
    frames: Sequence[Frame], expected: type[WireModel] | None = None, limits: ContractLimits | None = None
) -> WireModel:
    """Decode ``[header, array bytes...]`` into a validated model (arrays are zero-copy views).

    Args:
        frames: the received frames (after the topic).
        expected: the model class required; any other kind is refused.
        limits: size limits; default: :func:`default_limits`.

    Returns:
        The model, validated exactly as on construction.

    Raises:
        ContractError: for anything malformed (also missing or unreferenced frames), and only this.
    """
    limits = limits or default_limits()
    if not 1 <= len(frames) <= 1 + MAX_ARRAY_FRAMES:
        raise ContractError(f"expected 1 to {1 + MAX_ARRAY_FRAMES} frames, got {len(frames)}")
    views = [  # _byte_view, its common case (a received ZeroMQ frame's buffer) inlined
        frame
        if type(frame) is memoryview and frame.format == "B" and frame.ndim == 1 and frame.c_contiguous
        else _byte_view(frame)
        for frame in frames
    ]
    total = sum(map(len, views))
    if total > limits.max_message_bytes:
        raise ContractError(f"message of {total} bytes exceeds the limit of {limits.max_message_bytes}")
    header = _unpack_header(views[0], limits)
    array_frames = iter(views[1:])
    try:
        cls = _model_class(header, expected)
        fields = _decode_fields(header, cls, limits, array_frames, cls.__name__)
        # The constructor's validation, entered directly (``cls(**fields)`` repacks the map twice, and
        # ``model_validate`` only forwards to this).
        model = cls.__pydantic_validator__.validate_python(fields)
    except ContractError:
        raise
    except ValidationError as exc:  # what the constructor would say: one line per problem
        raise ContractError(format_validation_error(cls.__name__, exc)) from None
    except _UNEXPECTED as exc:
        raise ContractError(f"undecodable message: {type(exc).__name__}: {exc}") from exc
    if next(array_frames, None) is not None:
        unused = 1 + len(list(array_frames))
        raise ContractError(f"{unused} array frames were not referenced by the header")
    return model


def _unpack_header(view: memoryview, limits: ContractLimits) -> Any:
    """The header frame as Python objects, parsed by the C unpacker within limits."""
    if len(view) > MAX_HEADER_BYTES:
        raise ContractError(f"header frame of {len(view)} bytes exceeds {MAX_HEADER_BYTES}")
    container = max(limits.max_payload_entries, 64)
    try:
        return msgpack.unpackb(
            view,
            use_list=False,  # tuples: numpy takes shapes as they are, and the GC soon stops tracking them
            max_bin_len=0,  # the header never carries binary data
            max_ext_len=0,
            max_str_len=limits.max_string_bytes,
            max_array_len=container,
            max_map_len=container,
        )
    except (ValueError, TypeError, RecursionError) as exc:  # msgpack's errors are ValueError subclasses
        raise ContractError(f"malformed header frame: {type(exc).__name__}: {exc}") from exc


def _type_name(value: Any) -> str:
    """A header value's type for messages; msgpack arrays are unpacked as tuples but named lists."""
    return "list" if type(value) is tuple else type(value).__name__


def _model_class(header: Any, expected: type[WireModel] | None) -> type[WireModel]:
    """The model class the header's ``kind`` names, checked against ``expected``."""
    if type(header) is not dict:
        raise ContractError(f"header must be a msgpack map, got {_type_name(header)}")
    kind = header.get("kind")
    cls = MODELS_BY_KIND.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ContractError(f"unknown message kind {kind!r} (known: {sorted(MODELS_BY_KIND)})")
    if expected is not None and cls is not expected:
        raise ContractError(f"expected kind {expected.WIRE_KIND!r}, got {kind!r}")
    return cls


def _decode_fields(
    raw: Any, cls: type[WireModel], limits: ContractLimits, frames: Iterator[memoryview], where: str
) -> dict[str, Any]:
    """``cls``'s fields from its header map: arrays wrap the next ``frames``, nested models stay maps.

    Nested maps are left for pydantic to build when the outer model is validated, so errors name
    their full path (``DistanceMatrix.poses.yaw: ...``) and each model's checks run once.
    """
    _check_kind(raw, cls, where)
    roles = _field_roles(cls)
    for name, value in raw.items():
        role = roles.get(name)
        if type(value) is bytes:
            raise ContractError(f"{where}.{name}: unexpected binary value")
        if value is None or role is None:
            continue  # a scalar, or an unknown field that the model will refuse
        if not isinstance(role, ArraySpec):
            raw[name] = _decode_fields(value, role, limits, frames, f"{where}.{name}")
            continue
        # An array: checks inline (they run for every array of every message), messages on failure.
        np_dtype, wire_dtype, rank, itemsize, batched, is_bool = role.wire_facts
        frame = next(frames, None)
        shape: Any = value.get("shape") if type(value) is dict else None
        described = type(shape) is tuple and len(value) == 2 and value.get("dtype") == wire_dtype
        if not described or len(shape) != rank:
            raise _array_error(f"{where}.{name}", value, role)
        count = 1
        for size in shape:
            if type(size) is not int or size < 0:
                raise _array_error(f"{where}.{name}", value, role)
            count *= size
        too_big = count > limits.max_array_elements or (batched and shape[0] > limits.max_batch)
        if too_big or frame is None or len(frame) != count * itemsize:
            raise _size_error(f"{where}.{name}", shape, role, limits, frame)
        array = np.ndarray(shape, np_dtype, frame)  # zero copy: a read-only view of the frame
        if is_bool and count and _maximum(array.view(_UINT8), None) > 1:
            raise ContractError(f"{where}.{name}: bool data must be bytes 0 or 1")
        raw[name] = array.byteswap() if _BIG_ENDIAN_HOST else array  # the wire is little-endian
    if len(raw.get("payload") or ()) > limits.max_payload_entries:
        raise ContractError(f"{where}.payload: more than {limits.max_payload_entries} entries")
    return raw


def _check_kind(raw: Any, cls: type[WireModel], where: str) -> None:
    """``raw`` must be a map of ``cls``'s kind and schema version (its ``kind`` is taken out)."""
    if type(raw) is not dict:
        raise ContractError(f"{where}: expected a {cls.WIRE_KIND} map, got {_type_name(raw)}")
    kind = raw.pop("kind", None)
    if kind != cls.WIRE_KIND:
        raise ContractError(f"{where}: expected kind {cls.WIRE_KIND!r}, got {kind!r}")
    version = raw.get("schema_version")
    if version != cls.SCHEMA_VERSION:
        raise ContractError(
            f"{where}: {cls.WIRE_KIND} schema_version mismatch: "
            f"expected {cls.SCHEMA_VERSION}, got {version!r}"
        )


def _array_error(field: str, raw: Any, spec: ArraySpec) -> ContractError:
    """Why an array description failed the checks of :func:`_decode_fields` (built on failure only)."""
    if type(raw) is not dict or raw.keys() != _ARRAY_KEYS:
        return ContractError(f"{field}: an array must be a map with keys dtype, shape")
    dtype, shape = raw["dtype"], raw["shape"]
    shape = list(shape) if type(shape) is tuple else shape  # shown as the msgpack array it was
    if dtype not in ALLOWED_DTYPES:
        return ContractError(f"{field}: dtype {dtype!r} is not allowed (allowed: {list(ALLOWED_DTYPES)})")
    if dtype != spec.wire_dtype:
        return ContractError(f"{field}: dtype must be {spec.np_dtype.name}, got {np.dtype(dtype).name}")
    if type(shape) is not list or len(shape) != len(spec.dims):
        return ContractError(
            f"{field}: expected {len(spec.dims)} dimensions {spec.dims}, got shape {shape!r}"
        )
    return ContractError(f"{field}: shape must hold non-negative ints, got {shape}")


def _size_error(
    field: str, shape: tuple[int, ...], spec: ArraySpec, limits: ContractLimits, frame: Any
) -> ContractError:
    """Which limit a valid shape breaks, or how its frame's length disagrees (on failure only)."""
    count = math.prod(shape)
    if count > limits.max_array_elements:
        return ContractError(
            f"{field}: shape {list(shape)} has {count} elements, limit is {limits.max_array_elements}"
        )
    if spec.dims[0] == "B" and shape[0] > limits.max_batch:
        return ContractError(f"{field}: batch {shape[0]} exceeds the limit of {limits.max_batch}")
    got = "no frame" if frame is None else f"{len(frame)} bytes"
    needs = f"{spec.np_dtype.name} needs {count * spec.np_dtype.itemsize}"
    return ContractError(f"{field}: frame has {got}, shape {list(shape)} of {needs}")
