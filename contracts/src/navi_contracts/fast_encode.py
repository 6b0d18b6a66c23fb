"""Layout plans: encode a model by filling the slots of a payload recorded for its layout.

A stream of observations repeats one layout: the same array shapes and dtypes, the same strings and
tuples; only array bytes and scalar numbers change (numbers always take 9 bytes, see
:func:`~navi_contracts.codec_common.write_model`). Walking the model with the generic writer cost
about as much Python time as the one copy of a 4x256x48 observation. Here, generated code per model
class reads each field once and builds

- a *layout key*: per array its dtype and shape, per nested or optional field whether it is there,
  per other scalar (strings, tuples) its value;
- the *slot values*: each array (its buffer) and each number (its 8 packed bytes), in payload order.

The first model of a key is encoded once by :class:`_PlanRecorder`, the generic writer with every
slot cut out, which yields the framing between slots. Every later model of that key is one
interleave and one ``bytes.join``: byte for byte what the generic writer produces
(``test_contracts_codec_plans.py``). Anything the generated code does not expect (a
non-contiguous or byte-swapped array, an out-of-range int, an unhashable value) returns None and
the caller uses the generic writer.
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np

from navi_contracts.codec_common import (
    INT64_LIMIT,
    PACK_FLOAT64,
    PACK_INT64,
    flat_bytes,
    wire_array,
    write_model,
)
from navi_contracts.codec_pieces import PieceWriter
from navi_contracts.model_base import WireModel, array_specs, nested_models

MAX_PLANS = 64
"""Plans kept per model class; the cache is cleared when full (a stream repeats a few layouts)."""

_NONE_TYPE = type(None)


class _DeclineError(Exception):
    """The model does not fit a plan: the generic writer encodes it."""


class _PlanRecorder(PieceWriter):
    """The generic writer, with every array and number turned into an empty slot."""

    def __init__(self) -> None:
        super().__init__()
        self.constants: list[bytes] = []

    def _cut(self) -> None:
        self._offset += len(self.framing)
        self.constants.append(bytes(self.framing))
        self.framing = bytearray()

    def write_array(self, array: np.ndarray) -> None:
        if wire_array(array) is not array:
            raise _DeclineError  # would need a conversion the plan cannot repeat
        nbytes = len(flat_bytes(array))
        self.add_array_header(array, nbytes)
        self._cut()
        self._offset += nbytes

    def write_number(self, type_byte: bytes, packed: bytes) -> None:
        self.framing += type_byte
        self._cut()
        self._offset += len(packed)

    def finish_constants(self) -> tuple[bytes, ...]:
        self.constants.append(bytes(self.framing))
        return tuple(self.constants)


def _optional_inner(annotation: Any) -> tuple[bool, Any]:
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) in (typing.Union, type(int | None)) and _NONE_TYPE in args:
        others = [arg for arg in args if arg is not _NONE_TYPE]
        return True, others[0] if len(others) == 1 else annotation
    return False, annotation


def _field_lines(cls: type[WireModel], source: str, indent: str, counter: list[int]) -> list[str]:
    """Code reading every field of the model in ``source``: key parts and slot values, in order."""
    lines = [f"{indent}if type({source}) is not {_class_name(cls)}:", f"{indent}    raise D"]
    fields = f"d{counter[0]}"
    counter[0] += 1
    lines.append(f"{indent}{fields} = {source}.__dict__")
    specs, nested = array_specs(cls), nested_models(cls)
    for name, info in cls.model_fields.items():
        value = f"x{counter[0]}"
        counter[0] += 1
        optional, inner = _optional_inner(info.annotation)
        lines.append(f"{indent}{value} = {fields}[{name!r}]")
        body = indent
        if optional or name in nested:
            lines.append(f"{indent}if {value} is None:")
            lines.append(f"{indent}    key.append(None)")
            lines.append(f"{indent}else:")
            body = indent + "    "
        if name in specs:
            lines += [
                f"{body}if type({value}) is not ndarray:",
                f"{body}    raise D",
                f"{body}key.append(({value}.dtype, {value}.shape))",
                f"{body}slots.append({value})",
            ]
        elif name in nested:
            lines.append(f"{body}key.append(True)")
            lines += _field_lines(nested[name], value, body, counter)
        elif inner is int:
            lines += [
                f"{body}if type({value}) is not int or not -LIMIT <= {value} < LIMIT:",
                f"{body}    raise D",
                f"{body}slots.append(PACK_INT({value}))",
            ]
        elif inner is float:
            lines += [
                f"{body}if type({value}) is not float:",
                f"{body}    raise D",
                f"{body}slots.append(PACK_FLOAT({value}))",
            ]
        else:  # fixed by the layout: part of the key (an unhashable value declines at lookup)
            lines.append(f"{body}key.append({value})")
    return lines


def _class_name(cls: type[WireModel]) -> str:
    return f"CLS_{cls.__name__}_{id(cls)}"


def _classes(cls: type[WireModel]) -> list[type[WireModel]]:
    found = [cls]
    for nested in nested_models(cls).values():
        found += _classes(nested)
    return found


class _ClassPlans:
    """The generated reader and the recorded plans of one model class."""

    def __init__(self, cls: type[WireModel]) -> None:
        namespace: dict[str, Any] = {
            "D": _DeclineError,
            "ndarray": np.ndarray,
            "LIMIT": INT64_LIMIT,
            "PACK_INT": PACK_INT64,
            "PACK_FLOAT": PACK_FLOAT64,
        }
        namespace.update({_class_name(item): item for item in _classes(cls)})
        body = "\n".join(_field_lines(cls, "model", "    ", [0]))
        source = f"def read(model):\n    key = []\n    slots = []\n{body}\n    return tuple(key), slots\n"
        exec(source, namespace)  # generated from the class's own field descriptions
        self.read: Callable[[WireModel], tuple[tuple[Any, ...], list[Any]]] = namespace["read"]
        self.plans: dict[tuple[Any, ...], tuple[bytes, ...] | None] = {}

    def encode(self, model: WireModel) -> bytes | None:
        try:
            key, slots = self.read(model)
            constants = self.plans[key] if key in self.plans else self._record(key, model)
        except (_DeclineError, TypeError):  # TypeError: an unhashable key part
            return None
        if constants is None:
            return None
        pieces: list[Any] = [None] * (2 * len(slots) + 1)
        pieces[0::2] = constants
        pieces[1::2] = slots
        try:
            return b"".join(pieces)
        except (TypeError, ValueError, BufferError):  # a non-contiguous array: no buffer to join
            return None

    def _record(self, key: tuple[Any, ...], model: WireModel) -> tuple[bytes, ...] | None:
        recorder = _PlanRecorder()
        try:
            write_model(recorder, model)
            constants: tuple[bytes, ...] | None = recorder.finish_constants()
        except _DeclineError:
            constants = None
        if len(self.plans) >= MAX_PLANS:
            self.plans.clear()
        self.plans[key] = constants
        return constants


@cache
def _plans_for(cls: type[WireModel]) -> _ClassPlans:
    return _ClassPlans(cls)


def encode_by_plan(model: WireModel) -> bytes | None:
    """The payload of ``model`` from its layout's plan, or None where the generic writer must run.

    Returns:
        Exactly the bytes :func:`~navi_contracts.codec.encode`'s generic writer produces.
    """
    cls = type(model)
    if not isinstance(model, WireModel) or not cls.WIRE_KIND:
        return None
    return _plans_for(cls).encode(model)
