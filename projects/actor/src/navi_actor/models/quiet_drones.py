"""Quiet drones: some of a rollout's drones act with a fraction of the policy's action noise.

Why: the policy is deployed with its mean action, but PPO trains it only on flights of its sampled
actions, so the states the mean action reaches and never leaves (an orbit around an apartment's
first room) are rarely in the training data, and what the mean does there is never judged. With
``rollout.quiet_drones = k`` the last ``k`` drones of every rollout sample ``mean + s * std * eps``
(``s = rollout.quiet_noise_scale``): their flights stay close to the mean action's own, and their
small deviations are scored by the same advantages, so the learner sees what leaving those states is
worth. Each quiet action is an exact sample of ``N(mean, (s * std)^2)``; its log-probability is
recorded under that distribution, and the learner re-evaluates it with the same scale (the per-step
log-scale is stored in the rollout, like the open-loop lags), so the PPO ratio stays a true ratio of
behaviour probabilities. Mixed noise levels across parallel actors follow Ape-X (Horgan et al., 2018)
and Agent57 (Badia et al., 2020), which give each actor its own exploration rate.

Only collection uses it: evaluation and every deterministic path act as before.
"""

from __future__ import annotations

import math

import torch

from navi_actor.models.heads import action_log_prob


class QuietDrones:
    """Which drones are quiet, and the rescaling of their sampled actions.

    Args:
        num_drones: B.
        quiet: how many drones (the last ones) act with the reduced noise; ``0 <= quiet < B``.
        scale: s in (0, 1], the share of the policy's std they keep.
        squash: the policy's ``action_squash`` (the log-probability of the executed action).
        device: where the per-drone log-scales live.
    """

    def __init__(self, num_drones: int, quiet: int, scale: float, squash: str, device: torch.device) -> None:
        if not 0 <= quiet < num_drones:
            raise ValueError(f"quiet drones must be in [0, {num_drones}) of {num_drones}, got {quiet}")
        if not 0.0 < scale <= 1.0:
            raise ValueError(f"quiet noise scale must be in (0, 1], got {scale}")
        self.squash = squash
        #: [B] log of each drone's noise scale: 0 for the loud drones, log(s) for the quiet ones
        self.log_scales = torch.zeros(num_drones, device=device)
        self.log_scales[num_drones - quiet :] = math.log(scale)

    def step(
        self, action: torch.Tensor, mean: torch.Tensor, log_std: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Shrink the quiet drones' deviation from the mean.

        Args:
            action: ``[B, A]`` raw sample of ``N(mean, std)`` (its noise is reused, no new draw).
            mean: ``[B, A]`` the policy's mean.
            log_std: ``[B, A]`` (or broadcastable) the policy's log-std.

        Returns:
            ``([B, A] raw action, [B] its log-probability under each drone's own N(mean, (s std)^2))``.
        """
        scale = self.log_scales.exp()[:, None]
        quieted = mean + scale * (action - mean)
        return quieted, action_log_prob(quieted, mean, log_std + self.log_scales[:, None], self.squash)
