"""Decoder robustness: untrusted bytes raise only ContractError, fast, without big allocations."""

from __future__ import annotations

import struct
import time
import tracemalloc
from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from navi_contracts import ContractError, ContractLimits, DistanceMatrix, WireModel, decode, encode
from navi_contracts import testing as strategies
from navi_contracts.samples import sample_distance_matrix, sample_step_result, sample_telemetry

SMALL_PAYLOADS = [
    encode(sample_distance_matrix(batch=2, azimuth=8, elevation=4)),
    encode(sample_step_result(batch=2, azimuth=4, elevation=2)),
    encode(sample_telemetry(3)),
]


def _decode_or_contract_error(data: bytes) -> WireModel | None:
    """Decoding either succeeds with a valid model or raises ContractError; nothing else."""
    try:
        model = decode(data)
    except ContractError:
        return None
    encode(model)  # whatever was accepted is a valid model that encodes again
    return model


def _matrix_fields(**overrides: Any) -> bytes:
    """A hand-built DistanceMatrix payload (via the reference msgpack packer) with overrides."""
    plain = msgpack.unpackb(encode(sample_distance_matrix(batch=1, azimuth=2, elevation=2, with_delta=False)))
    for path, value in overrides.items():
        target = plain
        keys = path.split("__")
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value
    return msgpack.packb(plain)


@settings(max_examples=300)
@given(st.binary(max_size=512))
def test_random_bytes_raise_only_contract_error(data: bytes) -> None:
    _decode_or_contract_error(data)


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
    _decode_or_contract_error(bytes(flipped))


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
    )
)
def test_arbitrary_msgpack_documents_raise_only_contract_error(document: Any) -> None:
    _decode_or_contract_error(msgpack.packb(document))


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"depth__dtype": "<f8"}, "depth: dtype must be float32, got float64"),
        ({"depth__dtype": ">f4"}, "dtype '>f4' is not allowed"),
        ({"depth__dtype": "O"}, "dtype 'O' is not allowed"),
        ({"depth__dtype": 7}, "dtype 7 is not allowed"),
        ({"depth__shape": [1, 2, 3]}, "depth: data has 16 bytes, shape \\[1, 2, 3\\] of float32 needs 24"),
        ({"depth__shape": [1, 4]}, "depth: expected 3 dimensions"),
        ({"depth__shape": [1, -2, -2]}, "non-negative ints"),
        ({"depth__shape": [1, 2.0, 2]}, "non-negative ints"),
        ({"depth__data": "text"}, "depth: data must be msgpack bin"),
        ({"depth": [1, 2]}, "depth: an array must be a map"),
        ({"depth__extra": 1}, "depth: an array must be a map with keys dtype, shape, data"),
        ({"semantic__shape": [1, 3, 2], "semantic__data": b"\0" * 24}, "semantic: dimension Az=3"),
        ({"valid_mask__data": b"\x02\x00\x01\x00"}, "bool data must be bytes 0 or 1"),
        ({"schema_version": 1}, "schema_version mismatch: expected 2, got 1"),
        ({"kind": "telemetry"}, "unknown message kind 'telemetry'"),
        ({"colour": "red"}, "Extra inputs are not permitted"),
        ({"step_id": "many"}, "step_id"),
        ({"depth__data": struct.pack("<4f", 0, 0, 0, 2.0)}, "depth: must be <= 1.0"),
        ({"poses": {"kind": "action"}}, "poses: expected kind 'robot_pose'"),
        ({"env_ids": None}, "env_ids"),
    ],
)
def test_malformed_fields_are_named_in_the_error(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ContractError, match=message):
        decode(_matrix_fields(**overrides))


def _huge_shape_payload(shape: list[int]) -> bytes:
    return _matrix_fields(depth__shape=shape)


@pytest.mark.parametrize(
    "shape", [[1, 2**31, 2**31], [2**62, 2**62, 2**62], [1, 2**20, 2**20], [10**6, 1, 1]]
)
def test_huge_declared_shapes_fail_fast_without_allocating(shape: list[int]) -> None:
    payload = _huge_shape_payload(shape)
    tracemalloc.start()
    started = time.perf_counter()
    try:
        with pytest.raises(ContractError, match=r"elements, limit is|batch .* exceeds|needs"):
            decode(payload)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - started < 0.5
    assert peak < 1_000_000


@pytest.mark.parametrize(
    ("header", "what"),
    [
        (b"\xdf\xff\xff\xff\xff", "container of 4294967295 entries"),  # map32 with 2^32-1 entries
        (b"\xdd\x00\x00\x02\x00", "too few bytes left"),  # array32 of 512, nothing after
        (b"\xc6\xff\xff\xff\xff", "truncated"),  # bin32 of 4 GiB
        (b"\xdb\x00\x10\x00\x00", "exceeds the limit"),  # str32 of 1 MiB
        (b"\x91" * 100 + b"\xc0", "nesting deeper"),  # 100 nested arrays
        (b"\xc7\x01\x05\x00", "unsupported type byte 0xc7"),  # ext types are refused
        (b"\xc1", "unsupported type byte 0xc1"),  # never-used byte
        (b"\x81\x01\x02", "map key must be a string"),
        (b"\x82\xa1k\x01\xa1k\x02", "duplicate map key 'k'"),
        (b"\xa2\xff\xfe", "not UTF-8"),
        (b"", "truncated"),
    ],
)
def test_hostile_framing_is_rejected_before_allocating(header: bytes, what: str) -> None:
    tracemalloc.start()
    try:
        with pytest.raises(ContractError, match=what):
            decode(header)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000


def test_total_container_entries_are_capped() -> None:
    """Many small containers: each within limits, together far more than any model needs."""
    document = msgpack.packb([[0] * 1000 for _ in range(20)])
    tracemalloc.start()
    try:
        with pytest.raises(ContractError, match="more container entries in total"):
            decode(document)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000


def test_limits_are_applied() -> None:
    payload = encode(sample_distance_matrix(batch=3, azimuth=8, elevation=4))
    with pytest.raises(ContractError, match="exceeds the limit of 100"):
        decode(payload, limits=ContractLimits(max_message_bytes=100))
    with pytest.raises(ContractError, match="limit is 50"):
        decode(payload, limits=ContractLimits(max_array_elements=50))
    with pytest.raises(ContractError, match="batch 3 exceeds the limit of 2"):
        decode(payload, limits=ContractLimits(max_batch=2))
    event = encode(sample_telemetry())
    with pytest.raises(ContractError, match="payload: more than 2 entries"):
        decode(event, limits=ContractLimits(max_payload_entries=2))
    with pytest.raises(ContractError, match=r"string of .* bytes exceeds the limit of 4"):
        decode(event, limits=ContractLimits(max_string_bytes=4))
    assert isinstance(decode(payload, limits=ContractLimits(max_batch=3)), DistanceMatrix)


def test_non_buffer_input_is_a_contract_error() -> None:
    with pytest.raises(ContractError, match="expected bytes"):
        decode("not bytes")  # type: ignore[arg-type]
