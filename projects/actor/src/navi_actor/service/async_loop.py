"""Async mode: act on every new observation the environment publishes; the environment steps on the
actions it receives (``action_v2`` on the actor PUB).

Observations are read latest-only, so a slow brain acts on the freshest view instead of a backlog.
Each drone's memory is reset when its ``episode_ids`` entry changes (a new episode), and all of them
when the batch size changes or ``step_id`` goes backwards (the environment restarted). An observation
already acted on is never acted on twice (that would advance the recurrent state without a step);
instead the last action is re-published every ``resend_ms`` so a lost action cannot stall an
environment that waits for it. ``Action.step_id`` is the ``step_id`` of the observation it answers.
``latency_ms`` / ``jitter_ms`` (0 by default) sleep after each decision, before the action goes out:
a fast machine then plays a slow brain (the sequential baseline of ``scripts/bench_realtime.py``).
"""

from __future__ import annotations

import random
import threading
import time

import numpy as np
import structlog
import torch

from navi_actor.inference.telemetry import ActingTelemetry
from navi_actor.service.brain_core import BrainCore
from navi_actor.service.config import ServiceConfig
from navi_common import Publisher, Subscriber
from navi_contracts import Action, DistanceMatrix, topics

log = structlog.get_logger()

_POLL_MS = 50  # longest wait per receive: bounds the reaction to stop and to the resend timer


class AsyncModeLoop:
    """Runs async mode until ``stop`` is set or ``config.total_steps`` actions were chosen.

    Args:
        core: the acting core.
        subscriber: latest-only subscriber to the environment's ``distance_matrix_v2``.
        publisher: the actor PUB (actions, telemetry).
        telemetry: stats publisher.
        config: the service settings.
    """

    def __init__(
        self,
        core: BrainCore,
        subscriber: Subscriber,
        publisher: Publisher,
        telemetry: ActingTelemetry,
        config: ServiceConfig,
    ) -> None:
        self.core, self.subscriber, self.publisher = core, subscriber, publisher
        self.telemetry, self.config = telemetry, config
        self.steps = 0
        self._last: DistanceMatrix | None = None
        self._last_action: Action | None = None
        self._last_sent = 0.0
        self._last_seen = time.monotonic()
        self._silent = False
        self._random = random.Random(config.seed)

    def run(self, stop: threading.Event) -> int:
        """Serve until stopped; returns the number of observations acted on."""
        total = self.config.total_steps
        while not stop.is_set() and (total is None or self.steps < total):
            received = self.subscriber.recv(timeout_ms=_POLL_MS)
            now = time.monotonic()
            message = received[1] if received is not None else None
            if isinstance(message, DistanceMatrix) and not self._already_acted(message):
                self._act(message, now)
            else:
                self._idle(now)
        self.telemetry.publish_stats(self.steps)
        return self.steps

    def _already_acted(self, message: DistanceMatrix) -> bool:
        last = self._last
        return (
            last is not None
            and last.step_id == message.step_id
            and np.array_equal(last.episode_ids, message.episode_ids)
            and np.array_equal(last.env_ids, message.env_ids)
        )

    def _act(self, message: DistanceMatrix, now: float) -> None:
        tick = time.perf_counter()
        starts = self._episode_starts(message)
        if starts is None:
            self.core.reset(message)
        else:
            self.core.end_episodes(starts)
        obs, action = self.core.act(message)
        self._sleep_injected_latency()
        self.publisher.publish(topics.ACTION, action)
        self.steps += 1
        if self._silent:
            log.info("actor.service.env_back", step_id=message.step_id)
        self._last, self._last_action = message, action
        self._last_sent = self._last_seen = now
        self._silent = False
        B = int(message.env_ids.shape[0])
        done = torch.from_numpy(starts) if starts is not None else torch.zeros(B, dtype=torch.bool)
        # async observations carry no episode returns: episodes are counted, returns stay NaN
        self.telemetry.record_step(time.perf_counter() - tick, done, torch.full((B,), float("nan")))
        self.telemetry.maybe_publish(obs, self.steps)

    def _sleep_injected_latency(self) -> None:
        config = self.config
        delay_ms = config.latency_ms + self._random.uniform(-config.jitter_ms, config.jitter_ms)
        if config.latency_ms > 0 or config.jitter_ms > 0:
            time.sleep(max(0.0, delay_ms) / 1e3)

    def _episode_starts(self, message: DistanceMatrix) -> np.ndarray | None:
        """``[B]`` bool of drones in a new episode; None when everything must reset."""
        last = self._last
        if (
            last is None
            or last.env_ids.shape != message.env_ids.shape
            or not np.array_equal(last.env_ids, message.env_ids)
            or message.step_id < last.step_id
        ):
            if last is not None:
                log.info("actor.service.resynced", step_id=message.step_id, previous_step_id=last.step_id)
                self.telemetry.count("resyncs")
            return None
        return np.asarray(message.episode_ids != last.episode_ids)

    def _idle(self, now: float) -> None:
        if self._last_action is not None and (now - self._last_sent) * 1e3 >= self.config.resend_ms:
            self.publisher.publish(topics.ACTION, self._last_action)
            self._last_sent = now
            self.telemetry.count("resent_actions")
        # before the first observation the environment may still be loading: wait quietly longer
        config = self.config
        patience = config.silence_warning_ms if self._last is not None else config.env_ready_timeout_ms
        if not self._silent and (now - self._last_seen) * 1e3 >= patience:
            self._silent = True
            log.warning(
                "actor.service.env_silent",
                endpoint=self.config.sub_endpoint,
                seconds=round(now - self._last_seen, 1),
            )
