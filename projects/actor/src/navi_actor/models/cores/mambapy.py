"""Mamba (v1) core in pure PyTorch: selective scan with per-channel diagonal state.

The input-dependent decays and inputs of a whole window are computed in one batched pass; the
recurrence ``h_t = exp(dt_t A) * h_{t-1} + dt_t B_t x_t`` then runs sequentially over time on
small ``[B, d_inner, N]`` tensors. A sequential scan is exact, handles episode resets by a zero
decay, and at T=64 costs little next to the encoder. The same update is the O(1) acting step.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as nnf
from torch import nn

from navi_actor.models.config import PolicyConfig
from navi_actor.models.cores.base import TemporalCore
from navi_actor.models.cores.causal_conv import CausalDepthwiseConv
from navi_actor.models.cores.mamba2 import init_dt_bias


class MambaSelectiveScanCore(TemporalCore):
    """Mamba-1 block; state = conv ``[B, K-1, d_inner]`` + SSM ``[B, d_inner, N]``."""

    def __init__(self, cfg: PolicyConfig) -> None:
        super().__init__()
        dim = cfg.embed_dim
        self.d_inner = cfg.ssm_expand * dim
        self.d_state = cfg.ssm_state
        self.dt_rank = math.ceil(dim / 16)
        self.norm_in = nn.RMSNorm(dim)
        self.in_proj = nn.Linear(dim, 2 * self.d_inner, bias=False)
        self.conv = CausalDepthwiseConv(self.d_inner, cfg.ssm_conv_kernel)
        self.x_proj = nn.Linear(self.d_inner, self.dt_rank + 2 * self.d_state, bias=False)
        self.dt_proj = nn.Linear(self.dt_rank, self.d_inner)
        with torch.no_grad():
            self.dt_proj.bias.copy_(init_dt_bias(self.d_inner))
        a_init = torch.arange(1, self.d_state + 1, dtype=torch.float32).repeat(self.d_inner, 1)
        self.a_log = nn.Parameter(torch.log(a_init))  # [d_inner, N], S4D-real init
        self.skip = nn.Parameter(torch.zeros(self.d_inner))  # 0, not 1: see Mamba2Core (residual carries x)
        self.out_proj = nn.Linear(self.d_inner, dim, bias=False)
        self.conv_state_size = self.conv.state_size
        self.state_size = self.conv_state_size + self.d_inner * self.d_state

    def _split_state(self, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        conv = state[:, : self.conv_state_size].reshape(state.shape[0], self.conv.kernel - 1, -1)
        ssm = state[:, self.conv_state_size :].reshape(state.shape[0], self.d_inner, self.d_state)
        return conv, ssm

    def _selective_terms(self, xc: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Decay ``[..., d_inner, N]``, input ``[..., d_inner, N]`` and C ``[..., N]`` from ``xc``."""
        dt_low, b, c = self.x_proj(xc).split([self.dt_rank, self.d_state, self.d_state], dim=-1)
        dt = nnf.softplus(self.dt_proj(dt_low))  # [..., d_inner]
        decay = torch.exp(dt[..., None] * -torch.exp(self.a_log))  # [..., d_inner, N]
        update = (dt * xc)[..., None] * b[..., None, :]  # [..., d_inner, N]
        return decay, update, c

    def _finish(self, x: torch.Tensor, y: torch.Tensor, xc: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        return x + self.out_proj((y + self.skip * xc) * nnf.silu(z))

    def step(self, x: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One step; see :meth:`TemporalCore.step`."""
        conv_state, ssm = self._split_state(state)
        xin, z = self.in_proj(self.norm_in(x)).chunk(2, dim=-1)
        xc, conv_state = self.conv.step(xin, conv_state)
        xc = nnf.silu(xc)
        decay, update, c = self._selective_terms(xc)
        ssm = decay * ssm + update
        y = torch.einsum("bdn,bn->bd", ssm, c)
        return self._finish(x, y, xc, z), torch.cat([conv_state.flatten(1), ssm.flatten(1)], dim=1)

    def sequence(
        self, x: torch.Tensor, state0: torch.Tensor, resets: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Window evaluation (sequential selective scan); see :meth:`TemporalCore.sequence`."""
        conv_state, ssm = self._split_state(state0)
        xin, z = self.in_proj(self.norm_in(x)).chunk(2, dim=-1)  # [T, B, d_inner] each
        xc, conv_state = self.conv.sequence(xin, conv_state, resets)
        xc = nnf.silu(xc)
        decay, update, c = self._selective_terms(xc)  # [T, B, d_inner, N] x2, [T, B, N]
        decay = decay * (~resets).to(decay.dtype)[:, :, None, None]  # episode start: forget
        states = []
        for t in range(x.shape[0]):
            ssm = decay[t] * ssm + update[t]
            states.append(ssm)
        y = torch.einsum("tbdn,tbn->tbd", torch.stack(states), c)
        return self._finish(x, y, xc, z), torch.cat([conv_state.flatten(1), ssm.flatten(1)], dim=1)
