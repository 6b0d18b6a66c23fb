"""Compile and corpus settings: the ``compile`` group of :class:`navi_environment.config.EnvironmentSettings`."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class CompileSettings(BaseModel):
    """How scenes are compiled into ``.gmdag`` assets and where the default corpus lives."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    resolution: int = Field(default=256, description="Voxels per axis of a compiled scene (power of two).")
    corpus_dir: str = Field(
        default="gmdag/corpus", description="Default corpus folder, relative to the repository's artifacts/."
    )
