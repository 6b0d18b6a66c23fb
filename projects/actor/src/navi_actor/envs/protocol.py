"""The shape of a batched environment the trainer can step in-process.

``navi_environment.backend.SdfDagBackend`` satisfies it; so does the tiny
:class:`~navi_actor.envs.point.PointGoalEnv` used by tests and smoke runs. Everything is a
torch tensor on ``device``; nothing goes through numpy or Python loops per drone.
"""

from __future__ import annotations

from typing import Protocol

import torch


class VectorStep(Protocol):
    """What one batched ``step`` returns (tensors may be reused by the next step: copy to keep)."""

    @property
    def obs(self) -> torch.Tensor:
        """[B, 3, Az, El] float32, after auto-reset of rows that ended."""
        ...

    @property
    def reward(self) -> torch.Tensor:
        """[B] float32."""
        ...

    @property
    def terminated(self) -> torch.Tensor:
        """[B] bool: the episode ended for good."""
        ...

    @property
    def truncated(self) -> torch.Tensor:
        """[B] bool: the episode was cut (time limit, starvation); bootstrap from ``final_obs``."""
        ...

    @property
    def final_obs(self) -> torch.Tensor:
        """[B, 3, Az, El] last observation of rows that ended (equals ``obs`` elsewhere)."""
        ...

    @property
    def info(self) -> dict[str, torch.Tensor]:
        """[B] each: ``reward/<term>``, ``collision``, ``speed``, ``coverage``, ..."""
        ...


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

    def poses(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Current positions [B, 3] (metres) and yaws [B] (radians), for path length and telemetry."""
        ...
