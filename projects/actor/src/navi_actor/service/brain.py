"""``run_brain``: open the sockets, pick the mode, serve, close everything on the way out.

The actor PUB is bound before anything else so subscribers (dashboard, recorders, tests) can connect
while the policy loads. With ``wait_for_subscribers`` the service waits for them with the XPUB
readiness handshake (never a sleep) before its first action, so nothing is published into the void.
"""

from __future__ import annotations

import threading
from contextlib import ExitStack
from pathlib import Path

import structlog
import torch

from navi_actor.inference.policy_source import PolicySource, resolve_policy_source
from navi_actor.inference.telemetry import ActingTelemetry
from navi_actor.service.async_loop import AsyncModeLoop
from navi_actor.service.brain_core import BrainCore
from navi_actor.service.brain_settings import BrainSettings
from navi_actor.service.command import SERVICE_TORCH_THREADS
from navi_actor.service.realtime_inference import InferencePlan
from navi_actor.service.realtime_loop import RealtimeLoop
from navi_actor.service.step_loop import StepModeLoop
from navi_common import Publisher, ReqClient, Subscriber
from navi_common.transport.curve import load_keys
from navi_contracts import telemetry_names as names
from navi_contracts import topics

log = structlog.get_logger()


def run_brain(settings: BrainSettings, artifacts_dir: Path, stop: threading.Event | None = None) -> int:
    """Serve the policy until ``stop`` is set, ``service.total_steps`` is reached or Ctrl+C.

    Args:
        settings: resolved settings (``service`` group, ``policy``, ``train.device``).
        artifacts_dir: where the model registry lives (``<artifacts>/models``).
        stop: optional event another thread sets to end the service.

    Returns:
        The number of acting steps taken.

    Raises:
        navi_actor.checkpoints.CheckpointError: the checkpoint cannot be read (at start-up).
        navi_contracts.PeerTimeoutError: ``wait_for_subscribers`` was not met in time.
        KeyboardInterrupt: Ctrl+C (sockets are closed first).
    """
    config = settings.service
    stop = stop or threading.Event()
    device = torch.device(settings.train.device)
    curve = load_keys(config.keys)
    with ExitStack() as sockets:
        publisher = sockets.enter_context(Publisher(config.pub_endpoint, curve=curve))
        log.info(
            "actor.service.publishing",
            endpoint=config.pub_endpoint,
            mode=config.mode,
            inference=config.inference,
        )
        source = resolve_policy_source(config.checkpoint, artifacts_dir / "models")
        core = BrainCore(
            source,
            settings.policy_config(),
            device=device,
            deterministic=config.deterministic,
            seed=config.seed,
        )
        telemetry = ActingTelemetry(
            publisher,
            names.SERVICE_SOURCE,
            observation_hz=settings.telemetry.observation_hz,
            stats_seconds=config.stats_seconds,
            device=device,
        )
        if config.wait_for_subscribers:
            publisher.wait_for_subscribers(
                topics.ACTION, count=config.wait_for_subscribers, timeout_ms=config.subscriber_wait_ms
            )
        loop: StepModeLoop | AsyncModeLoop | RealtimeLoop
        if config.inference == "realtime":
            subscriber = sockets.enter_context(
                Subscriber(config.sub_endpoint, [topics.DISTANCE_MATRIX], latest_only=True, curve=curve)
            )
            log.info("actor.service.realtime", endpoint=config.sub_endpoint, control_hz=config.control_hz)
            plan = realtime_plan(settings, source)
            loop = RealtimeLoop(plan, subscriber, publisher, telemetry, config)
        elif config.mode == "step":
            client = sockets.enter_context(
                ReqClient(
                    config.step_endpoint,
                    timeout_ms=config.request_timeout_ms,
                    retries=config.request_retries,
                    curve=curve,
                )
            )
            log.info("actor.service.stepping", endpoint=config.step_endpoint, policy_id=core.policy_id)
            loop = StepModeLoop(core, client, publisher, telemetry, config)
        else:
            subscriber = sockets.enter_context(
                Subscriber(config.sub_endpoint, [topics.DISTANCE_MATRIX], latest_only=True, curve=curve)
            )
            log.info("actor.service.subscribed", endpoint=config.sub_endpoint, policy_id=core.policy_id)
            loop = AsyncModeLoop(core, subscriber, publisher, telemetry, config)
        steps = loop.run(stop)
        log.info("actor.service.stopped", steps=steps, mode=config.mode, inference=config.inference)
        return steps


def realtime_plan(settings: BrainSettings, source: PolicySource) -> InferencePlan:
    """The inference process's plan (its shared block is named when it is spawned)."""
    config = settings.service
    served = source.checkpoint.policy_config if source.checkpoint is not None else settings.policy_config()
    return InferencePlan(
        block_name="",
        layout={},
        checkpoint=None if source.path is None else str(source.path),
        policy_id=source.policy_id,
        fresh_config_json=settings.policy_config().model_dump_json(),
        device=str(settings.train.device),
        deterministic=config.deterministic,
        seed=config.seed,
        period_s=1.0 / config.control_hz,
        latency_ms=config.latency_ms,
        jitter_ms=config.jitter_ms,
        blend=config.blend,
        delay_window=config.delay_window,
        torch_threads=settings.train.torch_threads or SERVICE_TORCH_THREADS,
        needs_poses=served.visit_input,
    )
