"""Linear annealing of a coefficient over environment steps (e.g. the RND novelty weight).

Curiosity matters most early, when the policy knows nothing; later it must fade so the extrinsic
exploration reward, not the predictor's residual noise, shapes the behaviour.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class LinearAnneal(BaseModel):
    """``start`` at step 0, linearly to ``end`` at ``steps``, constant afterwards."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    start: float = Field(default=0.05, description="Weight at step 0.")
    end: float = Field(default=0.005, description="Weight after the anneal.")
    steps: int = Field(default=2_000_000, ge=0, description="Environment steps over which to anneal.")

    def at(self, step: int) -> float:
        """Weight at environment step ``step`` (``step < 0`` counts as 0)."""
        if self.steps == 0:
            return self.end
        fraction = min(max(step, 0) / self.steps, 1.0)
        return self.start + (self.end - self.start) * fraction
