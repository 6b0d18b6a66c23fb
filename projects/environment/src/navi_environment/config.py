"""``EnvironmentSettings``: the one settings class of navi-environment (prefix ``NAVI_ENV_``).

Groups follow the runtime's concerns: ``sensor`` (what a drone sees), ``tracer`` (how rays are
marched), ``scene`` (runtime structure and memory), ``physics`` (kinematics and collisions),
``reward`` (the ten term weights), ``episode`` (lifecycle) and ``compile`` (owned by the compiler).
Every value a hot path needs is derived and validated here once, at start-up.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_settings import SettingsConfigDict

from navi_common.settings import NaviSettings
from navi_environment.corpus.settings import CompileSettings
from navi_environment.server.config import ServerConfig

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class SensorSettings(BaseModel):
    """Spherical distance sensor: Az x El rays around each drone."""

    model_config = _FROZEN

    azimuth_bins: int = Field(default=256, ge=4, le=4096, description="Rays around the vertical axis.")
    elevation_bins: int = Field(default=48, ge=2, le=1024, description="Rays from nadir to zenith.")
    horizon_m: float = Field(
        default=30.0, gt=0.0, description="Sensor range; depth is divided by it; hits beyond are misses."
    )


class TracerSettings(BaseModel):
    """Sphere-tracing rules. Distances in voxels of the traced scene."""

    model_config = _FROZEN

    device_kernel: Literal["auto", "numba", "torch"] = Field(
        default="auto", description="auto: numba on CPU, torch on CUDA. torch also works on CPU (tests)."
    )
    hit_epsilon_voxels: float = Field(
        default=0.05, gt=0.0, le=0.5, description="A sample closer than this to a surface is a hit."
    )
    min_step_voxels: float = Field(
        default=0.5,
        gt=0.0,
        le=0.5,
        description="Smallest step near a surface; <= 0.5 so a 1-voxel wall cannot be stepped over.",
    )
    max_steps: int = Field(
        default=192, ge=8, le=4096, description="March iterations per ray before giving up."
    )
    torch_compile: Literal["auto", "on", "off"] = Field(
        default="auto",
        description="torch kernel only: fuse each march iteration with torch.compile (fewer CUDA launches; "
        "~20 s to compile once per process). auto: on for CUDA when Triton is installed, off on CPU.",
    )
    threads: int = Field(default=0, ge=0, description="numba threads; 0 keeps numba's default (all cores).")
    threading_layer: Literal["workqueue", "omp", "tbb", "default"] = Field(
        default="workqueue",
        description="numba threading layer. workqueue threads sleep between kernels instead of spinning, "
        "which keeps torch's own thread pool fast on small CPUs (NUMBA_THREADING_LAYER wins if set).",
    )


class SceneSettings(BaseModel):
    """Runtime scene structure (sparse brick map) and the loaded-scene cache."""

    model_config = _FROZEN

    brick_band_voxels: float = Field(
        default=2.0, gt=0.0, description="Coarse cells closer than this to a surface get a dense brick."
    )
    max_scene_bytes: int = Field(
        default=512 * 1024 * 1024, gt=0, description="Memory budget of one runtime scene, bytes."
    )
    max_cached_scenes: int = Field(default=8, ge=1, description="LRU capacity of loaded runtime scenes.")
    spawn_candidates: int = Field(default=512, ge=8, description="Free-space candidates tried per scene.")
    spawn_clearance_m: float = Field(default=0.8, gt=0.0, description="Minimum distance to any surface.")
    spawn_max: int = Field(default=128, ge=1, description="Qualified spawns kept per scene (best first).")
    spawn_max_starvation: float = Field(
        default=0.7, gt=0.0, le=1.0, description="A spawn whose starvation reaches this is not viable."
    )
    spawn_starvation_margin: float = Field(
        default=0.15,
        ge=0.0,
        le=1.0,
        description="A spawn is viable only within this margin of the scene's least-starved spawn "
        "(keeps drones inside a building rather than on its roof, yet lets open scenes qualify).",
    )


class PhysicsSettings(BaseModel):
    """Drone kinematics: actions [forward, vertical, lateral, yaw] in [-1, 1]."""

    model_config = _FROZEN

    dt: float = Field(default=0.1, gt=0.0, le=1.0, description="Seconds per step.")
    max_forward_mps: float = Field(default=5.0, gt=0.0, description="Forward/backward speed at |a|=1.")
    max_vertical_mps: float = Field(default=2.0, gt=0.0, description="Vertical speed at |a|=1.")
    max_lateral_mps: float = Field(default=3.0, gt=0.0, description="Sideways speed at |a|=1.")
    max_yaw_rate: float = Field(default=3.0, gt=0.0, description="Yaw rate at |a|=1, rad/s.")
    smoothing: float = Field(
        default=0.5, gt=0.0, le=1.0, description="Share of the commanded change applied per step (1 = none)."
    )
    drone_radius_m: float = Field(default=0.3, gt=0.0, description="Collision sphere radius.")
    slowdown_distance_m: float = Field(
        default=2.0, gt=0.0, description="Forward speed scales down linearly below this clearance ahead."
    )
    forward_cone_deg: float = Field(
        default=30.0, gt=0.0, le=180.0, description="Half-angle of the 'ahead' cone (slow-down, rewards)."
    )
    step_kernel: Literal["auto", "numba", "torch"] = Field(
        default="auto",
        description="Non-trace step work (kinematics, collisions, rewards, episodes): auto = fused numba "
        "kernels when the tracer runs numba (CPU), torch ops otherwise (CUDA; also the oracle on CPU).",
    )


class RewardSettings(BaseModel):
    """Weights of the ten environment reward terms and the few shape parameters they need."""

    model_config = _FROZEN

    exploration: float = Field(default=2.0, description="Weight: new visit cells, new headings, frontier.")
    progress: float = Field(default=0.5, description="Weight: new farthest distance from spawn, m.")
    clearance_delta: float = Field(default=0.2, description="Weight: change of nearest-surface distance.")
    starvation: float = Field(default=1.0, description="Weight: share of rays that see nothing (penalty).")
    proximity: float = Field(
        default=0.0,
        description="Weight: closeness below proximity_m (penalty; 0 = off: at 0.5 the mean action lapped "
        "the apartments' first rooms, docs/experiments/2026-12-apartment-fine-tune.md).",
    )
    structure_band: float = Field(default=0.1, description="Weight: nearest surface inside the band.")
    forward_structure: float = Field(default=0.02, description="Weight: structure visible ahead.")
    inspection: float = Field(default=0.05, description="Weight: close surfaces seen from a new heading.")
    collision: float = Field(default=1.0, description="Weight: impact penalty, grows with impact speed.")
    revisit: float = Field(
        default=0.0,
        ge=0.0,
        description="Weight: moving into a visit cell entered earlier in the episode (penalty; 0 = off).",
    )
    visit_cell_m: float = Field(default=1.0, gt=0.0, description="Edge of an exploration visit cell.")
    novelty_columns: bool = Field(
        default=True,
        description="Pay the novelty terms (exploration, structure band, heading terms, revisit) once per "
        "column of visit cells, all heights together, instead of once per 3D cell. Coverage is still "
        "counted in 3D cells. Why: an orbit whose height drifts keeps entering new 3D cells "
        "(docs/experiments/2026-11-orbits.md).",
    )
    heading_bins: int = Field(
        default=1,
        ge=1,
        le=64,
        description="Heading sectors per visit cell: the heading-novelty, inspection and forward-structure "
        "terms pay once per sector. 1: once per cell (turning in a visited cell pays nothing; with 8, a "
        "drifting circle farmed them and the mean action circled: docs/experiments/2026-11-mean-action-"
        "heading-sectors.md).",
    )
    min_clearance_m: float = Field(default=0.5, ge=0.0, description="Exploration gate: reward only if clear.")
    proximity_m: float = Field(default=1.0, gt=0.0, description="Proximity penalty starts below this.")
    band_low_m: float = Field(default=1.0, ge=0.0, description="Structure band lower edge.")
    band_high_m: float = Field(default=4.0, gt=0.0, description="Structure band upper edge.")
    inspection_range_m: float = Field(default=3.0, gt=0.0, description="Surfaces closer count as inspected.")
    collision_base: float = Field(default=0.5, ge=0.0, description="Penalty of any collision.")


class EpisodeSettings(BaseModel):
    """Episode lifecycle."""

    model_config = _FROZEN

    max_steps: int = Field(
        default=500,
        ge=1,
        description="Truncate after this many steps: the one episode length of in-process training, "
        "serve and explore. Why 500: drones see four times as many spawns and scenes per hour as at "
        "2000, each with fresh novelty to collect; the learning benchmarks were tuned at 500 "
        "(docs/training.md, learning runs 5 and 7-9).",
    )
    starvation_grace_steps: int = Field(
        default=10, ge=0, description="No void-starvation truncation during this many steps after reset."
    )
    starvation_truncate: float = Field(
        default=0.98, gt=0.0, le=1.0, description="Truncate once this share of rays sees nothing."
    )
    episodes_per_scene: int = Field(default=16, ge=1, description="Episodes per drone before the next scene.")
    family_weights: dict[str, Annotated[int, Field(ge=1)]] = Field(
        default_factory=dict,
        description="Times each scene of a family comes round in the scene rotation (default 1), e.g. "
        '{"apartment": 2}: a drone flies every run of consecutive apartment scenes twice before it '
        "moves on, so apartments take twice their share of the episodes. Families are the corpus "
        "manifest's (else a scene's name without its number). Planned episodes (evaluate) are unaffected.",
    )


class EnvironmentSettings(NaviSettings):
    """All settings of navi-environment: prefix ``NAVI_ENV_``, groups nested with ``__``."""

    model_config: ClassVar[SettingsConfigDict] = SettingsConfigDict(env_prefix="NAVI_ENV_")

    sensor: SensorSettings = Field(default_factory=SensorSettings)
    tracer: TracerSettings = Field(default_factory=TracerSettings)
    scene: SceneSettings = Field(default_factory=SceneSettings)
    physics: PhysicsSettings = Field(default_factory=PhysicsSettings)
    reward: RewardSettings = Field(default_factory=RewardSettings)
    episode: EpisodeSettings = Field(default_factory=EpisodeSettings)
    compile: CompileSettings = Field(default_factory=CompileSettings)
    server: ServerConfig = Field(default_factory=ServerConfig)
    seed: int = Field(default=0, description="Default seed of reset() when none is given.")

    @model_validator(mode="after")
    def _check_cross_fields(self) -> EnvironmentSettings:
        if self.reward.band_high_m <= self.reward.band_low_m:
            raise ValueError("reward.band_high_m must be greater than reward.band_low_m")
        if self.tracer.hit_epsilon_voxels > self.tracer.min_step_voxels:
            raise ValueError("tracer.hit_epsilon_voxels must not exceed tracer.min_step_voxels")
        return self
