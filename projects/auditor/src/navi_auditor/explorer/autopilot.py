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
* **obstacle avoidance**: forward speed falls linearly from ``slow_distance_m`` to zero at
  ``stop_distance_m`` ahead, and shrinks while turning; the sideways command centres the drone
  between left and right walls, the vertical one holds ``cruise_altitude_m`` above the floor (or
  mid-height under a lower ceiling).
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
        score = openness - s.void_penalty * void + s.forward_bias * torch.cos(self.heading_error)[None, :]
        target = self.heading_error[score.argmax(dim=1)]  # [B] rad
        yaw = (s.yaw_gain * target).clamp(-1.0, 1.0)
        ahead = free[:, 0]
        room = ((ahead - s.stop_distance_m) / (s.slow_distance_m - s.stop_distance_m)).clamp(0.0, 1.0)
        forward = s.cruise * room * torch.cos(target).clamp(min=0.0)
        left, right = free[:, self.left_bin], free[:, self.right_bin]
        lateral = s.lateral_gain * (left - right) / (left + right).clamp(min=1e-3)
        depth = observation[:, 0] * self.horizon_m
        down, up = depth[:, :, 0].mean(dim=1), depth[:, :, -1].mean(dim=1)
        height = torch.minimum(0.5 * (up + down), torch.full_like(up, s.cruise_altitude_m))
        vertical = s.altitude_gain * (height - down)  # climb/sink toward the wanted height above floor
        return torch.stack([forward, vertical, lateral, yaw], dim=1).clamp(-1.0, 1.0)
