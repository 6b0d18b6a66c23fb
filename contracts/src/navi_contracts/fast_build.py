"""Build decoded wire models without pydantic, running exactly the checks pydantic would.

Pydantic validation of a decoded ``DistanceMatrix`` cost more than all the codec's byte work put
together (~40 us of ~110 us). Decoded values come from msgpack, so they already have plain types
(``int``, ``float``, ``str``, ``list``, ``dict``, arrays the codec built); for those types pydantic's
lax coercions do nothing, and what remains are the semantic checks: field constraints (``ge``,
``max_length``...), the :class:`~navi_contracts.arrays.ArraySpec` validators, the models' own field
and model validators. A :class:`FastBuilder` runs exactly those, in field order, and then creates the
instance the way ``model_construct`` does.

Equivalence by construction: the fast path only ever *accepts*. A value of any other type, a missing
or unknown field, or any failed check makes :func:`fast_decode` return None, and the codec falls
back to its slow path ending in ``cls(**raw)``, which decides and words the error. A class using a
feature the builder does not understand never takes the fast path (:func:`builder_for` is None).
The hypothesis tests in ``test_contracts_codec_fastpath.py`` check that both paths agree.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from functools import cache
from typing import Any, TypeVar

import annotated_types
import numpy as np

from navi_contracts.arrays import ArraySpec
from navi_contracts.fast_arrays import DataGetter, SlowPathNeededError, inline_data
from navi_contracts.fast_codegen import DecodeFunction, compile_decoder
from navi_contracts.model_base import WireModel, array_specs, nested_models
from navi_contracts.settings import ContractLimits

M = TypeVar("M", bound=WireModel)

Check = Callable[[Any], Any]
"""Returns the (possibly converted) value or raises; any exception means "let pydantic decide"."""

_INT64 = 1 << 63
_NONE_TYPE = type(None)
REQUIRED = object()
_object_setattr = object.__setattr__


class _UnsupportedError(Exception):
    """A field or validator the fast builder does not reproduce: the class always uses pydantic."""


def _int_check(constraints: list[Any]) -> Check:
    low, high = -_INT64, _INT64 - 1
    for item in constraints:
        if isinstance(item, annotated_types.Ge):
            low = max(low, int(item.ge))  # type: ignore[call-overload]
        elif isinstance(item, annotated_types.Le):
            high = min(high, int(item.le))  # type: ignore[call-overload]
        else:
            raise _UnsupportedError(f"int constraint {item!r}")

    def check(value: Any) -> int:
        if type(value) is not int or not low <= value <= high:
            raise SlowPathNeededError
        return value

    return check


def _str_check(constraints: list[Any]) -> Check:
    shortest, longest = 0, None
    for item in constraints:
        if isinstance(item, annotated_types.MinLen):
            shortest = item.min_length
        elif isinstance(item, annotated_types.MaxLen):
            longest = item.max_length
        else:
            raise _UnsupportedError(f"str constraint {item!r}")
    limit = longest if longest is not None else float("inf")

    def check(value: Any) -> str:
        if type(value) is not str or not shortest <= len(value) <= limit:
            raise SlowPathNeededError
        return value

    return check


def _exact_type(expected: type) -> Check:
    def check(value: Any) -> Any:
        if type(value) is not expected:
            raise SlowPathNeededError
        return value

    return check


def _int_pair(value: Any) -> tuple[int, int]:
    if type(value) not in (list, tuple) or len(value) != 2:
        raise SlowPathNeededError
    first, second = value
    if type(first) is not int or type(second) is not int or not (-_INT64 <= first < _INT64):
        raise SlowPathNeededError
    if not -_INT64 <= second < _INT64:
        raise SlowPathNeededError
    return (first, second)


def _str_float_dict(value: Any) -> dict[str, float]:
    if type(value) is not dict:
        raise SlowPathNeededError
    for key, item in value.items():
        if type(key) is not str or type(item) is not float:
            raise SlowPathNeededError
    return dict(value)


def _optional(check: Check) -> Check:
    def optional(value: Any) -> Any:
        return None if value is None else check(value)

    return optional


def _spec_of(annotation: Any) -> ArraySpec | None:
    for meta in getattr(annotation, "__metadata__", ()):
        if isinstance(meta, ArraySpec):
            return meta
    return None


def _field_check(annotation: Any, metadata: list[Any]) -> Check:  # noqa: PLR0911 - one per type
    """The check reproducing pydantic's validation of ``annotation`` for msgpack-typed values."""
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) in (typing.Union, type(int | None)) and _NONE_TYPE in args:
        others = [arg for arg in args if arg is not _NONE_TYPE]
        if len(others) != 1:
            raise _UnsupportedError(f"union {annotation!r}")
        inner = others[0]
        spec = _spec_of(inner)
        if spec is not None and not metadata:
            return _optional(spec.validate)
        return _optional(_field_check(inner, metadata))
    spec = next((meta for meta in metadata if isinstance(meta, ArraySpec)), None)
    if annotation is np.ndarray and spec is not None and len(metadata) == 1:
        return spec.validate
    if isinstance(annotation, type) and issubclass(annotation, WireModel) and not metadata:
        return _exact_type(annotation)  # nested models are built (and checked) first
    if annotation is int:
        return _int_check(metadata)
    if annotation is str:
        return _str_check(metadata)
    if annotation in (float, bool) and not metadata:
        return _exact_type(annotation)
    if annotation == tuple[int, int] and not metadata:
        return _int_pair
    if annotation == dict[str, float] and not metadata:
        return _str_float_dict
    raise _UnsupportedError(f"annotation {annotation!r}")


def _single_argument(func: Callable[..., Any]) -> Callable[..., Any]:
    parameters = list(inspect.signature(func).parameters.values())
    if len(parameters) != 1 or parameters[0].kind not in (
        inspect.Parameter.POSITIONAL_ONLY,
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
    ):
        raise _UnsupportedError(f"validator {func!r} takes more than the value")
    return func


def _chain(first: Check, validators: list[Callable[[Any], Any]]) -> Check:
    if not validators:
        return first

    def chained(value: Any) -> Any:
        value = first(value)
        for validator in validators:
            value = validator(value)
        return value

    return chained


class FastBuilder:
    """Checks and constructs one model class from a decoded field map (see the module doc)."""

    def __init__(self, cls: type[WireModel]) -> None:
        decorators = cls.__pydantic_decorators__
        if cls.__pydantic_post_init__ or decorators.root_validators or decorators.validators:
            raise _UnsupportedError("post-init or legacy validators")
        field_validators: dict[str, list[Callable[[Any], Any]]] = {}
        for decorator in decorators.field_validators.values():
            info = decorator.info
            if info.mode != "after" or not set(info.fields) <= set(cls.model_fields):
                raise _UnsupportedError(f"field validator {decorator.cls_var_name}")
            for name in info.fields:
                field_validators.setdefault(name, []).append(_single_argument(decorator.func))
        self.model_validators = []
        for model_decorator in decorators.model_validators.values():
            if model_decorator.info.mode != "after":
                raise _UnsupportedError(f"model validator {model_decorator.cls_var_name}")
            self.model_validators.append(_single_argument(model_decorator.func))
        self.cls = cls
        self.names = frozenset(cls.model_fields)
        self.decode_fields: list[tuple[str, int, Any, Check, Any]] = []
        self.array_fields: dict[str, tuple[ArraySpec, list[Callable[[Any], Any]]]] = {}
        for name, field_info in cls.model_fields.items():
            if field_info.alias is not None or field_info.validation_alias is not None:
                raise _UnsupportedError(f"alias on {name}")
            validators = field_validators.get(name, [])
            check = _chain(_field_check(field_info.annotation, list(field_info.metadata)), validators)
            default = REQUIRED if field_info.is_required() else field_info
            role, decoder = _decode_role(cls, name, check, validators)
            self.decode_fields.append((name, role, decoder, check, default))
            if role == ROLE_ARRAY:
                self.array_fields[name] = (array_specs(cls)[name], validators)
        self.kind = cls.WIRE_KIND
        self.decode_names = self.names | {"kind"}
        self.has_payload = "payload" in self.names
        self.decode: DecodeFunction = compile_decoder(self, inline=False)
        """``decode(raw, limits, get_data) -> model``: decode a field map as
        :func:`~navi_contracts.codec_common.decode_model` would, with every check of the codec's slow
        path (kind, version, array maps, limits) fused with the model's checks; raises (anything)
        wherever the slow path must decide. ``raw`` is not modified, so the slow path can start over."""
        self.decode_inline: DecodeFunction = compile_decoder(self, inline=True)
        """The same for single payloads, with :func:`~navi_contracts.fast_arrays.inline_data` inlined."""

    def construct(self, values: dict[str, Any], fields_set: set[str]) -> WireModel:
        """The instance ``model_construct`` would make, after the model validators accepted it."""
        model = self.cls.__new__(self.cls)
        _object_setattr(model, "__dict__", values)
        _object_setattr(model, "__pydantic_fields_set__", fields_set)
        _object_setattr(model, "__pydantic_extra__", None)
        _object_setattr(model, "__pydantic_private__", None)
        for validator in self.model_validators:
            if validator(model) is not model:
                raise SlowPathNeededError
        return model


ROLE_SCALAR, ROLE_ARRAY, ROLE_NESTED = 0, 1, 2


def _decode_role(cls: type[WireModel], name: str, check: Check, validators: list[Any]) -> tuple[int, Any]:
    """How :meth:`FastBuilder.decode` treats a field: (role, checker), as the codec's slow path does."""
    spec = array_specs(cls).get(name)
    if spec is not None:
        return ROLE_ARRAY, None
    nested = nested_models(cls).get(name)
    if nested is None:
        return ROLE_SCALAR, check
    builder = builder_for(nested)
    if validators or builder is None:
        raise _UnsupportedError(f"nested field {name}")
    return ROLE_NESTED, builder


@cache
def builder_for(cls: type[WireModel]) -> FastBuilder | None:
    """The fast builder of ``cls``, or None when the class needs pydantic for every message."""
    try:
        return FastBuilder(cls)
    except _UnsupportedError:
        return None


class _FastPathSwitch:
    """On in production; tests turn it off to compare with the slow path (templates included)."""

    enabled = True


FAST_PATH = _FastPathSwitch()


def fast_decode(cls: type[M], raw: Any, limits: ContractLimits, get_data: DataGetter) -> M | None:
    """``cls`` decoded from ``raw`` by the fast path, or None where the slow path must decide.

    Args:
        cls: the model class (``raw["kind"]`` must name it).
        raw: the decoded top-level map (not modified).
        limits: size limits.
        get_data: finds an array map's bytes.

    Returns:
        The model, equal to what the slow path returns, or None.
    """
    builder = builder_for(cls) if FAST_PATH.enabled else None
    if builder is None:
        return None
    try:
        if get_data is inline_data:
            return builder.decode_inline(raw, limits, get_data)  # type: ignore[no-any-return]
        return builder.decode(raw, limits, get_data)  # type: ignore[no-any-return]
    except Exception:  # any doubt at all: the slow path decides and words the error
        return None
