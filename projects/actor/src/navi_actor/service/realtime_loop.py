"""Real-time inference (``navi-actor serve --inference realtime``): the control process.

The control process owns the sockets and never waits for the policy. It reads observations from the
environment's PUB (short polls), copies the newest into shared memory and wakes the inference
process (:mod:`navi_actor.service.realtime_inference`, spawned once the first observation tells
the batch and sensor sizes). Every control period (``control_hz``, the environment's tick rate) it
publishes an Action for the upcoming tick: ``start_tick`` and the rest of the current schedule as
``chunk``, so the environment keeps executing scheduled actions when a message is late; a new
schedule is published as soon as it is written. A period in which the loop could not run at all
(more than one period late) counts as missed (``missed_periods``); periods when the schedule has
run out at the estimated upcoming tick count as ``exhausted_periods`` (the environment's fallback
acts then). Published schedules start at the newest observation's tick + 1 at the latest, never at
the time-extrapolated upcoming tick (see :func:`~navi_actor.service.chunk_schedule.upcoming_tick`).
The control process never waits for the shared lock either: when the inference process holds it,
the observation stays pending until the next poll and the period is published from the last
schedule copied out.

Garbage collection: with torch imported a full collection scans hundreds of thousands of objects and
paused this loop for ~0.3 s (several missed periods, measured on the 2-core box). The loop freezes
what start-up created (``gc.freeze``: moved out of the collector's sight), so later collections only
scan the loop's own short-lived objects.
"""

from __future__ import annotations

import gc
import multiprocessing
import threading
import time
from dataclasses import replace
from multiprocessing.context import SpawnProcess

import numpy as np
import structlog
import torch

from navi_actor.inference.stepper import MISSING_POSES
from navi_actor.inference.telemetry import ActingTelemetry
from navi_actor.service.chunk_schedule import upcoming_tick
from navi_actor.service.config import ServiceConfig
from navi_actor.service.realtime_inference import InferencePlan, run_inference_process
from navi_actor.service.realtime_shared import (
    DELAY_TICKS,
    INFERENCES,
    SCHEDULE_VERSION,
    SKIPPED_OBSERVATIONS,
    SharedLayout,
    SharedState,
)
from navi_common import Publisher, Subscriber
from navi_contracts import Action, DistanceMatrix, topics

log = structlog.get_logger()

_POLL_S = 0.005  # longest receive wait: a new schedule goes out within this much of being written
_JOIN_S = 5.0


class RealtimeLoop:
    """Runs the control side until ``stop`` is set or ``config.total_steps`` periods were published.

    Args:
        plan: the inference plan without its shared block (filled in when the process is spawned);
            its ``policy_id`` is stamped on every action.
        subscriber: latest-only subscriber to the environment's ``distance_matrix_v2``.
        publisher: the actor PUB (actions, telemetry).
        telemetry: stats publisher.
        config: the service settings (``control_hz``, ``total_steps``, ``stats_seconds``).
    """

    def __init__(
        self,
        plan: InferencePlan,
        subscriber: Subscriber,
        publisher: Publisher,
        telemetry: ActingTelemetry,
        config: ServiceConfig,
    ) -> None:
        self.plan, self.policy_id = plan, plan.policy_id
        self.subscriber, self.publisher = subscriber, publisher
        self.telemetry, self.config = telemetry, config
        self.period = 1.0 / config.control_hz
        self.context = multiprocessing.get_context("spawn")
        self.condition = self.context.Condition(self.context.Lock())
        self.worker_stop = self.context.Event()
        self.shared: SharedState | None = None
        self.worker: SpawnProcess | None = None
        self.schedule = np.zeros((1, 1, 4), dtype=np.float32)
        self.schedule_meta = (0, -1, 0, 0)  # version, start, length, answered tick of the copy
        self.pending: tuple[DistanceMatrix, float] | None = None
        self.env_ids = np.zeros(1, dtype=np.int32)
        self.latest_tick, self.latest_arrival = -1, 0.0
        self.seen_version = 0
        self.last_start = self.last_effect = -1
        self.exhausted = True  # the estimated upcoming tick has no scheduled action (set by _publish)
        self.periods = self.missed_periods = self.exhausted_periods = self.published = 0
        self.observations = 0
        self._next_stats = time.monotonic() + config.stats_seconds

    def run(self, stop: threading.Event) -> int:
        """Serve until stopped; returns the number of control periods that published an action."""
        total = self.config.total_steps
        gc.freeze()  # start-up objects (torch, sockets, settings) stay out of every later collection
        deadline = time.monotonic() + self.period
        try:
            while not stop.is_set() and (total is None or self.periods < total):
                self._receive(min(_POLL_S, max(0.0, deadline - time.monotonic())))
                now = time.monotonic()
                if self.shared is not None and int(self.shared.header[SCHEDULE_VERSION]) != self.seen_version:
                    self._publish(now, new_only=True)  # a new schedule: out at once, not next period
                if now >= deadline:
                    late = int((now - deadline) // self.period)  # whole periods the loop did not run
                    self.missed_periods += late
                    deadline += (late + 1) * self.period
                    self._period(now)
        finally:
            self._stop_worker()
        self._report()
        return self.periods

    def _receive(self, timeout_s: float) -> None:
        received = self.subscriber.recv(timeout_ms=int(timeout_s * 1e3))
        message = received[1] if received is not None else None
        if isinstance(message, DistanceMatrix):
            arrival = time.monotonic()
            if self.plan.needs_poses and message.poses is None:  # as the sequential brain refuses it
                raise ValueError(MISSING_POSES)
            if self.shared is None or not self.shared.layout.fits(message):
                self._start_worker(message)
            if message.step_id < self.latest_tick:
                self.last_start = -1  # the environment restarted its tick count
            self.env_ids = np.array(message.env_ids, dtype=np.int32)
            self.latest_tick, self.latest_arrival = message.step_id, arrival
            self.pending = (message, arrival)
            self.observations += 1
        if self.pending and self.shared and self.shared.write_observation(*self.pending, wait=False):
            self.pending = None

    def _period(self, now: float) -> None:
        if self._publish(now):
            self.periods += 1
            # the stats' latency is the age of the published action: the tick it probably takes effect
            # at (the estimated upcoming tick, or its start if later) minus the tick it answers
            age_s = (self.last_effect - self.schedule_meta[3]) * self.period
            self.telemetry.record_step(age_s, torch.zeros(self.env_ids.shape[0], dtype=torch.bool),
                                       torch.full(self.env_ids.shape, float("nan")))  # fmt: skip
        if self.exhausted:
            self.exhausted_periods += 1
        if now >= self._next_stats:
            self._next_stats = now + self.config.stats_seconds
            self._report()

    def _publish(self, now: float, *, new_only: bool = False) -> bool:
        """Publish the schedule from the upcoming tick on; False when there is nothing left to send.

        ``new_only``: only if a new schedule could be copied out now (else the next poll retries).
        """
        self.exhausted = True
        if self.shared is None:
            return False
        copied = self.shared.read_schedule(self.schedule, wait=False)
        if copied is None and new_only:
            return False
        if copied is not None:
            self.schedule_meta = copied
        version, start, length, answers = self.schedule_meta
        self.seen_version = version
        if length == 0 or answers > self.latest_tick:  # nothing yet, or from before an env restart
            return False
        upcoming = upcoming_tick(self.latest_tick, self.latest_arrival, now, self.period)
        self.exhausted = upcoming >= start + length  # probably: the environment's fallback acts now
        # From the newest observation's tick + 1, not from the estimated upcoming tick: the estimate
        # runs ahead when the environment starts its next tick a few ms late, and a start_tick after
        # the tick it then executes would replace the schedule covering that tick (fallback). The
        # environment skips the rows of ticks it has already run. Start ticks never go back (stale).
        first = max(self.latest_tick + 1, start, self.last_start)
        if first >= start + length:
            return False
        chunk = np.ascontiguousarray(self.schedule[:, first - start : length])
        action = Action(
            env_ids=self.env_ids, actions=chunk[:, 0].copy(), chunk=chunk, start_tick=first,
            step_id=answers, policy_id=self.policy_id, timestamp=time.time(),
        )  # fmt: skip
        self.publisher.publish(topics.ACTION, action)
        self.last_start, self.last_effect = first, max(upcoming, first)
        self.published += 1
        return True

    def _start_worker(self, message: DistanceMatrix) -> None:
        """(Re)start the inference process for ``message``'s batch and sensor sizes."""
        if self.shared is not None:
            log.info("actor.service.realtime_restart", drones=message.batch_size)
            self._stop_worker()
        azimuth, elevation = message.matrix_shape
        layout = SharedLayout(drones=message.batch_size, azimuth=azimuth, elevation=elevation)
        self.shared = SharedState(layout, self.condition)
        self.schedule = np.zeros((layout.drones, layout.capacity, layout.action_dim), dtype=np.float32)
        self.seen_version, self.last_start, self.pending = 0, -1, None
        self.schedule_meta = (0, -1, 0, 0)
        self.worker_stop = self.context.Event()
        plan = replace(self.plan, block_name=self.shared.name, layout=layout.as_dict())
        self.worker = self.context.Process(
            target=run_inference_process, args=(plan, self.condition, self.worker_stop),
            name="navi-brain-inference", daemon=True,
        )  # fmt: skip
        self.worker.start()
        gc.freeze()
        log.info("actor.service.realtime_started", drones=layout.drones, control_hz=self.config.control_hz,
                 pid=self.worker.pid)  # fmt: skip

    def _stop_worker(self) -> None:
        if self.worker is not None:
            self.worker_stop.set()
            with self.condition:
                self.condition.notify_all()
            self.worker.join(_JOIN_S)
            if self.worker.is_alive():
                self.worker.terminate()
                self.worker.join(_JOIN_S)
            self.worker = None
        if self.shared is not None:
            self.shared.close()
            self.shared = None

    def counters(self) -> dict[str, float]:
        """The control loop's own figures and the inference process's (also in every stats event)."""
        inference = {}
        if self.shared is not None:
            header = self.shared.header
            inference = {
                "inferences": float(header[INFERENCES]),
                "skipped_observations": float(header[SKIPPED_OBSERVATIONS]),
                "delay_ticks": float(header[DELAY_TICKS]),
            }
        return {
            **inference,
            "control_periods": float(self.periods),
            "missed_periods": float(self.missed_periods),
            "exhausted_periods": float(self.exhausted_periods),
            "published_actions": float(self.published),
            "observations": float(self.observations),
        }

    def _report(self) -> None:
        self.telemetry.counters.update(self.counters())
        self.telemetry.publish_stats(self.periods)
