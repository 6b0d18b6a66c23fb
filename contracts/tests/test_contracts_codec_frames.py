"""Multipart codec: identity round trips, zero copy both ways, and hostile frames rejected."""

from __future__ import annotations

import contextlib
from typing import Any

import msgpack
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from navi_contracts import (
    ContractError,
    ContractLimits,
    DistanceMatrix,
    WireModel,
    decode,
    encode,
)
from navi_contracts import testing as strategies
from navi_contracts.codec_frames import decode_frames, encode_frames
from navi_contracts.samples import sample_distance_matrix, sample_telemetry


@settings(max_examples=60)
@given(strategies.wire_models())
def test_frames_round_trip_is_identity_and_agrees_with_single_payload(model: WireModel) -> None:
    frames = encode_frames(model)
    decoded = decode_frames([bytes(frame) for frame in frames])
    assert decoded == model
    assert decode(encode(model)) == decoded


def test_models_without_arrays_encode_to_the_single_payload() -> None:
    event = sample_telemetry(4)
    assert encode_frames(event) == [encode(event)]


def test_encoding_and_decoding_do_not_copy_arrays() -> None:
    model = sample_distance_matrix(batch=2, azimuth=8, elevation=4)
    frames = encode_frames(model)
    assert any(np.shares_memory(np.frombuffer(frame, np.uint8), model.depth) for frame in frames[1:])
    decoded = decode_frames(frames, expected=DistanceMatrix)
    assert np.shares_memory(decoded.depth, model.depth)
    assert not decoded.depth.flags.writeable


def _frames_with(meta_overrides: dict[str, Any]) -> list[bytes]:
    frames = [
        bytes(frame) for frame in encode_frames(sample_distance_matrix(batch=1, azimuth=2, elevation=2))
    ]
    meta = msgpack.unpackb(frames[0])
    for path, value in meta_overrides.items():
        target = meta
        keys = path.split("__")
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value
    return [msgpack.packb(meta), *frames[1:]]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"depth__frame": 99}, "frame index 99 is invalid"),
        ({"depth__frame": -1}, "frame index -1 is invalid"),
        ({"depth__frame": "0"}, "frame index '0' is invalid"),
        ({"semantic__frame": 1}, "already used"),
        ({"depth__extra": 1}, "keys dtype, shape, frame"),
        ({"depth__dtype": "<f8"}, "dtype must be float32, got float64"),
        ({"depth__shape": [1, 2, 3]}, "needs 24"),
        ({"schema_version": 3}, "expected 2, got 3"),
        ({"kind": "action"}, "unknown message kind|Extra inputs|expected kind"),
    ],
)
def test_bad_metadata_is_rejected(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ContractError, match=message):
        decode_frames(_frames_with(overrides))


def test_frame_count_rules() -> None:
    frames = [
        bytes(frame) for frame in encode_frames(sample_distance_matrix(batch=1, azimuth=2, elevation=2))
    ]
    with pytest.raises(ContractError, match="1 array frames were not referenced"):
        decode_frames([*frames, b"spare"])
    with pytest.raises(ContractError, match="frame index"):
        decode_frames(frames[:-1])
    with pytest.raises(ContractError, match="expected 1 to 65 frames, got 0"):
        decode_frames([])
    with pytest.raises(ContractError, match="expected 1 to 65 frames"):
        decode_frames([frames[0]] + [b""] * 100)
    with pytest.raises(ContractError, match="exceeds the limit of 64"):
        decode_frames(frames, limits=ContractLimits(max_message_bytes=64))


def test_oversized_metadata_is_refused_before_parsing() -> None:
    with pytest.raises(ContractError, match="metadata frame of 1048577 bytes exceeds"):
        decode_frames([b"\x00" * (1 << 20 | 1)])


def test_binary_in_metadata_is_refused() -> None:
    with pytest.raises(ContractError, match=r"malformed metadata frame: .*max_bin_len"):
        decode_frames([msgpack.packb({"kind": "error_reply", "code": b"bin", "message": "m"})])


@settings(max_examples=200)
@given(st.binary(max_size=300), st.lists(st.binary(max_size=64), max_size=3))
def test_random_frames_raise_only_contract_error(meta: bytes, rest: list[bytes]) -> None:
    with contextlib.suppress(ContractError):
        encode(decode_frames([meta, *rest]))  # anything accepted must be a valid, encodable model


@settings(max_examples=150)
@given(st.data())
def test_bit_flipped_metadata_raises_only_contract_error(data: st.DataObject) -> None:
    frames = [
        bytes(frame) for frame in encode_frames(sample_distance_matrix(batch=1, azimuth=3, elevation=2))
    ]
    meta = bytearray(frames[0])
    bit = data.draw(st.integers(0, len(meta) * 8 - 1))
    meta[bit // 8] ^= 1 << (bit % 8)
    with contextlib.suppress(ContractError):
        encode(decode_frames([bytes(meta), *frames[1:]]))  # accepted => valid and encodable
