"""Left-right mirror of observations and actions: the symmetry the drone's world has.

Reflecting a scene through the drone's vertical forward plane (drone frame y -> -y) turns the
spherical observation's azimuth ``theta`` into ``-theta`` (bin ``a`` into ``(Az - a) mod Az``; bin 0
is straight ahead, bins run counter-clockwise, docs/environment.md) and leaves elevation, depth and
semantics alone. The mirrored drone flies the mirrored action: forward and vertical unchanged,
lateral and yaw rate negated. Both squashes (clip, tanh) are odd functions, so mirroring a raw action
mirrors the executed one.

A policy with no preferred turning direction acts on a mirrored observation history as the mirror
of how it acts on the original; the PPO symmetry loss (``ppo.symmetry_coef``) pulls the mean action
towards that, so a constant one-way turn, which costs nothing under sampling noise and makes the mean
action circle, is no longer free.
"""

from __future__ import annotations

import torch

#: action components negated by the mirror: [forward, vertical, lateral, yaw]
MIRRORED_ACTION_SIGNS = (1.0, 1.0, -1.0, -1.0)


def mirror_observation(obs: torch.Tensor) -> torch.Tensor:
    """Observations ``[..., C, Az, El]`` of the mirrored world: azimuth bin a -> (Az - a) mod Az."""
    azimuth_axis = obs.dim() - 2
    return torch.roll(torch.flip(obs, dims=(azimuth_axis,)), shifts=1, dims=azimuth_axis)


def mirror_action(action: torch.Tensor) -> torch.Tensor:
    """Actions ``[..., 4]`` (raw or executed) of the mirrored drone: lateral and yaw negated."""
    if action.shape[-1] != len(MIRRORED_ACTION_SIGNS):
        raise ValueError(f"mirror_action expects [..., 4] actions, got shape {tuple(action.shape)}")
    return action * action.new_tensor(MIRRORED_ACTION_SIGNS)
