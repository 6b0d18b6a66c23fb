"""A synthetic producer: plausible observations and telemetry without the environment or actor.

Used by the tests (fake producers on real sockets), by ``scripts/bench_dashboard.py``, and handy for
working on the page. The observation is a drone in the middle of a box-shaped room with one open
doorway (rays through it leave the horizon and are invalid), laid out like the environment's
sensor: azimuth bin ``a`` at ``2*pi*a/Az`` counter-clockwise from the heading, elevation bin ``e`` at
``-pi/2 + pi*(e+0.5)/El``.
"""

from __future__ import annotations

import math
import time

import numpy as np

from navi_contracts import DistanceMatrix, RobotPose, TelemetryEvent
from navi_contracts import telemetry_names as names

ROOM_HALF_EXTENT_M = np.array([6.0, 4.0, 1.5])
DOOR_HALF_WIDTH_M = 0.8
HORIZON_M = 100.0
TRAINING_EVENT = names.TRAINING_UPDATE
INFERENCE_EVENT = names.acting_event(names.INFERENCE_SOURCE, names.STATS)


def room_observation(azimuth_bins: int, elevation_bins: int, yaw: float) -> tuple[np.ndarray, np.ndarray]:
    """Depth and valid mask seen from the centre of the room with heading ``yaw``.

    Args:
        azimuth_bins: Az.
        elevation_bins: El.
        yaw: heading in radians (counter-clockwise about +z).

    Returns:
        (depth, valid): float32 (Az, El) in [0, 1] normalised by a 100 m horizon, and bool (Az, El).
    """
    azimuth = yaw + 2.0 * np.pi * np.arange(azimuth_bins) / azimuth_bins
    elevation = -0.5 * np.pi + np.pi * (np.arange(elevation_bins) + 0.5) / elevation_bins
    directions = np.stack(  # [Az, El, 3] unit vectors in the world frame
        np.broadcast_arrays(
            np.cos(azimuth)[:, None] * np.cos(elevation)[None, :],
            np.sin(azimuth)[:, None] * np.cos(elevation)[None, :],
            np.sin(elevation)[None, :],
        ),
        axis=-1,
    )
    with np.errstate(divide="ignore"):
        distance_per_axis = ROOM_HALF_EXTENT_M / np.abs(directions)  # [Az, El, 3]
    distance = distance_per_axis.min(axis=-1)  # first wall hit
    hit = directions * distance[..., None]
    through_door = (np.abs(hit[..., 0] - ROOM_HALF_EXTENT_M[0]) < 1e-6) & (
        np.abs(hit[..., 1]) < DOOR_HALF_WIDTH_M
    )
    through_door &= hit[..., 2] < 0.8  # the doorway stops below the ceiling
    valid = ~through_door
    depth = np.where(valid, distance / HORIZON_M, 1.0).astype(np.float32)
    return np.clip(depth, 0.0, 1.0), valid


def room_matrix(
    batch: int, azimuth_bins: int, elevation_bins: int, step_id: int, yaw: float = 0.0
) -> DistanceMatrix:
    """A DistanceMatrix whose every row is the room view (row ``b`` turned by ``b`` radians).

    Every drone stands at the room's centre, (0, 0, 1.5) m; poses carry each row's heading.

    Args:
        batch: B.
        azimuth_bins: Az.
        elevation_bins: El.
        step_id: the step counter to stamp.
        yaw: heading of row 0.

    Returns:
        The wire model.
    """
    yaws = yaw + np.arange(batch, dtype=np.float64)
    rows = [room_observation(azimuth_bins, elevation_bins, float(row_yaw)) for row_yaw in yaws]
    depth = np.stack([row[0] for row in rows])  # [B, Az, El]
    valid = np.stack([row[1] for row in rows])
    return DistanceMatrix(
        env_ids=np.arange(batch, dtype=np.int32),
        matrix_shape=(azimuth_bins, elevation_bins),
        depth=depth,
        semantic=np.where(valid, 1, 0).astype(np.int32),
        valid_mask=valid,
        poses=RobotPose(
            position=np.tile(np.array([0.0, 0.0, 1.5], dtype=np.float32), (batch, 1)),
            yaw=np.mod(yaws, 2 * np.pi).astype(np.float32),
        ),
        step_id=step_id,
        episode_ids=np.zeros(batch, dtype=np.int64),
        timestamp=time.time(),
    )


def training_event(update: int, event_type: str = TRAINING_EVENT) -> TelemetryEvent:
    """A telemetry event with every metric the dashboard charts, varying smoothly with ``update``.

    Args:
        update: update counter (drives the values).
        event_type: ``actor.training.*`` or ``actor.inference.*`` (or anything else).

    Returns:
        The wire model.
    """
    progress = 1.0 - math.exp(-update / 50.0)
    payload = {
        "reward_ema": -1.0 + 2.0 * progress,
        "episode_return": -20.0 + 60.0 * progress + 3.0 * math.sin(update / 3.0),
        "episode_length": 200.0 + 800.0 * progress,
        "collision_rate": 0.4 * (1.0 - progress),
        "policy_loss": 0.05 * math.cos(update / 5.0),
        "value_loss": 2.0 * (1.0 - progress) + 0.1,
        "kl": 0.01 + 0.005 * math.sin(update / 4.0),
        "entropy": 5.0 - 2.0 * progress,
        "sps": 12000.0 + 500.0 * math.sin(update / 7.0),
        "active_actors": 64.0,
        "scene": 3.0,
        "timing/rollout": 0.8,
        "timing/update": 0.35,
        "timing/encode": 0.12,
        "reward/exploration": 0.4 * progress,
        "reward/progress": 0.2,
        "reward/collision": -0.3 * (1.0 - progress),
        "reward/existential": -0.02,
    }
    return TelemetryEvent(
        event_type=event_type, source="actor", step_id=update, payload=payload, timestamp=time.time()
    )
