"""The canonical in-process PPO loop: collect, learn, log, checkpoint, promote, repeat.

One :class:`OnPolicyRunner` owns one run folder. It keeps going until ``total_steps`` more
environment steps have been taken (or forever), and on Ctrl+C it saves a final checkpoint before
returning. Everything the learning curve depends on (weights, optimiser, counters, RNG, RND state) is
in each checkpoint, so a resumed run continues the same curve.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import structlog
import torch

from navi_actor.algorithms.ppo import PPOLearner
from navi_actor.checkpoints import (
    Checkpoint,
    checkpoint_path,
    load_checkpoint,
    prune_checkpoints,
    save_checkpoint,
)
from navi_actor.config import ActorSettings
from navi_actor.models import NaviPolicy
from navi_actor.registry import ModelRegistry, RegistryEntry
from navi_actor.runners.env_factory import BuiltEnvironment
from navi_actor.runners.progress import Stopwatch, TrainingCounters, progress_line, update_record
from navi_actor.runners.resume import capture_rng, choose_start, restore
from navi_actor.runners.rollout_collector import RolloutCollector
from navi_actor.runners.run_folder import RunFolder, new_run_id
from navi_actor.runners.shaping_adapter import build_actor_shaping
from navi_actor.storage import RolloutStorage
from navi_actor.telemetry import TrainingTelemetry

log = structlog.get_logger()


@dataclass(frozen=True)
class TrainSummary:
    """What a finished (or interrupted) run did."""

    run_id: str
    run_dir: Path
    step_id: int
    steps_this_run: int
    updates_this_run: int
    interrupted: bool
    final_checkpoint: Path | None
    promoted: list[RegistryEntry]
    steps_per_second: float
    reward_ema: float | None


class OnPolicyRunner:
    """Builds the policy, learner, storage and collector for one run and drives them.

    Args:
        settings: resolved actor settings.
        built: the environment and its corpus summary.
        artifacts_dir: the ``artifacts/`` folder (runs and the model registry live under it).
        checkpoint: explicit start checkpoint (``--checkpoint``).
        telemetry: optional live telemetry publisher.
        progress: callback receiving the human progress line.
    """

    def __init__(
        self,
        settings: ActorSettings,
        built: BuiltEnvironment,
        *,
        artifacts_dir: Path,
        checkpoint: Path | None = None,
        telemetry: TrainingTelemetry | None = None,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        self.settings, self.env, self.corpus_summary = settings, built.env, built.corpus_summary
        self.telemetry, self.progress = telemetry, progress
        self.registry = ModelRegistry(artifacts_dir / "models")
        device = torch.device(settings.train.device)
        start = choose_start(settings, self.env.observation_shape, self.registry, explicit=checkpoint)
        self.parent_checkpoint = str(start.path) if start.path is not None else None
        torch.manual_seed(settings.train.seed)
        self.policy = NaviPolicy(start.policy_config).to(device)
        self.learner = PPOLearner(self.policy, settings.ppo, reference_policy=self._reference_policy(device))
        self.shuffle = torch.Generator(device=device).manual_seed(settings.train.seed)
        self.shaping = build_actor_shaping(settings, self.policy, self.env.num_actors, device)
        self.counters = TrainingCounters()
        if start.checkpoint is not None:
            self.counters = restore(start.checkpoint, self.learner, self.shuffle, self.shaping.modules)
            self.shaping.resume_at(self.counters.step_id)
        rollout = settings.rollout
        self.steps_per_rollout = rollout.rollout_length * self.env.num_actors
        total = settings.train.total_steps
        self.learner.schedule(math.ceil(total / self.steps_per_rollout) if total else None)
        self.storage = RolloutStorage(
            rollout.rollout_length,
            self.env.num_actors,
            obs_shape=tuple(self.env.observation_shape),
            action_dim=start.policy_config.action_dim,
            state_size=self.policy.state_size,
            sequence_length=rollout.sequence_length,
            device=device,
        )
        self.collector = RolloutCollector(
            self.env,
            self.policy,
            self.storage,
            shaping=self.shaping.reward,
            seed=settings.train.seed + self.counters.step_id,
            on_step=self._on_step,
        )
        label = f"{start.policy_config.encoder_backend}-{start.policy_config.temporal_core}"
        self.run = RunFolder(artifacts_dir / "runs", new_run_id(label))
        self.run.write_manifest(
            settings.model_dump(mode="json"),
            {
                "device": str(device),
                "resumed_from": self.parent_checkpoint,
                "start_step_id": self.counters.step_id,
                "policy_config": start.policy_config.model_dump(mode="json"),
                "corpus_summary": self.corpus_summary,
                "observation_shape": list(self.env.observation_shape),
            },
        )
        self._last_checkpoint_step, self._saved_once = self.counters.step_id, False
        log.info(
            "actor.train.started", run_id=self.run.run_id, run_dir=str(self.run.path), device=str(device)
        )

    def _reference_policy(self, device: torch.device) -> NaviPolicy | None:
        path = self.settings.ppo.reference_checkpoint
        if path is None or self.settings.ppo.reference_kl_coef == 0.0:
            return None
        reference = load_checkpoint(path)
        policy = NaviPolicy(reference.policy_config).to(device)
        policy.load_state_dict(reference.model)
        return policy.eval()

    def _on_step(self, obs: torch.Tensor) -> None:
        if self.telemetry is not None:
            self.telemetry.maybe_publish_observation(obs, self.counters.step_id)

    def _heartbeat(self) -> None:
        if self.telemetry is not None:
            self.telemetry.heartbeat(self.counters.step_id)

    def run_training(self) -> TrainSummary:
        """Train until the step budget is spent or Ctrl+C; always leaves a final checkpoint."""
        total, max_minutes = self.settings.train.total_steps, self.settings.train.max_minutes
        clock, lap = Stopwatch(), Stopwatch()
        steps, updates, interrupted = 0, 0, False
        promoted: list[RegistryEntry] = []
        next_progress = 0.0
        try:
            while (total is None or steps < total) and (
                max_minutes is None or clock.total() < 60 * max_minutes
            ):
                stats = self.collector.collect(self.settings.rollout.gamma, self.settings.rollout.gae_lambda)
                result = self.learner.update(
                    self.storage, self.shuffle, self.shaping.auxiliary_step, on_minibatch=self._heartbeat
                )
                self.counters.record(stats, self.settings.train.reward_ema_alpha, lap.lap())
                steps, updates = steps + stats.env_steps, updates + 1
                record = update_record(self.counters, stats, result, steps / max(clock.total(), 1e-9))
                self.run.append_metrics(record)
                if self.telemetry is not None:
                    self.telemetry.publish_update(self.counters.step_id, record)
                if self.progress is not None and clock.total() >= next_progress:
                    self.progress(progress_line(record))
                    next_progress = clock.total() + self.settings.train.progress_seconds
                if self.counters.step_id - self._last_checkpoint_step >= self.settings.checkpoint.every_steps:
                    promoted += self.save_checkpoint()
        except KeyboardInterrupt:
            interrupted = True
            log.info("actor.train.interrupted", step_id=self.counters.step_id)
        if self.counters.step_id != self._last_checkpoint_step or not self._saved_once:
            promoted += self.save_checkpoint()
        final = checkpoint_path(self.run.checkpoints, self.counters.step_id)
        summary = TrainSummary(
            run_id=self.run.run_id,
            run_dir=self.run.path,
            step_id=self.counters.step_id,
            steps_this_run=steps,
            updates_this_run=updates,
            interrupted=interrupted,
            final_checkpoint=final,
            promoted=promoted,
            steps_per_second=steps / max(clock.total(), 1e-9),
            reward_ema=self.counters.reward_ema,
        )
        log.info("actor.train.finished", run_id=summary.run_id, step_id=summary.step_id, steps=steps)
        return summary

    def checkpoint(self) -> Checkpoint:
        """The current training state as a :class:`Checkpoint`."""
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
            corpus_summary=self.corpus_summary,
            settings_json=self.settings.model_dump_json(),
            optimizer=self.learner.optimizer.state_dict(),
            auxiliary={name: module.state_dict() for name, module in self.shaping.modules.items()},
            rng=capture_rng(self.shuffle),
        )

    def save_checkpoint(self) -> list[RegistryEntry]:
        """Write a checkpoint, prune old ones, and promote it if its reward EMA beats the best."""
        path = save_checkpoint(
            self.checkpoint(), checkpoint_path(self.run.checkpoints, self.counters.step_id)
        )
        prune_checkpoints(self.run.checkpoints, self.settings.checkpoint.keep)
        self._last_checkpoint_step, self._saved_once = self.counters.step_id, True
        log.info("actor.checkpoint.saved", path=str(path), step_id=self.counters.step_id)
        ema = self.counters.reward_ema
        if not self.settings.checkpoint.auto_promote or ema is None:
            return []
        best = self.registry.best()
        if best is not None and best.reward_ema is not None and ema <= best.reward_ema:
            return []
        entry = self.registry.promote(path, notes=f"auto-promoted from run {self.run.run_id}", tags=["auto"])
        return [entry]
