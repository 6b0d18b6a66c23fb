"""The environment as a ZeroMQ service (``navi-environment serve``).

REP answers ``StepRequest`` (step with actions, or reset) with ``StepResult``; every observation
is also published as a ``DistanceMatrix`` on the PUB socket, next to one ``environment.step``
telemetry event per step. Bad requests never stop the loop: navi-common's ``RepServer`` turns
undecodable bytes and handler errors into ``ErrorReply`` and keeps serving. In async mode the
server also steps on the brain's published actions (:mod:`navi_environment.server.async_loop`); in
realtime mode it steps at a fixed rate on the actions the brain scheduled
(:mod:`navi_environment.server.realtime_loop`).
"""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path

import numpy as np
import structlog
import torch

from navi_common import Publisher, RepServer, Subscriber
from navi_common.transport.curve import load_keys
from navi_contracts import (
    Action,
    DistanceMatrix,
    RobotPose,
    StepRequest,
    StepResult,
    TelemetryEvent,
    telemetry_names,
    topics,
)
from navi_contracts.model_base import WireModel
from navi_environment.backend import SdfDagBackend
from navi_environment.server.async_loop import AsyncActionLoop
from navi_environment.server.config import ServerConfig
from navi_environment.server.realtime_loop import RealtimeLoop

log = structlog.get_logger()


class EnvironmentService:
    """Turns wire requests into backend calls and backend outputs into wire messages.

    Every published observation gets a new ``step_id`` (a step or a reset advances it), so an action
    answering one observation can never be applied to another: that is what lets async mode step
    only on actions whose ``step_id`` is the current one.

    Args:
        backend: the batched environment (its B is the only batch size accepted).
        publisher: where observations and telemetry go (None: nothing is published).
        step_requests: answer REQ step requests (False in realtime mode, where only the clock
            steps; resets are always answered).
    """

    def __init__(
        self, backend: SdfDagBackend, publisher: Publisher | None = None, *, step_requests: bool = True
    ) -> None:
        self.backend = backend
        self.publisher = publisher
        self.step_requests = step_requests
        self.step_id = 0
        self.episode_ids = np.zeros(backend.num_actors, dtype=np.int64)
        self.observation: DistanceMatrix | None = None
        self._env_ids = np.arange(backend.num_actors, dtype=np.int32)

    @property
    def ready(self) -> bool:
        """True once a reset has started the episodes (steps before that are refused)."""
        return self.observation is not None

    def handle(self, request: WireModel) -> StepResult:
        """Answer one request (raises ValueError on requests the backend cannot take)."""
        if not isinstance(request, StepRequest):
            raise ValueError(f"expected a StepRequest, got {type(request).__name__}")
        if request.reset:
            return self.reset(request.seed, request.request_id)
        if not self.step_requests:
            raise ValueError("realtime mode steps on its own clock: send actions on action_v2, resets on REQ")
        assert request.actions is not None
        return self.step(request.actions, request.request_id)

    def reset(self, seed: int | None, request_id: int = 0) -> StepResult:
        """Restart every drone's episode, publish the first observation and return it as a result.

        Args:
            seed: backend reset seed (None: the backend's own choice).
            request_id: echoed in the result.

        Returns:
            The StepResult with zero rewards and the new observation.
        """
        B = self.backend.num_actors
        self.backend.reset(seed=seed)
        self.step_id += 1
        self.episode_ids += 1
        zeros = np.zeros(B, dtype=np.float32)
        return self._result(request_id, zeros, np.zeros(B, bool), np.zeros(B, bool), None)

    def step(self, action: Action, request_id: int = 0) -> StepResult:
        """Apply one batch of actions, publish the next observation and return the result.

        Args:
            action: actions for env ids 0..B-1, each exactly once, in any order.
            request_id: echoed in the result.

        Returns:
            The StepResult of this step.

        Raises:
            ValueError: no reset yet, or the env ids do not cover 0..B-1 exactly once.
        """
        if not self.ready:
            raise ValueError("send a reset request before the first step")
        return self.step_rows(self.ordered_actions(action), request_id)

    def step_rows(self, batch: np.ndarray, request_id: int = 0) -> StepResult:
        """Step every drone on ``batch`` (float32 [B,4] in env-id order): one batched backend step.

        Raises:
            ValueError: no reset yet.
        """
        if not self.ready:
            raise ValueError("send a reset request before the first step")
        out = self.backend.step(torch.from_numpy(batch))
        self.step_id += 1
        ended = (out.terminated | out.truncated).cpu().numpy()
        info = {key: float(value.mean()) for key, value in out.info.items() if key.startswith("reward/")}
        info[telemetry_names.COLLISION_RATE] = float(out.info["collision"].mean())  # per drone-step
        info[telemetry_names.SPEED] = float(out.info["speed"].mean())
        # the finished episodes' return and length: the backend has already auto-reset those drones,
        # so its live counters read 0 there (the dashboard charted every episode return as 0)
        finished = (out.info["episode_return"].cpu().numpy(), out.info["episode_length"].cpu().numpy())
        result = self._result(
            request_id, out.reward.cpu().numpy(), out.terminated.cpu().numpy(),
            out.truncated.cpu().numpy(), info, episodes=finished,
        )  # fmt: skip
        self.episode_ids += ended
        return result

    def ordered_actions(self, action: Action) -> np.ndarray:
        """The action rows in env-id order, ``[B, 4]`` float32.

        Raises:
            ValueError: the env ids are not a permutation of 0..B-1 (wrong B, repeats, unknown ids).
        """
        B = self.backend.num_actors
        order = np.asarray(action.env_ids)
        if order.shape != (B,) or not np.array_equal(np.sort(order), self._env_ids):
            raise ValueError(f"actions must cover env_ids 0..{B - 1} exactly once, got {order.tolist()[:8]}")
        batch = np.empty((B, 4), dtype=np.float32)
        batch[order] = action.actions
        return batch

    def republish(self) -> bool:
        """Publish the current observation again (for a subscriber that joined late).

        Returns:
            True when there was an observation and a publisher to send it on.
        """
        if self.publisher is None or self.observation is None:
            return False
        return self.publisher.publish(topics.DISTANCE_MATRIX, self.observation)

    def _result(
        self, request_id: int, reward: np.ndarray, terminated: np.ndarray, truncated: np.ndarray,
        info: dict[str, float] | None, *, episodes: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> StepResult:  # fmt: skip
        """Build the StepResult (and publish the observation and telemetry).

        ``episodes``: per-drone episode return and length as of this step (default: the backend's
        live counters, right after a reset).
        """
        backend = self.backend
        live = (backend.episodes.episode_return, backend.episodes.length)
        returns, lengths = episodes or (live[0].cpu().numpy(), live[1].cpu().numpy())
        obs = backend.obs.cpu().numpy()
        position, yaw = backend.poses()
        observation = DistanceMatrix(
            env_ids=self._env_ids, matrix_shape=obs.shape[2:], depth=obs[:, 0].copy(),
            semantic=obs[:, 1].astype(np.int32), valid_mask=obs[:, 2] > 0.5,
            poses=RobotPose(position=position.cpu().numpy(), yaw=yaw.cpu().numpy()),
            step_id=self.step_id, episode_ids=self.episode_ids.copy(), timestamp=time.time(),
        )  # fmt: skip
        self.observation = observation
        result = StepResult(
            request_id=request_id, reward=np.asarray(reward, np.float32).copy(),
            terminated=np.asarray(terminated, bool).copy(), truncated=np.asarray(truncated, bool).copy(),
            episode_return=np.asarray(returns, np.float32),
            episode_length=np.asarray(lengths).astype(np.int32),
            observation=observation, info=info,
        )  # fmt: skip
        if self.publisher is not None:
            self.publisher.publish(topics.DISTANCE_MATRIX, observation)
            payload = {"reward_mean": float(np.mean(reward)), "actors": float(len(reward)), **(info or {})}
            event = TelemetryEvent(
                event_type=telemetry_names.ENVIRONMENT_STEP, source="environment", step_id=self.step_id,
                payload=payload, timestamp=time.time(),
            )  # fmt: skip
            self.publisher.publish(topics.TELEMETRY_EVENT, event)
        return result


def warm_up(backend: SdfDagBackend) -> float:
    """Reset and step once with zero actions before serving; the seconds it took.

    Why: the first trace compiles the kernels (``torch.compile`` of the march on CUDA: about 20 s),
    longer than a step-mode brain waits for a reply (2 s, one retry): on the first GPU run of the stack
    the brain timed out and re-synchronised with another seed, and its first actions were lost. The
    episodes started here are thrown away: the server refuses steps until a client's reset, and the
    async and realtime loops reset at start-up.
    """
    started = time.monotonic()
    backend.reset(seed=0)
    backend.step(torch.zeros(backend.num_actors, 4, device=backend.device))
    seconds = time.monotonic() - started
    log.info("environment.server.warmed_up", seconds=round(seconds, 2), device=str(backend.device))
    return seconds


def serve(
    backend: SdfDagBackend,
    pub_endpoint: str | None,
    rep_endpoint: str,
    stop: threading.Event,
    config: ServerConfig | None = None,
) -> int:
    """Serve until ``stop`` is set; returns the number of REQ requests answered.

    Args:
        backend: the environment to serve.
        pub_endpoint: PUB bind endpoint (None: do not publish).
        rep_endpoint: REP bind endpoint.
        stop: set it (e.g. from a SIGINT handler) to shut down cleanly.
        config: mode, async/realtime pacing and CURVE keys (None: step mode, plain sockets); its
            endpoints are not used here.

    Returns:
        How many REQ requests were answered (async-mode steps are counted by the loop's log).

    Raises:
        ValueError: async or realtime mode without a PUB endpoint.
    """
    config = config or ServerConfig()
    if config.mode in ("async", "realtime") and not pub_endpoint:
        raise ValueError(f"{config.mode} mode needs a PUB endpoint: the brain acts on published observations")
    curve = load_keys(config.keys)
    with contextlib.ExitStack() as sockets:
        publisher = sockets.enter_context(Publisher(pub_endpoint, curve=curve)) if pub_endpoint else None
        service = EnvironmentService(backend, publisher, step_requests=config.mode != "realtime")
        server = sockets.enter_context(
            RepServer(rep_endpoint, handler=service.handle, accepts=(StepRequest,), curve=curve)
        )
        log.info(
            "environment.server.serving", mode=config.mode, rep=rep_endpoint, pub=pub_endpoint,
            actions=config.action_sub if config.mode != "step" else None, actors=backend.num_actors,
        )  # fmt: skip
        if config.mode != "step":
            actions = sockets.enter_context(Subscriber(config.action_sub, [topics.ACTION], curve=curve))
            if config.mode == "async":
                AsyncActionLoop(service, actions, server, config).run(stop)
            else:
                RealtimeLoop(service, actions, server, config).run(stop)
        else:
            server.serve(stop)
        log.info("environment.server.stopped", served=server.served, refused=server.refused)
        return int(server.served)


def scene_sources(gmdag_file: Path | None, corpus: Path | None) -> list[Path] | None:
    """Scene files from ``--gmdag-file`` or ``--corpus`` (None: the settings' corpus folder)."""
    if gmdag_file is not None and corpus is not None:
        raise ValueError("give either --gmdag-file or --corpus, not both")
    if gmdag_file is not None:
        return [gmdag_file]
    if corpus is not None:
        paths = sorted(Path(corpus).glob("*.gmdag"))
        if not paths:
            raise ValueError(f"no .gmdag files in {corpus}")
        return paths
    return None
