"""The point toy for rollout tests: one small collected rollout, and an env that records its actions
(shared instead of copied)."""

from __future__ import annotations

import torch

from navi_actor.envs.point import PointGoalEnv, PointStep
from navi_actor.models import NaviPolicy
from navi_actor.runners.rollout_collector import RolloutCollector
from navi_actor.storage import RolloutStorage


class RecordingEnv(PointGoalEnv):
    """Remembers every action batch it was asked to execute (what reached the physics)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.received: list[torch.Tensor] = []

    def step(self, actions: torch.Tensor) -> PointStep:
        self.received.append(actions.clone())
        return super().step(actions)


def collected(policy: NaviPolicy) -> RolloutStorage:
    """16 steps of 4 point-toy drones (16 x 8 sensor) in 8-step sequences, GAE computed."""
    env = PointGoalEnv(4, azimuth=16, elevation=8, max_steps=12)
    storage = RolloutStorage(
        16, 4, obs_shape=env.observation_shape, action_dim=4, state_size=policy.state_size, sequence_length=8
    )
    RolloutCollector(env, policy, storage, seed=0).collect(0.99, 0.95)
    return storage
