"""PPO loss terms as small pure tensor functions (shape contract in each docstring)."""

from __future__ import annotations

import torch


def clipped_surrogate_loss(
    log_probs: torch.Tensor, old_log_probs: torch.Tensor, advantages: torch.Tensor, clip_range: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """PPO's clipped policy objective, negated to be minimised.

    Args:
        log_probs: [N] log-probabilities under the current policy.
        old_log_probs: [N] log-probabilities recorded while acting.
        advantages: [N] (normalised) advantages.
        clip_range: epsilon of the ratio clip.

    Returns:
        ``(loss, clip_fraction, approx_kl)`` scalars; approx_kl is the low-variance estimator
        ``E[(r - 1) - log r]`` (always >= 0).
    """
    log_ratio = log_probs - old_log_probs
    ratio = log_ratio.exp()
    unclipped = ratio * advantages
    clipped = ratio.clamp(1.0 - clip_range, 1.0 + clip_range) * advantages
    loss = -torch.minimum(unclipped, clipped).mean()
    with torch.no_grad():
        clip_fraction = ((ratio - 1.0).abs() > clip_range).float().mean()
        approx_kl = ((ratio - 1.0) - log_ratio).mean()
    return loss, clip_fraction, approx_kl


def clipped_value_loss(
    values: torch.Tensor, old_values: torch.Tensor, returns: torch.Tensor, clip_range: float | None
) -> torch.Tensor:
    """Half squared error of the critic, pessimistically clipped around the rollout's values.

    Args:
        values: [N] current critic values.
        old_values: [N] values recorded while acting.
        returns: [N] GAE returns (targets).
        clip_range: maximum change of the value per update; None for the plain loss.

    Returns:
        Scalar loss.
    """
    unclipped = (values - returns).pow(2)
    if clip_range is None:
        return 0.5 * unclipped.mean()
    clipped_values = old_values + (values - old_values).clamp(-clip_range, clip_range)
    clipped = (clipped_values - returns).pow(2)
    return 0.5 * torch.maximum(unclipped, clipped).mean()


def kl_to_reference(log_probs: torch.Tensor, reference_log_probs: torch.Tensor) -> torch.Tensor:
    """Non-negative estimate of KL(policy || reference) on actions drawn from (about) the policy.

    Uses the ``k3`` estimator ``E[(q/p - 1) - log(q/p)]`` with ``q`` the reference: unbiased for
    samples from ``p`` and never negative, so it is a safe penalty.

    Args:
        log_probs: [N] current policy log-probabilities (with gradient).
        reference_log_probs: [N] frozen reference log-probabilities of the same actions.

    Returns:
        Scalar KL estimate.
    """
    log_ratio = reference_log_probs - log_probs
    return (log_ratio.exp() - 1.0 - log_ratio).mean()
