"""Fused array decoding for the codec's fast path: the codec's array checks plus ``ArraySpec.validate``.

The slow path decodes an array map in :func:`~navi_contracts.codec_common.decode_array` and pydantic
then runs :meth:`ArraySpec.validate` on the result. Both run for every array of every message, so
the fast path fuses them into one closure per spec with the per-spec facts bound once. Nothing is
reported here: any failed check raises and the caller lets the slow path decide and word the error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from navi_contracts.arrays import ArraySpec
from navi_contracts.settings import ContractLimits

DataGetter = Callable[[dict[str, Any]], Any]
"""Array map -> the buffer holding its bytes (inline ``data`` bin or a claimed frame)."""

ArrayDecoder = Callable[[Any, ContractLimits, DataGetter], np.ndarray]

_ndarray = np.ndarray
_maximum = np.maximum.reduce
_UINT8 = np.dtype(np.uint8)


class SlowPathNeededError(Exception):
    """The fast path cannot accept this input; the slow path decides (and words any error)."""


def inline_data(value: dict[str, Any]) -> Any:
    """The ``data`` bin of a single-payload array map ``{"dtype", "shape", "data"}``."""
    data = value["data"]
    if len(value) != 3 or type(data) is not memoryview:  # "dtype" and "shape" were already read
        raise SlowPathNeededError
    return data


class FrameClaims:
    """Hands out multipart array frames by index, each at most once (as the slow path's source)."""

    __slots__ = ("frames", "used")

    def __init__(self, frames: list[memoryview]) -> None:
        self.frames = frames
        self.used: set[int] = set()

    def __call__(self, value: dict[str, Any]) -> memoryview:
        index = value["frame"]
        if len(value) != 3 or type(index) is not int or not 0 <= index < len(self.frames):
            raise SlowPathNeededError
        if index in self.used:
            raise SlowPathNeededError
        self.used.add(index)
        return self.frames[index]


def array_decoder(spec: ArraySpec) -> ArrayDecoder:
    """A closure decoding one array map for ``spec`` with every slow-path check.

    Args:
        spec: the field's spec.

    Returns:
        ``decode(value, limits, get_data) -> array``: a read-only view of the received bytes,
        shaped as declared; raises on anything the slow path would reject or treat differently.
    """
    wire_dtype, dtype, rank = spec.wire_dtype, spec.np_dtype, len(spec.dims)
    itemsize = dtype.itemsize
    batch_first = bool(spec.dims) and spec.dims[0] == "B"
    fixed = tuple((axis, size) for axis, size in enumerate(spec.dims) if isinstance(size, int))
    is_bool = dtype.kind == "b"
    ranged = spec.finite or spec.low is not None or spec.high is not None
    check_range = spec._check_range  # the very check pydantic runs

    def decode(value: Any, limits: ContractLimits, get_data: DataGetter) -> np.ndarray:
        if type(value) is not dict or value["dtype"] != wire_dtype:
            raise SlowPathNeededError
        shape = value["shape"]
        if type(shape) is not list or len(shape) != rank:
            raise SlowPathNeededError
        count = 1
        for size in shape:
            if type(size) is not int or size < 0:
                raise SlowPathNeededError
            count *= size
        if count > limits.max_array_elements or (batch_first and shape[0] > limits.max_batch):
            raise SlowPathNeededError
        for axis, size in fixed:
            if shape[axis] != size:
                raise SlowPathNeededError
        data = get_data(value)
        if len(data) != count * itemsize:
            raise SlowPathNeededError
        # Zero copy: a view of the received buffer, shaped in the same call. [n bytes] -> shape.
        array = _ndarray(shape, dtype, data)
        if is_bool and count and _maximum(array.view(_UINT8), axis=None) > 1:
            raise SlowPathNeededError
        if ranged and count:
            check_range(array)
        if not data.readonly:  # a writable receive buffer: the model still stores a read-only view
            array.flags.writeable = False
        return array

    return decode
