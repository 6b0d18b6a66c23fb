"""Compile and corpus settings: the ``compile`` group of ``navi_environment.config.EnvironmentSettings``."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

DEFAULT_FAMILIES = ("apartment", "maze", "warehouse", "building", "hall")
DEFAULT_EXACT_CLEARANCE_M = 0.4
"""Above the default 0.3 m drone radius, so collision checks and doorways read stored distances,
never an empty block's lower bound (see ``navi_environment.gmdag.writer``)."""


class CompileSettings(BaseModel):
    """How scenes are compiled into ``.gmdag`` assets and where the default corpus lives."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    resolution: int = Field(default=256, description="Voxels per axis of a compiled scene (power of two).")
    corpus_dir: str = Field(
        default="gmdag/corpus", description="Default corpus folder, relative to the repository's artifacts/."
    )
    families: tuple[str, ...] = Field(
        default=DEFAULT_FAMILIES, description="Procedural families in the default corpus."
    )
    count_per_family: int = Field(default=4, ge=1, le=1000, description="Scenes per family in the corpus.")
    far_tolerance_voxels: float = Field(
        default=1.0,
        ge=0.0,
        le=64.0,
        description="Away from surfaces, a block whose SDF range is within this many voxels is stored "
        "as one leaf holding its minimum (a safe lower bound). 0 = exact uniform collapse only.",
    )
    exact_clearance_m: float = Field(
        default=DEFAULT_EXACT_CLEARANCE_M,
        ge=0.0,
        le=10.0,
        description="Distances below this (metres) are stored exactly, never replaced by an empty "
        "block's lower bound; keep it above the drone radius so collisions and doorways read true "
        "clearance. Larger values make bigger files.",
    )
    cutoff_m: float = Field(
        default=3.0, gt=0.0, description="Procedural scenes: distances beyond this are clamped (lower bound)."
    )
    min_solid_voxels: float = Field(
        default=1.5,
        ge=0.0,
        le=4.0,
        description="Procedural solids thinner than this many voxels are thickened to it, so no wall "
        "falls between voxel centres and lets rays through at coarse resolutions (0 = exact geometry). "
        "Mesh surfaces are thickened by half of it on each side (an open ground plane becomes solid).",
    )
    max_mesh_extent_m: float = Field(
        default=2000.0, gt=0.0, description="A mesh whose bounding box is larger than this is rejected."
    )
    qualify: bool = Field(
        default=True, description="Qualify spawns of every corpus scene (false: faster, for experiments)."
    )

    @field_validator("resolution")
    @classmethod
    def _power_of_two(cls, value: int) -> int:
        if value < 8 or value > 4096 or value & (value - 1):
            raise ValueError(f"resolution must be a power of two in [8, 4096], got {value}")
        return value
