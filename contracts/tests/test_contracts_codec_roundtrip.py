"""Property tests: decoding what was encoded gives the model back, in both forms, without copies.

The wire form is checked against the reference msgpack library and an independent reading of the
documented layout (header map, arrays as frames in header order, the one-buffer envelope).
"""

from __future__ import annotations

import struct
from typing import Any

import msgpack
import numpy as np
import pytest
import wire_strategies as strategies
from hypothesis import given, settings
from hypothesis import strategies as st

from navi_contracts import (
    MODELS,
    Action,
    ContractError,
    DistanceMatrix,
    ErrorReply,
    RobotPose,
    StepRequest,
    StepResult,
    TelemetryEvent,
    WireModel,
    decode,
    decode_frames,
    encode,
    encode_frames,
)
from navi_contracts.model_base import array_specs, nested_models
from navi_contracts.samples import sample_distance_matrix, sample_telemetry

ROUND_TRIP_STRATEGIES = {
    RobotPose: strategies.robot_poses(),
    DistanceMatrix: strategies.distance_matrices(),
    Action: strategies.actions(),
    StepRequest: strategies.step_requests(),
    StepResult: strategies.step_results(),
    TelemetryEvent: strategies.telemetry_events(),
    ErrorReply: strategies.error_replies(),
}


def _assert_arrays_kept(original: WireModel, decoded: WireModel) -> None:
    """Every array keeps dtype and shape and is read-only; nested models recursively."""
    for name in array_specs(type(original)):
        before, after = getattr(original, name), getattr(decoded, name)
        if before is None:
            assert after is None
            continue
        assert after.dtype == before.dtype, name
        assert after.shape == before.shape, name
        assert not after.flags.writeable, name
    for name in nested_models(type(original)):
        if getattr(original, name) is not None:
            _assert_arrays_kept(getattr(original, name), getattr(decoded, name))


def _split_by_hand(payload: bytes) -> list[bytes]:
    """The documented envelope, read without the codec: b"NAVI", u32 count, u64 lengths, frames."""
    magic, count = struct.unpack_from("<4sI", payload)
    assert magic == b"NAVI"
    lengths = struct.unpack_from(f"<{count}Q", payload, 8)
    frames, offset = [], 8 + 8 * count
    for length in lengths:
        assert offset % 8 == 0  # every frame starts 8-byte aligned
        frames.append(payload[offset : offset + length])
        offset += length + (-length % 8)
    assert offset == len(payload)
    return frames


def test_every_model_has_a_round_trip_strategy() -> None:
    assert set(ROUND_TRIP_STRATEGIES) == set(MODELS)


@pytest.mark.parametrize("model_cls", list(ROUND_TRIP_STRATEGIES), ids=lambda cls: cls.__name__)
def test_round_trip_is_identity(model_cls: type[WireModel]) -> None:
    @settings(max_examples=40)
    @given(ROUND_TRIP_STRATEGIES[model_cls])
    def check(model: WireModel) -> None:
        payload = encode(model)
        decoded = decode(payload, expected=model_cls)
        assert type(decoded) is model_cls
        assert decoded == model
        _assert_arrays_kept(model, decoded)
        assert encode(decoded) == payload  # canonical: re-encoding gives the same bytes
        from_frames = decode_frames([bytes(frame) for frame in encode_frames(model)], expected=model_cls)
        assert from_frames == model
        _assert_arrays_kept(model, from_frames)

    check()


def _array_maps(header: dict[str, Any]) -> list[dict[str, Any]]:
    found = []
    for value in header.values():
        if isinstance(value, dict) and set(value) == {"dtype", "shape"}:
            found.append(value)
        elif isinstance(value, dict):
            found.extend(_array_maps(value))
    return found


@settings(max_examples=25)
@given(strategies.distance_matrices())
def test_header_is_plain_msgpack_with_documented_array_maps(model: DistanceMatrix) -> None:
    """Oracle: the reference msgpack library reads the header; arrays are its frames, in order."""
    frames = encode_frames(model)
    header = msgpack.unpackb(frames[0])
    assert header["kind"] == "distance_matrix"
    assert header["schema_version"] == 2
    assert header["depth"] == {"dtype": "<f4", "shape": list(model.depth.shape)}
    assert header["valid_mask"] == {"dtype": "|b1", "shape": list(model.valid_mask.shape)}
    assert header["matrix_shape"] == list(model.matrix_shape)
    assert header["step_id"] == model.step_id
    arrays = [model.env_ids, model.depth, model.semantic, model.valid_mask, model.delta_depth]
    if model.poses is not None:
        arrays += [model.poses.position, model.poses.yaw]
    arrays.append(model.episode_ids)
    present = [array for array in arrays if array is not None]
    assert len(_array_maps(header)) == len(present) == len(frames) - 1
    assert [bytes(frame) for frame in frames[1:]] == [array.tobytes() for array in present]
    assert _split_by_hand(encode(model)) == [bytes(frame) for frame in frames]


def test_models_without_arrays_are_one_frame() -> None:
    event = sample_telemetry(4)
    frames = encode_frames(event)
    assert len(frames) == 1
    assert msgpack.unpackb(frames[0])["payload"] == event.payload


def test_encoding_and_decoding_do_not_copy_arrays() -> None:
    model = sample_distance_matrix(batch=2, azimuth=8, elevation=4)
    frames = encode_frames(model)
    assert any(np.shares_memory(np.frombuffer(frame, np.uint8), model.depth) for frame in frames[1:])
    decoded = decode_frames(frames, expected=DistanceMatrix)
    assert np.shares_memory(decoded.depth, model.depth)
    assert not decoded.depth.flags.writeable
    copied = encode_frames(model, copy=True)
    assert not any(np.shares_memory(np.frombuffer(frame, np.uint8), model.depth) for frame in copied[1:])
    assert decode_frames(copied) == model


def test_decoded_arrays_share_the_received_buffer() -> None:
    """Zero copy: arrays decoded from one buffer are views into it, read-only even if it is not."""
    model = sample_distance_matrix(batch=2, azimuth=16, elevation=8)
    payload = bytearray(encode(model))
    decoded = decode(payload)
    assert isinstance(decoded, DistanceMatrix)
    base = np.frombuffer(payload, dtype=np.uint8)
    for array in (decoded.depth, decoded.semantic, decoded.valid_mask, decoded.delta_depth):
        assert np.shares_memory(array, base)
        assert not array.flags.writeable


@pytest.mark.parametrize("azimuth", [256, 37, 101, 1023])
def test_arrays_are_aligned_in_the_buffer(azimuth: int) -> None:
    """Arrays start 8-byte aligned in the one-buffer form so numpy's checks run at full speed."""
    model = sample_distance_matrix(batch=3, azimuth=azimuth, elevation=47)
    decoded = decode(encode(model), expected=DistanceMatrix)
    assert decoded == model
    for array in (decoded.depth, decoded.semantic, decoded.delta_depth, decoded.episode_ids):
        assert array.flags.aligned and array.ctypes.data % 8 == 0


def test_decode_accepts_memoryview_and_non_contiguous_arrays_encode() -> None:
    model = sample_distance_matrix(batch=2, azimuth=8, elevation=4, with_delta=False)
    fortran = model.model_copy(update={"depth": np.asfortranarray(model.depth)})
    strided = model.model_copy(update={"semantic": np.zeros((2, 8, 8), np.int32)[:, :, ::2]})
    big_endian = model.model_copy(update={"episode_ids": model.episode_ids.astype(">i8")})
    for variant, expected in ((fortran, model), (strided, strided), (big_endian, model)):
        decoded = decode(memoryview(encode(variant)), expected=DistanceMatrix)
        assert decoded == expected  # same values; the wire is C-ordered little-endian
        assert decoded.episode_ids.dtype == np.dtype("<i8")


def test_expected_kind_is_enforced() -> None:
    payload = encode(StepRequest(request_id=1, reset=True))
    with pytest.raises(ContractError, match="expected kind 'step_result', got 'step_request'"):
        decode(payload, expected=StepResult)
    with pytest.raises(ContractError, match="expected kind 'step_result', got 'step_request'"):
        decode_frames(encode_frames(StepRequest(request_id=1, reset=True)), expected=StepResult)


def test_only_wire_models_encode() -> None:
    with pytest.raises(ContractError, match="can only encode wire models, got dict"):
        encode({"kind": "action"})  # type: ignore[arg-type]
    huge = sample_distance_matrix(batch=1, azimuth=2, elevation=2).model_copy(update={"step_id": 2**64})
    with pytest.raises(ContractError, match="cannot encode DistanceMatrix"):
        encode(huge)
    largest = huge.model_copy(update={"step_id": 2**64 - 1})
    assert decode(encode(largest)).step_id == 2**64 - 1  # type: ignore[attr-defined]


@given(st.data())
@settings(max_examples=10)
def test_nan_payload_values_survive(data: st.DataObject) -> None:
    event = TelemetryEvent(
        event_type="actor.training.ppo.update",
        source="actor",
        step_id=data.draw(st.integers(0, 10)),
        payload={"loss": float("nan"), "grad": float("inf")},
        timestamp=1.0,
    )
    assert decode(encode(event)) == event


def test_action_schedule_round_trips_as_one_more_frame() -> None:
    chunk = np.linspace(-1, 1, 2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
    action = Action(
        env_ids=np.array([4, 1], np.int32),
        actions=chunk[:, 0].copy(),
        policy_id="p",
        step_id=11,
        timestamp=5.0,
        start_tick=13,
        chunk=chunk,
    )
    frames = encode_frames(action)
    header = msgpack.unpackb(frames[0])
    assert header["start_tick"] == 13
    assert header["chunk"] == {"dtype": "<f4", "shape": [2, 3, 4]}
    assert len(frames) == 4  # header, env_ids, actions, chunk
    for decoded in (decode(encode(action), expected=Action), decode_frames(frames, expected=Action)):
        assert decoded == action
        assert decoded.start_tick == 13
        assert np.array_equal(decoded.chunk, chunk)  # type: ignore[arg-type]
    plain = action.model_copy(update={"chunk": None, "start_tick": None})
    assert len(encode_frames(plain)) == 3  # an Action without a schedule is unchanged on the wire
    assert msgpack.unpackb(encode_frames(plain)[0])["start_tick"] is None
