"""Rate-limited acting telemetry: ``<prefix>.stats`` events and actor 0's observation.

Used by ``navi-actor infer`` (prefix ``actor.inference``) and the brain service (``actor.service``).
Episode counts and returns accumulate on the device; the host reads them only when a stats event is
due (about once per ``stats_seconds``), so a step costs a few tensor adds and a clock read.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable

import numpy as np
import structlog
import torch

from navi_actor.telemetry import observation_message
from navi_common import Publisher
from navi_contracts import TelemetryEvent, topics
from navi_contracts import telemetry_names as names

log = structlog.get_logger()

_LATENCY_WINDOW = 2048  # recent step latencies kept for p50/p99


class ActingTelemetry:
    """Counts steps and episodes and publishes them without blocking the acting loop.

    Args:
        publisher: the actor PUB socket, or None to only count (and log).
        prefix: event name prefix, e.g. ``actor.inference`` -> ``actor.inference.stats``.
        observation_hz: rate of actor 0's observation on ``distance_matrix_v2``.
        stats_seconds: period of the stats event (and of the ``<prefix>.stats`` log line).
        device: where the episode accumulators live.
        clock: monotonic clock (injectable for tests).
    """

    def __init__(
        self,
        publisher: Publisher | None,
        prefix: str,
        *,
        observation_hz: float = 10.0,
        stats_seconds: float = 1.0,
        device: torch.device | str = "cpu",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.publisher, self.prefix, self._clock = publisher, prefix, clock
        self.observation_period = 1.0 / observation_hz
        self.stats_seconds = stats_seconds
        self.steps = 0  # acting steps (batches)
        self.drone_steps = 0
        self.episodes = 0
        self.counters: dict[str, float] = {}
        self._latencies: deque[float] = deque(maxlen=_LATENCY_WINDOW)
        self._ended = torch.zeros(3, device=device)  # [count, return sum, length sum] since the last stats
        self._next_observation = 0.0
        self._window_start = clock()
        self._window_steps = 0

    def record_step(
        self,
        latency_s: float,
        done: torch.Tensor,
        episode_return: torch.Tensor,
        episode_length: torch.Tensor | None = None,
    ) -> None:
        """Account one batched step.

        Args:
            latency_s: wall time of the step (act + environment round trip), seconds.
            done: ``[B]`` bool, episodes that ended this step.
            episode_return: ``[B]`` float, return of the episode that ended (read where ``done``).
            episode_length: ``[B]`` steps of the episode that ended (None: unknown, reported NaN).
        """
        self.steps += 1
        self._window_steps += 1
        self.drone_steps += int(done.shape[0])
        self._latencies.append(latency_s)
        done_f = done.to(self._ended.device, torch.float32)
        returns = torch.where(done_f > 0, episode_return.to(done_f.device, torch.float32), 0.0)
        if episode_length is None:
            lengths = torch.full_like(done_f, float("nan"))
        else:
            lengths = torch.where(done_f > 0, episode_length.to(done_f.device, torch.float32), 0.0)
        self._ended += torch.stack([done_f.sum(), returns.sum(), lengths.sum()])

    def count(self, name: str, amount: float = 1.0) -> None:
        """Add to a named counter reported in every stats event (e.g. ``reconnects``)."""
        self.counters[name] = self.counters.get(name, 0.0) + amount

    def latency_percentiles_ms(self) -> tuple[float, float]:
        """p50 and p99 of the recent step latencies, milliseconds (NaN before the first step)."""
        if not self._latencies:
            return float("nan"), float("nan")
        p50, p99 = np.percentile(np.fromiter(self._latencies, dtype=np.float64), [50, 99]) * 1e3
        return float(p50), float(p99)

    def maybe_publish(self, obs: torch.Tensor, step_id: int) -> dict[str, float] | None:
        """Publish actor 0's observation and the stats event when their periods have elapsed.

        Args:
            obs: ``[B, 3, Az, El]`` current observations (only row 0 is copied, only when due).
            step_id: the step counter carried by the messages.

        Returns:
            The stats payload when one was due, else None.
        """
        now = self._clock()
        if self.publisher is not None and now >= self._next_observation:
            self._next_observation = now + self.observation_period
            try:
                self.publisher.publish(topics.DISTANCE_MATRIX, observation_message(obs, step_id))
            except ValueError as error:  # a bad observation is logged, it never stops acting
                log.warning(f"{self.prefix}.observation_rejected", reason=str(error))
        if now - self._window_start < self.stats_seconds:
            return None
        return self.publish_stats(step_id, now)

    def publish_stats(self, step_id: int, now: float | None = None) -> dict[str, float]:
        """Publish (and log) the stats event now and start a new window.

        Returns:
            The payload (names from :mod:`navi_contracts.telemetry_names`): steps, sps (this
            window), drone_steps, episodes, episode_return (mean of the episodes ended in this
            window), episode_length (likewise; NaN when the caller does not know lengths),
            latency_p50_ms, latency_p99_ms and the named counters. The log line leaves out what
            is NaN (no episode ended in the window, no step yet): a figure nobody knows yet.
        """
        now = self._clock() if now is None else now
        ended, return_sum, length_sum = self._ended.tolist()  # the one host read per stats period
        self._ended.zero_()
        self.episodes += int(ended)
        elapsed = max(now - self._window_start, 1e-9)
        p50, p99 = self.latency_percentiles_ms()
        payload = {
            names.STEPS: float(self.steps),
            names.SPS: self._window_steps / elapsed,
            names.DRONE_STEPS: float(self.drone_steps),
            names.EPISODES: float(self.episodes),
            names.EPISODE_RETURN: return_sum / ended if ended else float("nan"),
            names.EPISODE_LENGTH: length_sum / ended if ended else float("nan"),
            names.LATENCY_P50_MS: p50,
            names.LATENCY_P99_MS: p99,
            **self.counters,
        }
        self._window_start, self._window_steps = now, 0
        self.event(names.STATS, step_id, payload)
        known = {key: round(value, 3) for key, value in payload.items() if not math.isnan(value)}
        log.info(f"{self.prefix}.stats", step_id=step_id, **known)  # a person reads no "nan"
        return payload

    def event(self, name: str, step_id: int, payload: dict[str, float]) -> None:
        """Publish ``<prefix>.<name>`` with ``payload`` (no-op without a publisher)."""
        if self.publisher is None:
            return
        message = TelemetryEvent(
            event_type=names.acting_event(self.prefix, name),
            source="actor",
            step_id=step_id,
            payload=payload,
            timestamp=time.time(),
        )
        self.publisher.publish(topics.TELEMETRY_EVENT, message)
