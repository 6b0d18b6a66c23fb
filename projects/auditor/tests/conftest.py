"""Shared fixtures of the navi-auditor tests: a small sensor and an exact analytic room."""

from __future__ import annotations

import pytest

from navi_environment.config import EnvironmentSettings, SensorSettings
from navi_environment.runtime.analytic import RoomSpec, room_scene
from navi_environment.runtime.scene import RuntimeScene

ROOM = RoomSpec(
    hi=(10.0, 8.0, 3.0),
    thin_wall_x=6.0,
    thin_wall_thickness=0.3,
    thin_wall_gap=(3.0, 5.5),
    pillars=((3.0, 4.0, 0.4),),
)


@pytest.fixture(scope="session")
def small_env_settings() -> EnvironmentSettings:
    """A 32 x 8 sensor: cheap to trace, still a full sphere."""
    return EnvironmentSettings(sensor=SensorSettings(azimuth_bins=32, elevation_bins=8, horizon_m=30.0))


@pytest.fixture(scope="session")
def room() -> RuntimeScene:
    """A 10 x 8 x 3 m room with a 0.3 m wall (with a door) and a pillar, exact SDF, resolution 64.

    Resolution 64 (0.22 m voxels) so the wall is thicker than a voxel: a sub-voxel wall cannot be
    represented by a sampled field at all.
    """
    return room_scene(ROOM, resolution=64)
