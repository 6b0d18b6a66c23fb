"""The decoder's fast path (no pydantic) accepts and rejects exactly what the slow path does.

Every payload is decoded twice, with :data:`navi_contracts.fast_build.FAST_PATH` on and off:
both must raise ``ContractError`` with the same message, or both return equal models with the same
fields set, value types and read-only arrays. Payloads are valid models, and valid models with one
field replaced (tricky scalars, array data with NaN, -0.0, values just past a bound, bool bytes 2),
a field dropped or added, and bit flips.
"""

from __future__ import annotations

import math
import re
import struct
from typing import Any

import msgpack
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from navi_contracts import (
    ContractLimits,
    DistanceMatrix,
    WireModel,
    codec_template,
    decode,
    encode,
    fast_build,
)
from navi_contracts import testing as strategies
from navi_contracts.codec_common import default_limits
from navi_contracts.codec_frames import decode_frames, encode_frames
from navi_contracts.codec_testing import assert_paths_agree
from navi_contracts.fast_arrays import inline_data
from navi_contracts.models import MODELS
from navi_contracts.msgpack_view import MsgpackView
from navi_contracts.samples import sample_action, sample_distance_matrix, sample_step_result, sample_telemetry

TRICKY_SCALARS = [
    0, 1, 2, -1, 255, 2**31, 2**63 - 1, 2**63, 2**64 - 1, -(2**63), 0.0, -0.0, 1.5, 2.0, -1.0,
    math.nan, math.inf, -math.inf, True, False, None, "", "a", "a" * 300, "actor.ok", "Bad Name",
    [], [1, 2], [0, 4], [8, 4], [1, 2, 3], [1.0, 2.0], {}, {"a": 1.0}, {"a": 1}, {"a": "x"}, {1: 1.0},
    b"", b"\x00" * 8,
]  # fmt: skip
FLOAT_VALUES = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.0000001, -1.0000001, 2.0, 1e-45, -1e-45, 1e30,
                math.nan, -math.nan, math.inf, -math.inf]  # fmt: skip
BOOL_BYTES = [0, 1, 2, 255]
BASES: list[WireModel] = [
    sample_distance_matrix(batch=2, azimuth=8, elevation=4, seed=3),
    sample_distance_matrix(batch=1, azimuth=4, elevation=2, seed=4, with_delta=False),
    sample_step_result(batch=2, azimuth=4, elevation=2),
    sample_action(batch=3),
    sample_telemetry(5),
]
ARRAY_BASES = BASES[:4]


def _plain(model: WireModel) -> dict[str, Any]:
    """The payload as plain msgpack objects (arrays as {dtype, shape, data: bytes})."""
    return msgpack.unpackb(encode(model))  # type: ignore[no-any-return]


def _array_maps(plain: dict[str, Any], prefix: str = "") -> list[tuple[dict[str, Any], str]]:
    found = []
    for key, value in plain.items():
        if isinstance(value, dict) and "dtype" in value and "data" in value:
            found.append((value, prefix + key))
        elif isinstance(value, dict) and "kind" in value:
            found.extend(_array_maps(value, f"{prefix}{key}."))
    return found


@settings(max_examples=60, deadline=None)
@given(strategies.wire_models())
def test_valid_models_decode_identically(model: WireModel) -> None:
    payload = encode(model)
    frames = encode_frames(model)
    assert assert_paths_agree(lambda: decode(payload)) == "ok"
    assert assert_paths_agree(lambda: decode(bytearray(payload))) == "ok"  # writable buffer
    assert assert_paths_agree(lambda: decode_frames(frames)) == "ok"


@pytest.mark.parametrize("model_cls", MODELS)
def test_every_model_has_a_fast_path(model_cls: type[WireModel]) -> None:
    """A model the fast builder cannot reproduce would silently lose the speed-up."""
    assert fast_build.builder_for(model_cls) is not None


def test_valid_observation_takes_the_fast_path() -> None:
    payload = encode(sample_distance_matrix(batch=2, azimuth=8, elevation=4))
    raw = MsgpackView(memoryview(payload), 1024, 1024).read_all()
    model = fast_build.fast_decode(DistanceMatrix, raw, default_limits(), inline_data)
    assert model is not None and model == decode(payload)


@settings(max_examples=250, deadline=None)
@given(st.sampled_from(BASES), st.data())
def test_replaced_scalar_fields_agree(base: WireModel, data: st.DataObject) -> None:
    plain = _plain(base)
    targets = [plain] + [value for value in plain.values() if isinstance(value, dict) and "kind" in value]
    target = data.draw(st.sampled_from(targets))
    key = data.draw(st.sampled_from([*sorted(target), "unknown_field"]))
    action = data.draw(st.sampled_from(["replace", "drop"]))
    if action == "drop":
        target.pop(key, None)
    else:
        target[key] = data.draw(st.sampled_from(TRICKY_SCALARS))
    payload = msgpack.packb(plain, use_bin_type=True)
    assert_paths_agree(lambda: decode(payload))


@settings(max_examples=250, deadline=None)
@given(st.sampled_from(ARRAY_BASES), st.data())
def test_replaced_array_values_agree(base: WireModel, data: st.DataObject) -> None:
    plain = _plain(base)
    arrays = _array_maps(plain)
    array_map, _ = data.draw(st.sampled_from(arrays))
    dtype = np.dtype(array_map["dtype"])
    values = np.frombuffer(array_map["data"], dtype=dtype).copy()
    if values.size:
        index = data.draw(st.integers(0, values.size - 1))
        if dtype.kind == "f":
            values[index] = data.draw(st.sampled_from(FLOAT_VALUES))
        elif dtype.kind == "b":
            values.view(np.uint8)[index] = data.draw(st.sampled_from(BOOL_BYTES))
        else:
            values[index] = data.draw(st.sampled_from([-1, 0, 7, np.iinfo(dtype).max, np.iinfo(dtype).min]))
    array_map["data"] = values.tobytes()
    payload = msgpack.packb(plain, use_bin_type=True)
    assert_paths_agree(lambda: decode(payload))


@settings(max_examples=250, deadline=None)
@given(st.sampled_from(ARRAY_BASES), st.data())
def test_reshaped_arrays_agree(base: WireModel, data: st.DataObject) -> None:
    """Shapes with another rank, a wrong fixed axis (position [B,3]) or batch, data to match or not."""
    plain = _plain(base)
    array_map, _ = data.draw(st.sampled_from(_array_maps(plain)))
    shape = list(array_map["shape"])
    change = data.draw(st.sampled_from(["axis", "axis", "append", "drop", "any"]))
    if change == "axis":
        shape[data.draw(st.integers(0, len(shape) - 1))] = data.draw(st.integers(0, 5))
    elif change == "append":
        shape.append(1)
    elif change == "drop":
        shape.pop()
    else:
        shape = data.draw(st.lists(st.integers(0, 5), max_size=4))
    itemsize = np.dtype(array_map["dtype"]).itemsize
    size = int(np.prod(shape)) * itemsize + data.draw(st.sampled_from([0, 0, 0, 1, -1]))
    array_map["shape"] = shape
    array_map["data"] = bytes(max(size, 0))
    if data.draw(st.booleans()):
        array_map["dtype"] = data.draw(st.sampled_from(["<f4", "<i4", "<i8", "|b1", "<f8", ">f4", "x"]))
    payload = msgpack.packb(plain, use_bin_type=True)
    assert_paths_agree(lambda: decode(payload))


@pytest.mark.parametrize(
    ("base", "path", "shape"),
    [(0, "poses.position", [2, 4]), (0, "poses.position", [2, 2]), (0, "poses.position", [2, 3, 1]),
     (0, "poses.yaw", [3]), (0, "depth", [2, 8, 5]), (0, "env_ids", [1]), (3, "actions", [3, 5])],
)  # fmt: skip
def test_wrong_shapes_with_matching_data_agree(base: int, path: str, shape: list[int]) -> None:
    """Fixed axes, rank and cross-field sizes are checked even when the byte count fits the shape."""
    plain = _plain(BASES[base])
    target = plain
    for key in path.split("."):
        target = target[key]
    target["shape"] = shape
    target["data"] = bytes(int(np.prod(shape)) * np.dtype(target["dtype"]).itemsize)
    payload = msgpack.packb(plain, use_bin_type=True)
    assert assert_paths_agree(lambda: decode(payload)) == "error"


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(BASES), st.data())
def test_bit_flipped_payloads_agree(base: WireModel, data: st.DataObject) -> None:
    flipped = bytearray(encode(base))
    for _ in range(data.draw(st.integers(1, 3))):
        bit = data.draw(st.integers(0, len(flipped) * 8 - 1))
        flipped[bit // 8] ^= 1 << (bit % 8)
    payload = bytes(flipped)
    assert_paths_agree(lambda: decode(payload))


@pytest.mark.parametrize(
    ("value", "accepted"),
    [(-0.0, True), (0.0, True), (1.0, True), (1.0000001, False), (-1e-45, False), (math.nan, False),
     (math.inf, False), (-math.inf, False)],
)  # fmt: skip
def test_depth_range_known_answers(value: float, accepted: bool) -> None:
    """The one-pass integer range check must flag exactly the values the float check rejects."""
    plain = _plain(sample_distance_matrix(batch=2, azimuth=16, elevation=8, seed=1))
    depth = np.frombuffer(plain["depth"]["data"], dtype=np.float32).copy()  # 256 values: the large path
    depth[77] = value
    plain["depth"]["data"] = depth.tobytes()
    payload = msgpack.packb(plain, use_bin_type=True)
    assert assert_paths_agree(lambda: decode(payload)) == ("ok" if accepted else "error")


# --------------------------------------------------------------------------- layout templates

LARGE_BASES: list[WireModel] = [
    sample_distance_matrix(batch=2, azimuth=16, elevation=32, seed=5),
    sample_step_result(batch=2, azimuth=16, elevation=32, seed=6),
]


def _same_structure(left: Any, right: Any) -> bool:
    """Deep equality of decoded maps; memoryviews must view the same buffer with the same bytes."""
    if type(left) is not type(right):
        return False
    if isinstance(left, dict):
        return list(left) == list(right) and all(_same_structure(left[k], right[k]) for k in left)
    if isinstance(left, list):
        return len(left) == len(right) and all(
            _same_structure(a, b) for a, b in zip(left, right, strict=True)
        )
    if isinstance(left, memoryview):
        return left.obj is right.obj and left.tobytes() == right.tobytes()
    both_nan = isinstance(left, float) and math.isnan(left) and math.isnan(right)
    return bool(left == right) or both_nan


def _layout_fields(payload: bytes) -> list[tuple[int, str, int]]:
    """(offset, struct code, width) of every field of the template learned from ``payload``."""
    codec_template.forget()
    codec_template.record(memoryview(payload), default_limits())
    template = codec_template._TEMPLATES[len(payload)]
    fields, offset = [], 0
    for size, code in re.findall(r"(\d*)([a-zA-Z])", template.layout.format.lstrip(">")):
        width = int(size or 1) if code in "sx" else struct.calcsize(">" + code)
        fields.append((offset, code, width))
        offset += width
    assert offset == len(payload)
    return fields


def _framing_positions(payload: bytes) -> list[int]:
    """Byte offsets the learned template does not skip (framing and numbers)."""
    return [
        position
        for offset, code, width in _layout_fields(payload)
        if code != "x"
        for position in range(offset, offset + width)
    ]


@pytest.mark.parametrize("model", LARGE_BASES, ids=lambda model: type(model).__name__)
def test_fixint_fields_only_take_fixints(model: WireModel) -> None:
    """A number stored in its type byte must not be read past its family (0x80 is a fixmap).

    Our encoder writes every scalar number as 9 bytes; other producers (msgpack.packb here) write
    small ints as fixints, and templates learn those too.
    """
    payload = msgpack.packb(
        _plain(
            model.model_copy(update={"request_id": 5} if hasattr(model, "request_id") else {"step_id": 5})
        ),
        use_bin_type=True,
    )
    fixints = [offset for offset, code, _ in _layout_fields(payload) if code in "Bb"]
    assert fixints
    for offset in fixints:
        for byte in (0x00, 0x7F, 0x80, 0x90, 0xA0, 0xC0, 0xCC, 0xDF, 0xE0, 0xFF):
            changed = bytearray(payload)
            changed[offset] = byte
            codec_template.record(memoryview(payload), default_limits())
            assert_paths_agree(lambda data=bytes(changed): decode(data))


@pytest.mark.parametrize("model", LARGE_BASES, ids=lambda model: type(model).__name__)
def test_template_parse_equals_the_reader(model: WireModel) -> None:
    codec_template.forget()
    payload = encode(model)
    decode(payload)
    assert codec_template.parse(memoryview(payload), default_limits()) is None  # learned when seen twice
    decode(payload)
    other = encode(model.model_copy(update={"timestamp": 1.5e9}))
    for data in (payload, other):
        view = memoryview(data)
        parsed = codec_template.parse(view, default_limits())
        assert parsed is not None
        read = MsgpackView(
            view, max_container=1024, max_str_bytes=default_limits().max_string_bytes
        ).read_all()
        assert _same_structure(parsed, read)
    assert decode(other) == model.model_copy(update={"timestamp": 1.5e9})


def test_template_serves_only_its_limits() -> None:
    payload = encode(LARGE_BASES[0])
    codec_template.record(memoryview(payload), default_limits())
    strict = ContractLimits(max_batch=1)
    assert codec_template.parse(memoryview(payload), strict) is None
    assert assert_paths_agree(lambda: decode(payload, limits=strict)) == "error"


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(range(len(LARGE_BASES))), st.data())
def test_framing_bit_flips_agree_with_a_learned_template(which: int, data: st.DataObject) -> None:
    payload = encode(LARGE_BASES[which])
    positions = _framing_positions(payload)
    flipped = bytearray(payload)
    for _ in range(data.draw(st.integers(1, 2))):
        position = data.draw(st.sampled_from(positions))
        flipped[position] ^= 1 << data.draw(st.integers(0, 7))
    changed = bytes(flipped)
    assert_paths_agree(lambda: decode(changed))
