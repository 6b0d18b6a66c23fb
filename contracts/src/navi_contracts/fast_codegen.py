"""Straight-line decode functions generated per model class for the fast path.

A loop over field descriptions calling one closure per array spent as much time on bookkeeping as
on the array checks. The code generated here runs the codec's structural checks and the model's
checks with every per-field fact (name, wire dtype, rank, fixed axes, batch axis, item size) bound
as a constant and the array checks inlined. It is compiled once per class and form (single payload
or multipart). It accepts exactly what the slow path accepts (``test_contracts_codec_fastpath.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from navi_contracts.fast_arrays import SlowPathNeededError

if TYPE_CHECKING:
    from navi_contracts.fast_build import FastBuilder

DecodeFunction = Callable[..., Any]

_HEADER = """\
def decode(raw, limits, get_data):
    if type(raw) is not dict or not raw.keys() <= NAMES:
        raise E
    if raw.get("kind") != KIND or type(raw.get("schema_version")) is not int:
        raise E
{payload}    max_elements = limits.max_array_elements
    max_batch = limits.max_batch
    values = {{}}
"""
_PAYLOAD = """\
    payload = raw.get("payload")
    if payload and len(payload) > limits.max_payload_entries:
        raise E
"""
_FIELD = """\
    value = raw.get({name!r}, MISSING)
    if value is MISSING:
{missing}
    elif value is None:
        values[{name!r}] = CHECK{i}(None)
    else:
{present}
"""
_ARRAY = """\
        if type(value) is not dict or value["dtype"] != {wire!r}:
            raise E
        shape = value["shape"]
        if type(shape) is not list or len(shape) != {rank}:
            raise E
        {sizes} = shape
        if {size_checks}:
            raise E
        count = {product}
        if count > max_elements{batch_check}:
            raise E
{get_data}        if len(data) != count * {itemsize}:
            raise E
        array = ndarray(shape, DTYPE{i}, data)
{bool_check}{range_check}        if not data.readonly:
            array.flags.writeable = False
{validators}        values[{name!r}] = array
"""
_FOOTER = """\
    fields_set = set(raw)
    fields_set.discard("kind")
    return construct(values, fields_set)
"""


_GET_DATA = "        data = get_data(value)\n"
_INLINE_DATA = """\
        data = value["data"]
        if len(value) != 3 or type(data) is not memoryview:
            raise E
"""


def _array_code(index: int, name: str, builder: FastBuilder, namespace: dict[str, Any], inline: bool) -> str:
    spec, validators = builder.array_fields[name]
    rank = len(spec.dims)
    sizes = [f"s{axis}" for axis in range(rank)]
    size_checks = [f"type({size}) is not int or {size} < 0" for size in sizes]
    size_checks += [f"{sizes[axis]} != {dim}" for axis, dim in enumerate(spec.dims) if isinstance(dim, int)]
    namespace[f"DTYPE{index}"] = spec.np_dtype
    bool_check = ""
    if spec.np_dtype.kind == "b":
        bool_check = "        if count and maximum(array.view(uint8), axis=None) > 1:\n            raise E\n"
    range_check = ""
    if spec.finite or spec.low is not None or spec.high is not None:
        namespace[f"RANGE{index}"] = spec._check_range  # the very check pydantic runs
        range_check = f"        if count:\n            RANGE{index}(array)\n"
    validator_code = ""
    for number, validator in enumerate(validators):
        namespace[f"V{index}_{number}"] = validator
        validator_code += f"        array = V{index}_{number}(array)\n"
    return _ARRAY.format(
        wire=spec.wire_dtype,
        rank=rank,
        sizes=", ".join(sizes) + ("," if rank == 1 else ""),
        size_checks=" or ".join(size_checks),
        product=" * ".join(sizes),
        batch_check=" or s0 > max_batch" if spec.dims and spec.dims[0] == "B" else "",
        itemsize=spec.np_dtype.itemsize,
        i=index,
        bool_check=bool_check,
        range_check=range_check,
        validators=validator_code,
        name=name,
        get_data=_INLINE_DATA if inline else _GET_DATA,
    )


def compile_decoder(builder: FastBuilder, inline: bool) -> DecodeFunction:
    """Generate and compile ``decode(raw, limits, get_data)`` for ``builder``'s class.

    Args:
        builder: the class's fast builder (field roles, checks, defaults, validators).
        inline: single-payload form: array bytes are the map's ``data`` bin (``get_data`` unused).

    Returns:
        The function (see :attr:`FastBuilder.decode`).
    """
    from navi_contracts.fast_build import REQUIRED, ROLE_ARRAY, ROLE_SCALAR

    namespace: dict[str, Any] = {
        "E": SlowPathNeededError,
        "MISSING": object(),
        "NAMES": builder.decode_names,
        "KIND": builder.kind,
        "ndarray": np.ndarray,
        "maximum": np.maximum.reduce,
        "uint8": np.dtype(np.uint8),
        "construct": builder.construct,
    }
    parts = [_HEADER.format(payload=_PAYLOAD if builder.has_payload else "")]
    for index, (name, role, decoder, check, default) in enumerate(builder.decode_fields):
        namespace[f"CHECK{index}"] = check
        if default is REQUIRED:
            missing = "        raise E"
        else:
            namespace[f"DEFAULT{index}"] = default
            missing = (
                f"        values[{name!r}] = DEFAULT{index}.get_default("
                "call_default_factory=True, validated_data=values)"
            )
        if role == ROLE_ARRAY:
            present = _array_code(index, name, builder, namespace, inline)
        elif role == ROLE_SCALAR:
            present = f"        values[{name!r}] = CHECK{index}(value)\n"
        else:
            namespace[f"NESTED{index}"] = decoder
            method = "decode_inline" if inline else "decode"
            present = f"        values[{name!r}] = NESTED{index}.{method}(value, limits, get_data)\n"
        parts.append(_FIELD.format(name=name, i=index, missing=missing, present=present.rstrip("\n")))
    parts.append(_FOOTER)
    exec("".join(parts), namespace)  # code generated from the class's own field descriptions
    return namespace["decode"]  # type: ignore[no-any-return]
