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

from navi_actor.checkpoints import (
    Checkpoint,
    checkpoint_path,
)
from navi_actor.config import ActorSettings
from navi_actor.registry import ModelRegistry, RegistryEntry
from navi_actor.runners.console import ProgressSink, as_sink
from navi_actor.runners.env_factory import BuiltEnvironment
from navi_actor.runners.learner_state import LearnerState
from navi_actor.runners.progress import RunProgress, Stopwatch, carry_forward, progress_line, update_record
from navi_actor.runners.rollout_collector import RolloutCollector
from navi_actor.runners.run_folder import RunFolder, new_run_id
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
        progress: where human words go: a :class:`ProgressSink` (live line on a terminal) or a
            ``str -> None`` callback.
    """

    def __init__(
        self,
        settings: ActorSettings,
        built: BuiltEnvironment,
        *,
        artifacts_dir: Path,
        checkpoint: Path | None = None,
        telemetry: TrainingTelemetry | None = None,
        progress: ProgressSink | Callable[[str], None] | None = None,
    ) -> None:
        self.settings, self.env, self.corpus_summary = settings, built.env, built.corpus_summary
        self.telemetry, self.progress = telemetry, as_sink(progress)
        self.registry = ModelRegistry(artifacts_dir / "models")
        device = torch.device(settings.train.device)
        self.state = LearnerState.build(
            settings,
            self.env.observation_shape,
            self.env.num_actors,
            self.registry,
            checkpoint,
            corpus_summary=self.corpus_summary,
        )
        state = self.state
        self.policy, self.learner, self.shuffle = state.policy, state.learner, state.shuffle
        self.shaping, self.counters, self.parent_checkpoint = (
            state.shaping,
            state.counters,
            state.parent_checkpoint,
        )
        rollout = settings.rollout
        self.steps_per_rollout = rollout.rollout_length * self.env.num_actors
        total = settings.train.total_steps
        self.learner.schedule(math.ceil(total / self.steps_per_rollout) if total else None)
        self.storage = RolloutStorage(
            rollout.rollout_length,
            self.env.num_actors,
            obs_shape=tuple(self.env.observation_shape),
            action_dim=state.policy_config.action_dim,
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
        label = f"{state.policy_config.encoder_backend}-{state.policy_config.temporal_core}"
        self.run = RunFolder(artifacts_dir / "runs", new_run_id(label))
        self.run.write_manifest(
            settings.model_dump(mode="json"),
            {
                "device": str(device),
                "resumed_from": self.parent_checkpoint,
                "start_step_id": self.counters.step_id,
                "policy_config": state.policy_config.model_dump(mode="json"),
                "corpus_summary": self.corpus_summary,
                "observation_shape": list(self.env.observation_shape),
            },
        )
        self._last_checkpoint_step, self._saved_once = self.counters.step_id, False

    def _on_step(self, obs: torch.Tensor) -> None:
        if self.telemetry is not None:
            self.telemetry.maybe_publish_observation(obs, self.counters.step_id)

    def _heartbeat(self) -> None:
        if self.telemetry is not None:
            self.telemetry.heartbeat(self.counters.step_id)

    def run_training(self) -> TrainSummary:
        """Train until the step budget is spent or Ctrl+C; always leaves a final checkpoint.

        Every log event of the run, from ``actor.train.started`` on, is kept in the run folder's
        ``logs/events.jsonl``, every metrics line goes to TensorBoard / W&B too when ``train.logger``
        chooses one, and the first lines a person sees say what the run starts from.
        """
        logger, config = self.settings.train.logger, self.settings.model_dump(mode="json")
        with self.run.capturing_logs(), self.run.mirroring_metrics(logger, config):
            log.info(
                "actor.train.started",
                run_id=self.run.run_id,
                run_dir=str(self.run.path),
                device=self.settings.train.device,
                resumed_from=self.parent_checkpoint,
                start_step_id=self.counters.step_id,
            )
            self._note(f"run {self.run.run_id}: {self.state.start_description}")
            self._note(f"run folder {self.run.path} (logs/events.jsonl holds the structured log)")
            try:
                return self._train()
            finally:
                if self.progress is not None:
                    self.progress.close()

    def _note(self, text: str) -> None:
        if self.progress is not None:
            self.progress.note(text)

    def _status(self, text: str) -> None:
        if self.progress is not None:
            self.progress.status(text)

    def _eta(self, steps: int, seconds: float) -> float | None:
        """Seconds left under --total-steps / --max-minutes (the sooner of the two), None if unbounded."""
        total, max_minutes = self.settings.train.total_steps, self.settings.train.max_minutes
        left = []
        if total is not None and steps > 0:
            left.append(max(total - steps, 0) * seconds / steps)
        if max_minutes is not None:
            left.append(max(60 * max_minutes - seconds, 0.0))
        return min(left) if left else None

    def _train(self) -> TrainSummary:
        total, max_minutes = self.settings.train.total_steps, self.settings.train.max_minutes
        clock, lap = Stopwatch(), Stopwatch()
        steps, updates, interrupted = 0, 0, False
        promoted: list[RegistryEntry] = []
        next_progress = 0.0
        shown: dict[str, float] = {}  # the last progress line's values (episode metrics carried forward)
        try:
            while (total is None or steps < total) and (
                max_minutes is None or clock.total() < 60 * max_minutes
            ):
                if updates == 0:
                    self._status(
                        f"collecting the first rollout ({self.settings.rollout.rollout_length} steps x "
                        f"{self.env.num_actors} drones; the first steps compile the simulator's kernels)"
                    )
                rollout = self.settings.rollout
                stats = self.collector.collect(
                    *self.learner.discount(
                        rollout.gamma, rollout.gae_lambda, rollout.gamma_final, rollout.gae_lambda_final
                    )
                )
                if max_minutes is not None:
                    self.learner.set_time_spent(clock.total() / (60 * max_minutes))
                if updates == 0:
                    self._status(f"first PPO update ({self.settings.ppo.epochs} epochs) ...")
                result = self.learner.update(
                    self.storage, self.shuffle, self.shaping.auxiliary_step, on_minibatch=self._heartbeat
                )
                self.counters.record(stats, self.settings.train.reward_ema_alpha, lap.lap())
                steps, updates = steps + stats.env_steps, updates + 1
                record = update_record(self.counters, stats, result, steps / max(clock.total(), 1e-9))
                self.run.append_metrics(record)
                if self.telemetry is not None:
                    self.telemetry.publish_update(self.counters.step_id, record)
                if self.counters.step_id - self._last_checkpoint_step >= self.settings.checkpoint.every_steps:
                    promoted += self.save_checkpoint()
                shown = carry_forward(shown, record)  # every update: episodes end between two lines
                if clock.total() >= next_progress:
                    self._status(progress_line(shown, self._run_progress(steps, clock.total())))
                    next_progress = clock.total() + self.settings.train.progress_seconds
        except KeyboardInterrupt:
            interrupted = True
            log.info("actor.train.interrupted", step_id=self.counters.step_id)
            self._note(f"interrupted at step {self.counters.step_id:,}: writing the final checkpoint")
        if self.counters.step_id != self._last_checkpoint_step or not self._saved_once:
            promoted += self.save_checkpoint()
        final = checkpoint_path(self.run.checkpoints, self.counters.step_id)
        self.run.mark_finished(self.counters.step_id, interrupted=interrupted)
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

    def _run_progress(self, steps: int, seconds: float) -> RunProgress:
        return RunProgress(
            elapsed_seconds=seconds,
            steps_this_run=steps,
            eta_seconds=self._eta(steps, seconds),
            last_checkpoint_step=self._last_checkpoint_step if self._saved_once else None,
        )

    def checkpoint(self) -> Checkpoint:
        """The current training state as a :class:`Checkpoint`."""
        return self.state.checkpoint(self.corpus_summary)

    def save_checkpoint(self) -> list[RegistryEntry]:
        """Write a checkpoint, prune old ones, and promote it if its reward EMA beats the best."""
        promoted = self.state.save(self.corpus_summary, self.run, self.registry, f"run {self.run.run_id}")
        self._last_checkpoint_step, self._saved_once = self.counters.step_id, True
        return promoted
