"""Actor and critic heads on the core features.

The Gaussian actor's log-std is by default a state-independent learnable vector (clamped to a sane
range), so exploration noise is a slowly learned global quantity. ``log_std_mode="state"`` computes
it from the features instead (a linear map starting at zero weights, i.e. at the global value), so a
policy can be sure where it knows what to do and noisy where it does not: then the noise is not the
only thing that makes it explore, and its mean action (how it is deployed) carries the behaviour.
Sampled actions are *raw*: log-probabilities refer to the unclipped sample, and
:func:`clip_action` maps them into the physics range [-1, 1] at the call site.

``action_chunk=H > 1`` adds a chunk output: from the same features, the mean actions of the next
H-1 ticks (a real-time brain executes them while its next inference runs). It is a separate linear
layer that exists only when H > 1, so an H = 1 head has exactly today's parameters, random draws
and outputs, and old checkpoints load unchanged.
"""

from __future__ import annotations

import math

import torch
from torch import nn

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def clip_action(action: torch.Tensor) -> torch.Tensor:
    """Clamp raw actions ``[..., A]`` into the physics range ``[-1, 1]``."""
    return action.clamp(-1.0, 1.0)


def gaussian_log_prob(action: torch.Tensor, mean: torch.Tensor, log_std: torch.Tensor) -> torch.Tensor:
    """Log-density of a diagonal Gaussian, summed over the last axis: ``[..., A]`` -> ``[...]``."""
    z = (action - mean) * torch.exp(-log_std)
    return (-0.5 * z.square() - log_std - _LOG_SQRT_2PI).sum(dim=-1)


def gaussian_entropy(log_std: torch.Tensor) -> torch.Tensor:
    """Entropy of a diagonal Gaussian, summed over the last axis: ``[..., A]`` -> ``[...]``."""
    return (0.5 + _LOG_SQRT_2PI + log_std).sum(dim=-1)


class GaussianActorHead(nn.Module):
    """Linear mean and a clamped log-std: a global learnable vector, or linear in the features."""

    def __init__(
        self,
        features: int,
        action_dim: int,
        init_log_std: float,
        log_std_range: tuple[float, float],
        *,
        init_forward_mean: float = 0.0,
        state_dependent_std: bool = False,
        action_chunk: int = 1,
    ) -> None:
        super().__init__()
        self.mean = nn.Linear(features, action_dim)
        nn.init.orthogonal_(self.mean.weight, gain=0.01)  # near-constant initial actions (PPO practice)
        nn.init.zeros_(self.mean.bias)
        # Axis 0 is forward. An untrained drone that hovers (mean 0) almost never enters a new visit
        # cell, so the exploration reward is found late; cruising (the physics slows it before
        # walls ahead) finds it in the first rollouts. PPO is free to unlearn it.
        with torch.no_grad():
            self.mean.bias[0] = init_forward_mean
        self.log_std_param = nn.Parameter(torch.full((action_dim,), float(init_log_std)))
        self.log_std_range = log_std_range
        self.log_std_layer: nn.Linear | None = None
        if state_dependent_std:
            # zero weights: every state starts at the global value ``log_std_param``
            self.log_std_layer = nn.Linear(features, action_dim)
            nn.init.zeros_(self.log_std_layer.weight)
            nn.init.zeros_(self.log_std_layer.bias)
        self.action_dim = action_dim
        self.chunk: nn.Linear | None = None
        if action_chunk > 1:
            # like the mean layer: near-constant predictions that start at the initial mean action
            self.chunk = nn.Linear(features, (action_chunk - 1) * action_dim)
            nn.init.orthogonal_(self.chunk.weight, gain=0.01)
            with torch.no_grad():
                self.chunk.bias.copy_(self.mean.bias.repeat(action_chunk - 1))

    def later_means(self, features: torch.Tensor) -> torch.Tensor | None:
        """Mean actions of the next H-1 ticks ``[..., H-1, A]`` from features ``[..., F]``; None if H = 1."""
        if self.chunk is None:
            return None
        return self.chunk(features).unflatten(-1, (-1, self.action_dim))

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Map features ``[..., F]`` to mean ``[..., A]`` and log-std ``[..., A]``."""
        mean = self.mean(features)
        if self.log_std_layer is None:
            return mean, self.log_std_param.clamp(*self.log_std_range).expand_as(mean)
        return mean, (self.log_std_param + self.log_std_layer(features)).clamp(*self.log_std_range)


class ValueHead(nn.Module):
    """Linear state-value estimate.

    ``zero_init`` starts it at exactly 0 for every state (some reference trainers do, so the first
    advantages are the plain discounted returns rather than returns minus random values).
    """

    def __init__(self, features: int, zero_init: bool = False) -> None:
        super().__init__()
        self.value = nn.Linear(features, 1)
        if zero_init:
            nn.init.zeros_(self.value.weight)
        else:
            nn.init.orthogonal_(self.value.weight, gain=1.0)
        nn.init.zeros_(self.value.bias)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        """Map features ``[..., F]`` to values ``[...]``."""
        return self.value(features).squeeze(-1)
