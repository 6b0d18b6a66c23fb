"""The environment as a ZeroMQ service (``navi-environment serve``).

REP answers ``StepRequest`` (step with actions, or reset) with ``StepResult``; every observation
is also published as a ``DistanceMatrix`` on the PUB socket, next to one ``environment.step``
telemetry event per step. Bad requests never stop the loop: the contracts' ``RepServer`` turns
undecodable bytes and handler errors into ``ErrorReply`` and keeps serving.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import structlog
import torch

from navi_contracts import (
    DistanceMatrix,
    Publisher,
    RepServer,
    RobotPose,
    StepRequest,
    StepResult,
    TelemetryEvent,
    topics,
)
from navi_contracts.model_base import WireModel
from navi_environment.backend import SdfDagBackend

log = structlog.get_logger()


class EnvironmentService:
    """Turns wire requests into backend calls and backend outputs into wire messages.

    Args:
        backend: the batched environment (its B is the only batch size accepted).
        publisher: where observations and telemetry go (None: nothing is published).
    """

    def __init__(self, backend: SdfDagBackend, publisher: Publisher | None = None) -> None:
        self.backend = backend
        self.publisher = publisher
        self.step_id = 0
        self.episode_ids = np.zeros(backend.num_actors, dtype=np.int64)
        self._env_ids = np.arange(backend.num_actors, dtype=np.int32)
        self._ready = False

    def handle(self, request: WireModel) -> StepResult:
        """Answer one request (raises ValueError on requests the backend cannot take)."""
        if not isinstance(request, StepRequest):
            raise ValueError(f"expected a StepRequest, got {type(request).__name__}")
        B = self.backend.num_actors
        if request.reset:
            self.backend.reset(seed=request.seed)
            self._ready = True
            self.episode_ids += 1
            zeros = np.zeros(B, dtype=np.float32)
            return self._result(request.request_id, zeros, np.zeros(B, bool), np.zeros(B, bool), None)
        if not self._ready:
            raise ValueError("send a reset request before the first step")
        assert request.actions is not None
        actions = request.actions
        order = np.asarray(actions.env_ids)
        if order.shape != (B,) or not np.array_equal(np.sort(order), self._env_ids):
            raise ValueError(f"actions must cover env_ids 0..{B - 1} exactly once, got {order.tolist()[:8]}")
        batch = np.empty((B, 4), dtype=np.float32)
        batch[order] = actions.actions
        out = self.backend.step(torch.from_numpy(batch))
        self.step_id += 1
        ended = (out.terminated | out.truncated).cpu().numpy()
        info = {key: float(value.mean()) for key, value in out.info.items() if key.startswith("reward/")}
        result = self._result(
            request.request_id, out.reward.cpu().numpy(), out.terminated.cpu().numpy(),
            out.truncated.cpu().numpy(), info,
        )  # fmt: skip
        self.episode_ids += ended
        return result

    def _result(
        self, request_id: int, reward: np.ndarray, terminated: np.ndarray, truncated: np.ndarray,
        info: dict[str, float] | None,
    ) -> StepResult:  # fmt: skip
        """Build the StepResult (and publish the observation and telemetry)."""
        backend = self.backend
        obs = backend.obs.cpu().numpy()
        position, yaw = backend.poses()
        observation = DistanceMatrix(
            env_ids=self._env_ids, matrix_shape=obs.shape[2:], depth=np.ascontiguousarray(obs[:, 0]),
            semantic=obs[:, 1].astype(np.int32), valid_mask=obs[:, 2] > 0.5,
            poses=RobotPose(position=position.cpu().numpy(), yaw=yaw.cpu().numpy()),
            step_id=self.step_id, episode_ids=self.episode_ids.copy(), timestamp=time.time(),
        )  # fmt: skip
        result = StepResult(
            request_id=request_id, reward=np.asarray(reward, np.float32).copy(),
            terminated=np.asarray(terminated, bool).copy(), truncated=np.asarray(truncated, bool).copy(),
            episode_return=backend.episodes.episode_return.cpu().numpy().astype(np.float32),
            episode_length=backend.episodes.length.cpu().numpy().astype(np.int32),
            observation=observation, info=info,
        )  # fmt: skip
        if self.publisher is not None:
            self.publisher.publish(topics.DISTANCE_MATRIX, observation)
            payload = {"reward_mean": float(np.mean(reward)), "actors": float(len(reward)), **(info or {})}
            event = TelemetryEvent(
                event_type="environment.step", source="environment", step_id=self.step_id,
                payload=payload, timestamp=time.time(),
            )  # fmt: skip
            self.publisher.publish(topics.TELEMETRY_EVENT, event)
        return result


def serve(backend: SdfDagBackend, pub_endpoint: str | None, rep_endpoint: str, stop: threading.Event) -> int:
    """Serve until ``stop`` is set; returns the number of requests answered.

    Args:
        backend: the environment to serve.
        pub_endpoint: PUB bind endpoint (None: do not publish).
        rep_endpoint: REP bind endpoint.
        stop: set it (e.g. from a SIGINT handler) to shut down cleanly.
    """
    publisher = Publisher(pub_endpoint) if pub_endpoint else None
    try:
        service = EnvironmentService(backend, publisher)
        with RepServer(rep_endpoint, handler=service.handle, accepts=(StepRequest,)) as server:
            log.info(
                "environment.server.serving", rep=rep_endpoint, pub=pub_endpoint, actors=backend.num_actors
            )
            server.serve(stop)
            log.info("environment.server.stopped", served=server.served, refused=server.refused)
            return int(server.served)
    finally:
        if publisher is not None:
            publisher.close()


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
