"""Settings of the RND module: a leaf module (pydantic only), so settings load without torch."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class RndConfig(BaseModel):
    """Sizes and optimiser of the RND module."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    pool: int = Field(default=4, gt=0, description="Average-pooling factor on azimuth and elevation.")
    hidden: int = Field(default=256, gt=0, description="Hidden width of target and predictor.")
    output: int = Field(default=64, gt=0, description="Output width of target and predictor.")
    learning_rate: float = Field(default=1e-4, gt=0, description="Adam learning rate of the predictor.")
    obs_clip: float = Field(default=5.0, gt=0, description="Clip of normalised inputs (in std units).")
    std_floor: float = Field(default=0.1, ge=0, description="Floor of the reward std, times the mean error.")
    reward_clip: float = Field(default=5.0, gt=0, description="Clip of the normalised intrinsic reward.")
