"""Serve an in-process :class:`VectorEnv` with the environment server's step protocol.

The brain is tested against it with the point toy (no simulator, milliseconds per step) and the
stack tests use it when ``navi-environment serve`` is not available. Protocol, as in
``docs/service.md``: ``StepRequest(reset=True, seed)`` answers a ``StepResult`` with the first
observation (zero reward, nothing ended); ``StepRequest(actions)`` steps once; actions before the
first reset are refused (``handler_error``); every observation is also published on
``distance_matrix_v2`` when a publisher is given; observations carry the drones' poses, as the
server's do. ``episode_ids`` count each drone's finished episodes, ``step_id`` counts steps since
the last reset.

Test support, not part of the package: pytest puts this folder on ``sys.path`` (``pythonpath`` in
the root ``pyproject.toml``), so tests import it as ``env_bridge``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import torch

from navi_actor.envs.protocol import VectorEnv
from navi_common import Publisher, RepServer
from navi_contracts import DistanceMatrix, RobotPose, StepRequest, StepResult, WireModel, topics


def observation_message(
    obs: torch.Tensor,
    env_ids: np.ndarray,
    episode_ids: np.ndarray,
    step_id: int,
    poses: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> DistanceMatrix:
    """Encode observations ``[B, 3, Az, El]`` (depth/horizon, semantic id, valid) losslessly.

    Args:
        obs: the environment's observation tensor.
        env_ids: ``[B]`` int32.
        episode_ids: ``[B]`` int64.
        step_id: steps since the last reset.
        poses: the drones' ``(position [B, 3], yaw [B])`` (``env.poses()``), sent as the server does.

    Returns:
        The ``DistanceMatrix``.
    """
    host = obs.detach().to("cpu", torch.float32).numpy()
    return DistanceMatrix(
        env_ids=env_ids,
        matrix_shape=(int(host.shape[2]), int(host.shape[3])),
        depth=np.ascontiguousarray(np.clip(host[:, 0], 0.0, 1.0)),
        semantic=np.rint(host[:, 1]).astype(np.int32),
        valid_mask=host[:, 2] > 0.5,
        poses=None
        if poses is None
        else RobotPose(
            position=poses[0].detach().to("cpu", torch.float32).numpy(),
            yaw=poses[1].detach().to("cpu", torch.float32).numpy(),
        ),
        step_id=step_id,
        episode_ids=episode_ids.copy(),
        timestamp=time.time(),
    )


class VectorEnvBridge:
    """A ``RepServer`` handler stepping ``env``.

    Args:
        env: the batched environment.
        publisher: optional PUB for the observations.
    """

    def __init__(self, env: VectorEnv, publisher: Publisher | None = None) -> None:
        self.env, self.publisher = env, publisher
        B = env.num_actors
        self.env_ids = np.arange(B, dtype=np.int32)
        self.episode_ids = np.zeros(B, dtype=np.int64)
        self.step_id = 0
        self.resets = 0
        self.actions: list[np.ndarray] = []  # every executed action batch since the last reset
        self._ready = False

    def __call__(self, request: WireModel) -> StepResult:
        """Answer one request (raises on actions before a reset or of the wrong batch size)."""
        if not isinstance(request, StepRequest):
            raise TypeError(f"expected a StepRequest, got {type(request).__name__}")
        B = self.env.num_actors
        if request.reset:
            obs = self.env.reset(request.seed)
            self.step_id, self._ready, self.actions = 0, True, []
            self.episode_ids[:] = 0
            self.resets += 1
            zeros, no = np.zeros(B, np.float32), np.zeros(B, bool)
            return self._result(
                request.request_id,
                obs,
                reward=zeros,
                terminated=no,
                truncated=no,
                episode_return=zeros,
                episode_length=np.zeros(B, np.int32),
            )
        if not self._ready:
            raise RuntimeError("no episode running: send a reset request first")
        assert request.actions is not None
        actions = request.actions.actions
        if actions.shape != (B, 4):
            raise ValueError(f"expected actions of shape ({B}, 4), got {actions.shape}")
        self.actions.append(actions.copy())
        step = self.env.step(torch.from_numpy(actions.copy()).to(self.env.device))
        self.step_id += 1
        terminated, truncated = step.terminated.cpu().numpy(), step.truncated.cpu().numpy()
        self.episode_ids += terminated | truncated
        return self._result(
            request.request_id,
            step.obs,
            reward=step.reward.cpu().numpy().astype(np.float32),
            terminated=terminated,
            truncated=truncated,
            episode_return=step.info["episode_return"].cpu().numpy().astype(np.float32),
            episode_length=step.info["episode_length"].cpu().numpy().astype(np.int32),
        )

    def _result(
        self,
        request_id: int,
        obs: torch.Tensor,
        *,
        reward: np.ndarray,
        terminated: np.ndarray,
        truncated: np.ndarray,
        episode_return: np.ndarray,
        episode_length: np.ndarray,
    ) -> StepResult:
        observation = observation_message(obs, self.env_ids, self.episode_ids, self.step_id, self.env.poses())
        if self.publisher is not None:
            self.publisher.publish(topics.DISTANCE_MATRIX, observation)
        return StepResult(
            request_id=request_id,
            reward=reward,
            terminated=terminated,
            truncated=truncated,
            episode_return=episode_return,
            episode_length=episode_length,
            observation=observation,
        )


@contextmanager
def serve_in_thread(bridge: VectorEnvBridge, endpoint: str, poll_ms: int = 20) -> Iterator[RepServer]:
    """Serve ``bridge`` on ``endpoint`` from a background thread for the duration of the block.

    Args:
        bridge: the handler.
        endpoint: REP endpoint to bind.
        poll_ms: how quickly the thread notices the end of the block.

    Yields:
        The running ``RepServer`` (its ``served``/``refused`` counters can be read).
    """
    stop = threading.Event()
    server = RepServer(endpoint, bridge, accepts=(StepRequest,))
    thread = threading.Thread(target=server.serve, args=(stop, poll_ms), name="env-bridge", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        stop.set()
        thread.join()
        server.close()
