"""The shape of a batched environment the trainer can step in-process.

``navi_environment.backend.SdfDagBackend`` satisfies it; so does the tiny
:class:`~navi_actor.runners.point_env.PointGoalEnv` used by tests and smoke runs. Everything is a
torch tensor on ``device``; nothing goes through numpy or Python loops per drone.
"""

from __future__ import annotations

from typing import Protocol

import torch


class VectorStep(Protocol):
    """What one batched ``step`` returns (tensors may be reused by the next step: copy to keep)."""

    obs: torch.Tensor  # [B, 3, Az, El] float32, after auto-reset of rows that ended
    reward: torch.Tensor  # [B] float32
    terminated: torch.Tensor  # [B] bool
    truncated: torch.Tensor  # [B] bool
    final_obs: torch.Tensor  # [B, 3, Az, El] last observation of rows that ended (equals obs elsewhere)
    info: dict[str, torch.Tensor]  # [B] each: "reward/<term>", "collision", "speed", "coverage", ...


class VectorEnv(Protocol):
    """A batch of ``num_actors`` drones stepped together."""

    @property
    def num_actors(self) -> int:
        """B, the number of drones."""
        ...

    @property
    def observation_shape(self) -> tuple[int, int, int]:
        """``(3, Az, El)``."""
        ...

    @property
    def device(self) -> torch.device:
        """Where observations and step outputs live."""
        ...

    def reset(self, seed: int | None = None) -> torch.Tensor:
        """Reset every drone; returns observations [B, 3, Az, El]."""
        ...

    def step(self, actions: torch.Tensor) -> VectorStep:
        """Apply actions [B, 4] in [-1, 1] and advance one tick."""
        ...
