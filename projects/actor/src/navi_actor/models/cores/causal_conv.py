"""Depthwise causal 1-D convolution over time with carried state and episode resets.

Used by both Mamba cores. The state holds the last ``K-1`` inputs. In a sequence, an input at
time ``p`` may reach the output at time ``t`` only if no episode started in ``(p, t]``; this is
the same as zeroing the carried inputs when stepping, so step and sequence agree exactly.
"""

from __future__ import annotations

import math

import torch
from torch import nn


class CausalDepthwiseConv(nn.Module):
    """Per-channel causal convolution of kernel length ``K``; state ``[B, K-1, C]`` (oldest first)."""

    def __init__(self, channels: int, kernel: int) -> None:
        super().__init__()
        self.channels = channels
        self.kernel = kernel
        bound = 1.0 / math.sqrt(kernel)
        self.weight = nn.Parameter(torch.empty(channels, kernel).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.empty(channels).uniform_(-bound, bound))

    @property
    def state_size(self) -> int:
        """Flattened state size ``(K-1) * C``."""
        return (self.kernel - 1) * self.channels

    def step(self, x: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One step: ``x [B, C]``, ``state [B, K-1, C]`` -> ``y [B, C]``, new state."""
        window = torch.cat([state, x[:, None, :]], dim=1)  # [B, K, C]
        y = torch.einsum("bkc,ck->bc", window, self.weight) + self.bias
        return y, window[:, 1:]

    def sequence(
        self, x: torch.Tensor, state0: torch.Tensor, resets: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Whole window: ``x [T, B, C]``, ``state0 [B, K-1, C]``, ``resets [T, B]`` -> ``[T, B, C]``, state.

        ``resets[t, b]`` hides every input older than ``t`` from outputs at ``t`` and later.
        """
        T = x.shape[0]
        K = self.kernel
        full = torch.cat([state0.transpose(0, 1), x], dim=0)  # [K-1+T, B, C]; index i <-> time i-(K-1)
        windows = full.unfold(0, K, 1)  # [T, B, C, K]; window t covers times t-K+1 .. t
        times = torch.arange(T, device=x.device)
        # Start of the episode containing t: the last reset at or before t (-K if none).
        marks = torch.where(resets, times[:, None], torch.full_like(times[:, None], -K))  # [T, B]
        episode_start = torch.cummax(marks, dim=0).values  # [T, B]
        tap_times = times[:, None] - (K - 1) + torch.arange(K, device=x.device)[None, :]  # [T, K]
        valid = (tap_times[:, None, :] >= episode_start[:, :, None]).to(x.dtype)  # [T, B, K]
        y = torch.einsum("tbck,ck->tbc", windows * valid[:, :, None, :], self.weight) + self.bias
        last_valid = valid[-1, :, 1:]  # taps T-K+1 .. T-1 as seen from the last output, [B, K-1]
        state = full[-(K - 1) :].transpose(0, 1) * last_valid[:, :, None]  # [B, K-1, C]
        return y, state
