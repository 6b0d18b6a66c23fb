"""Actor and critic heads on the core features.

The Gaussian actor's log-std is by default a state-independent learnable vector (clamped to a sane
range), so exploration noise is a slowly learned global quantity. ``log_std_mode="state"`` lowers it
per state: ``std = global std x sigmoid(z)``, ``z`` linear in the features (zero weights, bias
``STATE_STD_GATE_BIAS``: every state starts at 0.95 of the global std), so a policy can be sure where
it knows what to do and noisy where it does not: then the noise is not the only thing that makes it
explore, and its mean action (how it is deployed) carries the behaviour. The gate can only lower the
global std, so PPO's falling ceiling (``ppo.final_log_std_max``, on the global value) bounds every
state; and ``log sigmoid`` has a gradient everywhere. (Until 2026-11-30 the state part was added to
the global value and the sum hard-clamped to ``log_std_max``: the entropy bonus pushed every state
over the clamp, where the gradient is zero, and the std stayed at the clamp in every state of a
measured run: the mode did nothing.)
Sampled actions are *raw*: the Gaussian sample ``u`` is what rollouts store and what PPO re-scores,
and :func:`physics_action` is the one map from ``u`` to the physics action in [-1, 1] for the policy's
``action_squash`` mode (every call site that executes an action goes through it):

* ``clip`` (default): ``clamp(u, -1, 1)``; log-probabilities are the Gaussian density of ``u``. A
  mean far beyond the range executes the same as one at the bound, so nothing pulls it back: trained
  policies' yaw mean saturated there and the deployed (mean) drone flew circles.
* ``tanh``: ``a = tanh(u)``; the deployed mean action is ``tanh(mean)``, and log-probabilities are
  those of the executed ``a`` by the change of variables,
  ``log p(a) = log N(u; mean, std) - sum log(1 - tanh(u)^2)`` (:func:`action_log_prob`). The Jacobian
  term depends on ``u`` only, so it cancels in PPO's ratio of the stored ``u``; it is still part of
  every reported log-probability and entropy.

``action_chunk=H > 1`` adds a chunk output: from the same features, the mean actions of the next
H-1 ticks (a real-time brain executes them while its next inference runs). It is a separate linear
layer that exists only when H > 1, so an H = 1 head has exactly today's parameters, random draws
and outputs, and old checkpoints load unchanged. ``chunk_mode = "relative"`` (``policy.action_chunk_mode =
relative``, the default) makes that layer predict the *change* from the current mean: entry ``k`` is
``mean + delta_k`` with the mean detached, so the chunk loss trains only the deltas and never pulls the
policy's mean. An absolute chunk head is a second regression of the actions that lags the mean head
as PPO moves it and drifts where the deployed (mean) policy flies other states than the sampled
rollouts it was fitted on: halfway through a 12-minute run its entries were systematically off
(lateral 5 % smaller, yaw 6 % larger than the policy's own later means, i.e. tighter circles) and
further from them than simply holding the current mean (scripts/bench_chunk_prediction.py). A
relative head starts at holding (delta 0) and inherits the mean head's current value at every tick.
``chunk_mode = "smooth"`` makes the deltas ``s v + s^2 c`` (``s = k / (H-1)``) from two coefficients
per component: every entry shares them, so a policy gradient on one lag moves all entries alike.
"""

from __future__ import annotations

import math

import torch
from torch import nn

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_LOG_2 = math.log(2.0)
#: BC targets of tanh policies are ``atanh(clamp(a, -1 + eps, 1 - eps))``: a demonstrated full
#: command (frontier turns are often exactly +-1) would otherwise ask for an infinite raw mean. With
#: eps = 0.01 the target is at most 2.65 (executed 0.99): close to the demonstration, yet not so deep
#: in the saturation that PPO's samples later all execute the same action.
BC_TANH_EPS = 0.01
ACTION_SQUASHES: tuple[str, ...] = ("clip", "tanh")
#: Initial logit of the state std gate (``log_std_mode="state"``): sigmoid(3) = 0.95, so a fresh
#: policy's noise is within 5 % of the global std, with the gate's gradient not yet vanishing.
STATE_STD_GATE_BIAS = 3.0


def _check_squash(squash: str) -> None:
    if squash not in ACTION_SQUASHES:
        raise ValueError(f"unknown action_squash {squash!r}; valid choices: {', '.join(ACTION_SQUASHES)}")


def physics_action(raw: torch.Tensor, squash: str = "clip") -> torch.Tensor:
    """The physics action ``[..., A]`` in [-1, 1] for raw Gaussian actions ``[..., A]``.

    The one map from what the policy samples (or its mean) to what is executed, for both modes:
    ``clip`` clamps, ``tanh`` squashes.
    """
    if squash == "tanh":
        return torch.tanh(raw)
    _check_squash(squash)
    return raw.clamp(-1.0, 1.0)


def raw_action(action: torch.Tensor, squash: str = "clip") -> torch.Tensor:
    """The raw action ``[..., A]`` whose physics action is ``action`` (a right inverse of
    :func:`physics_action`): unchanged for ``clip``; ``atanh`` of the action clamped
    ``BC_TANH_EPS`` inside the bounds for ``tanh``. Used for demonstrated (BC) actions."""
    if squash == "tanh":
        return torch.atanh(action.clamp(-1.0 + BC_TANH_EPS, 1.0 - BC_TANH_EPS))
    _check_squash(squash)
    return action


def tanh_log_det_jacobian(raw: torch.Tensor) -> torch.Tensor:
    """``sum log(1 - tanh(u)^2)`` over the last axis, ``[..., A]`` -> ``[...]``, computed stably.

    ``log(1 - tanh(u)^2) = 2 (log 2 - u - softplus(-2u))``: exact, and finite for every ``u``, where
    the direct form is ``log(0) = -inf`` once ``tanh(u)`` rounds to 1 (``|u|`` > 9 in float32).
    """
    return (2.0 * (_LOG_2 - raw - nn.functional.softplus(-2.0 * raw))).sum(dim=-1)


def gaussian_log_prob(action: torch.Tensor, mean: torch.Tensor, log_std: torch.Tensor) -> torch.Tensor:
    """Log-density of a diagonal Gaussian, summed over the last axis: ``[..., A]`` -> ``[...]``."""
    z = (action - mean) * torch.exp(-log_std)
    return (-0.5 * z.square() - log_std - _LOG_SQRT_2PI).sum(dim=-1)


def gaussian_entropy(log_std: torch.Tensor) -> torch.Tensor:
    """Entropy of a diagonal Gaussian, summed over the last axis: ``[..., A]`` -> ``[...]``."""
    return (0.5 + _LOG_SQRT_2PI + log_std).sum(dim=-1)


def action_log_prob(
    raw: torch.Tensor, mean: torch.Tensor, log_std: torch.Tensor, squash: str = "clip"
) -> torch.Tensor:
    """Log-probability ``[...]`` of the action executed for the raw sample ``raw [..., A]``.

    ``clip``: the Gaussian log-density of ``raw`` (today's value, bit for bit). ``tanh``: the density
    of ``tanh(raw)``, i.e. the Gaussian log-density minus :func:`tanh_log_det_jacobian`.
    """
    log_prob = gaussian_log_prob(raw, mean, log_std)
    if squash == "tanh":
        return log_prob - tanh_log_det_jacobian(raw)
    _check_squash(squash)
    return log_prob


def action_entropy(
    raw: torch.Tensor, mean: torch.Tensor, log_std: torch.Tensor, squash: str = "clip"
) -> torch.Tensor:
    """Entropy ``[...]`` of the executed action's distribution (the PPO entropy bonus).

    ``clip``: the Gaussian entropy (depends on ``log_std`` only; ``raw`` is unused). ``tanh``: a
    one-sample estimate of the squashed entropy, ``H(u) + sum log(1 - tanh(u)^2)``, at the stored
    sample ``raw`` reparameterised as ``mean + std * eps`` with ``eps`` fixed (same value, gradients
    through ``mean`` and ``log_std``). Why not the Gaussian entropy of ``u``: it is blind to
    saturation (a raw mean of 5 has the entropy of a mean of 0 while every sample executes ~1), and
    the saturated mean is the failure this mode exists to fix. The estimate is the entropy of what is
    executed, and its gradient ``-2 tanh(u)`` per axis pulls a saturated mean back towards the range
    where actions differ; averaged over a rollout drawn from the policy it is unbiased.
    """
    entropy = gaussian_entropy(log_std)
    if squash == "tanh":
        std = log_std.exp()
        eps = ((raw - mean) / std).detach()
        return entropy + tanh_log_det_jacobian(mean + std * eps)
    _check_squash(squash)
    return entropy


class GaussianActorHead(nn.Module):
    """Linear mean and a clamped log-std: a global learnable vector, optionally lowered per state by
    a learned gate (``state_dependent_std``)."""

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
        chunk_mode: str = "absolute",
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
            # the gate's logit: zero weights, so every state starts at 0.95 of the global std;
            # skip_init draws no random numbers, so the rest of the policy starts as in global mode
            self.log_std_layer = torch.nn.utils.skip_init(nn.Linear, features, action_dim)
            nn.init.zeros_(self.log_std_layer.weight)
            nn.init.constant_(self.log_std_layer.bias, STATE_STD_GATE_BIAS)
        self.action_dim = action_dim
        self.chunk: nn.Linear | None = None
        if chunk_mode not in ("absolute", "relative", "smooth"):
            raise ValueError(f"unknown action_chunk_mode {chunk_mode!r}; valid: absolute, relative, smooth")
        self.chunk_relative = chunk_mode != "absolute"
        if action_chunk > 1:
            # like the mean layer: near-constant predictions that start at the initial mean action
            # (absolute), or at no change from the current mean (relative, smooth)
            outputs = (2 if chunk_mode == "smooth" else action_chunk - 1) * action_dim
            self.chunk = nn.Linear(features, outputs)
            nn.init.orthogonal_(self.chunk.weight, gain=0.01)
            with torch.no_grad():
                if self.chunk_relative:
                    self.chunk.bias.zero_()
                else:
                    self.chunk.bias.copy_(self.mean.bias.repeat(action_chunk - 1))
        profile = None
        if action_chunk > 1 and chunk_mode == "smooth":
            # delta_k = s v + s^2 c with s = k / (H-1): every entry shares the two coefficients
            ahead = torch.arange(1, action_chunk, dtype=torch.float32) / (action_chunk - 1)
            profile = torch.stack([ahead, ahead.square()], dim=1)  # [H-1, 2]
        self.chunk_profile: torch.Tensor | None
        self.register_buffer("chunk_profile", profile, persistent=False)

    def later_means(self, features: torch.Tensor, mean: torch.Tensor) -> torch.Tensor | None:
        """Mean actions of the next H-1 ticks ``[..., H-1, A]``; None if H = 1.

        Args:
            features: ``[..., F]`` core features.
            mean: ``[..., A]`` the current mean action (what :meth:`forward` returned for
                ``features``); a relative head adds its deltas to it, detached.
        """
        if self.chunk is None:
            return None
        out = self.chunk(features).unflatten(-1, (-1, self.action_dim))
        if self.chunk_profile is not None:  # [..., 2, A] coefficients -> [..., H-1, A] deltas
            out = torch.einsum("kj,...ja->...ka", self.chunk_profile, out)
        return mean.detach().unsqueeze(-2) + out if self.chunk_relative else out

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Map features ``[..., F]`` to mean ``[..., A]`` and log-std ``[..., A]``."""
        mean = self.mean(features)
        log_std = self.log_std_param.clamp(*self.log_std_range).expand_as(mean)
        if self.log_std_layer is None:
            return mean, log_std
        gate = nn.functional.logsigmoid(self.log_std_layer(features))  # log of a factor in (0, 1)
        return mean, (log_std + gate).clamp(min=self.log_std_range[0])


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
