"""Per-drone episode counters and the end-of-episode rules, all as batched tensors.

* ``truncated``: the step limit is reached, or, after the grace period that follows each reset,
  the drone is starved (this share of its rays sees nothing: it flew out into the void).
* ``terminated``: the drone left its scene's cube (there is no future there to bootstrap from).
A drone never dies on collision; collisions are penalised by the reward.
"""

from __future__ import annotations

import torch

from navi_environment.config import EpisodeSettings


class EpisodeTracker:
    """Step counts, returns and scene-rotation counters of B drones.

    Args:
        settings: episode settings.
        num_actors: B. device: tensor device.
    """

    def __init__(self, settings: EpisodeSettings, num_actors: int, device: torch.device) -> None:
        self.settings = settings
        self.length = torch.zeros(num_actors, dtype=torch.int64, device=device)
        self.episode_return = torch.zeros(num_actors, device=device)
        self.episodes_in_scene = torch.zeros(num_actors, dtype=torch.int64, device=device)

    def reset_all(self) -> None:
        """Zero every counter (explicit reset)."""
        self.length.zero_()
        self.episode_return.zero_()
        self.episodes_in_scene.zero_()

    def advance(self, reward: torch.Tensor) -> None:
        """Count one step and add its reward."""
        self.length += 1
        self.episode_return += reward

    def end_flags(self, starvation: torch.Tensor, outside: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(terminated [B], truncated [B])`` after this step.

        Args:
            starvation: [B] share of rays that saw nothing this step.
            outside: [B] bool, drone outside its scene cube.
        """
        s = self.settings
        starved = (self.length > s.starvation_grace_steps) & (starvation >= s.starvation_truncate)
        truncated = ((self.length >= s.max_steps) | starved) & ~outside
        return outside, truncated

    def start_episodes(self, rows: torch.Tensor) -> torch.Tensor:
        """Reset counters of ``rows`` (long [K]) that just ended; return [K] bool 'rotate scene now'."""
        self.length[rows] = 0
        self.episode_return[rows] = 0.0
        finished = self.episodes_in_scene[rows] + 1
        rotate = finished >= self.settings.episodes_per_scene
        self.episodes_in_scene[rows] = torch.where(rotate, torch.zeros_like(finished), finished)
        return rotate
