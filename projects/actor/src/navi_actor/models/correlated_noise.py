"""Time-correlated action noise for PPO rollouts: each drone's noise keeps part of its last value.

The Gaussian policy samples ``mean + std * eps`` with a fresh ``eps`` every tick (0.1 s). White noise
averages out within a few ticks, so what the sampled flights try differs from the mean action's
flight by little more than a jitter, and a flight the mean action would not take (through a doorway
it turns away from) is rarely tried. With ``rollout.noise_correlation = rho`` the noise is an AR(1)
process per drone and action dimension,

    eps_t = rho * eps_{t-1} + sqrt(1 - rho^2) * xi_t,   xi_t ~ N(0, 1),   eps_0 = xi_0,

restarted at every episode start: each tick's marginal is still ``N(0, 1)``, so every executed action
is still a sample of the policy's own ``N(mean, std)`` and its log-probability is the one PPO already
uses, while a deviation lasts ``1 / (1 - rho)`` ticks on average (rho 0.8: about 0.5 s). Colored noise
of this kind improved on-policy PPO in Hollenstein et al., "Colored Noise in PPO" (AAAI 2024).

Only collection uses it: evaluation's sampled mode and every deterministic path act as before.
"""

from __future__ import annotations

import math

import torch

from navi_actor.models.heads import action_log_prob


class CorrelatedNoise:
    """The AR(1) noise state of one collector's drones.

    Args:
        num_drones: B.
        action_dim: A.
        correlation: rho in [0, 1); 0 is the white noise of :meth:`NaviPolicy.act` (no change).
        squash: the policy's ``action_squash`` (the log-probability of the executed action).
        device: where the state lives.
    """

    def __init__(
        self, num_drones: int, action_dim: int, correlation: float, squash: str, device: torch.device
    ) -> None:
        if not 0.0 <= correlation < 1.0:
            raise ValueError(f"noise correlation must be in [0, 1), got {correlation}")
        self.correlation, self.squash = correlation, squash
        self.fresh_share = math.sqrt(1.0 - correlation * correlation)
        self.eps = torch.zeros(num_drones, action_dim, device=device)

    def step(
        self, episode_start: torch.Tensor, action: torch.Tensor, mean: torch.Tensor, log_std: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Re-draw this tick's action with correlated noise.

        Args:
            episode_start: ``[B]`` bool; these drones start from fresh noise.
            action: ``[B, A]`` the policy's white-noise sample (its ``xi`` is reused, no new draw).
            mean: ``[B, A]`` the policy's mean.
            log_std: ``[B, A]`` (or broadcastable) the policy's log-std.

        Returns:
            ``([B, A] raw action, [B] its log-probability under N(mean, std))``.
        """
        std = torch.exp(log_std)
        fresh = (action - mean) / std
        blended = self.correlation * self.eps + self.fresh_share * fresh
        self.eps = torch.where(episode_start.bool()[:, None], fresh, blended)
        correlated = mean + std * self.eps
        return correlated, action_log_prob(correlated, mean, log_std, self.squash)
