"""Path following for the frontier planner: a carrot point -> ``[B, 4]`` actions, with a reactive guard.

Batched over drones (tensor ops only). The drone flies holonomically towards the carrot (forward and
lateral together) while yawing to face it, holds the height it started at, and a guard built from
the raw depth rays around the drone's own height limits the speed towards every near surface (in
proportion to the room left) and pushes away from surfaces closer than the drone radius plus a margin.
The guard covers what a grid map cannot: a wall may lie anywhere inside an occupied cell.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from navi_environment.config import EnvironmentSettings
from navi_environment.step.physics.kinematics import wrap_angle
from navi_environment.tracer import sensor_directions

_BRAKE_GAIN = 2.0  # speed limit per metre of room left before the stop margin, 1/s
_ARRIVE_GAIN = 1.5  # speed limit per metre still to the goal, 1/s (never below _ARRIVE_MIN_MPS)
_ARRIVE_MIN_MPS = 1.5
_STOP_MARGIN_M = 0.1  # gap between the drone's sphere and a surface at which motion towards it stops
_PUSH_RANGE_M = 0.2  # surfaces closer than radius + this push the drone away
_PUSH_MPS = 1.0  # push-away speed at contact
_YAW_TAU_S = 0.5  # heading error is closed at roughly this time constant
_HEIGHT_GAIN = 1.5  # vertical speed per metre of height error, 1/s


@dataclass(frozen=True)
class FollowCommand:
    """What the planner asks of each drone this step.

    Attributes:
        carrot: [B, 2] world xy to fly towards.
        goal_distance: [B] metres still to the goal (slows the arrival).
        active: [B] bool; inactive drones get a zero action (nothing left to explore).
        height: [B] world z to hold.
    """

    carrot: torch.Tensor
    goal_distance: torch.Tensor
    active: torch.Tensor
    height: torch.Tensor


class PathFollower:
    """Turns :class:`FollowCommand` into actions for one sensor and physics configuration.

    Args:
        settings: environment settings (sensor shape and horizon, physics speeds and radius).
        cruise_mps: travel speed.
        device: where the sensor tables live.
    """

    def __init__(self, settings: EnvironmentSettings, cruise_mps: float, device: torch.device) -> None:
        sensor, physics = settings.sensor, settings.physics
        self.horizon_m = sensor.horizon_m
        self.radius_m = physics.drone_radius_m
        self.cruise_mps = cruise_mps
        p = physics
        speeds = (p.max_forward_mps, p.max_vertical_mps, p.max_lateral_mps, p.max_yaw_rate)
        self.max_speed = torch.tensor(speeds, device=device)
        dirs = torch.from_numpy(sensor_directions(sensor.azimuth_bins, sensor.elevation_bins)).to(device)
        dirs = dirs.view(sensor.azimuth_bins, sensor.elevation_bins, 3)
        self.azimuth = torch.atan2(dirs[:, 0, 1], dirs[:, 0, 0])  # [Az]
        self.unit = torch.stack([torch.cos(self.azimuth), torch.sin(self.azimuth)], dim=1)  # [Az, 2]
        self.cos_el = dirs[0, :, :2].norm(dim=-1)  # [El]
        self.sin_el = dirs[0, :, 2]

    def surroundings(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(nearest horizontal distance per azimuth [B, Az] within the drone's own height band,
        clearance below [B], clearance above [B]), metres from the drone centre."""
        depth = obs[:, 0] * self.horizon_m
        hit = obs[:, 2] > 0.5
        band = hit & ((depth * self.sin_el).abs() <= self.radius_m + _PUSH_RANGE_M)
        inf = torch.full_like(depth, math.inf)
        near = torch.where(band, depth * self.cos_el, inf).amin(dim=2)
        steep = self.cos_el < 0.5  # rays more than 60 degrees off the horizontal
        vertical = torch.where(hit, depth * self.sin_el.abs(), inf)
        below = vertical[:, :, steep & (self.sin_el < 0)].flatten(1).amin(dim=1)
        above = vertical[:, :, steep & (self.sin_el > 0)].flatten(1).amin(dim=1)
        return near, below, above

    def __call__(
        self, command: FollowCommand, obs: torch.Tensor, position: torch.Tensor, yaw: torch.Tensor
    ) -> torch.Tensor:
        """[B, 4] actions in [-1, 1]: forward, vertical, lateral, yaw rate."""
        near, below, above = self.surroundings(obs)
        offset = command.carrot - position[:, :2]
        error = wrap_angle(torch.atan2(offset[:, 1], offset[:, 0]) - yaw)  # carrot bearing, body frame
        arrive = (_ARRIVE_GAIN * command.goal_distance).clamp(min=_ARRIVE_MIN_MPS)
        turning = 0.7 + 0.3 * torch.cos(error).clamp(min=0.0)  # let the heading catch up a little
        hover = offset.norm(dim=1) < 0.05  # carrot at the drone: hold position (changing height)
        speed = torch.minimum(self.cruise_mps * turning, arrive).masked_fill(hover, 0.0)
        velocity = speed[:, None] * torch.stack([torch.cos(error), torch.sin(error)], dim=1)
        velocity = self._limit(velocity, near) + self._push(near)
        yaw_rate = (error / _YAW_TAU_S).masked_fill(hover, 0.0)
        climb = _HEIGHT_GAIN * (command.height - position[:, 2])
        guard = self.radius_m + 0.2
        climb = climb + (below < guard).float() * 0.5 - (above < guard).float() * 0.5
        wanted = torch.stack([velocity[:, 0], climb, velocity[:, 1], yaw_rate], dim=1) / self.max_speed
        planar = torch.maximum(wanted[:, [0, 2]].abs().amax(dim=1), torch.ones_like(speed))
        wanted[:, 0] = wanted[:, 0] / planar  # keep the direction when a speed limit binds
        wanted[:, 2] = wanted[:, 2] / planar
        return torch.where(command.active[:, None], wanted.clamp(-1.0, 1.0), torch.zeros_like(wanted))

    def _limit(self, velocity: torch.Tensor, near: torch.Tensor) -> torch.Tensor:
        """[B, 2] body velocity whose component towards every surface direction is at most
        ``_BRAKE_GAIN`` x the room left before the stop margin: the drone can always stop in time,
        and slides along a wall or past a door post instead of into it."""
        limit = _BRAKE_GAIN * (near - self.radius_m - _STOP_MARGIN_M).clamp(min=0.0)  # [B, Az]
        for _ in range(2):  # the worst direction, then the worst one left (a corner has two)
            excess = (velocity @ self.unit.T - limit).clamp(min=0.0)
            worst = excess.argmax(dim=1)
            velocity = velocity - excess.gather(1, worst[:, None]) * self.unit[worst]
        return velocity

    def _push(self, near: torch.Tensor) -> torch.Tensor:
        """[B, 2] body-frame velocity away from surfaces closer than the radius + ``_PUSH_RANGE_M``."""
        reach = self.radius_m + _PUSH_RANGE_M
        weight = ((reach - near) / _PUSH_RANGE_M).clamp(0.0, 1.0)  # [B, Az]
        away = -(weight @ self.unit) / weight.sum(dim=1, keepdim=True).clamp(min=1.0)
        return away * _PUSH_MPS
