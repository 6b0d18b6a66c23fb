"""Generalised advantage estimation as a pure tensor function.

Terminated and truncated are kept apart all the way in: a terminated step has no future (its next
value is 0), a truncated step was cut by the time limit, so its future is bootstrapped from the value
of the observation the episode *would* have continued from (``final_values``, computed by the collector
from ``final_obs`` with the recurrent state of that step, before the reset). Merging the two flags is
the classic bug this module exists to avoid (cleanrl#198).
"""

from __future__ import annotations

import torch


def gae_advantages(
    rewards: torch.Tensor,
    values: torch.Tensor,
    terminated: torch.Tensor,
    truncated: torch.Tensor,
    *,
    final_values: torch.Tensor,
    last_values: torch.Tensor,
    gamma: float,
    gae_lambda: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Advantages and returns for one rollout.

    Step ``t`` of row ``b`` saw ``values[t, b]``, received ``rewards[t, b]`` and then either went on
    (its successor is ``values[t + 1, b]``, or ``last_values[b]`` after the final step), terminated
    (successor value 0), or was truncated (successor value ``final_values[t, b]``). A step that ended
    the episode stops the advantage recursion: the next row of the rollout belongs to a new episode.

    Args:
        rewards: [T, B] float rewards received after acting at step t.
        values: [T, B] float critic values of the observation acted on at step t.
        terminated: [T, B] bool, the episode ended for good at step t.
        truncated: [T, B] bool, the episode was cut at step t (ignored where ``terminated``).
        final_values: [T, B] float, V(final observation) used only where ``truncated``.
        last_values: [B] float, V(observation after the last step) to bootstrap the rollout's tail.
        gamma: discount factor in [0, 1].
        gae_lambda: GAE lambda in [0, 1].

    Returns:
        ``(advantages, returns)``, both [T, B] float, ``returns = advantages + values``.
    """
    T = rewards.shape[0]
    if not (values.shape == rewards.shape == terminated.shape == truncated.shape == final_values.shape):
        raise ValueError(
            "gae_advantages: rewards, values, terminated, truncated and final_values must share the "
            f"shape [T, B]; got {tuple(rewards.shape)}, {tuple(values.shape)}, {tuple(terminated.shape)}, "
            f"{tuple(truncated.shape)}, {tuple(final_values.shape)}"
        )
    if last_values.shape != rewards.shape[1:]:
        raise ValueError(f"gae_advantages: last_values must be [B]={tuple(rewards.shape[1:])}")
    # Successor values: [T, B]; the row after t, or the tail bootstrap after the final step.
    next_values = torch.cat([values[1:], last_values.unsqueeze(0)], dim=0)
    next_values = torch.where(truncated, final_values, next_values)
    next_values = torch.where(terminated, torch.zeros_like(next_values), next_values)
    episode_continues = (~(terminated | truncated)).to(values.dtype)  # [T, B]
    deltas = rewards + gamma * next_values - values  # [T, B]
    advantages = torch.empty_like(values)
    running = torch.zeros_like(last_values)
    # The recursion is inherently sequential in T; it runs once per rollout on [B] tensors.
    for t in range(T - 1, -1, -1):
        running = deltas[t] + gamma * gae_lambda * episode_continues[t] * running
        advantages[t] = running
    return advantages, advantages + values


def normalize_advantages(advantages: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """Zero-mean, unit-std advantages over the whole rollout (done once per rollout, not per batch).

    Args:
        advantages: [T, B] float.
        eps: floor added to the standard deviation.

    Returns:
        [T, B] float normalised advantages.
    """
    return (advantages - advantages.mean()) / (advantages.std() + eps)
