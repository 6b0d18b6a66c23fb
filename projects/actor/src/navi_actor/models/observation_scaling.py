"""Fixed, parameter-free scaling of observations before the encoder.

Why: the environment sends depth normalised by the horizon (30 m), so everything a drone must react
to indoors (walls 0.3-3 m away) lives in [0.01, 0.1], while the semantic channel carries raw class
ids (0-8). A linear patch projection then sees the semantic ids about 30 times louder than the
depth that navigation depends on, and learning to avoid a wall waits for the depth weights to grow.
``sqrt_depth`` (default) takes the square root of depth (0.3 m -> 0.10, 1 m -> 0.18, 3 m -> 0.32,
10 m -> 0.58, 30 m -> 1): near-range differences grow about fivefold while far-range differences,
which say where the open space is, stay readable. ``log_depth`` spreads the near range more
(1 m -> 0.51, 3 m -> 0.67) but squeezes the far range (10 m -> 0.84): behaviour cloning of the
autopilot, which steers by the most open direction, reached a held-out error of 0.66 of the
mean-action baseline with it against 0.42 with ``sqrt_depth`` and 0.44 with raw inputs
(``tests/test_auditor_bc_imitation.py``). Both scale semantic ids by 1/8, so the channels have
comparable ranges. The transform is part of the policy function and is applied identically when
acting and when re-evaluating sequences.
"""

from __future__ import annotations

import math

import torch

from navi_actor.models.config import InputTransform

DEPTH_FLOOR = 1e-3
"""Normalised depth mapped to 0 (3 cm at a 30 m horizon); smaller values clamp to it."""
SEMANTIC_SCALE = 1.0 / 8.0
"""Semantic ids 0..8 (``SemanticClass``) land in [0, 1]."""
_LOG_FLOOR = -math.log(DEPTH_FLOOR)


def scale_observation(obs: torch.Tensor, transform: InputTransform) -> torch.Tensor:
    """Scale ``[N, C, Az, El]`` observations (channel 0 depth, 1 semantic, others unchanged).

    Each channel is written once into one new tensor: assembled with ``torch.cat`` from per-channel
    results, the scaling of a PPO minibatch (128 frames) cost a second pass over 19 MB, about 1.5 ms
    of every minibatch's 100 ms; the values are the same bit for bit. Observations carry no
    gradient (``out=`` writes refuse one).

    Args:
        obs: observations as the environment sends them (depth in [0, 1]).
        transform: ``none`` (identity), ``sqrt_depth`` or ``log_depth``.

    Returns:
        A new ``[N, C, Az, El]`` tensor (``obs`` itself for ``none``).
    """
    if transform == "none":
        return obs
    scaled = torch.empty_like(obs, memory_format=torch.contiguous_format)  # what the patch conv expects
    depth = scaled[:, :1]
    if transform == "sqrt_depth":
        torch.clamp_min(obs[:, :1], 0.0, out=depth).sqrt_()
    else:  # 1 + log(depth) / -log(floor)
        torch.clamp_min(obs[:, :1], DEPTH_FLOOR, out=depth).log_().div_(_LOG_FLOOR).add_(1.0)
    torch.mul(obs[:, 1:2], SEMANTIC_SCALE, out=scaled[:, 1:2])
    scaled[:, 2:].copy_(obs[:, 2:])
    return scaled
