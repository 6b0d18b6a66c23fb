"""Settings group of ``navi-actor infer`` (``NAVI_ACTOR_INFERENCE__*``)."""

from __future__ import annotations

from pydantic import Field

from navi_common.settings import SettingsGroup


class InferenceConfig(SettingsGroup):
    """In-process inference: act in the simulator with a trained policy, never learn."""

    deterministic: bool = Field(default=True, description="Act with the Gaussian mean (False: sample).")
    seed: int = Field(default=0, description="Environment reset seed and torch seed for sampling.")
    total_steps: int | None = Field(
        default=None, gt=0, description="Stop after this many batched steps (null: no step limit)."
    )
    episodes: int | None = Field(
        default=None, gt=0, description="Stop once this many episodes have finished (null: no limit)."
    )
    stats_seconds: float = Field(
        default=1.0, gt=0.0, description="Period of the actor.inference.stats event."
    )
