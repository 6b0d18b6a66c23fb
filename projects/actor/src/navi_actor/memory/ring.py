"""The slot rules both per-drone episode memories share (episodic embeddings, visited positions).

One implementation of each rule: a row is emptied when its drone starts an episode; an entry is
written every ``write_every``-th step of the episode (the first included) into a ring of
``capacity`` slots (the oldest overwritten when full); an entry's age counts entries (newest 0).
"""

from __future__ import annotations

import torch


class EpisodeRing:
    """Slot bookkeeping of ``num_drones`` rows of ``capacity`` entries, batched on ``device``."""

    def __init__(self, num_drones: int, capacity: int, write_every: int, device: torch.device | str) -> None:
        self.capacity, self.write_every = capacity, write_every
        # Insert ordinal of each slot within the episode; -1 marks an empty slot.
        self.entry_index = torch.full((num_drones, capacity), -1, dtype=torch.long, device=device)
        self.inserted = torch.zeros(num_drones, dtype=torch.long, device=device)  # entries this episode
        self.steps = torch.zeros(num_drones, dtype=torch.long, device=device)  # steps this episode
        self._rows = torch.arange(num_drones, device=device)

    def reset(self, mask: torch.Tensor) -> None:
        """Empty the rows where ``mask [B]`` (bool) is True."""
        keep = ~mask
        self.entry_index = torch.where(keep[:, None], self.entry_index, -1)
        self.inserted = self.inserted * keep
        self.steps = self.steps * keep

    def eligible(self, exclusion_window: int) -> tuple[torch.Tensor, torch.Tensor]:
        """``(eligible [B, C] bool, age [B, C])``: filled slots older than the ``exclusion_window``
        newest entries, and every slot's age in entries (newest 0)."""
        age = self.inserted[:, None] - 1 - self.entry_index
        return (self.entry_index >= 0) & (age >= exclusion_window), age

    def write(self, buffer: torch.Tensor, values: torch.Tensor) -> None:
        """Write ``values [B, ...]`` into ``buffer [B, C, ...]`` for rows at a write step; advance."""
        write = self.steps % self.write_every == 0  # [B]
        slot = self.inserted % self.capacity  # ring: overwrite the oldest entry
        current = buffer[self._rows, slot]
        mask = write.view(-1, *([1] * (current.dim() - 1)))
        buffer[self._rows, slot] = torch.where(mask, values.to(current.dtype), current)
        self.entry_index[self._rows, slot] = torch.where(
            write, self.inserted, self.entry_index[self._rows, slot]
        )
        self.inserted = self.inserted + write
        self.steps = self.steps + 1
