"""Settings of the episodic memory: a leaf module (pydantic only), so settings load without torch."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class EpisodicMemoryConfig(BaseModel):
    """Capacity and query rules of :class:`EpisodicMemory`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    capacity: int = Field(default=256, gt=0, description="Entries kept per drone (ring buffer).")
    exclusion_window: int = Field(default=8, ge=0, description="Most recent entries ignored by queries.")
    write_every: int = Field(default=4, gt=0, description="Write one entry every n-th step of an episode.")
    age_decay: float = Field(default=0.995, gt=0, le=1, description="Similarity decay per entry of age.")
    center_momentum: float = Field(
        default=0.01,
        ge=0,
        le=1,
        description="EMA momentum of the embedding mean removed before cosine; 0: off.",
    )


class VisitMemoryConfig(BaseModel):
    """Capacity and geometry of :class:`navi_actor.memory.visits.VisitMemory` and, with
    ``source="frontiers"``, of :class:`navi_actor.memory.frontiers.FrontierMemory`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: Literal["positions", "frontiers"] = Field(
        default="frontiers",
        description="What the per-sector features say: positions, how many of the drone's past positions "
        "lie there; frontiers, how near the nearest frontier lies there (free space next to space the "
        "drone has not yet come within frontier_sight_m of, from a 2.5D map of its own depth rays).",
    )

    capacity: int = Field(default=256, gt=0, description="Past positions kept per drone (ring buffer).")
    write_every: int = Field(default=4, gt=0, description="Write the position every n-th step of an episode.")
    exclusion_window: int = Field(
        default=2, ge=0, description="Most recent positions ignored by queries (the path just flown)."
    )
    sectors: int = Field(
        default=8, ge=2, description="Horizontal direction sectors around the heading (sector 0 ahead)."
    )
    radius: float = Field(
        default=6.0, gt=0, description="Metres around the drone in which past positions count."
    )
    here_radius: float = Field(
        default=1.5, gt=0, description="Metres within which a past position means: I was here already."
    )
    height: float = Field(
        default=1.5,
        gt=0,
        description="Past positions more than this many metres above or below do not count.",
    )
    saturation: float = Field(
        default=4.0,
        gt=0,
        description="Positions at which a feature reaches 1 - 1/e (feature 1 - exp(-n / this)).",
    )

    frontier_cell_m: float = Field(
        default=0.25,
        gt=0,
        description="Cell edge of the frontier map, metres (the frontier planner's 0.25 m): a cell with any "
        "hit is occupied, so a 1 m door on 0.5 m cells is shut wherever its edges meet the grid's.",
    )
    frontier_sight_m: float = Field(
        default=3.0,
        gt=0,
        description="The frontier map marks space free up to this far from the drone (the frontier "
        "planner's 3 m): a frontier is space the drone has not yet come this near.",
    )
    frontier_radius_m: float = Field(
        default=10.0, gt=0, description="Frontier cells farther than this from the drone do not count."
    )
    frontier_distance: Literal["straight", "path"] = Field(
        default="path",
        description="How a sector's distance to its nearest frontier is measured: straight, the straight "
        "line from the drone to the frontier cell (which may cross a wall); path, the shortest path over "
        "the map's free cells that leaves the drone in that sector (so the sector of a doorway lights up "
        "for the room behind it, and frontiers behind a wall do not).",
    )
    frontier_scale_m: float = Field(
        default=3.0, gt=0, description="A sector's feature is exp(-distance / this) of its nearest frontier."
    )
    frontier_reading: Literal["absolute", "relative"] = Field(
        default="absolute",
        description="How a sector reads its nearest frontier at distance d: absolute, exp(-d / "
        "frontier_scale_m); relative, exp(-(d - d_min) / frontier_scale_m), d_min the nearest over all "
        "sectors (the way to the nearest frontier reads 1 however far it lies), with one more feature, "
        "exp(-d_min / frontier_radius_m) (0 when no frontier lies within the radius).",
    )
    horizon_m: float = Field(
        default=30.0,
        gt=0,
        description="The sensor horizon the depth channel is divided by (the environment's "
        "sensor.horizon_m; the trainer sets it), for the frontier map.",
    )

    @property
    def features(self) -> int:
        """Feature size F: one per sector, then one for "here" (the unmapped share of the frontier
        map's disc), then with ``frontier_reading="relative"`` one for the nearest frontier's distance."""
        relative = self.source == "frontiers" and self.frontier_reading == "relative"
        return self.sectors + 1 + int(relative)
