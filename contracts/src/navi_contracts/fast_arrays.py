"""Where the fast path finds array bytes, and how it declines.

The generated decoders (:mod:`navi_contracts.fast_codegen`) check an array map the way the slow
path's :func:`~navi_contracts.codec_common.decode_array` plus :meth:`ArraySpec.validate` do; the
bytes come from the map's inline ``data`` bin or from a multipart frame claimed here. Nothing is
reported: any failed check raises, and the caller lets the slow path decide and word the error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

DataGetter = Callable[[dict[str, Any]], Any]
"""Array map -> the buffer holding its bytes (inline ``data`` bin or a claimed frame)."""


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
