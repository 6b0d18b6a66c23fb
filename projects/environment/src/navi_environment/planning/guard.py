"""A reactive speed guard from the raw depth rays: what a flight controller's collision prevention does.

Batched over drones (tensor ops only). From the newest observation alone (no map, no memory) it finds
the nearest surface in every horizontal direction within the drone's own height band, caps the
velocity towards each of them in proportion to the room left before a stop margin (so the drone can
always stop in time, and slides along a wall or past a door post instead of into it), and pushes away
from surfaces closer than the drone radius plus a margin.

Two users, one rule: the frontier planner's path follower (:mod:`navi_environment.planning.follow`)
guards its own velocity commands, and the real-time server (``navi-environment serve --mode realtime
--guard``) guards every action it executes at the control rate, with the observation of the tick
before, however old the plan behind that action is (docs/environment_server.md, "Guard").
"""

from __future__ import annotations

import math

import torch

from navi_environment.config import EnvironmentSettings
from navi_environment.tracer import sensor_directions

BRAKE_GAIN = 2.0  # default speed limit per metre of room left before the stop margin, 1/s
STOP_MARGIN_M = 0.1  # gap between the drone's sphere and a surface at which motion towards it stops
PUSH_RANGE_M = 0.2  # surfaces closer than radius + this push the drone away
PUSH_MPS = 1.0  # push-away speed at contact


class SpeedGuard:
    """Caps body-frame velocities towards near surfaces, for one sensor and physics configuration.

    Args:
        settings: environment settings (sensor shape and horizon, physics speeds and radius).
        device: where the sensor tables live (the observations' device).
        brake_gain: speed limit per metre of room left before the stop margin, 1/s. The real-time
            server keeps ``BRAKE_GAIN``, the margin it was measured with under latency; the frontier
            planner, which acts on the newest observation, brakes later (its ``brake_gain``).
    """

    def __init__(
        self, settings: EnvironmentSettings, device: torch.device | str, brake_gain: float = BRAKE_GAIN
    ) -> None:
        sensor, physics = settings.sensor, settings.physics
        self.brake_gain = float(brake_gain)
        self.horizon_m = sensor.horizon_m
        self.radius_m = physics.drone_radius_m
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
        band = hit & ((depth * self.sin_el).abs() <= self.radius_m + PUSH_RANGE_M)
        inf = torch.full_like(depth, math.inf)
        near = torch.where(band, depth * self.cos_el, inf).amin(dim=2)
        steep = self.cos_el < 0.5  # rays more than 60 degrees off the horizontal
        vertical = torch.where(hit, depth * self.sin_el.abs(), inf)
        below = vertical[:, :, steep & (self.sin_el < 0)].flatten(1).amin(dim=1)
        above = vertical[:, :, steep & (self.sin_el > 0)].flatten(1).amin(dim=1)
        return near, below, above

    def limit(self, velocity: torch.Tensor, near: torch.Tensor) -> torch.Tensor:
        """[B, 2] body velocity whose component towards every surface direction is at most
        ``brake_gain`` x the room left before the stop margin."""
        limit = self.room(near)  # [B, Az]
        for _ in range(2):  # the worst direction, then the worst one left (a corner has two)
            excess = (velocity @ self.unit.T - limit).clamp(min=0.0)
            worst = excess.argmax(dim=1)
            velocity = velocity - excess.gather(1, worst[:, None]) * self.unit[worst]
        return velocity

    def room(self, clearance: torch.Tensor) -> torch.Tensor:
        """Speed limit towards a surface ``clearance`` metres from the drone centre, m/s."""
        return self.brake_gain * (clearance - self.radius_m - STOP_MARGIN_M).clamp(min=0.0)

    def push(self, near: torch.Tensor) -> torch.Tensor:
        """[B, 2] body-frame velocity away from surfaces closer than the radius + ``PUSH_RANGE_M``."""
        reach = self.radius_m + PUSH_RANGE_M
        weight = ((reach - near) / PUSH_RANGE_M).clamp(0.0, 1.0)  # [B, Az]
        away = -(weight @ self.unit) / weight.sum(dim=1, keepdim=True).clamp(min=1.0)
        return away * PUSH_MPS

    def __call__(self, actions: torch.Tensor, obs: torch.Tensor) -> torch.Tensor:
        """Guarded ``[B, 4]`` actions in [-1, 1] (forward, vertical, lateral, yaw rate).

        The horizontal velocity is limited and pushed as above; the vertical speed towards the floor
        or the ceiling is capped the same way from the steep rays; the yaw rate passes unchanged.
        Actions that keep their room pass unchanged (bit for bit, once clipped to [-1, 1]).

        Args:
            actions: ``[B, 4]`` actions (NaN counts as 0, as in the physics).
            obs: ``[B, 3, Az, El]`` observations the actions will be executed from.
        """
        near, below, above = self.surroundings(obs)
        clipped = torch.nan_to_num(actions, nan=0.0).clamp(-1.0, 1.0)
        velocity = clipped * self.max_speed
        planar = velocity[:, [0, 2]]
        guarded = self.limit(planar, near) + self.push(near)
        vertical = torch.minimum(torch.maximum(velocity[:, 1], -self.room(below)), self.room(above))
        out = torch.stack([guarded[:, 0], vertical, guarded[:, 1], velocity[:, 3]], dim=1) / self.max_speed
        changed = (out - clipped).abs() > 1e-6
        return torch.where(changed, out, clipped).clamp(-1.0, 1.0)
