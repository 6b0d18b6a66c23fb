"""Analytic oracles for the sphere tracer: closed rooms, a corridor, thin walls."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from navi_environment.config import SensorSettings, TracerSettings
from navi_environment.runtime.analytic import (
    RoomSpec,
    corridor_spec,
    room_distance,
    room_ray_distance,
    room_scene,
)
from navi_environment.runtime.atlas import pack_scenes
from navi_environment.tracer import Tracer, sensor_directions

SENSOR = SensorSettings(azimuth_bins=128, elevation_bins=32, horizon_m=30.0)


def _trace(scene, positions: np.ndarray, yaws: np.ndarray, sensor: SensorSettings = SENSOR) -> torch.Tensor:
    tracer = Tracer(pack_scenes([scene]), sensor, TracerSettings())
    B = len(positions)
    out = torch.empty(B, 3, sensor.azimuth_bins, sensor.elevation_bins)
    tracer.trace_sensor(
        torch.from_numpy(positions.astype(np.float32)), torch.from_numpy(yaws.astype(np.float32)),
        torch.zeros(B, dtype=torch.int32), out,
    )  # fmt: skip
    return out


def _world_dirs(yaw: float, sensor: SensorSettings = SENSOR) -> np.ndarray:
    d = sensor_directions(sensor.azimuth_bins, sensor.elevation_bins).astype(np.float64)
    c, s = np.cos(yaw), np.sin(yaw)
    return np.stack([c * d[:, 0] - s * d[:, 1], s * d[:, 0] + c * d[:, 1], d[:, 2]], axis=1)


def _check_closed_room(spec: RoomSpec, resolution: int, min_band_m: float, drones: int) -> None:
    scene = room_scene(spec, resolution, min_band_m=min_band_m)
    voxel = scene.voxel_size
    rng = np.random.default_rng(resolution)
    margin = 4 * voxel
    pos = rng.uniform(np.add(spec.lo, margin), np.subtract(spec.hi, margin), size=(drones, 3))
    yaw = rng.uniform(-np.pi, np.pi, size=drones)
    out = _trace(scene, pos, yaw)
    for b in range(drones):
        valid = out[b, 2].reshape(-1).numpy()
        assert valid.min() == 1.0, f"res {resolution}: {int((valid == 0).sum())} rays escaped a closed room"
        got = out[b, 0].reshape(-1).numpy().astype(np.float64) * SENSOR.horizon_m
        dirs = _world_dirs(yaw[b])
        expected = room_ray_distance(spec, pos[b], dirs)
        along = np.abs(got - expected) / voxel
        # Along the ray, grazing hits near concave edges are ill-conditioned; the hit *point* is not.
        assert np.mean(along <= 1.0) >= 0.999, (
            f"res {resolution}: worst along-ray error {along.max():.2f} voxels"
        )
        assert np.median(along) <= 0.5
        hit_points = pos[b] + dirs * got[:, None]
        surface_gap = np.abs(room_distance(spec, hit_points)[0]) / voxel
        assert surface_gap.max() <= 1.0, f"res {resolution}: hit point {surface_gap.max():.2f} voxels off"


@pytest.mark.parametrize("resolution", [64, 128, 256])
def test_every_ray_hits_inside_a_closed_room_within_a_voxel(resolution: int) -> None:
    _check_closed_room(RoomSpec(hi=(10.0, 8.0, 3.0)), resolution, min_band_m=0.0, drones=3)


@pytest.mark.slow
def test_every_ray_hits_inside_a_closed_room_at_512() -> None:
    # A small room keeps the near-surface bricks (and the analytic build) cheap at 512^3.
    _check_closed_room(RoomSpec(hi=(2.0, 2.0, 2.0)), 512, min_band_m=0.0, drones=2)


def test_corridor_known_poses() -> None:
    spec = corridor_spec(length=20.0, width=2.0, height=3.0)
    scene = room_scene(spec, 128)
    pos = np.array([[5.0, 1.0, 1.5], [15.0, 0.5, 1.0]])
    yaw = np.array([0.0, np.pi / 2])
    out = _trace(scene, pos, yaw)
    sensor = SENSOR
    el_mid = sensor.elevation_bins // 2  # just above the horizon: nearly level
    quarter = sensor.azimuth_bins // 4
    depth = out[:, 0].numpy() * sensor.horizon_m
    tol = scene.voxel_size
    elev = np.pi * (el_mid + 0.5) / sensor.elevation_bins - np.pi / 2
    # drone 0 looks along +x: 15 m to the end wall; left wall (+y) at 1 m, right at 1 m
    assert abs(depth[0, 0, el_mid] - 15.0 / np.cos(elev)) < tol
    assert abs(depth[0, quarter, el_mid] - 1.0 / np.cos(elev)) < tol
    assert abs(depth[0, 3 * quarter, el_mid] - 1.0 / np.cos(elev)) < tol
    # drone 1 faces +y (yaw 90 deg): wall 1.5 m ahead, bin 'left' (+x world -> az 270) sees the end 5 m away
    assert abs(depth[1, 0, el_mid] - 1.5 / np.cos(elev)) < tol
    assert abs(depth[1, 3 * quarter, el_mid] - 5.0 / np.cos(elev)) < tol
    # straight down/up: floor and ceiling
    assert abs(depth[0, 0, 0] - 1.5 / np.cos(np.pi * 0.5 / sensor.elevation_bins)) < tol


@pytest.mark.parametrize("resolution", [64, 128, 256])
def test_thin_wall_of_one_voxel_is_never_crossed(resolution: int) -> None:
    probe = RoomSpec(hi=(10.0, 8.0, 3.0))
    _, voxel = probe.cube(resolution)
    # wall exactly one voxel thick, centred on a voxel centre plane
    bmin, _ = probe.cube(resolution)
    i = int((5.0 - bmin[0]) / voxel)
    wall_x = float(bmin[0] + (i + 0.5) * voxel)
    spec = RoomSpec(hi=(10.0, 8.0, 3.0), thin_wall_x=wall_x, thin_wall_thickness=voxel)
    scene = room_scene(spec, resolution, min_band_m=0.0)
    rng = np.random.default_rng(7)
    pos = np.column_stack(
        [rng.uniform(1.0, wall_x - 4 * voxel, 4), rng.uniform(0.5, 7.5, 4), rng.uniform(0.5, 2.5, 4)]
    )
    yaw = rng.uniform(-np.pi, np.pi, 4)
    out = _trace(scene, pos, yaw)
    for b in range(4):
        depth = out[b, 0].reshape(-1).numpy() * SENSOR.horizon_m
        dirs = _world_dirs(yaw[b])
        hit_x = pos[b, 0] + dirs[:, 0] * depth
        assert out[b, 2].min() == 1.0
        assert hit_x.max() <= wall_x + 0.5 * voxel + 1e-4, "a ray saw through the one-voxel wall"
        towards = dirs[:, 0] > 0.2
        to_wall = (wall_x - 0.5 * voxel - pos[b, 0]) / dirs[towards, 0]
        expected = np.minimum(room_ray_distance(spec, pos[b], dirs[towards]), to_wall)
        assert np.mean(np.abs(depth[towards] - expected) <= voxel) >= 0.999


def test_misses_report_horizon_with_valid_zero() -> None:
    spec = RoomSpec(hi=(10.0, 8.0, 3.0))
    scene = room_scene(spec, 64)
    short = SensorSettings(azimuth_bins=64, elevation_bins=16, horizon_m=2.0)
    out = _trace(scene, np.array([[5.0, 4.0, 1.5]]), np.array([0.0]), short)
    valid = out[0, 2].numpy()
    depth = out[0, 0].numpy()
    sem = out[0, 1].numpy()
    assert (valid == 0).any() and (valid == 1).any()  # floor/ceiling within 2 m, walls beyond
    assert np.all(depth[valid == 0] == 1.0) and np.all(sem[valid == 0] == 0)
    assert np.all(depth[valid == 1] < 1.0) and np.all(sem[valid == 1] > 0)


def test_semantic_ids_identify_the_surface() -> None:
    spec = RoomSpec(hi=(10.0, 8.0, 3.0), pillars=((5.0, 2.0, 0.5),))
    scene = room_scene(spec, 128)
    out = _trace(scene, np.array([[5.0, 4.0, 1.5]]), np.array([0.0]))
    sem = out[0, 1].numpy()
    el = SENSOR.elevation_bins
    assert sem[0, 0] == 2 and sem[0, el - 1] == 3  # floor below, ceiling above
    assert sem[SENSOR.azimuth_bins * 3 // 4, el // 2] == 5  # pillar at -y (right of +x heading)
    assert sem[0, el // 2] == 1  # end wall ahead
