"""The frontier explorer as the explorer's autopilot (``explore --autopilot frontier``).

The explorer loop asks its pilot for an action from the observation alone; the frontier planner
(:class:`navi_environment.planning.FrontierPlanner`) also needs the drone's pose and must start a new
map with every scene and episode. This adapter reads both from the session, so the loop stays the
same for every pilot. Recorded flights are demonstrations like any other (they feed ``bc-pretrain``).
"""

from __future__ import annotations

import torch

from navi_auditor.explorer.session import ExplorerSession
from navi_environment.config import EnvironmentSettings
from navi_environment.planning import FrontierPlanner


class FrontierPilot:
    """Callable pilot: ``pilot(observation [1, 3, Az, El]) -> action [1, 4]`` in [-1, 1].

    Args:
        session: the flown session (its backend gives the pose; its scene and episode counters
            tell when to forget the map).
        env_settings: the environment settings the session flies with.
        device: torch device of the planner's maps.
    """

    def __init__(
        self, session: ExplorerSession, env_settings: EnvironmentSettings, device: str | torch.device = "cpu"
    ) -> None:
        self.session = session
        self.planner = FrontierPlanner(env_settings, 1, device=device)
        self._flying: tuple[int, int] | None = None  # (scene number, episode id) the map belongs to

    def __call__(self, observation: torch.Tensor) -> torch.Tensor:
        backend = self.session.backend
        if backend is None:
            raise RuntimeError("the session has no scene yet; call next_scene() first")
        now = (self.session.scene_number, self.session.episode_id)
        if now != self._flying:
            self.planner.reset()
            self._flying = now
        position, yaw = backend.poses()
        return self.planner.act(observation, position, yaw)
