"""Drone kinematics: clipped, scaled, smoothed body-frame velocity commands -> world displacement.

Body frame: x ahead (heading), y left, z up. Actions ``[forward, vertical, lateral, yaw]`` in
[-1, 1]; values outside are clipped and NaN counts as 0, so nothing out of range reaches physics.
"""

from __future__ import annotations

import math

import torch

from navi_environment.config import PhysicsSettings


def wrap_angle(angle: torch.Tensor) -> torch.Tensor:
    """Wrap angles to [-pi, pi)."""
    return torch.remainder(angle + math.pi, 2.0 * math.pi) - math.pi


class Kinematics:
    """Velocity commands with smoothing and an obstacle-ahead speed limiter.

    Args:
        settings: physics settings (speeds, smoothing, radius, slow-down distance, dt).
        device: tensor device.
    """

    def __init__(self, settings: PhysicsSettings, device: torch.device) -> None:
        self.settings = settings
        self.dt = float(settings.dt)
        self.max_speed = torch.tensor(
            [
                settings.max_forward_mps,
                settings.max_vertical_mps,
                settings.max_lateral_mps,
                settings.max_yaw_rate,
            ],
            device=device,
            dtype=torch.float32,
        )

    def command(
        self, actions: torch.Tensor, smoothed: torch.Tensor, forward_clearance: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Turn actions into this step's executed velocities.

        Args:
            actions: [B,4] raw actions (any values; clipped to [-1, 1], NaN -> 0).
            smoothed: [B,4] previous smoothed command (m/s, m/s, m/s, rad/s).
            forward_clearance: [B] nearest surface ahead, metres.

        Returns:
            ``(new_smoothed [B,4], executed [B,4])``: the smoothed command (state for the next
            step) and the velocity actually flown after the obstacle-ahead limiter.
        """
        clipped = torch.nan_to_num(actions, nan=0.0).clamp(-1.0, 1.0)
        target = clipped * self.max_speed
        new_smoothed = smoothed + self.settings.smoothing * (target - smoothed)
        room = forward_clearance - self.settings.drone_radius_m
        factor = (room / self.settings.slowdown_distance_m).clamp(0.0, 1.0)
        forward = new_smoothed[:, 0]
        limited = torch.where(forward > 0, forward * factor, forward)
        executed = torch.cat([limited[:, None], new_smoothed[:, 1:]], dim=1)
        return new_smoothed, executed

    def displacement(self, executed: torch.Tensor, yaw: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """World displacement over one step and the new yaw.

        Args:
            executed: [B,4] body velocities (forward, vertical, lateral, yaw rate).
            yaw: [B] current heading, rad.

        Returns:
            ``(displacement [B,3] metres, new_yaw [B] wrapped to [-pi, pi))``.
        """
        c, s = torch.cos(yaw), torch.sin(yaw)
        forward, vertical, lateral = executed[:, 0], executed[:, 1], executed[:, 2]
        disp = torch.stack([forward * c - lateral * s, forward * s + lateral * c, vertical], dim=1) * self.dt
        return disp, wrap_angle(yaw + executed[:, 3] * self.dt)
