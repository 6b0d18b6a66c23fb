"""Step mode: the brain drives the environment over REQ/REP, one batched step per request.

Loop: reset (seeded) -> act on the observation -> publish the Action -> send it as a StepRequest ->
read terminated/truncated and the next observation from the StepResult -> repeat. Any failure of the
environment link (no reply after the retries, an error reply, a malformed reply) drops the drones'
memory and re-synchronises with a new reset, so an environment restart mid-run costs one reset, not
the service. The REQ client never waits longer than ``request_timeout_ms x (1 + retries)``.

At start-up the environment is usually still loading its scenes (seconds to minutes for a corpus).
The loop first waits, quietly, until the environment's endpoint accepts a connection (it binds only
once loaded), and warns ``actor.service.env_unreachable`` only if that takes longer than
``env_ready_timeout_ms``; after that, every failed request warns at once as before.
"""

from __future__ import annotations

import itertools
import threading
import time

import structlog
import torch

from navi_actor.inference.telemetry import ActingTelemetry
from navi_actor.service.brain_core import BrainCore
from navi_actor.service.config import ServiceConfig
from navi_actor.service.readiness import wait_until_reachable
from navi_common import PeerTimeoutError, Publisher, RemoteError, ReqClient
from navi_contracts import ContractError, StepRequest, StepResult, topics
from navi_contracts import telemetry_names as names

log = structlog.get_logger()

_MIN_RETRY_S = 0.2  # pacing of re-sync attempts against a peer that fails fast (error replies)
_MAX_RETRY_S = 2.0


class StepModeLoop:
    """Runs step mode until ``stop`` is set or ``config.total_steps`` steps are done.

    Args:
        core: the acting core.
        client: REQ client connected to the environment's REP endpoint.
        publisher: the actor PUB (actions, telemetry).
        telemetry: stats publisher.
        config: the service settings.
    """

    def __init__(
        self,
        core: BrainCore,
        client: ReqClient,
        publisher: Publisher,
        telemetry: ActingTelemetry,
        config: ServiceConfig,
    ) -> None:
        self.core, self.client, self.publisher = core, client, publisher
        self.telemetry, self.config = telemetry, config
        self.resyncs = 0
        self.steps = 0
        self._request_ids = itertools.count(1)
        self._failures = 0

    def run(self, stop: threading.Event) -> int:
        """Serve until stopped; returns the number of acting steps taken."""
        result: StepResult | None = None
        total = self.config.total_steps
        self._wait_for_environment(stop)
        while not stop.is_set() and (total is None or self.steps < total):
            if result is None:
                result = self._resync(stop)
                continue
            result = self._step(result)
        self.telemetry.publish_stats(self.steps)
        return self.steps

    def _wait_for_environment(self, stop: threading.Event) -> None:
        """Quietly wait until the environment accepts connections (or ``env_ready_timeout_ms``)."""
        endpoint, timeout_s = self.client.endpoint, self.config.env_ready_timeout_ms / 1e3
        log.info("actor.service.waiting_for_env", endpoint=endpoint, timeout_s=timeout_s)
        started = time.monotonic()
        if wait_until_reachable(endpoint, stop, timeout_s):
            waited = round(time.monotonic() - started, 1)
            log.info("actor.service.env_reachable", endpoint=endpoint, seconds=waited)
        elif not stop.is_set():
            log.warning(
                "actor.service.env_unreachable", endpoint=endpoint,
                reason=f"nothing accepts connections after {timeout_s:g} s; still trying",
            )  # fmt: skip

    def _resync(self, stop: threading.Event) -> StepResult | None:
        """Reset the environment (seed + number of earlier re-syncs) and the drones' memory."""
        seed = self.config.seed + self.resyncs
        started = time.monotonic()
        result = self._request(StepRequest(request_id=next(self._request_ids), reset=True, seed=seed))
        if result is None:
            self._failures += 1
            pause = min(_MIN_RETRY_S * 2 ** (self._failures - 1), _MAX_RETRY_S)
            stop.wait(max(0.0, pause - (time.monotonic() - started)))  # pacing, not synchronisation
            return None
        self.core.reset(result.observation)
        if self.resyncs:
            self.telemetry.count("resyncs")
            self.telemetry.event(names.RESYNCED, self.steps, {"seed": float(seed)})
        log.info("actor.service.synced", seed=seed, drones=int(result.reward.shape[0]), resyncs=self.resyncs)
        self.resyncs += 1
        self._failures = 0
        return result

    def _step(self, current: StepResult) -> StepResult | None:
        tick = time.perf_counter()
        obs, action = self.core.act(current.observation)
        self.publisher.publish(topics.ACTION, action)
        result = self._request(StepRequest(request_id=next(self._request_ids), actions=action))
        if result is None:
            return None
        done = result.terminated | result.truncated
        self.core.end_episodes(done)
        self.steps += 1
        self.telemetry.record_step(
            time.perf_counter() - tick, torch.from_numpy(done), torch.tensor(result.episode_return),
            torch.tensor(result.episode_length),
        )  # fmt: skip
        self.telemetry.maybe_publish(obs, self.steps)
        return result

    def _request(self, request: StepRequest) -> StepResult | None:
        """Send ``request``; None (logged) when the link failed and a re-sync is needed."""
        try:
            return self.client.request(request, expected=StepResult)
        except PeerTimeoutError as error:
            log.warning("actor.service.env_unreachable", endpoint=self.client.endpoint, reason=str(error))
        except RemoteError as error:
            log.warning("actor.service.env_refused", code=error.code, reason=error.remote_message)
        except ContractError as error:
            log.warning("actor.service.reply_malformed", reason=str(error))
        self.telemetry.count("link_failures")
        return None
