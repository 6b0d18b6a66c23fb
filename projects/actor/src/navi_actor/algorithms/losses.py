"""PPO loss terms as small pure tensor functions (shape contract in each docstring)."""

from __future__ import annotations

import torch

from navi_actor.models.heads import physics_action, raw_action


def clipped_surrogate_loss(
    log_probs: torch.Tensor,
    old_log_probs: torch.Tensor,
    advantages: torch.Tensor,
    clip_range: float,
    proximal_log_probs: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """PPO's clipped policy objective, negated to be minimised; decoupled for data acted earlier.

    With ``proximal_log_probs`` (the log-probabilities under the learner's weights at the start of
    this update, when older weights acted) the objective is decoupled PPO's (Hilton et al., 2021,
    "Batch size-invariance for policy optimization"): the ratio is clipped around the proximal
    policy, ``r = pi / pi_prox``, and the sample is weighted by ``pi_prox / pi_behaviour``, so the clip
    bounds this update's own step and the importance weight corrects for who acted. The clip fraction
    and the KL (the early stop's measure) then describe this update alone, as they do when the
    learner's weights acted. Without them it is the usual objective (``pi_prox = pi_behaviour``).

    Args:
        log_probs: [N] log-probabilities under the current policy.
        old_log_probs: [N] log-probabilities recorded while acting.
        advantages: [N] (normalised) advantages.
        clip_range: epsilon of the ratio clip.
        proximal_log_probs: [N] log-probabilities under the weights at the update's start, or None
            when those weights acted.

    Returns:
        ``(loss, clip_fraction, approx_kl)`` scalars; approx_kl is the low-variance estimator
        ``E[(r - 1) - log r]`` (always >= 0).
    """
    anchor = old_log_probs if proximal_log_probs is None else proximal_log_probs
    log_ratio = log_probs - anchor
    ratio = log_ratio.exp()
    unclipped = ratio * advantages
    clipped = ratio.clamp(1.0 - clip_range, 1.0 + clip_range) * advantages
    objective = torch.minimum(unclipped, clipped)
    if proximal_log_probs is not None:
        objective = (proximal_log_probs - old_log_probs).exp() * objective  # no gradient: both recorded
    loss = -objective.mean()
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


def self_imitation_loss(
    action_mean: torch.Tensor, actions: torch.Tensor, advantages: torch.Tensor, squash: str = "clip"
) -> torch.Tensor:
    """Squared error of the mean action to the executed actions that went better than expected.

    Self-imitation inside the rollout: where the sampling noise found something (a positive
    advantage), the mean action is pulled toward what was executed, with weight the advantage, so
    the deployed mean learns what only the noise does; actions that went worse are not pushed away
    from (PPO's own objective does that). Unlike PPO's gradient on the mean, it is not scaled by
    1/std^2 and not clipped: the weight is ``ppo.self_imitation_coef``.

    Args:
        action_mean: [N, A] raw mean actions under the current policy (with gradient).
        actions: [N, A] raw sampled actions as recorded; the target is the executed (physics) action
            mapped back to the mean's raw space: clipped to [-1, 1] for ``clip``, ``atanh(tanh(u))``
            for ``tanh`` (the tanh clamped just inside +-1, so the target stays finite).
        advantages: [N] (normalised) advantages; only their positive part counts.
        squash: the policy's ``action_squash``.

    Returns:
        Scalar loss: the advantage-weighted squared error averaged over steps and action components.
    """
    executed = raw_action(physics_action(actions, squash), squash)
    weights = advantages.clamp(min=0.0).unsqueeze(-1)
    return (weights * (action_mean - executed).square()).mean()


def chunk_targets(
    targets: torch.Tensor, episode_starts: torch.Tensor, horizon: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Later actions along a sequence as chunk targets, and where they exist.

    Args:
        targets: [T, B, A] actions (or mean actions) of a time-major sequence.
        episode_starts: [T, B] bool; True where a new episode begins at that step.
        horizon: H, the chunk length (H-1 later ticks are predicted).

    Returns:
        ``(shifted [T, B, H-1, A], valid [T, B, H-1])``: ``shifted[t, :, k-1] = targets[t + k]``, valid
        only when ``t + k`` is inside the sequence and no episode starts in ``(t, t + k]`` (the later
        action belongs to the same episode).
    """
    T = targets.shape[0]
    later = horizon - 1
    padded = torch.cat([targets, targets.new_zeros((later, *targets.shape[1:]))])
    starts_so_far = torch.cumsum(episode_starts.to(torch.int64), dim=0)  # [T, B]
    beyond_end = torch.full((later, *starts_so_far.shape[1:]), -1, dtype=torch.int64, device=targets.device)
    padded_starts = torch.cat([starts_so_far, beyond_end])  # -1 never equals a count: the end masks
    shifted = torch.stack([padded[k : k + T] for k in range(1, horizon)], dim=2)
    valid = torch.stack([padded_starts[k : k + T] == starts_so_far for k in range(1, horizon)], dim=2)
    return shifted, valid


def chunk_prediction_loss(
    predicted: torch.Tensor, targets: torch.Tensor, episode_starts: torch.Tensor
) -> torch.Tensor:
    """Masked mean squared error of predicted later actions (the chunk head's auxiliary loss).

    Args:
        predicted: [T, B, H-1, A] predicted mean actions for the ticks t+1..t+H-1.
        targets: [T, B, A] the sequence's actions (PPO: the policy's own detached mean actions; BC:
            the demonstrated actions).
        episode_starts: [T, B] bool episode starts of the same sequence.

    Returns:
        Scalar loss: the squared error averaged over the valid (same episode, inside the sequence)
        entries; 0 when none is valid.
    """
    shifted, valid = chunk_targets(targets, episode_starts, predicted.shape[2] + 1)
    mask = valid.unsqueeze(-1).to(predicted.dtype)
    count = (mask.sum() * predicted.shape[-1]).clamp(min=1.0)
    return ((predicted - shifted).square() * mask).sum() / count


def visit_prediction_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Binary cross-entropy of predicted visit features (the visit head's auxiliary loss).

    Args:
        logits: [..., F] predicted logits (``SequenceEval.visit_logits``).
        targets: [..., F] the visit memory's features at acting time, in [0, 1) (soft labels).

    Returns:
        Scalar loss, averaged over every step and feature; its minimum is the targets' own entropy
        (0 only where the targets are 0 or 1).
    """
    return torch.nn.functional.binary_cross_entropy_with_logits(logits, targets.to(logits.dtype))
