"""Scripted explorer: frontier-seeking, obstacle-avoiding steering from the depth channel alone.

The autopilot is a pure, batched function of the observation (no per-drone Python), so it drives
one drone in the explorer or hundreds in a benchmark, and a policy can learn it from observations
only (behaviour cloning needs a teacher whose actions depend on what the student sees).

Steering, per drone:

* **free space per direction**: the nearest surface in a level elevation band for every azimuth,
  min-pooled over neighbouring azimuths so gaps narrower than the drone do not look open;
* **frontier seeking**: head for the azimuth with the most free space (saturating at
  ``open_distance_m``, so among open directions the one nearest the heading wins and the drone
  does not dither); directions where the level band sees nothing at all
  (misses: open sky, the outside of a building) are penalised, because flying into the void
  starves the sensor and ends the episode;
* **heading preference only where the drone can go**: ``forward_bias`` favours directions near
  the current heading, scaled by how passable each direction is (zero at ``stop_distance_m``), so
  a blocked heading never outscores open space behind the drone (it did: 0.995 m ahead beat 4.09 m
  at 146 degrees, and the drone hovered against the wall for the rest of the segment);
* **obstacle avoidance**: forward speed falls linearly from ``slow_distance_m`` to the ``creep``
  share at ``stop_distance_m`` ahead (measured in the tube the drone sweeps, not along one ray), and
  to zero below it; it shrinks while turning (a speed falling to zero let the drone hover forever
  just outside the stop distance); below ``stop_distance_m`` the drone turns
  in place at least at ``turn_yaw`` toward the most open direction (to the left when nothing is
  open), so it never sits still; the sideways command centres the drone between left and right
  walls, the vertical one holds ``cruise_altitude_m`` above the floor (or mid-height under a lower
  ceiling).
"""

from __future__ import annotations

import math

import torch
from torch.nn import functional

from navi_auditor.settings import AutopilotSettings


class Autopilot:
    """Batched scripted pilot.

    Args:
        settings: steering gains and distances.
        horizon_m: sensor horizon (depth channel 0 is depth / horizon).
        azimuth_bins, elevation_bins: sensor shape (Az, El).
        device: where the precomputed angle tables live.
    """

    def __init__(
        self,
        settings: AutopilotSettings,
        horizon_m: float,
        azimuth_bins: int,
        elevation_bins: int,
        device: torch.device | str = "cpu",
    ) -> None:
        self.settings = settings
        self.horizon_m = float(horizon_m)
        azimuth = 2.0 * math.pi * torch.arange(azimuth_bins, device=device) / azimuth_bins
        self.heading_error = torch.remainder(azimuth + math.pi, 2.0 * math.pi) - math.pi  # [Az] in [-pi, pi)
        elevation = (
            -0.5 * math.pi + math.pi * (torch.arange(elevation_bins, device=device) + 0.5) / elevation_bins
        )
        band = elevation.abs() <= math.radians(settings.band_deg)
        if not bool(band.any()):  # coarse sensors: take the bins nearest the horizon
            band = elevation.abs() <= elevation.abs().min() + 1e-6
        self.band = band  # [El] bool
        self.below, self.above = (elevation < 0) & ~band, (elevation > 0) & ~band  # [El] bool
        # unit ray directions [3, Az, El] in the body frame (x forward, y left, z up)
        cos_el = torch.cos(elevation)[None, :]
        self.rays = torch.stack([
            torch.cos(azimuth)[:, None] * cos_el, torch.sin(azimuth)[:, None] * cos_el,
            torch.sin(elevation)[None, :].expand(azimuth_bins, -1),
        ])  # fmt: skip
        self.pool = max(1, azimuth_bins // 16)  # azimuth half-window of the min-pool (~11 degrees)
        self.left_bin, self.right_bin = azimuth_bins // 4, (3 * azimuth_bins) // 4

    def free_space(self, observation: torch.Tensor) -> torch.Tensor:
        """Metres of free space per azimuth in the level band, min-pooled over neighbours.

        Args:
            observation: [B, 3, Az, El] (depth / horizon in channel 0; misses read 1).

        Returns:
            [B, Az] metres.
        """
        depth = observation[:, 0] * self.horizon_m  # [B, Az, El]
        level = depth[:, :, self.band].amin(dim=2)  # [B, Az]
        k = self.pool
        wrapped = torch.cat([level[:, -k:], level, level[:, :k]], dim=1)  # circular padding
        return -functional.max_pool1d(-wrapped[:, None, :], kernel_size=2 * k + 1, stride=1)[:, 0]  # [B, Az]

    def corridor_clearance(self, points: torch.Tensor) -> torch.Tensor:
        """Metres ahead to the nearest surface inside the tube the drone sweeps flying straight on.

        One ray straight ahead misses a pillar edge or a shelf corner 40 degrees off the nose that
        the drone's body still hits; the tube (radius ``corridor_m``) catches both.

        Args:
            points: [B, 3, Az, El] surface points in the body frame.

        Returns:
            [B] metres (the sensor horizon when the tube is clear).
        """
        x = points[:, 0]
        off_axis = torch.sqrt(points[:, 1] ** 2 + points[:, 2] ** 2)
        inside = (x > 0.0) & (off_axis < self.settings.corridor_m)
        return torch.where(inside, x, torch.full_like(x, self.horizon_m)).flatten(1).amin(dim=1)

    def push_away(self, points: torch.Tensor) -> torch.Tensor:
        """Sideways push away from surfaces nearer than ``stop_distance_m`` (left positive).

        The centring term only looks straight left and right; a corner at 45 degrees the drone is
        wedged against needs its own push, or the drone pushes into it for the rest of the segment.

        Args:
            points: [B, 3, Az, El] surface points in the body frame.

        Returns:
            [B] in [-1, 1].
        """
        stop = self.settings.stop_distance_m
        distance = points.norm(dim=1).clamp(min=1e-3)  # [B, Az, El]
        weight = ((stop - distance) / stop).clamp(min=0.0)
        sideways = -(weight * points[:, 1] / distance).flatten(1).sum(dim=1)
        return sideways / weight.flatten(1).sum(dim=1).clamp(min=1.0)

    def _room(self, free: torch.Tensor) -> torch.Tensor:
        """How passable each clearance is: 0 at ``stop_distance_m`` or less, 1 from ``slow_distance_m``."""
        s = self.settings
        return ((free - s.stop_distance_m) / (s.slow_distance_m - s.stop_distance_m)).clamp(0.0, 1.0)

    def __call__(self, observation: torch.Tensor) -> torch.Tensor:
        """Actions for a batch of observations.

        Args:
            observation: [B, 3, Az, El].

        Returns:
            [B, 4] actions in [-1, 1]: forward, vertical, lateral, yaw rate.
        """
        s = self.settings
        free = self.free_space(observation)  # [B, Az]
        openness = (free / s.open_distance_m).clamp(max=1.0)  # 1 = "open enough"; blocked directions ~0
        void = 1.0 - observation[:, 2][:, :, self.band].float().mean(dim=2)  # [B, Az] share of misses
        passable = self._room(free)  # [B, Az] 0 at stop_distance_m or closer, 1 from slow_distance_m
        bias = s.forward_bias * torch.cos(self.heading_error)[None, :] * passable
        score = openness - s.void_penalty * void + bias
        target = self.heading_error[score.argmax(dim=1)]  # [B] rad
        yaw = (s.yaw_gain * target).clamp(-1.0, 1.0)
        points = (observation[:, 0] * self.horizon_m)[:, None] * self.rays  # [B, 3, Az, El] metres
        room = self._room(self.corridor_clearance(points))  # the drone's own path, not one ray
        blocked = room <= 0.0  # turn in place: never hover with nothing to do
        side = torch.where(target < 0.0, -1.0, 1.0)  # straight-ahead target while blocked: turn left
        yaw = torch.where(blocked, side * torch.maximum(yaw.abs(), torch.full_like(yaw, s.turn_yaw)), yaw)
        speed = torch.where(blocked, 0.0, s.creep + (1.0 - s.creep) * room)  # creep on until blocked
        forward = s.cruise * speed * torch.cos(target).clamp(min=0.0)
        left, right = free[:, self.left_bin], free[:, self.right_bin]
        centring = (left - right) / (left + right).clamp(min=1e-3)
        lateral = s.lateral_gain * (centring + self.push_away(points))
        vertical = self._vertical(observation[:, 0] * self.horizon_m)
        return torch.stack([forward, vertical, lateral, yaw], dim=1).clamp(-1.0, 1.0)

    def _vertical(self, depth: torch.Tensor) -> torch.Tensor:
        """Climb/sink toward the wanted height above the floor, never into something close.

        The height comes from the straight-down and straight-up rings; a shelf or table passing
        under the drone is nearer in the lower hemisphere than the floor, so sinking stops while
        anything below the level band is closer than ``stop_distance_m`` (climbing likewise).

        Args:
            depth: [B, Az, El] metres.
        """
        s = self.settings
        down, up = depth[:, :, 0].mean(dim=1), depth[:, :, -1].mean(dim=1)
        height = torch.minimum(0.5 * (up + down), torch.full_like(up, s.cruise_altitude_m))
        vertical = s.altitude_gain * (height - down)
        below = depth[:, :, self.below].flatten(1).amin(dim=1)
        above = depth[:, :, self.above].flatten(1).amin(dim=1)
        vertical = torch.where(below < s.stop_distance_m, vertical.clamp(min=0.0), vertical)
        return torch.where(above < s.stop_distance_m, vertical.clamp(max=0.0), vertical)
