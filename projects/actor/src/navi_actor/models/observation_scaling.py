"""Fixed, parameter-free scaling of observations before the encoder.

Why: the environment sends depth normalised by the horizon (30 m), so everything a drone must react
to indoors (walls 0.3-3 m away) lives in [0.01, 0.1], while the semantic channel carries raw class
ids (0-8). A linear patch projection then sees the semantic ids about 30 times louder than the
depth that navigation depends on, and learning to avoid a wall waits for the depth weights to grow.
``log_depth`` maps depth logarithmically onto [0, 1] (3 cm -> 0, 0.3 m -> 0.33, 1 m -> 0.51,
3 m -> 0.67, 30 m -> 1) and scales semantic ids by 1/8, so both channels have comparable ranges
and near-range depth differences are large. The transform is part of the policy function and is
applied identically when acting and when re-evaluating sequences.
"""

from __future__ import annotations

import math
from typing import Literal

import torch

InputTransform = Literal["none", "log_depth"]
INPUT_TRANSFORMS: tuple[str, ...] = ("none", "log_depth")
DEPTH_FLOOR = 1e-3
"""Normalised depth mapped to 0 (3 cm at a 30 m horizon); smaller values clamp to it."""
SEMANTIC_SCALE = 1.0 / 8.0
"""Semantic ids 0..8 (``SemanticClass``) land in [0, 1]."""
_LOG_FLOOR = -math.log(DEPTH_FLOOR)


def scale_observation(obs: torch.Tensor, transform: InputTransform) -> torch.Tensor:
    """Scale ``[N, C, Az, El]`` observations (channel 0 depth, 1 semantic, others unchanged).

    Args:
        obs: observations as the environment sends them (depth in [0, 1]).
        transform: ``none`` (identity) or ``log_depth``.

    Returns:
        A new ``[N, C, Az, El]`` tensor (``obs`` itself for ``none``).
    """
    if transform == "none":
        return obs
    depth = 1.0 + torch.log(obs[:, :1].clamp_min(DEPTH_FLOOR)) / _LOG_FLOOR
    parts = [depth]
    if obs.shape[1] > 1:
        parts.append(obs[:, 1:2] * SEMANTIC_SCALE)
    if obs.shape[1] > 2:
        parts.append(obs[:, 2:])
    return torch.cat(parts, dim=1)
