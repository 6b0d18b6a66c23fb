"""Async mode: the environment steps on the actions a brain publishes (``action_v2``).

The contract with ``navi-actor serve --mode async`` (docs/service.md, "Async mode"):

- every published observation carries a new ``step_id``; an ``Action`` answers the observation
  whose ``step_id`` it carries, so the server steps **only** on an action for its current
  ``step_id``. An older one (the brain re-sends its last action every 500 ms, or it was overtaken
  by a REQ step or reset) is ignored, which makes re-sent actions idempotent; a newer one (a brain
  still answering a previous server instance) is ignored with a warning;
- an action whose env ids are not 0..B-1 exactly once is logged and skipped; undecodable bytes are
  dropped (and logged) by navi-common's ``Subscriber``;
- while no usable action arrives, the current observation is re-published every ``republish_ms``
  so a brain that joined late (PUB/SUB drops everything sent before a subscription arrives) can
  start; nothing here ever blocks longer than ``poll_ms``;
- the REP socket keeps answering StepRequests and resets between actions (one thread, so the
  backend is never driven from two places at once).
"""

from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Literal

import structlog

from navi_common import RepServer, Subscriber
from navi_contracts import Action
from navi_contracts.model_base import WireModel

if TYPE_CHECKING:
    from navi_environment.server.config import ServerConfig
    from navi_environment.server.service import EnvironmentService

log = structlog.get_logger()

ActionOutcome = Literal["stepped", "stale", "ahead", "rejected"]


@dataclass
class AsyncCounters:
    """What happened to the actions received in async mode."""

    stepped: int = 0
    """Actions for the current step: each advanced the environment by one step."""
    stale: int = 0
    """Actions for an earlier step (re-sent or overtaken): ignored."""
    ahead: int = 0
    """Actions for a later step than this server has published: ignored."""
    rejected: int = 0
    """Actions with wrong env ids or batch size (or not an Action at all): ignored."""
    republished: int = 0
    """Times the current observation was published again while waiting for an action."""


class AsyncActionLoop:
    """Runs async mode until ``stop`` is set.

    Args:
        service: the environment service (publishes every observation it produces).
        actions: ordered subscriber to the brain's ``action_v2`` (every action is looked at, so a
            stale re-send arriving after the fresh action cannot hide it, as latest-only could).
        rep: the REP server, served between actions.
        config: pacing (``seed``, ``republish_ms``, ``poll_ms``).
    """

    def __init__(
        self, service: EnvironmentService, actions: Subscriber, rep: RepServer, config: ServerConfig
    ) -> None:
        self.service, self.actions, self.rep, self.config = service, actions, rep, config
        self.counters = AsyncCounters()
        self._seen_step = -1
        self._published_at = 0.0

    def run(self, stop: threading.Event) -> AsyncCounters:
        """Serve until ``stop`` is set (checked at least every ``poll_ms``).

        Args:
            stop: set it from a signal handler or another thread to end the loop.

        Returns:
            The action counters.
        """
        if not self.service.ready:
            self.service.reset(self.config.seed)
        while not stop.is_set():
            self.rep.serve_once(0)
            received = self.actions.recv(timeout_ms=self.config.poll_ms)
            if received is not None:
                self.on_action(received[1])
            self._keep_observation_fresh(time.monotonic())
        log.info("environment.server.async_stopped", step_id=self.service.step_id, **asdict(self.counters))
        return self.counters

    def on_action(self, message: WireModel) -> ActionOutcome:
        """Step on ``message`` if it answers the current observation.

        Args:
            message: a decoded message from the action subscription.

        Returns:
            What was done with it.
        """
        current = self.service.step_id
        if not isinstance(message, Action):
            return self._reject(f"expected an Action, got {type(message).__name__}", current)
        if message.step_id < current:
            self.counters.stale += 1
            log.debug("environment.server.action_stale", step_id=message.step_id, current=current)
            return "stale"
        if message.step_id > current:
            self.counters.ahead += 1
            log.warning(
                "environment.server.action_ahead", step_id=message.step_id, current=current,
                policy_id=message.policy_id,
            )  # fmt: skip
            return "ahead"
        try:
            self.service.step(message)
        except ValueError as error:  # wrong env ids / batch size: the brain's batch is not ours
            return self._reject(str(error), current)
        self.counters.stepped += 1
        return "stepped"

    def _reject(self, reason: str, current: int) -> ActionOutcome:
        self.counters.rejected += 1
        log.warning("environment.server.action_rejected", reason=reason, current=current)
        return "rejected"

    def _keep_observation_fresh(self, now: float) -> None:
        """Re-publish the current observation when it is ``republish_ms`` old (from any source)."""
        if self.service.step_id != self._seen_step:  # a step or reset (action or REQ) just published
            self._seen_step, self._published_at = self.service.step_id, now
        elif (now - self._published_at) * 1e3 >= self.config.republish_ms:
            if self.service.republish():
                self.counters.republished += 1
            self._published_at = now
