"""Path following for the frontier planner: a carrot point -> ``[B, 4]`` actions, with a reactive guard.

Batched over drones (tensor ops only). The drone flies holonomically towards the carrot (forward and
lateral together) while yawing to face it, holds the height it started at, and the speed guard
(:mod:`navi_environment.planning.guard`, built from the raw depth rays around the drone's own height)
limits the speed towards every near surface (in proportion to the room left) and pushes away from
surfaces closer than the drone radius plus a margin.
The guard covers what a grid map cannot: a wall may lie anywhere inside an occupied cell.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from navi_environment.config import EnvironmentSettings
from navi_environment.planning.guard import SpeedGuard
from navi_environment.planning.tunables import FrontierTunables
from navi_environment.step.physics.kinematics import wrap_angle

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
        tunables: the planner's knobs (cruise and arrival speeds, the guard's brake gain).
        device: where the sensor tables live.
    """

    def __init__(
        self, settings: EnvironmentSettings, tunables: FrontierTunables, device: torch.device
    ) -> None:
        self.guard = SpeedGuard(settings, device, brake_gain=tunables.brake_gain)
        self.radius_m = self.guard.radius_m
        self.max_speed = self.guard.max_speed
        self.cruise_mps = tunables.cruise_mps
        self.arrive_gain = tunables.arrive_gain
        self.arrive_min_mps = tunables.arrive_min_mps
        self.surroundings = self.guard.surroundings

    def __call__(
        self, command: FollowCommand, obs: torch.Tensor, position: torch.Tensor, yaw: torch.Tensor
    ) -> torch.Tensor:
        """[B, 4] actions in [-1, 1]: forward, vertical, lateral, yaw rate."""
        near, below, above = self.surroundings(obs)
        offset = command.carrot - position[:, :2]
        error = wrap_angle(torch.atan2(offset[:, 1], offset[:, 0]) - yaw)  # carrot bearing, body frame
        arrive = (self.arrive_gain * command.goal_distance).clamp(min=self.arrive_min_mps)
        turning = 0.7 + 0.3 * torch.cos(error).clamp(min=0.0)  # let the heading catch up a little
        hover = offset.norm(dim=1) < 0.05  # carrot at the drone: hold position (changing height)
        speed = torch.minimum(self.cruise_mps * turning, arrive).masked_fill(hover, 0.0)
        velocity = speed[:, None] * torch.stack([torch.cos(error), torch.sin(error)], dim=1)
        velocity = self.guard.limit(velocity, near) + self.guard.push(near)
        yaw_rate = (error / _YAW_TAU_S).masked_fill(hover, 0.0)
        climb = _HEIGHT_GAIN * (command.height - position[:, 2])
        guard = self.radius_m + 0.2
        climb = climb + (below < guard).float() * 0.5 - (above < guard).float() * 0.5
        wanted = torch.stack([velocity[:, 0], climb, velocity[:, 1], yaw_rate], dim=1) / self.max_speed
        planar = torch.maximum(wanted[:, [0, 2]].abs().amax(dim=1), torch.ones_like(speed))
        wanted[:, 0] = wanted[:, 0] / planar  # keep the direction when a speed limit binds
        wanted[:, 2] = wanted[:, 2] / planar
        return torch.where(command.active[:, None], wanted.clamp(-1.0, 1.0), torch.zeros_like(wanted))
