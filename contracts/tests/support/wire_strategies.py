"""Hypothesis strategies producing valid wire models, for property tests (``import wire_strategies``).

Test support, not part of the wire layer: pytest puts ``contracts/tests/support`` on the path for every
package's tests. Sizes are kept small so property tests stay fast.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from navi_contracts.model_base import WireModel
from navi_contracts.models import (
    Action,
    DistanceMatrix,
    ErrorReply,
    RobotPose,
    StepRequest,
    StepResult,
    TelemetryEvent,
)

_batches = st.integers(1, 4)
_ids = st.integers(0, 2**31 - 1)
_timestamps = st.floats(0, 4e9, allow_nan=False)
_names = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=24)
_metric_values = st.floats(allow_nan=True, allow_infinity=True)


def _floats32(low: float, high: float) -> st.SearchStrategy[float]:
    return st.floats(low, high, width=32, allow_nan=False, allow_infinity=False)


def _array(dtype: Any, shape: tuple[int, ...], elements: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return hnp.arrays(dtype, shape, elements=elements)


@st.composite
def robot_poses(draw: st.DrawFn, batch: int | None = None) -> RobotPose:
    """RobotPose with ``batch`` rows (drawn when None)."""
    size = draw(_batches) if batch is None else batch
    return RobotPose(
        position=draw(_array(np.float32, (size, 3), _floats32(-1e4, 1e4))),
        yaw=draw(_array(np.float32, (size,), _floats32(-4, 4))),
    )


@st.composite
def distance_matrices(draw: st.DrawFn, batch: int | None = None) -> DistanceMatrix:
    """DistanceMatrix with small Az/El, optional delta_depth and poses."""
    size = draw(_batches) if batch is None else batch
    azimuth, elevation = draw(st.integers(1, 8)), draw(st.integers(1, 6))
    shape = (size, azimuth, elevation)
    with_delta = draw(st.booleans())
    return DistanceMatrix(
        env_ids=draw(_array(np.int32, (size,), st.integers(0, 2**31 - 1))),
        matrix_shape=(azimuth, elevation),
        depth=draw(_array(np.float32, shape, _floats32(0, 1))),
        semantic=draw(_array(np.int32, shape, st.integers(-(2**31), 2**31 - 1))),
        valid_mask=draw(_array(np.bool_, shape, st.booleans())),
        delta_depth=draw(_array(np.float32, shape, _floats32(-1, 1))) if with_delta else None,
        poses=draw(st.none() | robot_poses(size)),
        step_id=draw(_ids),
        episode_ids=draw(_array(np.int64, (size,), st.integers(-(2**63), 2**63 - 1))),
        timestamp=draw(_timestamps),
    )


@st.composite
def actions(draw: st.DrawFn) -> Action:
    """Action with values in [-1, 1]; sometimes a real-time schedule (start_tick, chunk)."""
    size = draw(_batches)
    chunk = None
    if draw(st.booleans()):
        chunk = draw(_array(np.float32, (size, draw(st.integers(1, 5)), 4), _floats32(-1, 1)))
        values = chunk[:, 0].copy()
    else:
        values = draw(_array(np.float32, (size, 4), _floats32(-1, 1)))
    return Action(
        env_ids=draw(_array(np.int32, (size,), st.integers(0, 1000))),
        actions=values,
        policy_id=draw(_names),
        step_id=draw(_ids),
        timestamp=draw(_timestamps),
        start_tick=draw(st.none() | _ids),
        chunk=chunk,
    )


@st.composite
def step_requests(draw: st.DrawFn) -> StepRequest:
    """Either a step (with actions) or a reset (with an optional seed)."""
    if draw(st.booleans()):
        return StepRequest(request_id=draw(_ids), actions=draw(actions()))
    return StepRequest(request_id=draw(_ids), reset=True, seed=draw(st.none() | st.integers(0, 2**63 - 1)))


@st.composite
def step_results(draw: st.DrawFn) -> StepResult:
    """StepResult whose arrays match the observation's batch."""
    observation = draw(distance_matrices())
    size = observation.batch_size
    return StepResult(
        request_id=draw(_ids),
        reward=draw(_array(np.float32, (size,), _floats32(-1e6, 1e6))),
        terminated=draw(_array(np.bool_, (size,), st.booleans())),
        truncated=draw(_array(np.bool_, (size,), st.booleans())),
        episode_return=draw(_array(np.float32, (size,), _floats32(-1e6, 1e6))),
        episode_length=draw(_array(np.int32, (size,), st.integers(0, 10_000))),
        observation=observation,
        info=draw(st.none() | st.dictionaries(_names, st.floats(allow_nan=False), max_size=5)),
    )


_event_types = st.from_regex(r"[a-z0-9_]{1,8}(\.[a-z0-9_]{1,8}){0,3}", fullmatch=True)


def telemetry_events() -> st.SearchStrategy[TelemetryEvent]:
    """TelemetryEvent with arbitrary (also non-finite) payload values."""
    return st.builds(
        TelemetryEvent,
        event_type=_event_types,
        source=_names.filter(bool),
        step_id=_ids,
        payload=st.dictionaries(_names, _metric_values, max_size=8),
        timestamp=_timestamps,
    )


def error_replies() -> st.SearchStrategy[ErrorReply]:
    """ErrorReply with any code, message and optional request id."""
    return st.builds(ErrorReply, code=_names.filter(bool), message=_names, request_id=st.none() | _ids)


def wire_models() -> st.SearchStrategy[WireModel]:
    """Any wire model."""
    return st.one_of(
        robot_poses(),
        distance_matrices(),
        actions(),
        step_requests(),
        step_results(),
        telemetry_events(),
        error_replies(),
    )
