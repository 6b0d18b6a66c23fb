"""Visit memory: where around it the drone has already been this episode, from its own pose.

Why: the episodic memory tells the policy that a view was seen before, not where the unseen part
of the scene lies. The frontier planner knows that from its map. This memory is the smallest map
that answers it: a per-drone ring buffer of the positions the drone flew through this episode, read
as ``F = sectors + 1`` features: for each horizontal direction sector around the heading (sector 0
ahead, counted towards positive yaw) how many past positions lie within ``radius`` there, and how
many lie within ``here_radius`` (a revisit), each squashed as ``1 - exp(-n / saturation)`` into
[0, 1). It uses only what the frontier planner uses: the drone's own pose, never the scene.

Rules, as in :mod:`navi_actor.memory.episodic` (the slot rules are shared,
:mod:`navi_actor.memory.ring`): cleared per episode (rows whose ``episode_start`` is True are
emptied first), a position is written every ``write_every``-th step (the first included; the
oldest is overwritten when full), the ``exclusion_window`` newest positions are not counted (the
path just flown is always close), and :meth:`VisitMemory.peek` reads without writing. Batched over
drones as ``[B, capacity, 3]`` tensors; not trained, not checkpointed.
"""

from __future__ import annotations

import math

import torch

from navi_actor.memory.config import VisitMemoryConfig
from navi_actor.memory.ring import EpisodeRing


class VisitMemory(EpisodeRing):
    """Past positions of ``num_drones`` drones this episode, read as direction features ``[B, F]``."""

    def __init__(self, cfg: VisitMemoryConfig, num_drones: int, device: torch.device | str = "cpu") -> None:
        super().__init__(num_drones, cfg.capacity, cfg.write_every, device)
        self.cfg = cfg
        self.positions = torch.zeros(num_drones, cfg.capacity, 3, device=device)

    def features(self, position: torch.Tensor, yaw: torch.Tensor) -> torch.Tensor:
        """``[B, F]`` features of the drones at ``position [B, 3]`` heading ``yaw [B]`` (no writes)."""
        cfg = self.cfg
        offset = self.positions - position[:, None, :].to(self.positions.dtype)  # [B, C, 3]
        eligible, _ = self.eligible(cfg.exclusion_window)
        eligible = eligible & (offset[..., 2].abs() <= cfg.height)
        distance = offset[..., :2].norm(dim=-1)  # [B, C]
        bearing = torch.atan2(offset[..., 1], offset[..., 0]) - yaw[:, None].to(offset.dtype)
        width = 2.0 * math.pi / cfg.sectors  # sector k is centred on bearing k * width
        sector = torch.remainder(torch.round(bearing / width), cfg.sectors).long()
        near = (eligible & (distance <= cfg.radius)).to(offset.dtype)
        counts = torch.zeros(position.shape[0], cfg.sectors, dtype=offset.dtype, device=offset.device)
        counts.scatter_add_(1, sector, near)
        here = (eligible & (distance <= cfg.here_radius)).to(offset.dtype).sum(dim=1, keepdim=True)
        return 1.0 - torch.exp(-torch.cat([counts, here], dim=1) / cfg.saturation)

    def observe(
        self,
        position: torch.Tensor,
        yaw: torch.Tensor,
        episode_start: torch.Tensor,
        obs: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Clear rows starting an episode, read the features ``[B, F]``, then remember the position
        (``obs`` is not read: the same call as :class:`~navi_actor.memory.frontiers.FrontierMemory`'s)."""
        self.reset(episode_start.bool())
        features = self.features(position, yaw)
        self.write(self.positions, position)
        return features

    def peek(
        self,
        position: torch.Tensor,
        yaw: torch.Tensor,
        episode_start: torch.Tensor,
        obs: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """The features :meth:`observe` would return, without clearing or writing anything."""
        features = self.features(position, yaw)
        return torch.where(episode_start.bool()[:, None], 0.0, features)


def mirror_visit_features(features: torch.Tensor, sectors: int) -> torch.Tensor:
    """Features ``[..., F]`` of the mirrored drone: sector k of the first ``sectors`` becomes sector
    -k; the features after them ("here", a distance) are kept."""
    if features.shape[-1] == 0:  # a policy without the input stores no features
        return features
    order = [(-k) % sectors for k in range(sectors)] + list(range(sectors, features.shape[-1]))
    return features[..., order]
