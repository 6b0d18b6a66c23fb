"""Weights of the actor-side shaping terms: a leaf module (pydantic only), so settings load without torch."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from navi_actor.curiosity.config import RndConfig
from navi_actor.curiosity.schedule import LinearAnneal
from navi_actor.memory.config import EpisodicMemoryConfig


class ShapingConfig(BaseModel):
    """Weights of the shaping terms and settings of the modules that produce them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    existential_tax: float = Field(default=-0.02, le=0, description="Reward added every step (<= 0).")
    velocity_weight: float = Field(default=0.0, description="Weight of the drone's speed (m/s).")
    novelty: LinearAnneal = Field(default_factory=LinearAnneal, description="RND novelty weight schedule.")
    loop_weight: float = Field(default=0.05, ge=0, description="Largest loop penalty per step.")
    loop_threshold: float = Field(
        default=0.8, ge=0, lt=1, description="Loop score below which there is no penalty."
    )
    spin_weight: float = Field(
        default=0.1,
        ge=0,
        description="Largest penalty per step for a sustained turn one way (a constant turn costs nothing "
        "under sampling noise, so without it the mean action circles: docs/experiments/2026-11-mean-"
        "action-spin.md).",
    )
    spin_window: int = Field(default=20, ge=1, description="Steps of the running mean of the yaw action.")
    spin_free: float = Field(
        default=0.3, ge=0, lt=1, description="|running mean yaw| below which turning is free."
    )
    rnd: RndConfig = Field(default_factory=RndConfig, description="Random Network Distillation.")
    memory: EpisodicMemoryConfig = Field(default_factory=EpisodicMemoryConfig, description="Episodic memory.")
