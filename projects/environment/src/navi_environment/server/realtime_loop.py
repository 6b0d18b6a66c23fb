"""Realtime mode: the world advances at ``control_hz`` whether or not the brain has answered.

The loop (docs/service.md, "Real-time mode"):

- tick deadlines lie on a fixed grid ``t0 + k / control_hz`` (``time.monotonic``; ``t0`` is when
  the first tick, which compiles the backend's kernels, has finished). At each deadline
  the loop drains every pending ``action_v2`` message (non-blocking), asks the
  :class:`~navi_environment.server.realtime_schedule.ActionScheduler` for each drone's action of
  this tick (its schedule, or the hold/slow fallback), makes **one** batched backend step and
  publishes the observation with ``step_id`` = the tick;
- between deadlines it serves the REP socket (resets only: steps come from the clock) and waits on
  the action socket, never longer than ``poll_ms`` nor than the time left before the next deadline;
- a deadline the loop reaches a whole period late or more (a step, a reset or the machine took too
  long) is *missed*: its slot is skipped (the grid keeps its phase) and counted in
  ``missed_ticks``; tick numbers count executed steps, so they stay consecutive;
- every ``stats_interval_s`` it publishes the :class:`RealtimeStats` snapshot as an
  ``environment.realtime.stats`` telemetry event.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import structlog
import torch

from navi_common import RepServer, Subscriber
from navi_contracts import Action, TelemetryEvent, telemetry_names, topics
from navi_contracts.model_base import WireModel
from navi_environment.planning.guard import SpeedGuard
from navi_environment.server.realtime_schedule import ActionScheduler, RealtimeStats

if TYPE_CHECKING:
    from navi_environment.server.config import ServerConfig
    from navi_environment.server.service import EnvironmentService

log = structlog.get_logger()

_DRAIN_LIMIT = 1000
"""Messages taken per tick at most, so a flooding publisher cannot stall the clock."""


class RealtimeLoop:
    """Runs realtime mode until ``stop`` is set.

    Args:
        service: the environment service (publishes every observation it produces).
        actions: ordered subscriber to the brain's ``action_v2``.
        rep: the REP server (resets; step requests are refused in this mode).
        config: ``control_hz``, ``fallback``, ``guard``, ``seed``, ``poll_ms``, ``stats_interval_s``.
        clock: monotonic clock (tests may inject one).
    """

    def __init__(
        self,
        service: EnvironmentService,
        actions: Subscriber,
        rep: RepServer,
        config: ServerConfig,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.service, self.actions, self.rep, self.config = service, actions, rep, config
        self.clock = clock
        self.period = 1.0 / config.control_hz
        drones = service.backend.num_actors
        self.stats = RealtimeStats(drones, control_hz=config.control_hz)
        self.scheduler = ActionScheduler(drones, config.fallback, self.stats)
        backend = service.backend
        self.guard = SpeedGuard(backend.settings, backend.device) if config.guard else None

    def run(self, stop: threading.Event) -> RealtimeStats:
        """Tick until ``stop`` is set (checked at least every ``poll_ms``).

        Returns:
            The final counters.
        """
        if not self.service.ready:
            self.service.reset(self.config.seed)
        # The first step compiles the backend's kernels (seconds, once per process): the grid starts
        # after it, so that start-up cost is not reported as missed ticks.
        self.run_tick()
        deadline = self.clock() + self.period
        next_stats = self.clock() + self.config.stats_interval_s
        while not stop.is_set():
            now = self.clock()
            if now < deadline:
                self._wait(deadline - now)
                continue
            late_slots = math.floor((now - deadline) / self.period)
            if late_slots:
                self.stats.missed_ticks += late_slots
                deadline += late_slots * self.period
                log.warning("environment.server.realtime_missed", slots=late_slots, tick=self.service.step_id)
            self.run_tick()
            deadline += self.period
            if self.clock() >= next_stats:
                self.publish_stats()
                next_stats = self.clock() + self.config.stats_interval_s
        self.publish_stats()
        log.info("environment.server.realtime_stopped", **self.finite_stats())
        return self.stats

    def run_tick(self) -> int:
        """Drain pending actions, execute this tick's actions in one batched step, publish.

        Returns:
            The tick executed (the step_id of the observation just published).
        """
        tick = self.service.step_id + 1
        for _ in range(_DRAIN_LIMIT):
            received = self.actions.recv(timeout_ms=0)
            if received is None:
                break
            self.on_message(received[1], tick)
        rows = self.scheduler.tick(tick)
        self.service.step_rows(rows if self.guard is None else self.guarded(rows))
        return tick

    def guarded(self, rows: np.ndarray) -> np.ndarray:
        """``rows`` ([B, 4] float32) capped by the collision guard from the newest observation."""
        assert self.guard is not None
        observation = self.service.backend.obs  # what the drones see now: the tick before this one
        wanted = torch.from_numpy(rows).to(observation.device)
        executed = self.guard(wanted, observation).cpu().numpy()
        self.stats.guarded_ticks += np.abs(executed - np.clip(rows, -1.0, 1.0)).max(axis=1) > 1e-6
        return executed

    def on_message(self, message: WireModel, next_tick: int) -> None:
        """Hand one received message to the scheduler (anything unusable is logged and skipped)."""
        if not isinstance(message, Action):
            self.stats.rejected += 1
            log.warning(
                "environment.server.action_rejected",
                reason=f"expected an Action, got {type(message).__name__}",
            )
            return
        try:
            self.scheduler.receive(message, next_tick)
        except ValueError as error:
            log.warning("environment.server.action_rejected", reason=str(error), current=next_tick - 1)

    def finite_stats(self) -> dict[str, float]:
        """The counters without the ones not defined yet (ages before any action: NaN), so the
        telemetry event and the JSON log line stay valid JSON."""
        return {name: value for name, value in self.stats.snapshot().items() if math.isfinite(value)}

    def publish_stats(self) -> None:
        """Publish the counters as an ``environment.realtime.stats`` event (finite values only)."""
        publisher = self.service.publisher
        if publisher is None:
            return
        payload = self.finite_stats()
        event = TelemetryEvent(
            event_type=telemetry_names.ENVIRONMENT_REALTIME_STATS, source="environment",
            step_id=self.service.step_id, payload=payload, timestamp=time.time(),
        )  # fmt: skip
        publisher.publish(topics.TELEMETRY_EVENT, event)

    def _wait(self, left_s: float) -> None:
        """Serve REP and take actions as they come, for at most ``left_s`` (the time to the deadline)."""
        self.rep.serve_once(0)
        wait_ms = min(self.config.poll_ms, int(left_s * 1000))
        if wait_ms <= 0:
            time.sleep(max(left_s, 0.0))
            return
        received = self.actions.recv(timeout_ms=wait_ms)
        if received is not None:
            self.on_message(received[1], self.service.step_id + 1)
