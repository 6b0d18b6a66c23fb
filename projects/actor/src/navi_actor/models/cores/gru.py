"""GRU core: the classic baseline, written so that acting and learning share one cell function.

The input projections of a whole window are computed in one matmul; only the small hidden
projection runs step by step. Resets multiply the hidden state by zero before the step.
"""

from __future__ import annotations

import torch
import torch.nn.functional as nnf
from torch import nn

from navi_actor.models.config import PolicyConfig
from navi_actor.models.cores.base import TemporalCore, keep_mask


class GRUCore(TemporalCore):
    """Single-layer GRU with hidden width ``embed_dim``; state ``[B, D]``."""

    def __init__(self, cfg: PolicyConfig) -> None:
        super().__init__()
        self.cell = nn.GRUCell(cfg.embed_dim, cfg.embed_dim)  # owns the weights and their init
        self.state_size = cfg.embed_dim

    def _cell(self, gates_in: torch.Tensor, hidden: torch.Tensor) -> torch.Tensor:
        """GRU update from precomputed input gates ``[B, 3D]`` (same formula as ``nn.GRUCell``)."""
        gates_hidden = nnf.linear(hidden, self.cell.weight_hh, self.cell.bias_hh)  # [B, 3D]
        in_r, in_z, in_n = gates_in.chunk(3, dim=-1)
        hid_r, hid_z, hid_n = gates_hidden.chunk(3, dim=-1)
        reset_gate = torch.sigmoid(in_r + hid_r)
        update_gate = torch.sigmoid(in_z + hid_z)
        candidate = torch.tanh(in_n + reset_gate * hid_n)
        return (1.0 - update_gate) * candidate + update_gate * hidden

    def step(self, x: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One step; see :meth:`TemporalCore.step`."""
        hidden = self._cell(nnf.linear(x, self.cell.weight_ih, self.cell.bias_ih), state)
        return hidden, hidden

    def sequence(
        self, x: torch.Tensor, state0: torch.Tensor, resets: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Window evaluation; see :meth:`TemporalCore.sequence`."""
        gates_in = nnf.linear(x, self.cell.weight_ih, self.cell.bias_ih)  # [T, B, 3D]
        hidden = state0
        outputs = []
        for t in range(x.shape[0]):
            hidden = self._cell(gates_in[t], hidden * keep_mask(resets[t], hidden))
            outputs.append(hidden)
        return torch.stack(outputs), hidden
