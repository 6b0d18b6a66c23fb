"""Multipart form of the codec: one msgpack metadata frame plus one raw frame per array.

Same fields, kinds, versions and checks as :mod:`navi_contracts.codec`; the only difference is that
an array map is ``{"dtype", "shape", "frame": i}`` and its bytes are frame ``1 + i``. This avoids the
one copy the single-payload encoder makes (ZeroMQ can send the array buffers with ``copy=False``) and
lets the metadata be parsed by the C msgpack unpacker. Use it where the peer speaks it; the default
wire format of the socket helpers remains the single payload.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any, TypeVar, overload

import msgpack
import numpy as np

from navi_contracts.codec import decode, encode
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
from navi_contracts.fast_arrays import FrameClaims
from navi_contracts.fast_build import fast_decode
from navi_contracts.model_base import WireModel
from navi_contracts.settings import ContractLimits

M = TypeVar("M", bound=WireModel)

MAX_ARRAY_FRAMES = 64
"""More array frames than any model has; a message claiming more is refused before parsing."""
MAX_METADATA_BYTES = 1 << 20
"""Metadata holds no bulk data; capping it bounds the Python objects a hostile frame can create."""

Frame = bytes | bytearray | memoryview
_FRAME_KEYS = frozenset(("dtype", "shape", "frame"))


class _FrameWriter(ArrayWriter):
    def __init__(self) -> None:
        super().__init__()
        self.buffers: list[memoryview] = []

    def write_array(self, array: np.ndarray) -> None:
        contiguous = wire_array(array)
        self.framing += _frame_array_header(contiguous.dtype, contiguous.shape, len(self.buffers))
        self.buffers.append(flat_bytes(contiguous))  # no copy


@lru_cache(maxsize=512)
def _frame_array_header(dtype: np.dtype[Any], shape: tuple[int, ...], index: int) -> bytes:
    """``{"dtype", "shape", "frame": index}``, packed once per distinct triple."""
    return msgpack.packb({"dtype": dtype.str, "shape": list(shape), "frame": index})  # type: ignore[no-any-return]


def encode_frames(model: WireModel) -> list[Frame]:
    """Serialise ``model`` as ``[metadata, array bytes...]`` without copying array data.

    Args:
        model: any wire model.

    Returns:
        Frame 0 is msgpack metadata; frames 1.. are read-only views of the model's arrays.
    """
    writer = _FrameWriter()
    write_model(writer, model)
    return [bytes(writer.framing), *writer.buffers]


class _FrameSource:
    """Hands out array frames by index, each at most once."""

    def __init__(self, frames: list[memoryview]) -> None:
        self.frames = frames
        self.used: set[int] = set()

    def __call__(self, where: str, name: str, raw: dict[str, Any]) -> memoryview:
        if raw.keys() != _FRAME_KEYS:
            raise ContractError(f"{where}.{name}: an array must be a map with keys dtype, shape, frame")
        index = raw["frame"]
        if type(index) is not int or not 0 <= index < len(self.frames) or index in self.used:
            raise ContractError(f"{where}.{name}: frame index {index!r} is invalid or already used")
        self.used.add(index)
        return self.frames[index]


@overload
def decode_frames(frames: Sequence[Frame], expected: type[M], limits: ContractLimits | None = None) -> M: ...
@overload
def decode_frames(
    frames: Sequence[Frame], expected: None = None, limits: ContractLimits | None = None
) -> WireModel: ...
def decode_frames(
    frames: Sequence[Frame], expected: type[WireModel] | None = None, limits: ContractLimits | None = None
) -> WireModel:
    """Decode ``[metadata, array bytes...]`` into a validated model (arrays are zero-copy views).

    Args:
        frames: the received frames.
        expected: the model class required; any other kind is refused.
        limits: size limits; default: :func:`navi_contracts.codec.default_limits`.

    Returns:
        The model.

    Raises:
        ContractError: for anything malformed (also unused or reused frames), and only this error.
    """
    limits = limits or default_limits()
    if not 1 <= len(frames) <= 1 + MAX_ARRAY_FRAMES:
        raise ContractError(f"expected 1 to {1 + MAX_ARRAY_FRAMES} frames, got {len(frames)}")
    views = [as_byte_view(frame) for frame in frames]
    total = sum(len(view) for view in views)
    if total > limits.max_message_bytes:
        raise ContractError(f"message of {total} bytes exceeds the limit of {limits.max_message_bytes}")
    if len(views[0]) > MAX_METADATA_BYTES:
        raise ContractError(f"metadata frame of {len(views[0])} bytes exceeds {MAX_METADATA_BYTES}")
    container = max(limits.max_payload_entries, 64)
    try:
        raw = msgpack.unpackb(
            views[0],
            raw=False,
            max_bin_len=0,  # metadata never carries binary data
            max_ext_len=0,
            max_str_len=limits.max_string_bytes,
            max_array_len=container,
            max_map_len=container,
        )
    except (ValueError, TypeError, RecursionError) as exc:  # msgpack's errors are ValueError subclasses
        raise ContractError(f"malformed metadata frame: {type(exc).__name__}: {exc}") from exc
    try:
        cls = model_class_for(raw, expected)
        claims = FrameClaims(views[1:])
        fast = fast_decode(cls, raw, limits, claims)
        if fast is not None and len(claims.used) == len(views) - 1:
            return fast
        source = _FrameSource(views[1:])
        model = decode_model(raw, cls, limits, cls.__name__, source)
    except ContractError:
        raise
    except UNEXPECTED_DECODE_ERRORS as exc:
        raise as_contract_error(exc) from exc
    if len(source.used) != len(views) - 1:
        raise ContractError(f"{len(views) - 1 - len(source.used)} array frames were not referenced")
    return model


def encode_message(model: WireModel, multipart: bool) -> list[Frame]:
    """The frames that carry ``model`` after the topic: ``[payload]`` or ``[metadata, arrays...]``.

    Args:
        model: any wire model.
        multipart: use the zero-copy multipart form.

    Returns:
        The message frames.
    """
    return encode_frames(model) if multipart else [encode(model)]


def decode_message(
    frames: Sequence[Frame], expected: type[WireModel] | None = None, limits: ContractLimits | None = None
) -> WireModel:
    """Decode either form: one frame is a single payload, more frames are the multipart form.

    A model without arrays encodes to the same single frame in both forms, so the frame count
    alone tells them apart.

    Args:
        frames: the frames after the topic (for PUB/SUB) or the whole message (REQ/REP).
        expected: the model class required.
        limits: size limits.

    Returns:
        The model.

    Raises:
        ContractError: for anything malformed.
    """
    if len(frames) == 1:
        return decode(frames[0], expected=expected, limits=limits)
    return decode_frames(frames, expected=expected, limits=limits)
