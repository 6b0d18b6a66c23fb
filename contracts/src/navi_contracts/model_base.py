"""Base class of every wire model: frozen, validated, comparable although it holds arrays.

Pydantic reports problems as ``ValidationError``; the wire layer promises one error type, so the
constructor re-raises it as :class:`~navi_contracts.errors.ContractError` with one line per problem
(``DistanceMatrix.depth: must be float32, got float64``).
"""

from __future__ import annotations

import math
import typing
from functools import cache
from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from navi_contracts.arrays import ArraySpec
from navi_contracts.errors import ContractError, format_validation_error

SCHEMA_VERSION = 2
"""Version of every model in this release; matches the ``_v2`` topic suffix."""


class WireModel(BaseModel):
    """A message that crosses process boundaries.

    Subclasses set ``WIRE_KIND`` (the ``kind`` written on the wire). Arrays are stored as read-only
    views; models are immutable and not hashable.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    WIRE_KIND: ClassVar[str] = ""
    SCHEMA_VERSION: ClassVar[int] = SCHEMA_VERSION

    schema_version: int = SCHEMA_VERSION

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise ContractError(format_validation_error(type(self).__name__, exc)) from None

    # Pydantic calls a custom __init__ again for every nested model built from a map, validating it
    # twice and wrapping its errors in a second ContractError. This __init__ only translates the
    # error, so pydantic may treat it as its own (its marker for BaseModel.__init__): nested models are
    # validated once, and their errors name the full path (``DistanceMatrix.poses.yaw``).
    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]

    @field_validator("schema_version")
    @classmethod
    def _check_schema_version(cls, value: int) -> int:
        if value != cls.SCHEMA_VERSION:
            raise ValueError(
                f"{cls.WIRE_KIND} schema_version mismatch: expected {cls.SCHEMA_VERSION}, got {value}"
            )
        return value

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(
            values_equal(getattr(self, name), getattr(other, name)) for name in type(self).model_fields
        )

    def __hash__(self) -> int:
        raise TypeError(f"{type(self).__name__} holds arrays and is not hashable")

    def check_dims(self, bound: dict[str, int] | None = None) -> dict[str, int]:
        """Check the named dimensions of this model's array fields agree.

        Args:
            bound: dimensions fixed by other fields (e.g. ``Az``/``El`` from ``matrix_shape``).

        Returns:
            Name -> size for every named dimension (``B`` is the batch size).
        """
        bindings = dict(bound) if bound else {}
        values = self.__dict__
        previous = None  # shape of the field before, when it declares the same dims (depth, semantic...)
        for name, named_axes, same_dims in _named_axes(type(self)):
            array = values[name]
            shape = None if array is None else array.shape
            if shape is None or (same_dims and shape == previous):
                previous = shape
                continue  # absent, or the same sizes as an already checked field with the same dims
            previous = shape
            for axis, dim in named_axes:
                if bindings.setdefault(dim, shape[axis]) != shape[axis]:
                    raise ValueError(self._dims_error(name, dim, bound or {}))
        return bindings

    def _dims_error(self, field: str, dim: str, bound: dict[str, int]) -> str:
        """Which field (or ``bound``) fixed ``dim`` first and how ``field`` disagrees (on failure only)."""
        specs = array_specs(type(self))
        shape = getattr(self, field).shape
        size = next(shape[axis] for axis, name in specs[field].named_axes if name == dim)
        origin, known = (
            ("declared", bound[dim])
            if dim in bound
            else next(
                (name, getattr(self, name).shape[axis])
                for name, spec in specs.items()
                if getattr(self, name) is not None
                for axis, named in spec.named_axes
                if named == dim
            )
        )
        return f"{field}: dimension {dim}={size} (shape {shape}) disagrees with {dim}={known} from {origin}"


@cache
def array_specs(model: type[WireModel]) -> dict[str, ArraySpec]:
    """Field name -> ArraySpec for the array fields of ``model`` (cached per class)."""
    specs: dict[str, ArraySpec] = {}
    for name, info in model.model_fields.items():
        # ``Annotated[ndarray, spec]`` lands in ``metadata``; ``Annotated[...] | None`` keeps it
        # inside the union's arguments.
        union_metadata = [getattr(arg, "__metadata__", ()) for arg in typing.get_args(info.annotation)]
        for meta in (*info.metadata, *(m for group in union_metadata for m in group)):
            if isinstance(meta, ArraySpec):
                specs[name] = meta
    return specs


@cache
def _named_axes(model: type[WireModel]) -> tuple[tuple[str, tuple[tuple[int, str], ...], bool], ...]:
    """(field, its named axes, whether the array field before declares the same dims) per array field
    of ``model`` with named axes."""
    specs = [(name, spec) for name, spec in array_specs(model).items() if spec.named_axes]
    pairs = zip(specs, [None, *(spec.dims for _, spec in specs)], strict=False)  # (field, dims before)
    return tuple((name, spec.named_axes, spec.dims == dims) for (name, spec), dims in pairs)


@cache
def nested_models(model: type[WireModel]) -> dict[str, type[WireModel]]:
    """Field name -> nested WireModel class, for fields typed ``SomeModel`` or ``SomeModel | None``."""
    nested: dict[str, type[WireModel]] = {}
    for name, info in model.model_fields.items():
        candidates = (info.annotation, *typing.get_args(info.annotation))
        for candidate in candidates:
            if isinstance(candidate, type) and issubclass(candidate, WireModel):
                nested[name] = candidate
    return nested


def values_equal(left: Any, right: Any) -> bool:
    """Structural equality that understands arrays (dtype, shape, values) and treats NaN == NaN."""
    if isinstance(left, np.ndarray) or isinstance(right, np.ndarray):
        if not (isinstance(left, np.ndarray) and isinstance(right, np.ndarray)):
            return False
        if left.dtype != right.dtype or left.shape != right.shape:
            return False
        return bool(np.array_equal(left, right, equal_nan=left.dtype.kind == "f"))
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(values_equal(left[k], right[k]) for k in left)
    if isinstance(left, float) and isinstance(right, float) and math.isnan(left) and math.isnan(right):
        return True
    return bool(left == right)
