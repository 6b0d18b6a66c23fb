"""Array field specifications for wire models.

A wire model declares each numpy field as ``Annotated[np.ndarray, ArraySpec(...)]``. The spec names
its dimensions symbolically (``("B", "Az", "El")``) so the model can check that every field agrees on
the batch size and the matrix shape, and it carries the value range the contract promises (e.g. depth
in [0, 1]). Range checks reduce rather than build boolean masks: no temporary arrays. A float32 range
around zero is proven by one or two integer maxima over the bit patterns (faster than float min/max,
NaN fails them too); only a flagged array pays for the exact pass that finds the value for the message.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import GetCoreSchemaHandler
from pydantic_core import core_schema

Dim = str | int


@dataclass(frozen=True)
class ArraySpec:
    """What one array field must look like.

    Attributes:
        dtype: the exact numpy dtype (e.g. ``np.float32``).
        dims: one entry per axis: an int for a fixed size, a name for a size shared across fields.
        low: smallest allowed value (inclusive), or None.
        high: largest allowed value (inclusive), or None.
        finite: reject NaN and infinities (implied by ``low``/``high``).
    """

    dtype: type[np.generic]
    dims: tuple[Dim, ...]
    low: float | None = None
    high: float | None = None
    finite: bool = False
    np_dtype: np.dtype[Any] = field(init=False, repr=False, compare=False)
    wire_dtype: str = field(init=False, repr=False, compare=False)
    wire_facts: tuple[np.dtype[Any], str, int, int, bool, bool] = field(init=False, repr=False, compare=False)
    named_axes: tuple[tuple[int, str], ...] = field(init=False, repr=False, compare=False)
    _bit_bounds: tuple[int, int | None] | None = field(init=False, repr=False, compare=False)
    _checks: tuple[Any, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Precomputed once: validate() runs for every array of every decoded message.
        np_dtype = np.dtype(self.dtype)
        object.__setattr__(self, "np_dtype", np_dtype)
        wire_dtype = np_dtype.newbyteorder("<").str
        object.__setattr__(self, "wire_dtype", wire_dtype)
        # What the decoder checks of a wire array: dtype, rank, item size, batch axis first, bool.
        batched, is_bool = self.dims[0] == "B", np_dtype.kind == "b"
        facts = (np_dtype, wire_dtype, len(self.dims), np_dtype.itemsize, batched, is_bool)
        object.__setattr__(self, "wire_facts", facts)
        named = tuple((axis, dim) for axis, dim in enumerate(self.dims) if isinstance(dim, str))
        object.__setattr__(self, "named_axes", named)
        fixed = tuple((axis, dim) for axis, dim in enumerate(self.dims) if isinstance(dim, int))
        bounded = self.low is not None or self.high is not None
        ranged = (self.finite or bounded) and np_dtype.kind in "fiu"  # bools have no range
        object.__setattr__(self, "_bit_bounds", _bit_bounds(self))
        # What validate() checks: dtype, rank, fixed axes, whether a range (and a bound) applies.
        object.__setattr__(self, "_checks", (np_dtype, len(self.dims), fixed, ranged, bounded))

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> Any:
        """Validate with :meth:`validate`; no pydantic serialisation (the codec encodes arrays)."""
        return core_schema.no_info_plain_validator_function(self.validate)

    def validate(self, value: Any) -> np.ndarray:
        """Coerce ``value`` to a read-only array satisfying this spec.

        An ndarray must already have the exact dtype (a silent cast would hide a producer bug);
        other inputs (lists, scalars, CPU tensors) are converted when the cast is ``same_kind``.

        Args:
            value: an ndarray or anything ``np.asarray`` accepts.

        Returns:
            A read-only view (no copy) of the array.

        Raises:
            ValueError: wrong dtype, rank, fixed axis size or value range.
        """
        np_dtype, rank, fixed, ranged, bounded = self._checks
        array = value if type(value) is np.ndarray and value.dtype == np_dtype else self._coerce(value)
        shape = array.shape
        if len(shape) != rank:
            raise ValueError(f"expected {rank} dimensions {self.dims}, got shape {shape}")
        for axis, size in fixed:
            if shape[axis] != size:
                raise ValueError(f"axis {axis} must have size {size}, got shape {shape}")
        flags = array.flags
        size = array.size if ranged else 0
        if 0 < size <= _SMALL:
            # A few values (poses, actions): Python floats beat ufunc calls. Their float64 sum is
            # finite exactly when every value is (64 float32 or int values cannot overflow it).
            values = array.ravel().tolist()
            if bounded or not math.isfinite(sum(values)):
                self._check_values(values)
        elif size and not self._proven_in_range(array, flags.c_contiguous):
            self._check_range(array)
        if not flags.writeable:
            return array  # already read-only (e.g. decoded from a received buffer)
        view = array.view()
        view.flags.writeable = False
        return view

    def _coerce(self, value: Any) -> np.ndarray:
        expected = self.np_dtype
        if isinstance(value, np.ndarray):
            if value.dtype != expected:
                raise ValueError(
                    f"must be {expected.name}, got {value.dtype.name} (cast with .astype(np.{expected.name}))"
                )
            return value
        try:
            array = np.asarray(value)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"cannot convert {type(value).__name__} to an array: {exc}") from exc
        if array.dtype == expected:
            return array
        if array.dtype == np.bool_ and expected != np.bool_:
            raise ValueError(f"must be {expected.name}, got bool")
        if not np.can_cast(array.dtype, expected, casting="same_kind"):
            raise ValueError(f"must be {expected.name}, got {array.dtype.name} (not a same-kind cast)")
        return array.astype(expected)

    def _proven_in_range(self, array: np.ndarray, contiguous: bool) -> bool:
        """The bit-pattern proof of the module docstring (:func:`_bit_bounds`): no float pass."""
        bounds = self._bit_bounds  # set only for float32 specs
        return (
            bounds is not None
            and contiguous
            and _maximum(array.view(_UINT32), None) <= bounds[0]
            and (bounds[1] is None or _maximum(array.view(_INT32), None) <= bounds[1])
        )

    def _check_range(self, array: np.ndarray) -> None:
        """The exact pass over a larger array (one the bit-pattern proof flagged or cannot cover)."""
        flat = array.ravel() if array.flags.c_contiguous else array
        # ufunc.reduce directly (not ndarray.min); a NaN makes both NaN.
        self._check_values([float(_minimum(flat, axis=None)), float(_maximum(flat, axis=None))])

    def _check_values(self, values: list[Any]) -> None:
        """Raise unless every one of ``values`` (Python numbers) is finite and within bounds."""
        if not all(math.isfinite(value) for value in values):
            raise ValueError("must be finite (found NaN or infinity)")
        lowest, highest = min(values), max(values)
        if self.low is not None and lowest < self.low:
            raise ValueError(f"must be >= {self.low}, found {lowest}")
        if self.high is not None and highest > self.high:
            raise ValueError(f"must be <= {self.high}, found {highest}")


def _bit_bounds(spec: ArraySpec) -> tuple[int, int | None] | None:
    """Bounds on the uint32 and int32 maxima of float32 bit patterns that prove ``low <= x <= high``.

    A sign bit makes a pattern a large uint32 and a negative int32; non-negative floats order like
    their patterns. So for ``low < 0 <= high``: uint32 max <= bits(low) (no negative past low, -NaN,
    -inf) and int32 max <= bits(high) (no positive past high, NaN, inf). For ``low == 0`` the uint32
    max alone (``-0.0`` goes to the exact check). A missing bound is float32's largest finite value."""
    if spec.np_dtype != _FLOAT32:
        return None
    low = -_FLOAT32_MAX if spec.low is None else spec.low
    high = _FLOAT32_MAX if spec.high is None else spec.high
    exact = float(np.float32(low)) == low and float(np.float32(high)) == high  # also False for inf, NaN
    if not (exact and low <= 0 <= high and math.isfinite(low) and math.isfinite(high)):
        return None
    high_bits = int(np.float32(high).view(np.uint32))
    if low == 0:
        return high_bits, None
    return int(np.float32(low).view(np.uint32)), high_bits


_FLOAT32 = np.dtype(np.float32)
_UINT32 = np.dtype(np.uint32)
_INT32 = np.dtype(np.int32)
_FLOAT32_MAX = float(np.finfo(np.float32).max)
_SMALL = 64
_minimum = np.minimum.reduce
_maximum = np.maximum.reduce
