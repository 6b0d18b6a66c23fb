"""Training telemetry on the actor PUB socket (default ``tcp://127.0.0.1:5557``).

Three streams, all fire-and-forget through :class:`navi_contracts.Publisher` (which drops instead of
blocking when a subscriber lags): a ``actor.training.ppo.update`` TelemetryEvent after every update,
actor 0's observation as a B=1 DistanceMatrix at about ``observation_hz``, and an
``actor.training.heartbeat`` event at most every ``heartbeat_seconds`` while the learner runs (so a
dashboard can tell a long update from a dead trainer). Rate limits are checked against a monotonic
clock before any device-to-host copy, so an idle socket costs a clock read per step.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

import numpy as np
import structlog
import torch

from navi_actor.config import TelemetryConfig
from navi_common import Publisher
from navi_common.transport.curve import load_keys
from navi_contracts import DistanceMatrix, TelemetryEvent, telemetry_names, topics

log = structlog.get_logger()

UPDATE_EVENT = telemetry_names.TRAINING_UPDATE
HEARTBEAT_EVENT = telemetry_names.TRAINING_HEARTBEAT


def observation_message(obs: torch.Tensor, step_id: int, episode_id: int = 0) -> DistanceMatrix:
    """Actor 0's observation as a wire ``DistanceMatrix`` with B=1.

    Args:
        obs: [B, 3, Az, El] batch; only row 0 is sent (one small host copy).
        step_id: trainer step counter.
        episode_id: episode counter of actor 0.

    Returns:
        The message.
    """
    row = obs[0].detach().to("cpu", torch.float32).numpy()  # [3, Az, El]
    azimuth, elevation = row.shape[1:]
    return DistanceMatrix(
        env_ids=np.zeros(1, dtype=np.int32),
        matrix_shape=(azimuth, elevation),
        depth=np.clip(row[0], 0.0, 1.0)[None].astype(np.float32),
        semantic=np.rint(row[1])[None].astype(np.int32),
        valid_mask=(row[2] > 0.5)[None],
        step_id=step_id,
        episode_ids=np.array([episode_id], dtype=np.int64),
        timestamp=time.time(),
    )


class TrainingTelemetry:
    """Rate-limited, non-blocking publisher of training progress.

    Args:
        config: telemetry settings.
        source: ``source`` field of the events.
        clock: monotonic clock (injectable for tests).
    """

    def __init__(
        self, config: TelemetryConfig, source: str = "actor", clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.config, self.source, self._clock = config, source, clock
        self._publisher: Publisher | None = None
        self._next_observation = 0.0
        self._next_heartbeat = 0.0
        if config.enabled:
            try:
                self._publisher = Publisher(config.endpoint, curve=load_keys(config.keys))
            except Exception as error:  # a busy port must not stop training
                log.warning("actor.telemetry.disabled", endpoint=config.endpoint, reason=str(error))
            else:
                log.info("actor.telemetry.publishing", endpoint=config.endpoint)

    @property
    def active(self) -> bool:
        """Whether a socket is open."""
        return self._publisher is not None

    def wait_for_listener(self, timeout_ms: int = 5000) -> None:
        """Block until a subscriber is connected (readiness handshake for tests and tools).

        Raises:
            RuntimeError: telemetry is disabled.
            navi_contracts.PeerTimeoutError: nobody subscribed within ``timeout_ms``.
        """
        if self._publisher is None:
            raise RuntimeError("telemetry is disabled; nothing to wait for")
        self._publisher.wait_for_subscribers(timeout_ms=timeout_ms)

    def publish_update(self, step_id: int, metrics: Mapping[str, float]) -> None:
        """Send the coarse metrics of one update."""
        payload = {key: float(value) for key, value in metrics.items() if isinstance(value, int | float)}
        self._event(UPDATE_EVENT, step_id, payload)

    def heartbeat(self, step_id: int, phase: str = "update") -> None:
        """Send a heartbeat unless one went out less than ``heartbeat_seconds`` ago."""
        now = self._clock()
        if self._publisher is None or now < self._next_heartbeat:
            return
        self._next_heartbeat = now + self.config.heartbeat_seconds
        self._event(HEARTBEAT_EVENT, step_id, {"updating": 1.0 if phase == "update" else 0.0})

    def maybe_publish_observation(self, obs: torch.Tensor, step_id: int) -> None:
        """Send actor 0's observation if the ``observation_hz`` period has elapsed."""
        now = self._clock()
        if self._publisher is None or now < self._next_observation:
            return
        self._next_observation = now + 1.0 / self.config.observation_hz
        try:
            self._publisher.publish(topics.DISTANCE_MATRIX, observation_message(obs, step_id))
        except ValueError as error:  # a malformed observation is a bug to log, not a reason to stop
            log.warning("actor.telemetry.observation_rejected", reason=str(error))

    def _event(self, event_type: str, step_id: int, payload: dict[str, float]) -> None:
        if self._publisher is None:
            return
        clean = {key[:256]: value for key, value in payload.items()}  # NaN is news: keep it
        event = TelemetryEvent(
            event_type=event_type, source=self.source, step_id=step_id, payload=clean, timestamp=time.time()
        )
        self._publisher.publish(topics.TELEMETRY_EVENT, event)

    def close(self) -> None:
        """Close the socket (idempotent)."""
        if self._publisher is not None:
            self._publisher.close()
            self._publisher = None
