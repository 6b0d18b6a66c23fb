"""Decoder robustness: untrusted bytes raise only ContractError, fast, without big allocations."""

from __future__ import annotations

import contextlib
import struct
import time
import tracemalloc
from typing import Any

import msgpack
import pytest
import wire_strategies as strategies
from hypothesis import given, settings
from hypothesis import strategies as st

from navi_contracts import (
    ContractError,
    ContractLimits,
    DistanceMatrix,
    WireModel,
    decode,
    decode_frames,
    encode,
    encode_frames,
)
from navi_contracts.codec import MAX_HEADER_BYTES
from navi_contracts.samples import sample_distance_matrix, sample_step_result, sample_telemetry

SMALL_MODELS: list[WireModel] = [
    sample_distance_matrix(batch=2, azimuth=8, elevation=4),
    sample_step_result(batch=2, azimuth=4, elevation=2),
    sample_telemetry(3),
]
SMALL_PAYLOADS = [encode(model) for model in SMALL_MODELS]


def _accepted_is_valid(decoder: Any, data: Any) -> WireModel | None:
    """Decoding either succeeds with a valid model or raises ContractError; nothing else."""
    try:
        model: WireModel = decoder(data)
    except ContractError:
        return None
    assert decode(encode(model)) == model  # whatever was accepted is a valid model that encodes again
    return model


def _matrix_frames(**overrides: Any) -> list[bytes]:
    """A small DistanceMatrix's frames, its header edited (``a__b`` sets header[a][b])."""
    frames = [bytes(f) for f in encode_frames(sample_distance_matrix(batch=1, azimuth=2, elevation=2))]
    header = msgpack.unpackb(frames[0])
    for path, value in overrides.items():
        target = header
        keys = path.split("__")
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value
    return [msgpack.packb(header), *frames[1:]]


# Array frames of the matrix above, in header order.
ENV_IDS, DEPTH, SEMANTIC, VALID_MASK, DELTA, POSITION, YAW, EPISODE_IDS = range(1, 9)


@settings(max_examples=300)
@given(st.binary(max_size=512))
def test_random_bytes_raise_only_contract_error(data: bytes) -> None:
    _accepted_is_valid(decode, data)
    _accepted_is_valid(lambda header: decode_frames([header]), data)
    _accepted_is_valid(decode, b"NAVI\x01\x00\x00\x00" + struct.pack("<Q", len(data)) + data)


@settings(max_examples=200)
@given(st.binary(max_size=300), st.lists(st.binary(max_size=64), max_size=3))
def test_random_frames_raise_only_contract_error(header: bytes, rest: list[bytes]) -> None:
    _accepted_is_valid(decode_frames, [header, *rest])


@settings(max_examples=200)
@given(st.sampled_from(SMALL_PAYLOADS), st.data())
def test_truncated_payloads_are_rejected(payload: bytes, data: st.DataObject) -> None:
    cut = data.draw(st.integers(0, len(payload) - 1))
    with pytest.raises(ContractError):
        decode(payload[:cut])


@settings(max_examples=300)
@given(st.sampled_from(SMALL_PAYLOADS), st.data())
def test_bit_flipped_payloads_raise_only_contract_error(payload: bytes, data: st.DataObject) -> None:
    flipped = bytearray(payload)
    for _ in range(data.draw(st.integers(1, 4))):
        bit = data.draw(st.integers(0, len(flipped) * 8 - 1))
        flipped[bit // 8] ^= 1 << (bit % 8)
    _accepted_is_valid(decode, bytes(flipped))


@settings(max_examples=200)
@given(st.sampled_from(SMALL_MODELS), st.data())
def test_bit_flipped_headers_raise_only_contract_error(model: WireModel, data: st.DataObject) -> None:
    frames = [bytes(frame) for frame in encode_frames(model)]
    header = bytearray(frames[0])
    for _ in range(data.draw(st.integers(1, 3))):
        bit = data.draw(st.integers(0, len(header) * 8 - 1))
        header[bit // 8] ^= 1 << (bit % 8)
    _accepted_is_valid(decode_frames, [bytes(header), *frames[1:]])


@settings(max_examples=100)
@given(strategies.wire_models(), st.binary(min_size=1, max_size=8))
def test_trailing_bytes_are_rejected(model: WireModel, junk: bytes) -> None:
    with pytest.raises(ContractError, match="trailing bytes"):
        decode(encode(model) + junk)


@settings(max_examples=100)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats() | st.text() | st.binary(),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
        max_leaves=20,
    ),
    st.lists(st.binary(max_size=16), max_size=2),
)
def test_arbitrary_msgpack_headers_raise_only_contract_error(document: Any, rest: list[bytes]) -> None:
    _accepted_is_valid(decode_frames, [msgpack.packb(document), *rest])


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"depth__dtype": "<f8"}, "depth: dtype must be float32, got float64"),
        ({"depth__dtype": ">f4"}, "dtype '>f4' is not allowed"),
        ({"depth__dtype": "O"}, "dtype 'O' is not allowed"),
        ({"depth__dtype": 7}, "dtype 7 is not allowed"),
        ({"depth__shape": [1, 2, 3]}, r"depth: frame has 16 bytes, shape \[1, 2, 3\] of float32 needs 24"),
        ({"depth__shape": [1, 4]}, "depth: expected 3 dimensions"),
        ({"depth__shape": 4}, "depth: expected 3 dimensions"),
        ({"depth__shape": [1, -2, -2]}, "non-negative ints"),
        ({"depth__shape": [1, 2.0, 2]}, "non-negative ints"),
        ({"depth": [1, 2]}, "depth: an array must be a map with keys dtype, shape"),
        ({"depth__extra": 1}, "depth: an array must be a map with keys dtype, shape"),
        ({"depth__data": "inline"}, "depth: an array must be a map with keys dtype, shape"),
        ({"semantic__shape": [1, 4, 1]}, "semantic: dimension Az=4"),
        ({"schema_version": 1}, "schema_version mismatch: expected 2, got 1"),
        ({"poses__schema_version": 3}, "poses: robot_pose schema_version mismatch: expected 2, got 3"),
        ({"kind": "telemetry"}, "unknown message kind 'telemetry'"),
        ({"colour": "red"}, "Extra inputs are not permitted"),
        ({"step_id": "many"}, "step_id"),
        ({"poses": {"kind": "action"}}, "poses: expected kind 'robot_pose'"),
        ({"poses": 5}, "poses: expected a robot_pose map"),
        ({"timestamp": b""}, "timestamp: unexpected binary value"),
    ],
)
def test_malformed_headers_are_named_in_the_error(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ContractError, match=message):
        decode_frames(_matrix_frames(**overrides))


@pytest.mark.parametrize(
    ("index", "data", "message"),
    [
        (VALID_MASK, b"\x02\x00\x01\x00", "valid_mask: bool data must be bytes 0 or 1"),
        (DEPTH, struct.pack("<4f", 0, 0, 0, 2.0), r"depth: must be <= 1.0"),
        (DELTA, struct.pack("<4f", 0, 0, float("nan"), 0), "delta_depth: must be finite"),
        (POSITION, struct.pack("<3f", 0, float("inf"), 0), "DistanceMatrix.poses.position: must be finite"),
    ],
)
def test_bad_array_values_are_named_in_the_error(index: int, data: bytes, message: str) -> None:
    frames = _matrix_frames()
    frames[index] = data
    with pytest.raises(ContractError, match=message):
        decode_frames(frames)


def test_a_missing_array_is_named() -> None:
    frames = _matrix_frames(env_ids=None)
    del frames[ENV_IDS]
    with pytest.raises(ContractError, match="env_ids"):
        decode_frames(frames)


def test_frame_count_rules() -> None:
    frames = _matrix_frames()
    with pytest.raises(ContractError, match="1 array frames were not referenced"):
        decode_frames([*frames, b"spare"])
    with pytest.raises(ContractError, match="episode_ids: frame has no frame"):
        decode_frames(frames[:-1])
    with pytest.raises(ContractError, match="expected 1 to 65 frames, got 0"):
        decode_frames([])
    with pytest.raises(ContractError, match="expected 1 to 65 frames"):
        decode_frames([frames[0]] + [b""] * 100)
    with pytest.raises(ContractError, match="exceeds the limit of 64"):
        decode_frames(frames, limits=ContractLimits(max_message_bytes=64))
    with pytest.raises(ContractError, match="expected 1 to 65 frames, got 66"):
        decode(b"NAVI" + struct.pack("<I", 66) + bytes(8 * 66))


@pytest.mark.parametrize(
    "shape", [[1, 2**31, 2**31], [2**62, 2**62, 2**62], [1, 2**20, 2**20], [10**6, 1, 1], [1, 2**64 - 1, 1]]
)
def test_huge_declared_shapes_fail_fast_without_allocating(shape: list[int]) -> None:
    frames = _matrix_frames(depth__shape=shape)
    tracemalloc.start()
    started = time.perf_counter()
    try:
        with pytest.raises(ContractError, match=r"elements, limit is|batch .* exceeds|needs"):
            decode_frames(frames)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - started < 0.5
    assert peak < 1_000_000


@pytest.mark.parametrize(
    ("header", "what"),
    [
        (b"\xdf\xff\xff\xff\xff", "exceeds max_map_len"),  # map32 claiming 2^32-1 entries
        (b"\xdd\x00\x00\x08\x00" + bytes(2048), "exceeds max_array_len"),  # 2048 entries, limit 1024
        (b"\xc6\xff\xff\xff\xff", "malformed header frame"),  # bin32 claiming 4 GiB
        (b"\xc4\x01\x00", "exceeds max_bin_len"),  # the header holds no binary data
        (b"\xdb\x00\x01\x86\xa0" + b"a" * 100_000, "exceeds max_str_len"),  # limit 65536 bytes
        (b"\x91" * 2000 + b"\xc0", "malformed header frame"),  # nesting deeper than the unpacker's stack
        (b"\xc7\x01\x05\x00", "malformed header frame"),  # ext types are refused
        (b"\xc1", "malformed header frame"),  # never-used byte
        (b"\x81\x01\x02", "malformed header frame"),  # map keys must be strings
        (b"\xa2\xff\xfe", "malformed header frame"),  # not UTF-8
        (b"", "malformed header frame"),
        (b"\x80\xc0", "malformed header frame"),  # extra data after the header
        (b"\x92\x01\x02", "header must be a msgpack map, got list"),
    ],
)
def test_hostile_headers_are_rejected_before_allocating(header: bytes, what: str) -> None:
    tracemalloc.start()
    try:
        with pytest.raises(ContractError, match=what):
            decode_frames([header])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000


def test_header_size_is_capped_before_parsing() -> None:
    """The header bounds every Python object a message creates: a bigger one is not even parsed."""
    oversized = b"\x90" * (MAX_HEADER_BYTES + 1)
    tracemalloc.start()
    try:
        with pytest.raises(ContractError, match=f"header frame of {MAX_HEADER_BYTES + 1} bytes exceeds"):
            decode_frames([oversized])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000
    many = msgpack.packb([[0] * 1000 for _ in range(20)])  # each container within limits
    with pytest.raises(ContractError, match="header must be a msgpack map"):
        decode_frames([many])


def test_limits_are_applied() -> None:
    model = sample_distance_matrix(batch=3, azimuth=8, elevation=4)
    payload, frames = encode(model), encode_frames(model)
    with pytest.raises(ContractError, match="exceeds the limit of 100"):
        decode(payload, limits=ContractLimits(max_message_bytes=100))
    with pytest.raises(ContractError, match="limit is 50"):
        decode_frames(frames, limits=ContractLimits(max_array_elements=50))
    with pytest.raises(ContractError, match="batch 3 exceeds the limit of 2"):
        decode(payload, limits=ContractLimits(max_batch=2))
    event = encode(sample_telemetry())
    with pytest.raises(ContractError, match="payload: more than 2 entries"):
        decode(event, limits=ContractLimits(max_payload_entries=2))
    with pytest.raises(ContractError, match=r"exceeds max_str_len\(4\)"):
        decode(event, limits=ContractLimits(max_string_bytes=4))
    assert isinstance(decode(payload, limits=ContractLimits(max_batch=3)), DistanceMatrix)


@pytest.mark.parametrize(
    ("shape", "message"),
    [
        (
            [10**6, 0, 1],
            r"DistanceMatrix\.depth: batch 1000000 exceeds the limit of 4096",
        ),  # empty, too many rows
        (
            [1, 2**12, 2**12],
            r"DistanceMatrix\.depth: shape \[1, 4096, 4096\] has 16777216 elements, limit is",
        ),
        ([1, 2, 3], r"DistanceMatrix\.depth: frame has 16 bytes, shape \[1, 2, 3\] of float32 needs 24"),
        ([1, 2, -2], r"DistanceMatrix\.depth: shape must hold non-negative ints, got \[1, 2, -2\]"),
        ([1, True, 2], r"DistanceMatrix\.depth: shape must hold non-negative ints, got \[1, True, 2\]"),
    ],
)
def test_each_failed_array_check_is_named_with_its_path(shape: list[Any], message: str) -> None:
    """The decoder checks arrays inline and says afterwards which check failed: the first in order."""
    with pytest.raises(ContractError, match=message):
        decode_frames(_matrix_frames(depth__shape=shape), limits=ContractLimits(max_array_elements=2**24 - 1))


def test_non_buffer_input_is_a_contract_error() -> None:
    with pytest.raises(ContractError, match="expected bytes"):
        decode("not bytes")  # type: ignore[arg-type]
    with pytest.raises(ContractError, match="expected bytes"):
        decode_frames([b"\x80", 5])  # type: ignore[list-item]
    with pytest.raises(ContractError, match="not a Navi message"):
        decode(msgpack.packb({"kind": "error_reply"}))
    with contextlib.suppress(ContractError):
        decode(memoryview(b"NAVI" * 4)[::2])  # a strided buffer: refused, never misread
