"""Conversions between wire messages and the policy's tensors.

The environment encodes its observation tensor ``[B, 3, Az, El]`` (depth/horizon, semantic id,
valid 0/1) as a ``DistanceMatrix`` losslessly: depth is already in [0, 1], semantic ids are whole
numbers and the valid channel is 0/1. Rebuilding the tensor here therefore gives the policy exactly
the input the in-process path sees, which the equivalence test relies on.
"""

from __future__ import annotations

import time

import numpy as np
import torch

from navi_contracts import Action, DistanceMatrix


def observation_tensor(message: DistanceMatrix, device: torch.device | str = "cpu") -> torch.Tensor:
    """The policy input ``[B, 3, Az, El]`` float32 for ``message``.

    Args:
        message: a decoded observation batch.
        device: destination device (one host-to-device copy of the stacked batch).

    Returns:
        The observation tensor.
    """
    B = message.depth.shape[0]
    azimuth, elevation = message.matrix_shape
    stacked = np.empty((B, 3, azimuth, elevation), dtype=np.float32)
    stacked[:, 0] = message.depth
    stacked[:, 1] = message.semantic
    stacked[:, 2] = message.valid_mask
    return torch.from_numpy(stacked).to(device)


def message_poses(
    message: DistanceMatrix, device: torch.device | str = "cpu"
) -> tuple[torch.Tensor, torch.Tensor] | None:
    """The drones' ``(position [B, 3], yaw [B])`` float32 from ``message.poses`` (None if it has none).

    A policy that reads its visit memory needs them with every observation; the environment server
    always sends them.
    """
    if message.poses is None:
        return None
    # copies: decoded arrays are read-only, and torch warns about tensors on read-only memory
    position = torch.tensor(message.poses.position, dtype=torch.float32, device=device)
    return position, torch.tensor(message.poses.yaw, dtype=torch.float32, device=device)


def action_message(actions: torch.Tensor, env_ids: np.ndarray, step_id: int, policy_id: str) -> Action:
    """Wrap clipped actions ``[B, 4]`` into the wire ``Action``.

    Args:
        actions: ``[B, 4]`` in [-1, 1] (any device; one device-to-host copy).
        env_ids: ``[B]`` int32 drone ids, as received with the observation.
        step_id: the environment step the actions answer (the observation's ``step_id``).
        policy_id: which policy acted (``v003``, a checkpoint name, ``fresh``).

    Returns:
        The message.
    """
    host = actions.detach().to("cpu", torch.float32).numpy()
    return Action(
        env_ids=np.asarray(env_ids, dtype=np.int32),
        actions=host,
        policy_id=policy_id,
        step_id=step_id,
        timestamp=time.time(),
    )
