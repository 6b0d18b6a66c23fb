"""Autopilot known answers on synthetic spherical observations (batched, no per-drone loops)."""

from __future__ import annotations

import math

import torch

from navi_auditor.explorer.autopilot import Autopilot
from navi_auditor.settings import AutopilotSettings

Az, El, HORIZON = 64, 16, 30.0


def room_obs(walls: dict[float, float], floor: float = 1.5, ceiling: float = 1.5) -> torch.Tensor:
    """[1,3,Az,El] with walls at given distances per azimuth angle (deg, CCW), else 10 m."""
    depth = torch.full((Az, El), 10.0)
    azimuth = torch.arange(Az) * 360.0 / Az
    for angle, distance in walls.items():
        near = ((azimuth - angle + 180) % 360 - 180).abs() <= 25
        depth[near] = distance
    depth[:, 0], depth[:, -1] = floor, ceiling
    obs = torch.stack([depth / HORIZON, torch.ones(Az, El), torch.ones(Az, El)])
    return obs[None]


def pilot() -> Autopilot:
    return Autopilot(AutopilotSettings(), HORIZON, Az, El)


def test_open_ahead_cruises_straight() -> None:
    action = pilot()(room_obs({}))[0]
    assert action[0] == AutopilotSettings().cruise
    assert abs(float(action[3])) < 1e-6 and abs(float(action[1])) < 1e-6 and abs(float(action[2])) < 1e-6


def test_wall_ahead_stops_and_turns_to_the_open_side() -> None:
    # wall ahead and on the right; open on the left (+90 deg) -> turn left (positive yaw)
    action = pilot()(room_obs({0: 0.8, 270: 0.8, 315: 0.8, 45: 3.0}))[0]
    assert action[0] == 0.0
    assert action[3] > 0.5


def test_mirror_image_turns_the_other_way() -> None:
    left = pilot()(room_obs({0: 0.8, 90: 0.8, 45: 0.8, 315: 3.0}))[0]
    assert left[3] < -0.5


def test_centres_between_walls_and_holds_altitude() -> None:
    action = pilot()(room_obs({90: 1.0, 270: 4.0}, floor=0.5, ceiling=2.5))[0]
    assert action[2] < 0  # closer to the left wall -> strafe right
    assert action[1] > 0  # too low -> climb
    high = pilot()(room_obs({}, floor=2.5, ceiling=0.5))[0]
    assert high[1] < 0


def test_void_directions_are_avoided() -> None:
    obs = room_obs({0: 8.0})
    obs[0, 0, :, :] = torch.where(obs[0, 0] > 9.0 / HORIZON, torch.tensor(1.0), obs[0, 0])
    obs[0, 2] = (obs[0, 0] < 1.0).float()  # everything beyond 10 m is a miss: open sky
    obs[0, 0, :, 0] = 1.5 / HORIZON
    obs[0, 2, :, 0] = 1.0
    action = pilot()(obs)[0]
    assert abs(float(action[3])) < 0.2  # keeps heading at the structure 8 m ahead, not the void


def test_batch_rows_are_independent_and_in_range() -> None:
    batch = torch.cat([room_obs({}), room_obs({0: 0.8, 270: 0.8, 315: 0.8}), room_obs({90: 0.5})])
    together = pilot()(batch)
    apart = torch.cat([pilot()(batch[i : i + 1]) for i in range(3)])
    assert torch.allclose(together, apart, atol=1e-6)
    assert together.abs().max() <= 1.0
    noise = torch.rand(16, 3, Az, El)
    assert pilot()(noise).abs().max() <= 1.0
    assert math.isfinite(float(pilot()(noise).sum()))
