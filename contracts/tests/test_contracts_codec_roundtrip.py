"""Property tests: decode(encode(m)) == m for every wire model, dtypes and shapes kept, zero copy."""

from __future__ import annotations

import msgpack
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from navi_contracts import (
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
    encode,
)
from navi_contracts import testing as strategies
from navi_contracts.model_base import array_specs, nested_models
from navi_contracts.samples import sample_distance_matrix

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


def test_every_model_has_a_round_trip_strategy() -> None:
    from navi_contracts import MODELS

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

    check()


@settings(max_examples=25)
@given(strategies.distance_matrices())
def test_payload_is_plain_msgpack_with_documented_array_maps(model: DistanceMatrix) -> None:
    """Oracle: the reference msgpack library reads our bytes into the documented layout."""
    plain = msgpack.unpackb(encode(model))
    assert plain["kind"] == "distance_matrix"
    assert plain["schema_version"] == 2
    depth = plain["depth"]
    assert set(depth) == {"dtype", "shape", "data"}
    assert depth["dtype"] == "<f4"
    assert depth["shape"] == list(model.depth.shape)
    assert depth["data"] == model.depth.tobytes()
    assert plain["valid_mask"]["dtype"] == "|b1"
    assert plain["matrix_shape"] == list(model.matrix_shape)


def test_decoded_arrays_share_the_received_buffer() -> None:
    """Zero copy: decoded arrays are views into the payload, not copies."""
    model = sample_distance_matrix(batch=2, azimuth=16, elevation=8)
    payload = bytearray(encode(model))
    decoded = decode(payload)
    assert isinstance(decoded, DistanceMatrix)
    base = np.frombuffer(payload, dtype=np.uint8)
    for array in (decoded.depth, decoded.semantic, decoded.valid_mask, decoded.delta_depth):
        assert np.shares_memory(array, base)
        assert not array.flags.writeable


@pytest.mark.parametrize("azimuth", [256, 37, 101, 1023])
def test_large_arrays_are_aligned_in_the_payload(azimuth: int) -> None:
    """Large arrays start 8-byte aligned so receivers' vectorised checks run at full speed."""
    model = sample_distance_matrix(batch=3, azimuth=azimuth, elevation=48)
    decoded = decode(encode(model), expected=DistanceMatrix)
    assert decoded == model
    for array in (decoded.depth, decoded.semantic, decoded.delta_depth):
        assert array.flags.aligned and array.ctypes.data % 8 == 0


def test_decode_accepts_memoryview_and_non_contiguous_arrays_encode() -> None:
    model = sample_distance_matrix(batch=2, azimuth=8, elevation=4, with_delta=False)
    transposed = np.asfortranarray(model.depth)  # not C-contiguous: the encoder must make it so
    fortran_model = model.model_copy(update={"depth": transposed})
    decoded = decode(memoryview(encode(fortran_model)), expected=DistanceMatrix)
    assert decoded == model


def test_expected_kind_is_enforced() -> None:
    payload = encode(StepRequest(request_id=1, reset=True))
    with pytest.raises(ContractError, match="expected kind 'step_result', got 'step_request'"):
        decode(payload, expected=StepResult)


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
