"""Model construction: dtypes, shapes, ranges and cross-field consistency raise ContractError."""

from __future__ import annotations

import numpy as np
import pytest

from navi_contracts import (
    Action,
    ContractError,
    DistanceMatrix,
    ErrorReply,
    RobotPose,
    StepRequest,
    StepResult,
    TelemetryEvent,
)
from navi_contracts.samples import sample_action, sample_distance_matrix, sample_step_result


def _matrix_kwargs(batch: int = 2, azimuth: int = 4, elevation: int = 3) -> dict[str, object]:
    shape = (batch, azimuth, elevation)
    return {
        "env_ids": np.arange(batch, dtype=np.int32),
        "matrix_shape": (azimuth, elevation),
        "depth": np.full(shape, 0.5, np.float32),
        "semantic": np.zeros(shape, np.int32),
        "valid_mask": np.ones(shape, bool),
        "step_id": 3,
        "episode_ids": np.zeros(batch, np.int64),
        "timestamp": 12.5,
    }


def test_valid_matrix_builds_and_stores_read_only_views() -> None:
    kwargs = _matrix_kwargs()
    matrix = DistanceMatrix(**kwargs)
    assert matrix.batch_size == 2
    assert not matrix.depth.flags.writeable
    caller_depth = kwargs["depth"]
    assert isinstance(caller_depth, np.ndarray)
    assert caller_depth.flags.writeable  # the caller's array is not frozen behind its back
    assert np.shares_memory(matrix.depth, caller_depth)  # and nothing was copied


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("depth", np.full((2, 4, 3), 0.5, np.float64), "depth: must be float32, got float64"),
        ("depth", np.full((2, 4, 3), 1.5, np.float32), "depth: must be <= 1.0"),
        ("depth", np.full((2, 4, 3), -0.1, np.float32), "depth: must be >= 0.0"),
        ("depth", np.full((2, 4, 3), np.nan, np.float32), "depth: must be finite"),
        ("depth", np.full((2, 4), 0.5, np.float32), "depth: expected 3 dimensions"),
        ("semantic", np.zeros((2, 5, 3), np.int32), r"semantic: dimension Az=5 .* Az=4 from declared"),
        ("valid_mask", np.ones((3, 4, 3), bool), "valid_mask: dimension B=3 .* B=2 from env_ids"),
        ("episode_ids", np.zeros(3, np.int64), "episode_ids: dimension B=3 .* B=2 from env_ids"),
        ("matrix_shape", (0, 3), "matrix_shape: (Az, El) must both be >= 1"),
        ("timestamp", float("inf"), "timestamp must be finite"),
        ("step_id", -1, "step_id"),
        ("env_ids", np.zeros(0, np.int32), "at least one drone"),
    ],
)
def test_matrix_rejects_bad_fields(field: str, value: object, message: str) -> None:
    kwargs = _matrix_kwargs()
    kwargs[field] = value
    if field == "env_ids":
        kwargs.update(
            depth=np.zeros((0, 4, 3), np.float32),
            semantic=np.zeros((0, 4, 3), np.int32),
            valid_mask=np.zeros((0, 4, 3), bool),
            episode_ids=np.zeros(0, np.int64),
        )
    with pytest.raises(ContractError, match=message.replace("(", r"\(").replace(")", r"\)")):
        DistanceMatrix(**kwargs)


def test_matrix_poses_must_match_batch() -> None:
    poses = RobotPose(position=np.zeros((3, 3), np.float32), yaw=np.zeros(3, np.float32))
    with pytest.raises(ContractError, match="poses has B=3 rows but the arrays have B=2"):
        DistanceMatrix(**_matrix_kwargs(), poses=poses)


def test_lists_are_converted_only_by_same_kind_casts() -> None:
    action = Action(
        env_ids=[0, 1], actions=[[0.0, 0.5, -1.0, 1.0]] * 2, policy_id="p", step_id=0, timestamp=0
    )
    assert action.env_ids.dtype == np.int32
    assert action.actions.dtype == np.float32
    with pytest.raises(ContractError, match="env_ids: must be int32, got float64"):
        Action(env_ids=[0.5], actions=[[0, 0, 0, 0]], policy_id="p", step_id=0, timestamp=0)


@pytest.mark.parametrize("bad", [1.0001, -1.5, np.nan, np.inf])
def test_action_values_must_be_finite_and_within_unit_box(bad: float) -> None:
    values = np.zeros((2, 4), np.float32)
    values[1, 2] = bad
    with pytest.raises(ContractError, match=r"Action\.actions"):
        Action(env_ids=np.arange(2, dtype=np.int32), actions=values, policy_id="p", step_id=0, timestamp=0)


def test_action_needs_four_components() -> None:
    with pytest.raises(ContractError, match="axis 1 must have size 4"):
        Action(env_ids=[0], actions=np.zeros((1, 3), np.float32), policy_id="p", step_id=0, timestamp=0)


def test_step_request_modes() -> None:
    assert StepRequest(request_id=1, reset=True, seed=4).seed == 4
    assert StepRequest(request_id=2, actions=sample_action()).actions is not None
    with pytest.raises(ContractError, match="exactly one of actions"):
        StepRequest(request_id=1)
    with pytest.raises(ContractError, match="exactly one of actions"):
        StepRequest(request_id=1, reset=True, actions=sample_action())
    with pytest.raises(ContractError, match="seed is only allowed with reset"):
        StepRequest(request_id=1, actions=sample_action(), seed=3)


def test_step_result_batch_must_match_observation() -> None:
    result = sample_step_result(batch=3)
    kwargs = {name: getattr(result, name) for name in StepResult.model_fields}
    kwargs["reward"] = np.zeros(2, np.float32)
    with pytest.raises(ContractError, match="reward: dimension B=2"):
        StepResult(**kwargs)
    kwargs["reward"] = np.array([0.0, np.nan, 0.0], np.float32)
    with pytest.raises(ContractError, match="reward: must be finite"):
        StepResult(**kwargs)


@pytest.mark.parametrize("event_type", ["Actor.update", "actor..update", "actor update", ""])
def test_telemetry_event_type_is_dotted_lower_case(event_type: str) -> None:
    with pytest.raises(ContractError, match="event_type"):
        TelemetryEvent(event_type=event_type, source="a", step_id=0, payload={}, timestamp=0)


def test_schema_version_is_checked_on_construction() -> None:
    with pytest.raises(ContractError, match="schema_version mismatch: expected 2, got 1"):
        ErrorReply(code="x", message="y", schema_version=1)


def test_equality_compares_array_values_dtypes_and_shapes() -> None:
    matrix = sample_distance_matrix(batch=2, azimuth=4, elevation=3)
    same = sample_distance_matrix(batch=2, azimuth=4, elevation=3)
    other = sample_distance_matrix(batch=2, azimuth=4, elevation=3, seed=1)
    assert matrix == same
    assert matrix != other
    assert matrix != "not a model"
    depth = matrix.depth.copy()
    depth[0, 0, 0] = 0.0 if depth[0, 0, 0] else 1.0
    assert matrix != matrix.model_copy(update={"depth": depth})
    with pytest.raises(TypeError, match="not hashable"):
        hash(matrix)


def test_models_are_frozen() -> None:
    event = TelemetryEvent(event_type="a.b", source="s", step_id=0, timestamp=0)
    with pytest.raises(Exception, match="frozen"):
        event.step_id = 3  # type: ignore[misc]


def test_unknown_fields_are_rejected() -> None:
    with pytest.raises(ContractError, match="Extra inputs are not permitted"):
        ErrorReply(code="x", message="y", colour="red")  # type: ignore[call-arg]


def _chunked_action(batch: int = 2, horizon: int = 3, **overrides: object) -> Action:
    chunk = np.linspace(-1, 1, batch * horizon * 4, dtype=np.float32).reshape(batch, horizon, 4)
    kwargs: dict[str, object] = {
        "env_ids": np.arange(batch, dtype=np.int32),
        "actions": chunk[:, 0].copy(),
        "policy_id": "p",
        "step_id": 7,
        "timestamp": 0.0,
        "start_tick": 9,
        "chunk": chunk,
    }
    kwargs.update(overrides)
    return Action(**kwargs)


def test_action_schedule_fields_are_optional_and_default_to_none() -> None:
    plain = sample_action()
    assert plain.start_tick is None
    assert plain.chunk is None
    assert plain.horizon == 1
    chunked = _chunked_action(horizon=5)
    assert chunked.start_tick == 9
    assert chunked.horizon == 5
    assert not chunked.chunk.flags.writeable  # type: ignore[union-attr]


def test_action_chunk_of_the_longest_allowed_horizon_builds() -> None:
    assert _chunked_action(horizon=64).horizon == 64


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"chunk": np.zeros((2, 65, 4), np.float32), "actions": np.zeros((2, 4), np.float32)},
            "H must be in",
        ),
        ({"chunk": np.zeros((2, 0, 4), np.float32)}, "H must be in"),
        ({"chunk": np.zeros((3, 2, 4), np.float32)}, r"chunk: dimension B=3 .* B=2 from env_ids"),
        ({"chunk": np.zeros((2, 2, 3), np.float32)}, "axis 2 must have size 4"),
        ({"chunk": np.full((2, 2, 4), 1.5, np.float32)}, r"chunk: must be <= 1\.0"),
        ({"chunk": np.zeros((2, 2, 4), np.float64)}, "chunk: must be float32"),
        ({"actions": np.full((2, 4), 0.25, np.float32)}, r"chunk\[:, 0\] must equal actions"),
        ({"start_tick": -1}, "start_tick"),
    ],
)
def test_action_rejects_bad_schedules(overrides: dict[str, object], message: str) -> None:
    with pytest.raises(ContractError, match=message):
        _chunked_action(**overrides)
