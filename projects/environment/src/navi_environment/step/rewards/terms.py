"""Environment reward: ten batched terms, each reported separately and weighted by a setting.

Every term is a [B] tensor computed from the observation the drone actually gets after its move,
plus a little per-drone memory (visit cells, headings per cell, best distance from spawn, previous
clearance). ``info["reward/<term>"]`` carries the *weighted* contribution, so the terms add up to
the reward exactly.

Terms (unweighted forms):

* exploration: ``gate * (new_cell * (1 + 0.25 * frontier) + 0.05 * new_heading)``; new visit cell
  (edge ``visit_cell_m``), new heading sector inside the cell, frontier = share of the forward cone
  that is open (farther than half the horizon or empty); ``gate`` = clearance >= min_clearance_m.
* progress: gain of the farthest distance from the spawn (metres), scaled by
  ``clamp(clearance / proximity_m, 0, 1)`` so progress scraped along walls is worth less.
* clearance_delta: change of the nearest-surface distance, clipped to [-1, 1] m.
* starvation: minus the share of rays that see nothing within the horizon.
* proximity: ``-clamp(1 - clearance / proximity_m, 0, 1)``.
* structure_band: ``new_cell`` while the nearest surface is within [band_low_m, band_high_m].
* forward_structure: share of the forward cone that hits something within band_high_m, on a new
  heading sector of the cell.
* inspection: share of the forward cone hitting closer than inspection_range_m, when the
  heading is new in this cell (looking at nearby structure from a new side).
* collision: ``-(collision_base + impact_speed / max_forward_mps)`` on a collision.
* revisit: ``-1`` when the drone moves into a visit cell it has been in earlier in the episode
  (weight 0 by default). It charges flying back over known ground by where the drone has been, not
  by what it sees: the actor's embedding loop penalty cannot tell a revisit from a place that looks
  like one (docs/experiments/2026-11-warm-start-and-symmetry.md). Staying in one cell is not charged.

Every positive term pays for *novelty* (a new cell, a new heading in a cell, a new farthest
distance) and the penalties are dense. A drone that hovers or circles therefore earns nothing but
penalties: an earlier version paid the frontier, the structure band and forward structure on every
step, and PPO learned to circle in a spot with a good view and collect them (about +400 per
2,000-step episode over 3 visit cells), instead of exploring. Turning pays too, once per heading
sector of a cell (heading novelty, inspection, forward structure), so those rewards are kept small
next to entering a cell: with heading novelty at 0.25 and inspection at 0.2, a full turn was worth
more than two new cells, and PPO learned to circle slowly through the rooms collecting sectors.

Visit memory is a per-drone hashed table (``VISIT_SLOTS`` cells): hash collisions can only make a
cell look visited early, never pay twice for one cell. The revisit term compares slots too (the
slot of the previous step's cell, -1 after a reset), so a move between two cells that share a slot
reads as staying.

With ``novelty_columns`` the novelty terms key that table by the cell's column (its height set to
0), so flying up or down through known ground pays nothing; a second table (``cells``) always keys
by the 3D cell and counts coverage, so coverage means the same whatever the reward pays for.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from navi_environment.config import PhysicsSettings, RewardSettings

REWARD_TERMS = (
    "exploration",
    "progress",
    "clearance_delta",
    "starvation",
    "proximity",
    "structure_band",
    "forward_structure",
    "inspection",
    "collision",
    "revisit",
)
VISIT_SLOTS = 4096
HEADING_NOVELTY = 0.05
"""Exploration paid per new heading sector of a cell, next to 1 for the cell itself."""
_HASH = (73856093, 19349663, 83492791)


@dataclass(frozen=True)
class RewardInputs:
    """What the reward needs after a move.

    Attributes:
        obs: [B,3,Az,El] observation at the new pose.
        nearest_m: [B] distance of the nearest hit over all rays (horizon if none), metres.
        hit_share: [B] share of rays that hit something within the horizon.
        position: [B,3] new positions. yaw: [B] new headings.
        spawn: [B,3] episode start positions.
        collided: [B] bool. impact_speed: [B] m/s.
        forward_rays: [F] long indices of the rays inside the forward cone (flattened Az*El).
        horizon: sensor range, metres.
    """

    obs: torch.Tensor
    nearest_m: torch.Tensor
    hit_share: torch.Tensor
    position: torch.Tensor
    yaw: torch.Tensor
    spawn: torch.Tensor
    collided: torch.Tensor
    impact_speed: torch.Tensor
    forward_rays: torch.Tensor
    horizon: float


class Rewards:
    """Per-drone reward memory plus the term computation.

    Args:
        settings: reward weights and shape parameters.
        physics: physics settings (max forward speed scales the collision term).
        num_actors: B. device: tensor device.
    """

    def __init__(
        self, settings: RewardSettings, physics: PhysicsSettings, num_actors: int, device: torch.device
    ):
        self.settings = settings
        self.max_forward = float(physics.max_forward_mps)
        self.weights = torch.tensor([getattr(settings, n) for n in REWARD_TERMS], device=device)
        self.visited = torch.zeros(num_actors, VISIT_SLOTS, dtype=torch.bool, device=device)
        self.cells = torch.zeros(num_actors, VISIT_SLOTS, dtype=torch.bool, device=device)
        self.headings = torch.zeros(num_actors, VISIT_SLOTS, dtype=torch.int64, device=device)
        self.best_distance = torch.zeros(num_actors, device=device)
        self.prev_clearance = torch.zeros(num_actors, device=device)
        self.coverage = torch.zeros(num_actors, device=device)
        self.prev_slot = torch.full((num_actors,), -1, dtype=torch.int64, device=device)
        self._rows = torch.arange(num_actors, device=device)
        self._hash = torch.tensor(_HASH, device=device, dtype=torch.int64)

    def reset_rows(self, rows: torch.Tensor, clearance: torch.Tensor) -> None:
        """Forget the memory of drones ``rows`` (long [K]) starting new episodes with ``clearance`` [K]."""
        self.visited[rows] = False
        self.cells[rows] = False
        self.headings[rows] = 0
        self.best_distance[rows] = 0.0
        self.prev_clearance[rows] = clearance
        self.coverage[rows] = 0.0
        self.prev_slot[rows] = -1

    def compute(self, inputs: RewardInputs) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Compute the reward and update the memory.

        Returns:
            ``(reward [B], weighted terms [10,B] in REWARD_TERMS order, clearance [B] metres)``.
        """
        s = self.settings
        B = inputs.obs.shape[0]
        clearance = inputs.nearest_m
        # [B, R] -> [B, F]: only the forward cone is read; misses read as the horizon
        ahead_m = inputs.obs[:, 0].reshape(B, -1)[:, inputs.forward_rays] * inputs.horizon
        new_cell, new_heading, revisit = self._visit(inputs.position, inputs.yaw)
        frontier = (ahead_m >= 0.5 * inputs.horizon).float().mean(dim=1)
        gate = (clearance >= s.min_clearance_m).float()
        exploration = gate * (new_cell * (1.0 + 0.25 * frontier) + HEADING_NOVELTY * new_heading)
        distance = (inputs.position - inputs.spawn).norm(dim=1)
        gain = (distance - self.best_distance).clamp(min=0.0)
        self.best_distance = torch.maximum(self.best_distance, distance)
        progress = gain * (clearance / s.proximity_m).clamp(0.0, 1.0)
        clearance_delta = (clearance - self.prev_clearance).clamp(-1.0, 1.0)
        self.prev_clearance = clearance
        starvation = inputs.hit_share - 1.0
        proximity = -(1.0 - clearance / s.proximity_m).clamp(0.0, 1.0)
        band = ((clearance >= s.band_low_m) & (clearance <= s.band_high_m)).float() * new_cell
        # misses read as the horizon, so "closer than X" (X < horizon) already implies a hit
        forward_structure = (ahead_m <= s.band_high_m).float().mean(dim=1) * new_heading
        near = (ahead_m <= s.inspection_range_m).float().mean(dim=1)
        inspection = near * new_heading
        collision = -(s.collision_base + inputs.impact_speed / self.max_forward) * inputs.collided.float()
        terms = torch.stack(
            [exploration, progress, clearance_delta, starvation, proximity, band, forward_structure,
             inspection, collision, -revisit],
        ) * self.weights[:, None]  # fmt: skip
        return terms.sum(dim=0), terms, clearance

    def slots(self, position: torch.Tensor, columns: bool = False) -> torch.Tensor:
        """Visit-table slot (long [B]) of the cell holding each of ``position [B,3]`` (of its column
        if ``columns``)."""
        cell = torch.floor(position / self.settings.visit_cell_m).long()
        if columns:
            cell[:, 2] = 0
        return ((cell * self._hash).sum(dim=1)) % VISIT_SLOTS

    def _visit(
        self, position: torch.Tensor, yaw: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Mark the current cell (coverage), its novelty cell and heading sector visited.

        Returns (new_cell, new_heading, revisit) as 0/1 floats of the novelty cell (the 3D cell, or
        its column with ``novelty_columns``); revisit: moved into a novelty cell seen before.
        """
        cell = self.slots(position)
        seen_3d = self.cells[self._rows, cell]
        self.cells[self._rows, cell] = True
        self.coverage += (~seen_3d).float()
        slot = self.slots(position, columns=self.settings.novelty_columns)
        sector = (torch.remainder(yaw, 2 * torch.pi) / (2 * torch.pi) * self.settings.heading_bins).long()
        bit = torch.bitwise_left_shift(
            torch.ones_like(sector), sector.clamp(0, self.settings.heading_bins - 1)
        )
        seen_cell = self.visited[self._rows, slot]
        seen_bits = self.headings[self._rows, slot]
        new_heading = (seen_bits & bit) == 0
        self.visited[self._rows, slot] = True
        self.headings[self._rows, slot] = seen_bits | bit
        revisit = seen_cell & (slot != self.prev_slot)
        self.prev_slot.copy_(slot)
        return (~seen_cell).float(), new_heading.float(), revisit.float()
