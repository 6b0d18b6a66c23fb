"""Tensor-native running mean and variance (Chan et al. parallel update), kept on the device.

Used to normalise RND inputs and intrinsic rewards without a host round trip per step.
"""

from __future__ import annotations

import torch
from torch import nn


class RunningMeanStd(nn.Module):
    """Running mean/variance over the leading axis of batches ``[N, *shape]``."""

    mean: torch.Tensor
    var: torch.Tensor
    count: torch.Tensor

    def __init__(self, shape: tuple[int, ...] = (), epsilon: float = 1e-4) -> None:
        super().__init__()
        self.register_buffer("mean", torch.zeros(shape))
        self.register_buffer("var", torch.ones(shape))
        # Starts at a tiny pseudo-count so the first batch dominates without a division by zero.
        self.register_buffer("count", torch.tensor(epsilon, dtype=torch.float64))

    @torch.no_grad()
    def update(self, batch: torch.Tensor) -> None:
        """Fold ``batch [N, *shape]`` into the statistics (no-op for an empty batch)."""
        if batch.shape[0] == 0:
            return
        batch = batch.to(self.mean.dtype)
        batch_mean = batch.mean(dim=0)
        batch_var = batch.var(dim=0, unbiased=False)
        batch_count = torch.tensor(batch.shape[0], dtype=torch.float64, device=batch.device)
        total = self.count + batch_count
        weight_new = (batch_count / total).to(self.mean.dtype)
        delta = batch_mean - self.mean
        self.mean += delta * weight_new
        weight_old = (self.count / total).to(self.mean.dtype)
        self.var.copy_(
            self.var * weight_old + batch_var * weight_new + delta.square() * weight_old * weight_new
        )
        self.count.copy_(total)

    @property
    def std(self) -> torch.Tensor:
        """Running standard deviation, floored at 1e-8."""
        return self.var.clamp_min(1e-16).sqrt()
