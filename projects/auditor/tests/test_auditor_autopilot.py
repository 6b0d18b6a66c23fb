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


def test_a_blocked_heading_does_not_outscore_open_space_behind() -> None:
    """Issue 23: 0.995 m ahead beat 4.09 m of free space at 146 degrees and the drone hovered."""
    walls = {angle: 1.0 for angle in range(0, 360, 30) if abs(((angle - 146 + 180) % 360) - 180) > 40}
    walls[0] = 0.995
    walls[146] = 4.09
    action = pilot()(room_obs(walls))[0]
    assert action[0] == 0.0  # no forward into the wall
    assert action[3] > 0.5  # turning toward the open side (146 degrees is to the left)


def test_blocked_everywhere_turns_in_place_instead_of_hovering() -> None:
    settings = AutopilotSettings()
    boxed = room_obs(dict.fromkeys(range(0, 360, 15), 0.7))
    action = pilot()(boxed)[0]
    assert action[0] == 0.0
    assert abs(float(action[3])) >= settings.turn_yaw  # stop_distance_m: turn in place, never all zero


def test_a_corner_off_the_nose_blocks_the_path_and_pushes_away() -> None:
    """A pillar edge 40 degrees left at 0.45 m: no single ray ahead sees it, the drone's body does."""
    obs = room_obs({})
    azimuth = torch.arange(Az) * 360.0 / Az
    near = ((azimuth - 40 + 180) % 360 - 180).abs() <= 6
    obs[0, 0, near, 6:10] = 0.45 / HORIZON
    action = pilot()(obs)[0]
    assert action[0] < 0.2  # slows hard (it flew into the corner at 0.66 and stayed wedged)
    assert action[2] < 0  # and strafes right, away from it


def test_nothing_close_below_means_no_sinking() -> None:
    obs = room_obs({}, floor=3.5, ceiling=3.0)  # 3.5 m above the floor: wants to sink to 1.5 m
    assert pilot()(obs)[0, 1] < 0
    obs[0, 0, 10:14, 3] = 0.4 / HORIZON  # a shelf top 0.4 m away below the level band
    assert pilot()(obs)[0, 1] >= 0.0
