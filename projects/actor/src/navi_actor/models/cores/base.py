"""The temporal-core contract shared by GRU, Mamba-2 and Mamba (selective scan).

Every core exposes the same two entry points so acting and learning run one function:

* ``step`` advances one time step from a flat state ``[B, S]`` (O(1) in sequence length);
* ``sequence`` re-evaluates a whole ``[T, B, D]`` window from the state stored at its start,
  with ``resets[t, b]`` meaning "row b starts a new episode at t: forget everything before t".

Stepping ``step`` T times (zeroing the state rows where ``resets`` is set, before each step) gives
the same outputs as one ``sequence`` call; the tests check this for every core.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import torch
from torch import nn


class TemporalCore(nn.Module, ABC):
    """Base class of recurrent cores with a flat ``[B, S]`` state."""

    #: flattened recurrent state size S.
    state_size: int

    @abstractmethod
    def step(self, x: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Advance one step.

        Args:
            x: ``[B, D]`` inputs at this step.
            state: ``[B, S]`` state before the step (already zeroed where an episode starts).

        Returns:
            Output ``[B, D]`` and new state ``[B, S]``.
        """

    @abstractmethod
    def sequence(
        self, x: torch.Tensor, state0: torch.Tensor, resets: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Evaluate a window of steps.

        Args:
            x: ``[T, B, D]`` inputs.
            state0: ``[B, S]`` state before step 0.
            resets: ``[T, B]`` bool; True where the state is zeroed before that step.

        Returns:
            Outputs ``[T, B, D]`` and the state after the last step ``[B, S]``.
        """


def keep_mask(resets: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """Return ``1 - resets`` shaped ``[B, 1, ...]`` to broadcast against ``like`` (``[B, ...]``)."""
    return (~resets).to(like.dtype).reshape(resets.shape[0], *([1] * (like.dim() - 1)))
