"""The one PPO training loop: collect, learn, log, checkpoint, promote, repeat.

One :class:`OnPolicyRunner` owns one run folder. Its rollouts come from a
:class:`~navi_actor.runners.rollout_source.RolloutSource`: the in-process collector
(``--backend local``) or fragments from Ray rollout workers (``--backend ray``); setup, the loop,
checkpoints and the summary exist once, here. It keeps going until ``total_steps`` more
environment steps have been taken (or forever), and on Ctrl+C it saves a final checkpoint before
returning. Everything the learning curve depends on (weights, optimiser, counters, RNG, RND state) is
in each checkpoint, so a resumed run continues the same curve.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog
import torch

from navi_actor.bc.own_flights import LabelledFlights
from navi_actor.checkpoints import (
    Checkpoint,
    checkpoint_path,
)
from navi_actor.config import ActorSettings
from navi_actor.memory.frontiers import map_finer_than_rays
from navi_actor.registry import ModelRegistry, RegistryEntry
from navi_actor.runners.collect_ahead import AheadRollouts
from navi_actor.runners.console import ProgressSink, as_sink
from navi_actor.runners.env_factory import BuiltEnvironment
from navi_actor.runners.learner_state import LearnerState
from navi_actor.runners.progress import RunProgress, Stopwatch, carry_forward, progress_line, update_record
from navi_actor.runners.rollout_source import LocalRollouts, RolloutSource
from navi_actor.runners.run_folder import RunFolder, new_run_id
from navi_actor.telemetry import TrainingTelemetry
from navi_common.signals import interrupts_deferred

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
    dropped_fragments: int = 0  #: Ray rollout workers only: stale fragments dropped
    worker_restarts: int = 0  #: Ray rollout workers only
    workers_replaced: int = 0  #: Ray rollout workers only


class OnPolicyRunner:
    """Builds the policy, learner and storage for one run and drives them with a rollout source.

    Args:
        settings: resolved actor settings.
        source: where rollouts come from; a :class:`BuiltEnvironment` means the in-process collector.
        artifacts_dir: the ``artifacts/`` folder (runs and the model registry live under it).
        checkpoint: explicit start checkpoint (``--checkpoint``).
        telemetry: optional live telemetry publisher.
        progress: where human words go: a :class:`ProgressSink` (live line on a terminal) or a
            ``str -> None`` callback.
        run_folder: a run folder made before the runner (a warm start wrote into it); default: a new one.
        manifest_extra: more facts for the run's manifest (e.g. ``warm_start``).
    """

    def __init__(
        self,
        settings: ActorSettings,
        source: RolloutSource | BuiltEnvironment,
        *,
        artifacts_dir: Path,
        checkpoint: Path | None = None,
        telemetry: TrainingTelemetry | None = None,
        progress: ProgressSink | Callable[[str], None] | None = None,
        run_folder: RunFolder | None = None,
        manifest_extra: dict[str, Any] | None = None,
    ) -> None:
        if isinstance(source, BuiltEnvironment):  # the in-process collector, one rollout ahead or not
            source = AheadRollouts(source) if settings.rollout.collect_ahead else LocalRollouts(source)
        self.source: RolloutSource = source
        self.settings, self.corpus_summary = settings, self.source.corpus_summary
        self.telemetry, self.progress = telemetry, as_sink(progress)
        self.registry = ModelRegistry(artifacts_dir / "models")
        observation_shape = self.source.observation_shape
        self.state = LearnerState.build(
            settings,
            observation_shape,
            self.source.shaping_actors,
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
        self.steps_per_rollout = settings.rollout.rollout_length * self.source.columns
        total = settings.train.total_steps
        self.learner.schedule(math.ceil(total / self.steps_per_rollout) if total else None)
        self.storage = self.source.new_storage(state)
        label = f"{state.policy_config.encoder_backend}-{state.policy_config.temporal_core}"
        self.run = run_folder or RunFolder(artifacts_dir / "runs", new_run_id(label))
        self.run.write_manifest(
            settings.model_dump(mode="json"),
            {
                "device": str(torch.device(settings.train.device)),
                **self.source.manifest(),
                "resumed_from": self.parent_checkpoint,
                "start_step_id": self.counters.step_id,
                "policy_config": state.policy_config.model_dump(mode="json"),
                "corpus_summary": self.corpus_summary,
                "observation_shape": list(observation_shape),
                **(manifest_extra or {}),
            },
        )
        self._last_checkpoint_step, self._saved_once = self.counters.step_id, False
        self.source.start(self)
        self.flights, self._next_flight = self._labelled_flights()

    @property
    def collector(self) -> Any:
        """The in-process collector (benchmarks step it directly); None for other sources."""
        return getattr(self.source, "collector", None)

    def heartbeat(self, phase: str = "update") -> None:
        """Tell the dashboard the run is alive (``collect``: waiting for rollouts, not updating)."""
        if self.telemetry is not None:
            self.telemetry.heartbeat(self.counters.step_id, phase=phase)

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
                backend=self.source.backend,
                resumed_from=self.parent_checkpoint,
                start_step_id=self.counters.step_id,
            )
            self._note(f"run {self.run.run_id}: {self.state.start_description}")
            self._note(f"run folder {self.run.path} (logs/events.jsonl holds the structured log)")
            self._note_whole_rollouts()
            self._warn_rays_sparser_than_map()
            try:
                return self._train()
            finally:
                if self.progress is not None:
                    self.progress.close()

    def close(self) -> None:
        """Release what the rollout source started (Ray: the workers it owns)."""
        self.source.close()

    def _note_whole_rollouts(self) -> None:
        """Say so when ``--total-steps`` is not a whole number of rollouts: PPO learns from whole
        rollouts only, so the run trains up to the next multiple, and a person asking for 64 steps
        should not be surprised by "finished: 512 steps"."""
        total, per_rollout = self.settings.train.total_steps, self.steps_per_rollout
        if total is None or total % per_rollout == 0:
            return
        rollout = self.settings.rollout
        self._note(
            f"--total-steps {total:,} is not a whole number of rollouts ({rollout.rollout_length} steps x "
            f"{self.source.columns} drones = {per_rollout:,}): training stops after "
            f"{math.ceil(total / per_rollout) * per_rollout:,} steps"
        )

    def _warn_rays_sparser_than_map(self) -> None:
        """Warn once when the policy reads a frontier map finer than its sensor's rays
        (:func:`~navi_actor.memory.frontiers.map_finer_than_rays`)."""
        warning = map_finer_than_rays(self.state.policy_config)
        if warning is not None:
            log.warning("actor.train.frontier_map_finer_than_rays", **warning)

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

    def _keep_going(self, steps: int, clock: Stopwatch) -> bool:
        total, max_minutes = self.settings.train.total_steps, self.settings.train.max_minutes
        return (total is None or steps < total) and (max_minutes is None or clock.total() < 60 * max_minutes)

    def _learn_one(self, updates: int, clock: Stopwatch) -> tuple[Any, Any]:
        """Collect one rollout from the source and run one PPO update on it."""
        rollout, max_minutes = self.settings.rollout, self.settings.train.max_minutes
        if updates == 0:
            self._status(
                f"collecting the first rollout ({rollout.rollout_length} steps x {self.source.columns} "
                "drones; the first steps compile the simulator's kernels)"
            )
        stats = self.source.collect(
            *self.learner.discount(
                rollout.gamma, rollout.gae_lambda, rollout.gamma_final, rollout.gae_lambda_final
            )
        )
        if max_minutes is not None:
            self.learner.set_time_spent(clock.total() / (60 * max_minutes))
        if updates == 0:
            self._status(f"first PPO update ({self.settings.ppo.epochs} epochs) ...")
        self.source.before_update()
        result = self.learner.update(
            self.storage, self.shuffle, self.shaping.auxiliary_step, on_minibatch=self.heartbeat
        )
        self.source.learned()  # before the bookkeeping: Ray workers wait on the new weights
        return stats, result

    def _train(self) -> TrainSummary:
        clock, lap = Stopwatch(), Stopwatch()
        steps, updates, interrupted = 0, 0, False
        promoted: list[RegistryEntry] = []
        next_progress = 0.0
        shown: dict[str, float] = {}  # the last progress line's values (episode metrics carried forward)
        try:
            while self._keep_going(steps, clock):
                stats, result = self._learn_one(updates, clock)
                with interrupts_deferred():  # a step counted is a step whose metrics line is written
                    self.counters.record(stats, self.settings.train.reward_ema_alpha, lap.lap())
                    steps, updates = steps + stats.env_steps, updates + 1
                    record = update_record(self.counters, stats, result, steps / max(clock.total(), 1e-9))
                    record |= self.source.record()
                    self.run.append_metrics(record)
                if self.telemetry is not None:
                    self.telemetry.publish_update(self.counters.step_id, record)
                self.source.publish()
                if self.counters.step_id - self._last_checkpoint_step >= self.settings.checkpoint.every_steps:
                    promoted += self.save_checkpoint()
                self._fly_labelled(steps)
                shown = carry_forward(shown, record)  # every update: episodes end between two lines
                if clock.total() >= next_progress:
                    self._status(progress_line(shown, self._run_progress(steps, clock.total())))
                    next_progress = clock.total() + self.settings.train.progress_seconds
        except KeyboardInterrupt:
            interrupted = True
            log.info("actor.train.interrupted", step_id=self.counters.step_id)
            self._note(f"interrupted at step {self.counters.step_id:,}: writing the final checkpoint")
        self.source.finish()  # collect-ahead: its rollout in flight ends before the final checkpoint
        if self.counters.step_id != self._last_checkpoint_step or not self._saved_once:
            promoted += self.save_checkpoint()
        self.run.mark_finished(self.counters.step_id, interrupted=interrupted)  # not a killed run
        faults = self.source.counters()
        summary = TrainSummary(
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
            **faults,
        )
        log.info(
            "actor.train.finished", run_id=summary.run_id, step_id=summary.step_id, steps=steps, **faults
        )
        return summary

    def _labelled_flights(self) -> tuple[LabelledFlights | None, int]:
        """The run's labelled mean-action flights (``ppo.dagger_every_steps`` > 0) and the step of
        the first: the next multiple of the interval after the start step (a resumed run keeps the
        schedule of the steps it has)."""
        every = self.settings.ppo.dagger_every_steps
        if not every or self.collector is None:
            return None, 0
        flights = LabelledFlights(
            self.run.path / "dagger",
            window=self.settings.rollout.sequence_length,
            streams=self.settings.ppo.dagger_streams,
            device=self.storage.device,
            seed=self.settings.train.seed + self.counters.step_id,
        )
        return flights, (self.counters.step_id // every + 1) * every

    def _fly_labelled(self, steps: int) -> None:
        """Fly and label the mean action when its step has come, then restart the rollouts' drones.

        No flight once less than a quarter of the interval is left of ``train.total_steps``: its
        labels would teach only the last few updates.
        """
        flights, ppo = self.flights, self.settings.ppo
        if flights is None or self.counters.step_id < self._next_flight:
            return
        while self._next_flight <= self.counters.step_id:
            self._next_flight += ppo.dagger_every_steps
        total = self.settings.train.total_steps
        if total is not None and total - steps < ppo.dagger_every_steps // 4:
            return
        started, seed = time.monotonic(), self.settings.train.seed + self.counters.step_id
        self._status(f"DAgger round {flights.rounds + 1}: the mean action flies, the planner labels ...")
        self.source.settle()  # collect-ahead: its rollout in flight finishes before the flight
        recording = flights.fly(self.collector.env, self.policy, ppo.dagger_steps, seed=seed)
        self.collector.restart(seed)
        self.learner.dagger_loss = flights.loss
        seconds = time.monotonic() - started
        frames = len(flights.data) if flights.data is not None else 0
        log.info(
            "actor.train.dagger_round", round=flights.rounds, step_id=self.counters.step_id,
            steps=recording.steps, frames=frames, seconds=round(seconds, 1),
        )  # fmt: skip
        self._note(
            f"DAgger round {flights.rounds} at step {self.counters.step_id:,}: the mean action flew "
            f"{recording.steps:,} steps labelled by the planner in {seconds:.0f} s ({frames:,} frames so far)"
        )

    def _run_progress(self, steps: int, seconds: float) -> RunProgress:
        return RunProgress(
            elapsed_seconds=seconds,
            steps_this_run=steps,
            eta_seconds=self._eta(steps, seconds),
            last_checkpoint_step=self._last_checkpoint_step if self._saved_once else None,
        )

    def checkpoint(self) -> Checkpoint:
        """The current training state as a v3 :class:`Checkpoint`."""
        return self.state.checkpoint(self.corpus_summary)

    def save_checkpoint(self) -> list[RegistryEntry]:
        """Write a checkpoint, prune old ones, and promote it if its reward EMA beats the best."""
        origin = f"{'Ray ' if self.source.backend == 'ray' else ''}run {self.run.run_id}"
        promoted = self.state.save(self.corpus_summary, self.run, self.registry, origin)
        self._last_checkpoint_step, self._saved_once = self.counters.step_id, True
        return promoted
