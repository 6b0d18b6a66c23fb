"""Mamba-2 core (pure PyTorch): chunked SSD scan for learning, O(1) recurrent step for acting.

One pre-norm residual block, ``y = x + out(mixer(RMSNorm(x)))``, following the Mamba-2 layout:
an input projection to (z, x, B, C, dt), a causal depthwise convolution over (x, B, C), the SSD
state-space scan with a scalar decay per head, a gated RMSNorm and an output projection. The
recurrent state is the convolution's last ``K-1`` inputs plus the SSM state, flattened to [B, S].
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as nnf
from torch import nn

from navi_actor.models.config import PolicyConfig
from navi_actor.models.cores.base import TemporalCore
from navi_actor.models.cores.causal_conv import CausalDepthwiseConv
from navi_actor.models.cores.ssd import ssd_chunked_scan


def init_dt_bias(size: int, dt_min: float = 1e-3, dt_max: float = 1e-1) -> torch.Tensor:
    """Bias whose softplus is log-uniform in ``[dt_min, dt_max]`` (Mamba's step-size init)."""
    dt = torch.exp(torch.rand(size) * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min))
    return dt + torch.log(-torch.expm1(-dt))  # inverse softplus


class Mamba2Core(TemporalCore):
    """Mamba-2 block; state = conv ``[B, K-1, d_inner + 2N]`` + SSM ``[B, H, P, N]``."""

    def __init__(self, cfg: PolicyConfig) -> None:
        super().__init__()
        dim = cfg.embed_dim
        self.d_inner = cfg.ssm_expand * dim
        self.d_state = cfg.ssm_state
        self.head_dim = cfg.ssm_head_dim
        self.heads = self.d_inner // self.head_dim
        self.chunk = cfg.ssm_chunk
        conv_channels = self.d_inner + 2 * self.d_state
        self.norm_in = nn.RMSNorm(dim)
        self.in_proj = nn.Linear(dim, 2 * self.d_inner + 2 * self.d_state + self.heads, bias=False)
        self.conv = CausalDepthwiseConv(conv_channels, cfg.ssm_conv_kernel)
        self.dt_bias = nn.Parameter(init_dt_bias(self.heads))
        self.a_log = nn.Parameter(torch.log(torch.empty(self.heads).uniform_(1.0, 16.0)))
        # Skip (D) starts at 0, not Mamba's 1: in this single block the outer residual already carries
        # the current input, and an O(1) skip term drowns the small initial SSM signal in the gated
        # norm. Measured on an 8-step recall task at width 128: loss 0.14 vs 1.04 after 100 updates.
        self.skip = nn.Parameter(torch.zeros(self.heads))
        self.norm_gate = nn.RMSNorm(self.d_inner)
        self.out_proj = nn.Linear(self.d_inner, dim, bias=False)
        self.conv_state_size = self.conv.state_size
        self.ssm_shape = (self.heads, self.head_dim, self.d_state)
        self.state_size = self.conv_state_size + math.prod(self.ssm_shape)

    def _split_state(self, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        conv = state[:, : self.conv_state_size].reshape(state.shape[0], self.conv.kernel - 1, -1)
        ssm = state[:, self.conv_state_size :].reshape(state.shape[0], *self.ssm_shape)
        return conv, ssm

    @staticmethod
    def _join_state(conv: torch.Tensor, ssm: torch.Tensor) -> torch.Tensor:
        return torch.cat([conv.flatten(1), ssm.flatten(1)], dim=1)

    def _project(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``x [..., D]`` -> gate z ``[..., d_inner]``, conv input ``[..., d_inner+2N]``, dt ``[..., H]``."""
        z, xbc, dt = self.in_proj(self.norm_in(x)).split(
            [self.d_inner, self.d_inner + 2 * self.d_state, self.heads], dim=-1
        )
        return z, xbc, nnf.softplus(dt + self.dt_bias)

    def _split_xbc(self, xbc: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        xs, b, c = nnf.silu(xbc).split([self.d_inner, self.d_state, self.d_state], dim=-1)
        return xs.unflatten(-1, (self.heads, self.head_dim)), b, c

    def _finish(self, x: torch.Tensor, y: torch.Tensor, xs: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        """Skip term, gated norm, output projection and the residual connection."""
        y = (y + self.skip[:, None] * xs).flatten(-2)  # [..., H, P] -> [..., d_inner]
        return x + self.out_proj(self.norm_gate(y * nnf.silu(z)))

    def step(self, x: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One step; see :meth:`TemporalCore.step`."""
        conv_state, ssm = self._split_state(state)
        z, xbc, dt = self._project(x)
        xbc, conv_state = self.conv.step(xbc, conv_state)
        xs, b, c = self._split_xbc(xbc)  # [B, H, P], [B, N], [B, N]
        decay = torch.exp(-torch.exp(self.a_log) * dt)  # [B, H]
        update = (dt[:, :, None] * xs)[..., None] * b[:, None, None, :]  # [B, H, P, N]
        ssm = decay[:, :, None, None] * ssm + update
        y = torch.einsum("bhpn,bn->bhp", ssm, c)
        return self._finish(x, y, xs, z), self._join_state(conv_state, ssm)

    def sequence(
        self, x: torch.Tensor, state0: torch.Tensor, resets: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Window evaluation with the chunked SSD scan; see :meth:`TemporalCore.sequence`."""
        conv_state, ssm = self._split_state(state0)
        z, xbc, dt = self._project(x)  # [T, B, ...]
        xbc, conv_state = self.conv.sequence(xbc, conv_state, resets)
        xs, b, c = self._split_xbc(xbc)  # [T, B, H, P], [T, B, N], [T, B, N]
        log_decay = -torch.exp(self.a_log) * dt  # [T, B, H]
        # An episode start is a decay of exactly zero: nothing flows across the boundary.
        log_decay = log_decay.masked_fill(resets[:, :, None], float("-inf"))
        y, ssm = ssd_chunked_scan(
            (dt[..., None] * xs).transpose(0, 1),  # [T, B, H, P] -> [B, T, H, P]
            log_decay.transpose(0, 1),
            b.transpose(0, 1),
            c.transpose(0, 1),
            ssm,
            chunk=self.chunk,
        )
        y = y.transpose(0, 1)  # [B, T, H, P] -> [T, B, H, P]
        return self._finish(x, y, xs, z), self._join_state(conv_state, ssm)
