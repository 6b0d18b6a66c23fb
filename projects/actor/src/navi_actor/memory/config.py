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
