"""What a PPO update reports: the metric names, the value-fit statistic and the result record.

Kept apart from the learner so that telemetry, progress displays and tests name the metrics from one
place without importing the update's machinery.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch

AllReduce = Callable[[torch.Tensor], object]  #: sums a tensor in place over data-parallel ranks

METRIC_NAMES = (
    "policy_loss",
    "value_loss",
    "entropy",
    "approx_kl",
    "clip_fraction",
    "reference_kl",
    "grad_norm",
    "auxiliary_loss",
)
CHUNK_METRIC = "chunk_loss"  #: reported only by policies with a chunk head (policy.action_chunk > 1)
SYMMETRY_METRIC = "symmetry_loss"  #: reported only with the mirror-symmetry loss (ppo.symmetry_coef > 0)
VISIT_METRIC = "visit_prediction_loss"  #: reported only with a visit head (policy.visit_prediction)
SELF_IMITATION_METRIC = "self_imitation_loss"  #: reported only when ppo.self_imitation_coef > 0
DAGGER_METRIC = "dagger_loss"  #: reported only once labelled mean-action flights exist (ppo.dagger_*)
#: the optional loss terms, in the order they follow METRIC_NAMES in a minibatch's stats vector
OPTIONAL_METRICS = (CHUNK_METRIC, SYMMETRY_METRIC, VISIT_METRIC, SELF_IMITATION_METRIC, DAGGER_METRIC)


def explained_variance(
    values: torch.Tensor, returns: torch.Tensor, all_reduce: AllReduce | None = None
) -> torch.Tensor:
    """``1 - Var(returns - values) / Var(returns)``: 1 is a perfect critic, 0 no better than a constant.

    NaN when the returns do not vary (nothing to explain). Shapes: any, equal; returns a scalar.
    With ``all_reduce`` the variances are those of every rank's rows together (data-parallel shards).
    """
    if all_reduce is None:
        variance = returns.var()
        return torch.where(variance > 0, 1.0 - (returns - values).var() / variance, torch.nan)
    pairs = torch.stack([returns.flatten(), (returns - values).flatten()]).double()  # [2, n]
    sums = torch.cat([pairs.sum(dim=1), pairs.new_tensor([pairs.shape[1]])])  # [sum r, sum d, n]
    all_reduce(sums)
    squares = (pairs - (sums[:2] / sums[2])[:, None]).square().sum(dim=1)
    all_reduce(squares)
    variance, residual = (squares / (sums[2] - 1)).float()
    return torch.where(variance > 0, 1.0 - residual / variance, torch.nan)


@dataclass
class UpdateResult:
    """What one update did: mean metrics of the last epoch run, stage seconds, epochs, early stop."""

    metrics: dict[str, float]
    timings: dict[str, float]
    epochs_run: int
    early_stopped: bool
    learning_rate: float
    per_epoch: list[dict[str, float]] = field(default_factory=list)
