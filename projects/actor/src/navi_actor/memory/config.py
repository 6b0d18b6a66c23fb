"""Settings of the episodic memory: a leaf module (pydantic only), so settings load without torch."""

from __future__ import annotations

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
    """Capacity and geometry of :class:`navi_actor.memory.visits.VisitMemory`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

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

    @property
    def features(self) -> int:
        """Feature size F: one per sector, then one for "here"."""
        return self.sectors + 1
