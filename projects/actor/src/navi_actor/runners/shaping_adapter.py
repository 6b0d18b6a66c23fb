"""Actor-side reward shaping wired into the trainer (RND novelty, episodic loop penalty, tax).

The trainer sees three things: a per-step reward hook for the collector, an auxiliary learner step
(the RND predictor, trained on the same minibatches as PPO), and the stateful objects whose state
goes into checkpoints (RND networks with their running statistics, and the predictor's optimiser).
The episodic memory is cleared every episode, so it is deliberately not checkpointed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from navi_actor.algorithms.ppo import AuxiliaryStep
from navi_actor.config import ActorSettings
from navi_actor.envs.protocol import VectorStep
from navi_actor.memory.episodic import EpisodicMemory
from navi_actor.models import ActOutput, NaviPolicy, physics_action
from navi_actor.runners.rollout_collector import RewardShaping
from navi_actor.shaping.reward_shaper import RewardShaper
from navi_actor.storage.rollout_storage import SequenceBatch

_LOGGED_TERMS = ("existential", "velocity", "novelty", "loop", "spin")


class ShaperHook:
    """Adapts :class:`RewardShaper` to the collector's :class:`RewardShaping` hook.

    Args:
        shaper: the reward shaper (owns RND and the episodic memory).
        global_step: environment steps so far (drives the novelty anneal; restored on resume).
        squash: the policy's ``action_squash``: the spin term sees the executed yaw, not the raw one.
    """

    def __init__(self, shaper: RewardShaper, global_step: int = 0, squash: str = "clip") -> None:
        self.shaper, self.global_step, self.squash = shaper, global_step, squash

    def __call__(
        self, obs: torch.Tensor, step: VectorStep, acted: ActOutput, episode_start: torch.Tensor
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Shaping bonus [B] (total minus the environment reward) and its terms."""
        speed = step.info.get("speed")
        terms = self.shaper.step(
            obs,
            acted.embedding,
            episode_start,
            env_reward=step.reward,
            speed=speed if speed is not None else torch.zeros_like(step.reward),
            step=self.global_step,
            yaw=physics_action(acted.action, self.squash)[:, 3],
            loop_score=acted.loop_score,  # the policy read this memory already (memory_input)
        )
        self.global_step += int(step.reward.shape[0])
        return terms["total"] - terms["env"], {name: terms[name] for name in _LOGGED_TERMS}


@dataclass
class ActorShaping:
    """Shaping hooks for one run."""

    reward: RewardShaping | None = None
    auxiliary_step: AuxiliaryStep | None = None
    modules: dict[str, Any] = field(default_factory=dict)
    hook: ShaperHook | None = None
    memory: EpisodicMemory | None = None  #: the shaper's episodic memory (the policy reads it too)

    def resume_at(self, step_id: int) -> None:
        """Continue the annealing schedules from environment step ``step_id``."""
        if self.hook is not None:
            self.hook.global_step = step_id


def build_actor_shaping(
    settings: ActorSettings, policy: NaviPolicy, num_actors: int, device: torch.device
) -> ActorShaping:
    """Create the shaper configured by ``settings.shaping`` for ``policy``'s sensor and embedding.

    Args:
        settings: actor settings.
        policy: the trained policy (its embedding feeds the episodic memory).
        num_actors: B.
        device: where the RND networks and the memory live.

    Returns:
        :class:`ActorShaping`.
    """
    cfg = policy.cfg
    shaper = RewardShaper(
        settings.shaping,
        num_drones=num_actors,
        embed_dim=cfg.embed_dim,
        azimuth=cfg.azimuth,
        elevation=cfg.elevation,
        device=device,
    )
    rnd = shaper.rnd

    def train_predictor(batch: SequenceBatch) -> torch.Tensor:
        return rnd.update(batch.obs.flatten(0, 1))  # [L, M, 3, Az, El] -> [L*M, 3, Az, El]

    hook = ShaperHook(shaper, squash=policy.action_squash)
    return ActorShaping(
        reward=hook,
        auxiliary_step=train_predictor,
        modules={"rnd": rnd, "rnd_optimizer": rnd.optimizer},
        hook=hook,
        memory=shaper.memory,
    )
