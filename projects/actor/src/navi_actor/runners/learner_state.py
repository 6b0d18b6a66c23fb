"""The learning state a run checkpoints, shared by the local runner and the Ray learner.

Both trainers start the same way (resume point, policy, PPO learner, shuffle RNG, actor-side
shaping, counters), write the same v3 checkpoints and promote by the same rule; only how
rollouts are collected differs. Keeping that here means a field added to the checkpoint, or a
change to promotion, cannot reach one trainer and miss the other.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog
import torch

from navi_actor.algorithms.ppo import PPOLearner
from navi_actor.checkpoints import (
    Checkpoint,
    CheckpointError,
    checkpoint_path,
    load_checkpoint,
    prune_checkpoints,
    save_checkpoint,
)
from navi_actor.config import ActorSettings
from navi_actor.models import NaviPolicy, PolicyConfig
from navi_actor.registry import ModelRegistry, RegistryEntry
from navi_actor.registry.model_registry import comparison_key
from navi_actor.runners.allocator import keep_freed_memory
from navi_actor.runners.progress import TrainingCounters
from navi_actor.runners.resume import capture_rng, choose_start, restore
from navi_actor.runners.run_folder import RunFolder
from navi_actor.runners.shaping_adapter import ActorShaping, build_actor_shaping
from navi_actor.storage import RolloutStorage

log = structlog.get_logger()


def reference_policy(
    settings: ActorSettings, device: torch.device, action_squash: str = "clip"
) -> NaviPolicy | None:
    """The frozen policy of ``ppo.reference_checkpoint`` for the KL penalty, or None when unused.

    Its ``action_squash`` must be the trained policy's: the penalty compares both policies'
    log-probabilities of the same stored raw action, which mean the same executed action only when
    both map raw to physics actions alike (a clip reference's mean 0.9 is a tanh policy's 0.72).

    Raises:
        CheckpointError: the reference squashes its actions differently.
    """
    path = settings.ppo.reference_checkpoint
    if path is None or settings.ppo.reference_kl_coef == 0.0:
        return None
    reference = load_checkpoint(path)
    if reference.policy_config.action_squash != action_squash:
        raise CheckpointError(
            f"ppo.reference_checkpoint {path} has policy.action_squash="
            f"{reference.policy_config.action_squash!r} but the trained policy uses {action_squash!r}"
        )
    policy = NaviPolicy(reference.policy_config).to(device)
    policy.load_state_dict(reference.model)
    return policy.eval()


@dataclass
class LearnerState:
    """Everything the learning curve depends on, restored from a checkpoint when resuming."""

    settings: ActorSettings
    policy_config: PolicyConfig
    policy: NaviPolicy
    learner: PPOLearner
    shuffle: torch.Generator
    shaping: ActorShaping
    counters: TrainingCounters
    parent_checkpoint: str | None
    start_description: str = "a fresh policy"  #: what the run starts from, in plain words

    @classmethod
    def build(
        cls,
        settings: ActorSettings,
        observation_shape: tuple[int, ...],
        num_actors: int,
        registry: ModelRegistry,
        explicit: Path | None,
        *,
        corpus_summary: dict[str, Any] | None = None,
    ) -> LearnerState:
        """Start fresh or resume (``--checkpoint``, else the registry's latest unless disabled).

        Args:
            settings: resolved actor settings.
            observation_shape: (3, Az, El) of the environment.
            num_actors: drones whose rewards the shaper sees at once (B, or N x B for Ray).
            registry: the model registry (auto-resume source).
            explicit: a checkpoint named on the command line.
            corpus_summary: what this run trains on; a killed run on the same corpus is continued.

        Returns:
            The state, with counters, optimiser, RNG and shaping modules restored when resuming.
        """
        if settings.train.keep_freed_memory:  # every trainer path builds its state here
            keep_freed_memory()
        device = torch.device(settings.train.device)
        start = choose_start(
            settings, observation_shape, registry, explicit=explicit, corpus_summary=corpus_summary
        )
        torch.manual_seed(settings.train.seed)
        policy = NaviPolicy(start.policy_config).to(device)
        reference = reference_policy(settings, device, start.policy_config.action_squash)
        learner = PPOLearner(policy, settings.ppo, reference_policy=reference)
        shuffle = torch.Generator(device=device).manual_seed(settings.train.seed)
        shaping = build_actor_shaping(settings, policy, num_actors, device)
        counters = TrainingCounters()
        if start.checkpoint is not None:
            counters = restore(start.checkpoint, learner, shuffle, shaping.modules)
            shaping.resume_at(counters.step_id)
        parent = str(start.path) if start.path is not None else None
        return cls(
            settings,
            start.policy_config,
            policy,
            learner,
            shuffle,
            shaping,
            counters,
            parent,
            start.description,
        )

    def new_storage(
        self,
        observation_shape: tuple[int, ...],
        columns: int,
        storage_class: Callable[..., RolloutStorage] = RolloutStorage,
    ) -> RolloutStorage:
        """Rollout buffers ``[rollout_length, columns]`` for this policy, on the training device."""
        rollout = self.settings.rollout
        return storage_class(
            rollout.rollout_length,
            columns,
            obs_shape=tuple(observation_shape),
            action_dim=self.policy_config.action_dim,
            state_size=self.policy.state_size,
            sequence_length=rollout.sequence_length,
            visit_features=self.policy_config.visits.features if self.policy.keeps_visit_features else 0,
            device=torch.device(self.settings.train.device),
        )

    def checkpoint(self, corpus_summary: dict[str, Any]) -> Checkpoint:
        """The current state as a v3 :class:`Checkpoint` (training_source ``rl``)."""
        return Checkpoint(
            model=self.policy.state_dict(),
            policy_config=self.policy.cfg,
            step_id=self.counters.step_id,
            episode_count=self.counters.episode_count,
            update_index=self.learner.update_index,
            reward_ema=self.counters.reward_ema,
            wall_time_hours=self.counters.wall_time_hours,
            parent_checkpoint=self.parent_checkpoint,
            training_source="rl",
            corpus_summary=corpus_summary,
            settings_json=self.settings.model_dump_json(),
            optimizer=self.learner.optimizer.state_dict(),
            auxiliary={name: module.state_dict() for name, module in self.shaping.modules.items()},
            rng=capture_rng(self.shuffle),
        )

    def save(
        self, corpus_summary: dict[str, Any], run: RunFolder, registry: ModelRegistry, origin: str
    ) -> list[RegistryEntry]:
        """Write a checkpoint, keep the last N, and promote it if its reward EMA beats the best.

        Args:
            corpus_summary: what the policy was trained on.
            run: the run folder (its ``checkpoints/``).
            registry: where promotions go.
            origin: words for the promotion note, e.g. ``run <id>``.

        Returns:
            The registry entries created (empty or one).
        """
        step_id = self.counters.step_id
        path = save_checkpoint(self.checkpoint(corpus_summary), checkpoint_path(run.checkpoints, step_id))
        prune_checkpoints(run.checkpoints, self.settings.checkpoint.keep)
        log.info("actor.checkpoint.saved", path=str(path), step_id=step_id)
        ema = self.counters.reward_ema
        if not self.settings.checkpoint.auto_promote or ema is None:
            return []
        best = registry.best(comparable_to=comparison_key(corpus_summary))  # like with like only
        if best is not None and best.reward_ema is not None and ema <= best.reward_ema:
            return []
        return [registry.promote(path, notes=f"auto-promoted from {origin}", tags=["auto"])]
