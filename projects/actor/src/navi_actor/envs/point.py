"""PointGoalEnv: a tiny, fast, learnable stand-in for the simulator (tests, smoke runs, benchmarks).

Each drone flies in a flat square arena towards a goal. The spherical observation encodes the goal's
bearing the way the real sensor encodes free space: channel 0 (depth) is low in the azimuth bins that
point at the goal and high behind, so a policy must read the sensor image to fly well. Reward is the
distance gained this step, +1 for reaching the goal (terminated), -0.1 for scraping the arena wall
(``collision``), and episodes are truncated after ``max_steps``. Everything is batched torch; there
is no per-drone Python code, and auto-reset uses masks like the real backend.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

_GRID = 8  # coverage grid cells per side


@dataclass
class PointStep:
    """Output of :meth:`PointGoalEnv.step` (fields as in ``VectorStep``)."""

    obs: torch.Tensor
    reward: torch.Tensor
    terminated: torch.Tensor
    truncated: torch.Tensor
    final_obs: torch.Tensor
    info: dict[str, torch.Tensor] = field(default_factory=dict)


class PointGoalEnv:
    """Batched goal-seeking point drones.

    Args:
        num_actors: B.
        azimuth: azimuth bins of the observation.
        elevation: elevation bins of the observation.
        max_steps: truncation horizon.
        arena_half_size: the arena is ``[-h, h]^2`` metres.
        device: torch device.
    """

    dt = 0.25
    max_speed = 2.0
    max_yaw_rate = 1.5
    goal_radius = 0.6

    def __init__(
        self,
        num_actors: int = 4,
        *,
        azimuth: int = 32,
        elevation: int = 8,
        max_steps: int = 60,
        arena_half_size: float = 4.0,
        device: torch.device | str = "cpu",
    ) -> None:
        self._num_actors, self._shape = num_actors, (3, azimuth, elevation)
        self._device = torch.device(device)
        self.max_steps, self.half = max_steps, arena_half_size
        B = num_actors
        self._generator = torch.Generator(device=self._device)
        zeros = torch.zeros(B, device=self._device)
        self.position = torch.zeros(B, 2, device=self._device)
        self.goal = torch.zeros(B, 2, device=self._device)
        self.yaw, self.steps, self.episode_return = zeros.clone(), zeros.clone(), zeros.clone()
        self.visited = torch.zeros(B, _GRID * _GRID, dtype=torch.bool, device=self._device)
        self._bins = torch.arange(azimuth, device=self._device) * (2 * math.pi / azimuth)  # [Az]

    @property
    def num_actors(self) -> int:
        """B."""
        return self._num_actors

    @property
    def observation_shape(self) -> tuple[int, int, int]:
        """``(3, Az, El)``."""
        return self._shape

    @property
    def device(self) -> torch.device:
        """The tensors' device."""
        return self._device

    def poses(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Positions [B, 3] (z = 0) and yaws [B]."""
        z = torch.zeros(self._num_actors, 1, device=self._device)
        return torch.cat([self.position, z], dim=1), self.yaw.clone()

    # --- planned episodes (paired evaluation) -----------------------------------------------------

    num_scenes = 1

    def sample_starts(self, scene: int, count: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        """``count`` start poses in the arena (z = 0): positions [count,3], yaws [count]."""
        del scene
        generator = torch.Generator().manual_seed(int(seed))
        xy = (torch.rand(count, 2, generator=generator) * 2 - 1) * (self.half - 0.5)
        yaw = torch.rand(count, generator=generator) * 2 * math.pi
        return torch.cat([xy, torch.zeros(count, 1)], dim=1), yaw

    def start_episodes(
        self, rows: torch.Tensor, scenes: torch.Tensor, positions: torch.Tensor, yaws: torch.Tensor
    ) -> torch.Tensor:
        """Start planned episodes for ``rows``; the goal is the start mirrored through the arena centre
        (a function of the start, so a planned episode is the same for every policy)."""
        del scenes
        mask = torch.zeros(self._num_actors, dtype=torch.bool, device=self._device)
        mask[rows] = True
        self._respawn(mask)  # clears counters and memory
        start = positions[:, :2].to(self._device, torch.float32)
        self.position[rows] = start
        self.goal[rows] = -start
        self.yaw[rows] = yaws.to(self._device, torch.float32)
        self.visited[rows] = False
        self._mark_visited()
        return self._observe()

    def reachable_cells(self, scene: int) -> int:
        """Coverage here is already a share of the arena's grid cells."""
        del scene
        return 1

    def reset(self, seed: int | None = None) -> torch.Tensor:
        """Respawn every drone; returns observations [B, 3, Az, El]."""
        if seed is not None:
            self._generator.manual_seed(seed)
        self._respawn(torch.ones(self._num_actors, dtype=torch.bool, device=self._device))
        return self._observe()

    def step(self, actions: torch.Tensor) -> PointStep:
        """Move every drone by ``actions`` [B, 4] (clipped to [-1, 1]) and auto-reset ended rows."""
        actions = actions.to(self._device).clamp(-1.0, 1.0)
        distance_before = (self.goal - self.position).norm(dim=1)
        self.yaw = torch.remainder(self.yaw + actions[:, 3] * self.max_yaw_rate * self.dt, 2 * math.pi)
        cos, sin = self.yaw.cos(), self.yaw.sin()
        forward, lateral = actions[:, 0], actions[:, 2]
        velocity = torch.stack([forward * cos - lateral * sin, forward * sin + lateral * cos], dim=1)
        velocity = velocity * self.max_speed
        wanted = self.position + velocity * self.dt
        self.position = wanted.clamp(-self.half, self.half)
        collision = (wanted != self.position).any(dim=1).float()
        distance = (self.goal - self.position).norm(dim=1)
        reached = distance < self.goal_radius
        progress = distance_before - distance
        reward = progress + reached.float() - 0.1 * collision
        self.steps += 1
        self.episode_return += reward
        self._mark_visited()
        terminated = reached
        truncated = (self.steps >= self.max_steps) & ~terminated
        done = terminated | truncated
        info = {
            "reward/progress": progress,
            "reward/goal": reached.float(),
            "reward/collision": -0.1 * collision,
            "collision": collision,
            "speed": velocity.norm(dim=1),
            "coverage": self.visited.float().mean(dim=1),
            "episode_return": self.episode_return.clone(),
            "episode_length": self.steps.clone(),
        }
        final_obs = self._observe()
        self._respawn(done)
        return PointStep(self._observe(), reward, terminated, truncated, final_obs, info)

    def _respawn(self, rows: torch.Tensor) -> None:
        """Masked reset of ``rows`` [B] bool (no per-drone branches)."""
        B, gen, dev = self._num_actors, self._generator, self._device
        spawn = (torch.rand(B, 2, generator=gen, device=dev) * 2 - 1) * (self.half - 0.5)
        goal = (torch.rand(B, 2, generator=gen, device=dev) * 2 - 1) * (self.half - 0.5)
        yaw = torch.rand(B, generator=gen, device=dev) * 2 * math.pi
        mask = rows.unsqueeze(1)
        self.position = torch.where(mask, spawn, self.position)
        self.goal = torch.where(mask, goal, self.goal)
        self.yaw = torch.where(rows, yaw, self.yaw)
        self.steps = torch.where(rows, torch.zeros_like(self.steps), self.steps)
        self.episode_return = torch.where(rows, torch.zeros_like(self.episode_return), self.episode_return)
        self.visited &= ~mask
        self._mark_visited()

    def _mark_visited(self) -> None:
        cell = ((self.position + self.half) / (2 * self.half) * _GRID).long().clamp(0, _GRID - 1)
        index = cell[:, 0] * _GRID + cell[:, 1]  # [B]
        self.visited.scatter_(1, index.unsqueeze(1), True)

    def _observe(self) -> torch.Tensor:
        """[B, 3, Az, El]: depth low towards the goal's bearing, no semantics, all rays valid."""
        offset = self.goal - self.position
        bearing = torch.atan2(offset[:, 1], offset[:, 0]) - self.yaw  # [B], body frame
        depth = 0.5 - 0.5 * torch.cos(self._bins.unsqueeze(0) - bearing.unsqueeze(1))  # [B, Az]
        _, azimuth, elevation = self._shape
        obs = torch.zeros(self._num_actors, *self._shape, device=self._device)
        obs[:, 0] = depth.unsqueeze(2).expand(-1, azimuth, elevation)
        obs[:, 2] = 1.0
        return obs
