"""Deterministic, valid example messages for benchmarks, demos and other packages' tests.

Building a valid ``DistanceMatrix`` by hand takes a dozen lines; these builders keep that in one
place so every caller gets messages that satisfy the contracts (ranges, dtypes, shapes).
"""

from __future__ import annotations

import numpy as np

from navi_contracts.models import Action, DistanceMatrix, RobotPose, StepResult, TelemetryEvent


def sample_pose(batch: int, seed: int = 0) -> RobotPose:
    """Random poses for ``batch`` drones: position [B,3] in [-50, 50] m, yaw [B] in [-pi, pi]."""
    rng = np.random.default_rng(seed)
    return RobotPose(
        position=rng.uniform(-50, 50, (batch, 3)).astype(np.float32),
        yaw=rng.uniform(-np.pi, np.pi, batch).astype(np.float32),
    )


def sample_distance_matrix(
    batch: int = 4, azimuth: int = 256, elevation: int = 48, seed: int = 0, with_delta: bool = True
) -> DistanceMatrix:
    """A random valid observation [B,Az,El]: depth in [0,1], semantic ids in [0,8), a random mask.

    ``with_delta`` adds ``delta_depth`` and ``poses``.
    """
    rng = np.random.default_rng(seed)
    shape = (batch, azimuth, elevation)
    depth = rng.random(shape, dtype=np.float32)
    return DistanceMatrix(
        env_ids=np.arange(batch, dtype=np.int32),
        matrix_shape=(azimuth, elevation),
        depth=depth,
        semantic=rng.integers(0, 8, shape, dtype=np.int32),
        valid_mask=depth < 0.9,
        delta_depth=(rng.random(shape, dtype=np.float32) - 0.5) if with_delta else None,
        poses=sample_pose(batch, seed) if with_delta else None,
        step_id=seed,
        episode_ids=np.arange(batch, dtype=np.int64),
        timestamp=1_700_000_000.0 + seed,
    )


def sample_action(batch: int = 4, seed: int = 0) -> Action:
    """Random actions in [-1, 1] for ``batch`` drones (see :class:`Action`)."""
    rng = np.random.default_rng(seed)
    return Action(
        env_ids=np.arange(batch, dtype=np.int32),
        actions=rng.uniform(-1, 1, (batch, 4)).astype(np.float32),
        policy_id="sample",
        step_id=seed,
        timestamp=1_700_000_000.0 + seed,
    )


def sample_step_result(batch: int = 4, azimuth: int = 32, elevation: int = 8, seed: int = 0) -> StepResult:
    """A valid StepResult around :func:`sample_distance_matrix`."""
    rng = np.random.default_rng(seed)
    return StepResult(
        request_id=seed,
        reward=rng.normal(size=batch).astype(np.float32),
        terminated=rng.random(batch) < 0.1,
        truncated=rng.random(batch) < 0.1,
        episode_return=rng.normal(size=batch).astype(np.float32),
        episode_length=rng.integers(0, 2000, batch, dtype=np.int32),
        observation=sample_distance_matrix(batch, azimuth, elevation, seed),
        info={"reward/exploration": 0.5, "reward/collision": -0.1},
    )


def sample_telemetry(step_id: int = 0) -> TelemetryEvent:
    """A small PPO-update telemetry event."""
    return TelemetryEvent(
        event_type="actor.training.ppo.update",
        source="actor",
        step_id=step_id,
        payload={"losses/policy": 0.1, "losses/value": 0.5, "charts/sps": 1234.0},
        timestamp=1_700_000_000.0 + step_id,
    )
