"""The learner side of Ray training: the local trainer's PPO update fed by rollout workers.

:class:`DistributedTrainer` builds what :class:`~navi_actor.runners.on_policy_runner.OnPolicyRunner`
builds for learning (policy, :class:`PPOLearner`, minibatch shuffle, actor shaping with RND, run
folder, registry) but no environment: fragments from :class:`WorkerPool` are laid side by side into
one ``[T, K*B]`` storage, GAE runs there, and ``PPOLearner.update`` is called exactly as the local
runner calls it. Checkpoints are the same v3 files with the same fields, so a run can move between
``--backend local`` and ``--backend ray`` and continue its curve either way.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog
import torch

from navi_actor.checkpoints import (
    Checkpoint,
    checkpoint_path,
)
from navi_actor.config import ActorSettings
from navi_actor.distributed.config import DistributedConfig
from navi_actor.distributed.fragment import RolloutFragment, load_fragments, merge_stats
from navi_actor.distributed.worker import WeightsBundle
from navi_actor.distributed.worker_pool import PoolCounters, WorkerPool
from navi_actor.registry import ModelRegistry, RegistryEntry
from navi_actor.runners.learner_state import LearnerState
from navi_actor.runners.progress import Stopwatch, progress_line, update_record
from navi_actor.runners.run_folder import RunFolder, new_run_id
from navi_actor.storage import RolloutStorage
from navi_actor.telemetry import TrainingTelemetry

log = structlog.get_logger()


@dataclass(frozen=True)
class DistributedSummary:
    """What a finished (or interrupted) distributed run did."""

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
    dropped_fragments: int
    worker_restarts: int
    workers_replaced: int


class DistributedTrainer:
    """Learner + worker pool for one run folder.

    Args:
        settings: resolved actor settings (same meaning as for local training).
        config: distributed settings.
        artifacts_dir: the ``artifacts/`` folder.
        checkpoint: explicit start checkpoint (``--checkpoint``).
        telemetry: optional live telemetry publisher.
        progress: callback receiving the human progress line.
        pool: an existing :class:`WorkerPool` to reuse (its workers keep their environments; the
            caller keeps ownership and shuts it down). Its settings must describe the same
            environment, rollout and shaping.
    """

    def __init__(
        self,
        settings: ActorSettings,
        config: DistributedConfig,
        *,
        artifacts_dir: Path,
        checkpoint: Path | None = None,
        telemetry: TrainingTelemetry | None = None,
        progress: Callable[[str], None] | None = None,
        pool: WorkerPool | None = None,
    ) -> None:
        self.settings, self.config, self.telemetry, self.progress = settings, config, telemetry, progress
        self.registry = ModelRegistry(artifacts_dir / "models")
        if pool is not None:
            _check_reusable(pool, settings, config)
        self._owns_pool = pool is None
        self.pool = pool if pool is not None else WorkerPool(settings, config)
        try:
            self._build_learner(artifacts_dir, checkpoint)
        except BaseException:
            self.close()
            raise

    def _build_learner(self, artifacts_dir: Path, checkpoint: Path | None) -> None:
        settings, device = self.settings, torch.device(self.settings.train.device)
        observation_shape, self.corpus_summary = self.pool.probe()
        # The learner's shaper holds the master RND; its per-drone memory is sized like a worker's.
        self.state = LearnerState.build(
            settings, observation_shape, settings.rollout.num_actors, self.registry, checkpoint
        )
        state = self.state
        self.policy, self.learner, self.shuffle = state.policy, state.learner, state.shuffle
        self.shaping, self.counters, self.parent_checkpoint = (
            state.shaping,
            state.counters,
            state.parent_checkpoint,
        )
        rollout, workers = settings.rollout, self.config.num_workers
        self.steps_per_update = rollout.rollout_length * rollout.num_actors * workers
        total = settings.train.total_steps
        self.learner.schedule(math.ceil(total / self.steps_per_update) if total else None)
        self.storage = RolloutStorage(
            rollout.rollout_length,
            rollout.num_actors * workers,
            obs_shape=tuple(observation_shape),
            action_dim=state.policy_config.action_dim,
            state_size=self.policy.state_size,
            sequence_length=rollout.sequence_length,
            device=device,
        )
        label = f"{state.policy_config.encoder_backend}-{state.policy_config.temporal_core}"
        self.run = RunFolder(artifacts_dir / "runs", new_run_id(label))
        self.run.write_manifest(
            settings.model_dump(mode="json"),
            {
                "device": str(device),
                "backend": "ray",
                "distributed": self.config.model_dump(mode="json"),
                "resumed_from": self.parent_checkpoint,
                "start_step_id": self.counters.step_id,
                "policy_config": state.policy_config.model_dump(mode="json"),
                "corpus_summary": self.corpus_summary,
                "observation_shape": list(observation_shape),
            },
        )
        self._last_checkpoint_step, self._saved_once = self.counters.step_id, False
        self._pool_start = dataclasses.replace(self.pool.counters)
        log.info(
            "actor.train.started",
            run_id=self.run.run_id,
            run_dir=str(self.run.path),
            device=str(device),
            backend="ray",
            workers=self.config.num_workers,
        )

    def weights_bundle(self) -> WeightsBundle:
        """The current policy and RND as CPU tensors, tagged with the learner's update index."""

        def cpu(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
            return {key: value.detach().to("cpu") for key, value in state.items()}

        return WeightsBundle(
            run_id=self.run.run_id,
            version=self.learner.update_index,
            policy_config=self.policy.cfg.model_dump_json(),
            policy=cpu(self.policy.state_dict()),
            rnd=cpu(self.shaping.modules["rnd"].state_dict()),
            step_id=self.counters.step_id,
        )

    def _heartbeat(self) -> None:
        if self.telemetry is not None:
            self.telemetry.heartbeat(self.counters.step_id)

    def _collect_heartbeat(self) -> None:
        """While waiting for fragments: alive, not updating (the dashboard tells the two apart)."""
        if self.telemetry is not None:
            self.telemetry.heartbeat(self.counters.step_id, phase="collect")

    def _learn(self, fragments: list[RolloutFragment]) -> Any:
        """Lay the fragments into the storage, fold them into RND's statistics, run one PPO update."""
        rollout = self.settings.rollout
        last_values = load_fragments(self.storage, fragments)
        gamma, gae_lambda = self.learner.discount(
            rollout.gamma, rollout.gae_lambda, rollout.gamma_final, rollout.gae_lambda_final
        )
        self.storage.compute_returns(last_values, gamma, gae_lambda)
        # The learner's RND is authoritative: its running statistics see every accepted observation,
        # as the local trainer's do during collection ([T, K*B, 3, Az, El] -> [T*K*B, 3, Az, El]).
        self.shaping.modules["rnd"].intrinsic_reward(self.storage.obs.flatten(0, 1), update_stats=True)
        return self.learner.update(
            self.storage, self.shuffle, self.shaping.auxiliary_step, on_minibatch=self._heartbeat
        )

    def _run_counters(self) -> PoolCounters:
        """The pool's fault and staleness counts since this run started (a pool may be reused)."""
        now, start = self.pool.counters, self._pool_start
        return PoolCounters(
            dropped_fragments=now.dropped_fragments - start.dropped_fragments,
            dropped_steps=now.dropped_steps - start.dropped_steps,
            worker_restarts=now.worker_restarts - start.worker_restarts,
            workers_replaced=now.workers_replaced - start.workers_replaced,
            hung_workers_killed=now.hung_workers_killed - start.hung_workers_killed,
            staleness=list(now.staleness),
        )

    def _distributed_record(self, gather_seconds: float) -> dict[str, float]:
        counters = self._run_counters()
        staleness = counters.staleness
        return {
            "distributed/workers": float(self.config.num_workers),
            "distributed/weights_version": float(self.learner.update_index),
            "distributed/dropped_fragments": float(counters.dropped_fragments),
            "distributed/dropped_steps": float(counters.dropped_steps),
            "distributed/worker_restarts": float(counters.worker_restarts),
            "distributed/workers_replaced": float(counters.workers_replaced),
            "distributed/hung_workers_killed": float(counters.hung_workers_killed),
            "distributed/mean_staleness": sum(staleness) / max(len(staleness), 1),
            "time/gather_wait": gather_seconds,
        }

    def _publish(self, record: dict[str, float], fragments: list[RolloutFragment]) -> None:
        if self.telemetry is None:
            return
        self.telemetry.publish_update(self.counters.step_id, record)
        first = min(fragments, key=lambda fragment: fragment.worker_index)  # worker 0's drone 0 if present
        observation = torch.from_numpy(first.observation.copy())[None]  # [3, Az, El] -> [1, 3, Az, El]
        self.telemetry.maybe_publish_observation(observation, self.counters.step_id)

    def run_training(self) -> DistributedSummary:
        """Train until the step budget is spent or Ctrl+C; always leaves a final checkpoint.

        The workers stay up afterwards (a caller may train again); :meth:`close` stops them. Every
        log event of the run is also kept in the run folder's ``logs/events.jsonl``; metrics lines also
        go to TensorBoard / W&B when ``train.logger`` chooses one.
        """
        logger, config = self.settings.train.logger, self.settings.model_dump(mode="json")
        with self.run.capturing_logs(), self.run.mirroring_metrics(logger, config):
            return self._train()

    def _train(self) -> DistributedSummary:
        total, max_minutes = self.settings.train.total_steps, self.settings.train.max_minutes
        clock, lap = Stopwatch(), Stopwatch()
        steps, updates, interrupted = 0, 0, False
        promoted: list[RegistryEntry] = []
        next_progress = 0.0
        ray = self.pool.ray
        self._pool_start = dataclasses.replace(self.pool.counters)
        try:
            bundle_ref = ray.put(self.weights_bundle())
            while (total is None or steps < total) and (
                max_minutes is None or clock.total() < 60 * max_minutes
            ):
                waited = Stopwatch()
                fragments = self.pool.gather(
                    self.config.num_workers,
                    self.run.run_id,
                    self.learner.update_index,
                    bundle_ref,
                    max_staleness=self.config.max_staleness,
                    collect_ahead=self.config.collect_ahead,
                    on_wait=self._collect_heartbeat,
                )
                gather_seconds = waited.total()
                stats = merge_stats(fragments)
                if max_minutes is not None:
                    self.learner.set_time_spent(clock.total() / (60 * max_minutes))
                result = self._learn(fragments)
                bundle_ref = ray.put(self.weights_bundle())  # before the bookkeeping: workers wait on it
                self.counters.record(stats, self.settings.train.reward_ema_alpha, lap.lap())
                steps, updates = steps + stats.env_steps, updates + 1
                record = update_record(self.counters, stats, result, steps / max(clock.total(), 1e-9))
                record |= self._distributed_record(gather_seconds)
                self.run.append_metrics(record)
                self._publish(record, fragments)
                if self.progress is not None and clock.total() >= next_progress:
                    self.progress(
                        progress_line(record) + f" | dropped {int(record['distributed/dropped_fragments'])}"
                    )
                    next_progress = clock.total() + self.settings.train.progress_seconds
                if self.counters.step_id - self._last_checkpoint_step >= self.settings.checkpoint.every_steps:
                    promoted += self.save_checkpoint()
        except KeyboardInterrupt:
            interrupted = True
            log.info("actor.train.interrupted", step_id=self.counters.step_id)
        if self.counters.step_id != self._last_checkpoint_step or not self._saved_once:
            promoted += self.save_checkpoint()
        self.run.mark_finished(self.counters.step_id, interrupted=interrupted)  # not a killed run
        pool = self._run_counters()
        summary = DistributedSummary(
            run_id=self.run.run_id,
            run_dir=self.run.path,
            step_id=self.counters.step_id,
            steps_this_run=steps,
            updates_this_run=updates,
            interrupted=interrupted,
            final_checkpoint=checkpoint_path(self.run.checkpoints, self.counters.step_id),
            promoted=promoted,
            steps_per_second=steps / max(clock.total(), 1e-9),
            reward_ema=self.counters.reward_ema,
            dropped_fragments=pool.dropped_fragments,
            worker_restarts=pool.worker_restarts,
            workers_replaced=pool.workers_replaced,
        )
        log.info(
            "actor.train.finished",
            run_id=summary.run_id,
            step_id=summary.step_id,
            steps=steps,
            dropped_fragments=pool.dropped_fragments,
            worker_restarts=pool.worker_restarts,
        )
        return summary

    def checkpoint(self) -> Checkpoint:
        """The current training state as a v3 :class:`Checkpoint` (the same fields as local training)."""
        return self.state.checkpoint(self.corpus_summary)

    def save_checkpoint(self) -> list[RegistryEntry]:
        """Write a checkpoint, prune old ones, and promote it if its reward EMA beats the best."""
        promoted = self.state.save(self.corpus_summary, self.run, self.registry, f"Ray run {self.run.run_id}")
        self._last_checkpoint_step, self._saved_once = self.counters.step_id, True
        return promoted

    def close(self) -> None:
        """Stop the workers (unless the pool was lent by the caller)."""
        if self._owns_pool:
            self.pool.shutdown()


def _check_reusable(pool: WorkerPool, settings: ActorSettings, config: DistributedConfig) -> None:
    """A lent pool's workers must simulate and shape what this run expects."""
    for group in ("environment", "rollout", "shaping"):
        if getattr(pool.settings, group) != getattr(settings, group):
            raise ValueError(f"the worker pool was built for other {group} settings than this run's")
    if len(pool.slots) != config.num_workers:
        raise ValueError(
            f"the worker pool has {len(pool.slots)} workers, this run wants {config.num_workers}"
        )
