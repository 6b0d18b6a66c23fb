"""Reference policies for evaluation and benchmarks: uniform random and a reactive heuristic."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class BaselineAct:
    """Minimal acting result: an action and an (empty) state."""

    action: torch.Tensor  # [B, 4]
    state: torch.Tensor  # [B, 0]


class RandomPolicy:
    """Uniform actions in [-1, 1] (uses the global torch RNG, seeded by the evaluator)."""

    def initial_state(self, batch_size: int, device: torch.device | str | None = None) -> torch.Tensor:
        """Stateless: [B, 0]."""
        return torch.zeros(batch_size, 0, device=device)

    def act(
        self, obs: torch.Tensor, state: torch.Tensor, episode_start: torch.Tensor, deterministic: bool = False
    ) -> BaselineAct:
        """Ignore the observation; sample uniformly."""
        del episode_start, deterministic
        action = torch.rand(obs.shape[0], 4, device=obs.device) * 2 - 1
        return BaselineAct(action, state)


class ReactiveHeuristic:
    """Turn towards the most open azimuth sector and fly forward when the way ahead is clear.

    Depth (channel 0, normalised by the horizon, misses = 1) is averaged over elevation per azimuth
    bin; the bearing of the deepest bin sets the yaw rate, and forward speed scales with the free
    distance straight ahead (bin 0 points along the heading).

    Args:
        clearance: normalised depth ahead below which the drone stops moving forward.
    """

    def __init__(self, clearance: float = 0.05) -> None:
        self.clearance = clearance

    def initial_state(self, batch_size: int, device: torch.device | str | None = None) -> torch.Tensor:
        """Stateless: [B, 0]."""
        return torch.zeros(batch_size, 0, device=device)

    def act(
        self, obs: torch.Tensor, state: torch.Tensor, episode_start: torch.Tensor, deterministic: bool = False
    ) -> BaselineAct:
        """Steer towards open space."""
        del episode_start, deterministic
        depth = obs[:, 0].mean(dim=2)  # [B, Az]
        azimuth = depth.shape[1]
        best = depth.argmax(dim=1).float()  # [B]
        bearing = torch.remainder(best * (2 * math.pi / azimuth) + math.pi, 2 * math.pi) - math.pi
        ahead_bins = max(1, azimuth // 16)
        ahead = torch.cat([depth[:, :ahead_bins], depth[:, -ahead_bins:]], dim=1).min(dim=1).values  # [B]
        forward = ((ahead - self.clearance) / max(1e-6, 0.5 - self.clearance)).clamp(0.0, 1.0)
        forward = forward * torch.cos(bearing).clamp(min=0.0)
        yaw = (bearing / (math.pi / 4)).clamp(-1.0, 1.0)
        zeros = torch.zeros_like(forward)
        return BaselineAct(torch.stack([forward, zeros, zeros, yaw], dim=1), state)
