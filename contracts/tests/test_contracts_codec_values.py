"""The decoder accepts exactly the messages whose values the models accept.

Each payload is a valid message with one thing changed (a scalar replaced by a tricky value, a field
dropped or added, one array element overwritten with NaN, -0.0, a value just past a bound, bool
byte 2, an array reshaped with or without matching bytes, bit flips). The oracle is a small reference
decoder written from the documented format with the reference msgpack library and numpy, which
hands the values to the model constructor: ``decode_frames`` must succeed exactly when the oracle
does, with an equal model, and otherwise raise ContractError.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import msgpack
import numpy as np
import pytest
import wire_strategies as strategies
from hypothesis import given, settings
from hypothesis import strategies as st

from navi_contracts import ContractError, WireModel, decode_frames, encode_frames
from navi_contracts.models import MODELS_BY_KIND
from navi_contracts.samples import sample_action, sample_distance_matrix, sample_step_result, sample_telemetry

TRICKY_SCALARS = [
    0, 1, 2, -1, 255, 2**31, 2**63 - 1, 2**63, 2**64 - 1, -(2**63), 0.0, -0.0, 1.5, 2.0, -1.0,
    math.nan, math.inf, -math.inf, True, False, None, "", "a", "a" * 300, "actor.ok", "Bad Name",
    [], [1, 2], [0, 4], [8, 4], [1, 2, 3], [1.0, 2.0], {}, {"a": 1.0}, {"a": 1}, {"a": "x"},
    b"", b"\x00" * 8,
]  # fmt: skip
FLOAT_VALUES = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.0000001, -1.0000001, 2.0, 1e-45, -1e-45, 3e38,
                math.nan, -math.nan, math.inf, -math.inf]  # fmt: skip
BASES: list[WireModel] = [
    sample_distance_matrix(batch=2, azimuth=8, elevation=4, seed=3),
    sample_distance_matrix(batch=1, azimuth=4, elevation=2, seed=4, with_delta=False),
    sample_step_result(batch=2, azimuth=4, elevation=2),
    sample_action(batch=3),
    sample_telemetry(5),
]
ARRAY_BASES = BASES[:4]
ALLOWED = {"<f4", "<f8", "<i4", "<i8", "|b1", "|u1"}


def _is_array_map(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == {"dtype", "shape"}


def _reference_fields(raw: Any, arrays: Iterator[bytes]) -> dict[str, Any]:
    """The documented format read naively; raises on anything the format forbids."""
    assert isinstance(raw, dict) and isinstance(raw.get("kind"), str), "not a model map"
    assert raw.get("schema_version") == 2, "schema version"
    fields = {}
    for key, value in raw.items():
        assert not isinstance(value, bytes), "binary value"
        if key == "kind":
            continue
        if _is_array_map(value):
            dtype, shape = value["dtype"], value["shape"]
            assert dtype in ALLOWED and isinstance(shape, list), "array map"
            assert all(type(size) is int and size >= 0 for size in shape), "shape"
            data = next(arrays)
            array = np.frombuffer(data, dtype=np.dtype(dtype)).reshape(shape)  # raises on a size mismatch
            assert dtype != "|b1" or all(byte <= 1 for byte in data), "bool bytes"
            fields[key] = array
        elif isinstance(value, dict) and "kind" in value:
            nested = MODELS_BY_KIND.get(value["kind"])
            assert nested is not None, "unknown kind"
            fields[key] = nested(**_reference_fields(value, arrays))
        else:
            fields[key] = value
    return fields


def _reference(header: dict[str, Any], arrays: list[bytes]) -> WireModel:
    cls = MODELS_BY_KIND[header["kind"]] if isinstance(header.get("kind"), str) else None
    assert cls is not None, "unknown kind"
    remaining = iter(arrays)
    model = cls(**_reference_fields(header, remaining))
    assert next(remaining, None) is None, "unused frame"
    return model


def _assert_agrees(header: dict[str, Any], arrays: list[bytes]) -> str:
    """decode_frames and the reference accept and refuse alike; accepted models are equal."""
    try:
        expected: WireModel | None = _reference(header, arrays)
    except Exception:  # the reference may fail in any way; the decoder only with ContractError
        expected = None
    frames = [msgpack.packb(header, use_bin_type=True), *arrays]
    if expected is None:
        with pytest.raises(ContractError):
            decode_frames(frames)
        return "error"
    decoded = decode_frames(frames)
    assert decoded == expected
    assert decoded.model_fields_set == expected.model_fields_set
    return "ok"


def _parts(model: WireModel) -> tuple[dict[str, Any], list[bytes]]:
    frames = encode_frames(model)
    return msgpack.unpackb(frames[0]), [bytes(frame) for frame in frames[1:]]


def _array_slots(header: dict[str, Any]) -> list[dict[str, Any]]:
    """Every array map in header order (= frame order)."""
    found = []
    for value in header.values():
        if _is_array_map(value):
            found.append(value)
        elif isinstance(value, dict) and "kind" in value:
            found.extend(_array_slots(value))
    return found


@settings(max_examples=60, deadline=None)
@given(strategies.wire_models())
def test_valid_models_agree(model: WireModel) -> None:
    assert _assert_agrees(*_parts(model)) == "ok"


@settings(max_examples=250, deadline=None)
@given(st.sampled_from(BASES), st.data())
def test_replaced_or_dropped_fields_agree(base: WireModel, data: st.DataObject) -> None:
    header, arrays = _parts(base)
    targets = [header] + [value for value in header.values() if isinstance(value, dict) and "kind" in value]
    target = data.draw(st.sampled_from(targets))
    key = data.draw(st.sampled_from([*sorted(target), "unknown_field"]))
    if _is_array_map(target.get(key)):
        return  # arrays are replaced below, with their frames
    if data.draw(st.booleans()):
        target.pop(key, None)
    else:
        target[key] = data.draw(st.sampled_from(TRICKY_SCALARS))
    _assert_agrees(header, arrays)


@settings(max_examples=250, deadline=None)
@given(st.sampled_from(ARRAY_BASES), st.data())
def test_replaced_array_values_agree(base: WireModel, data: st.DataObject) -> None:
    header, arrays = _parts(base)
    index = data.draw(st.integers(0, len(arrays) - 1))
    dtype = np.dtype(_array_slots(header)[index]["dtype"])
    values = np.frombuffer(arrays[index], dtype=dtype).copy()
    if values.size:
        at = data.draw(st.integers(0, values.size - 1))
        if dtype.kind == "f":
            values[at] = data.draw(st.sampled_from(FLOAT_VALUES))
        elif dtype.kind == "b":
            values.view(np.uint8)[at] = data.draw(st.sampled_from([0, 1, 2, 255]))
        else:
            values[at] = data.draw(st.sampled_from([-1, 0, 7, np.iinfo(dtype).max, np.iinfo(dtype).min]))
    arrays[index] = values.tobytes()
    _assert_agrees(header, arrays)


@settings(max_examples=250, deadline=None)
@given(st.sampled_from(ARRAY_BASES), st.data())
def test_reshaped_arrays_agree(base: WireModel, data: st.DataObject) -> None:
    """Another rank, a wrong fixed axis (position [B,3]) or batch, with bytes to match or not."""
    header, arrays = _parts(base)
    index = data.draw(st.integers(0, len(arrays) - 1))
    slot = _array_slots(header)[index]
    shape = list(slot["shape"])
    change = data.draw(st.sampled_from(["axis", "axis", "append", "drop", "any"]))
    if change == "axis":
        shape[data.draw(st.integers(0, len(shape) - 1))] = data.draw(st.integers(0, 5))
    elif change == "append":
        shape.append(1)
    elif change == "drop":
        shape.pop()
    else:
        shape = data.draw(st.lists(st.integers(0, 5), max_size=4))
    if data.draw(st.booleans()):
        slot["dtype"] = data.draw(st.sampled_from(["<f4", "<i4", "<i8", "|b1", "<f8", ">f4", "x"]))
    itemsize = np.dtype(slot["dtype"]).itemsize if slot["dtype"] in ALLOWED else 4
    slot["shape"] = shape
    arrays[index] = bytes(max(0, int(np.prod(shape)) * itemsize + data.draw(st.sampled_from([0, 0, 1, -1]))))
    _assert_agrees(header, arrays)


@pytest.mark.parametrize(
    ("base", "path", "shape"),
    [(0, "poses.position", [2, 4]), (0, "poses.position", [2, 2]), (0, "poses.position", [2, 3, 1]),
     (0, "poses.yaw", [3]), (0, "depth", [2, 8, 5]), (0, "env_ids", [1]), (3, "actions", [3, 5])],
)  # fmt: skip
def test_wrong_shapes_with_matching_bytes_are_refused(base: int, path: str, shape: list[int]) -> None:
    """Fixed axes, rank and cross-field sizes are checked even when the byte count fits the shape."""
    header, arrays = _parts(BASES[base])
    target: Any = header
    for key in path.split("."):
        target = target[key]
    index = next(i for i, slot in enumerate(_array_slots(header)) if slot is target)
    target["shape"] = shape
    arrays[index] = bytes(int(np.prod(shape)) * np.dtype(target["dtype"]).itemsize)
    assert _assert_agrees(header, arrays) == "error"


@pytest.mark.parametrize(
    ("value", "accepted"),
    [(-0.0, True), (0.0, True), (1.0, True), (1.0000001, False), (-1e-45, False), (math.nan, False),
     (math.inf, False), (-math.inf, False)],
)  # fmt: skip
def test_depth_range_known_answers(value: float, accepted: bool) -> None:
    """depth must lie in [0, 1]: -0.0 is in, the smallest step outside is out, and so is NaN."""
    header, arrays = _parts(sample_distance_matrix(batch=2, azimuth=16, elevation=8, seed=1))
    depth = np.frombuffer(arrays[1], dtype=np.float32).copy()  # frame 1: depth (256 values)
    depth[77] = value
    arrays[1] = depth.tobytes()
    assert _assert_agrees(header, arrays) == ("ok" if accepted else "error")


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(BASES), st.data())
def test_bit_flipped_headers_agree(base: WireModel, data: st.DataObject) -> None:
    header, arrays = _parts(base)
    packed = bytearray(msgpack.packb(header))
    for _ in range(data.draw(st.integers(1, 3))):
        bit = data.draw(st.integers(0, len(packed) * 8 - 1))
        packed[bit // 8] ^= 1 << (bit % 8)
    try:
        flipped = msgpack.unpackb(bytes(packed))
    except (ValueError, TypeError):  # not msgpack any more: the decoder must refuse it too
        with pytest.raises(ContractError):
            decode_frames([bytes(packed), *arrays])
        return
    if isinstance(flipped, dict):
        _assert_agrees(flipped, arrays)
