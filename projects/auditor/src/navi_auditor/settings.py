"""``AuditorSettings``: the one settings class of navi-auditor (prefix ``NAVI_AUDITOR_``).

Groups follow the package's three jobs: ``recording`` (ZeroMQ stream capture and replay),
``explore`` (the explorer's scene source, pacing, view and publishing), ``autopilot`` (the scripted
explorer's steering gains) and ``demos`` (demonstration files). CLI options pass their values as init
kwargs, which outrank environment variables and the root ``.env``.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from pydantic import Field, field_validator, model_validator
from pydantic_settings import SettingsConfigDict

from navi_common.settings import NaviSettings, SettingsGroup
from navi_contracts import topics


class RecordingSettings(SettingsGroup):
    """Stream recording: chunk sizes bound memory and what a crash can lose."""

    chunk_bytes: int = Field(
        default=4 * 1024 * 1024, ge=1024, description="Flush a chunk once its records reach this size."
    )
    chunk_seconds: float = Field(
        default=1.0, gt=0.0, description="Flush a non-empty chunk at least this often (crash window)."
    )
    fsync: bool = Field(default=True, description="fsync after every chunk (durable across power loss).")
    poll_ms: int = Field(default=100, ge=1, description="Longest wait of one receive; bounds stop latency.")
    subscriber_wait_ms: int = Field(
        default=5000, ge=0, description="Replay: wait this long for subscribers before sending (0 = none)."
    )
    sub_endpoints: list[str] = Field(
        default_factory=lambda: [topics.ENV_PUB_CONNECT, topics.ACTOR_PUB_CONNECT],
        min_length=1,
        description="Record: the publishers to subscribe to (repeat the option for several).",
    )
    pub_endpoint: str = Field(default=topics.ENV_PUB_BIND, description="Replay: the PUB endpoint to bind.")


class ExploreSettings(SettingsGroup):
    """The explorer: scene source, pacing, terminal view and live publishing."""

    gmdag_file: Path | None = Field(default=None, description="Fly this one .gmdag scene.")
    corpus: Path | None = Field(default=None, description="Fly every .gmdag of this folder in order.")
    max_steps: int = Field(default=2000, ge=1, description="Steps per scene before the next one.")
    max_scenes: int | None = Field(default=None, ge=1, description="Stop after this many scenes.")
    step_hz: float = Field(default=10.0, gt=0.0, description="Steps per second with a person flying.")
    autopilot_hz: float = Field(
        default=0.0, ge=0.0, description="Steps per second on autopilot; 0 = as fast as possible."
    )
    key_hold_steps: int = Field(
        default=5, ge=1, description="Steps a key press keeps its axis engaged (terminals send no key-up)."
    )
    view_width: int = Field(default=96, ge=8, le=512, description="Columns of the depth view.")
    view_rows: int = Field(default=12, ge=2, le=128, description="Text rows of the depth view (2 px each).")
    color: bool = Field(default=True, description="24-bit colour half-blocks; false: ASCII shading.")
    publish: str | None = Field(
        default=topics.ENV_PUB_BIND,
        description="PUB endpoint for DistanceMatrix observations; 'none', '' or null: publish nothing.",
    )
    seed: int = Field(default=0, description="Seed of the first scene's reset; scene k uses seed + k.")
    device: str = Field(default="cpu", description="torch device of the backend: cpu, cuda, ...")

    @field_validator("publish")
    @classmethod
    def _none_publishes_nothing(cls, value: str | None) -> str | None:
        """``--publish none`` (and ``''``) turn publishing off, as null does in a settings file."""
        return None if value is None or value.strip().lower() in ("", "none", "null") else value


class AutopilotSettings(SettingsGroup):
    """The scripted explorer: steer to the most open direction, slow near obstacles."""

    cruise: float = Field(default=0.8, gt=0.0, le=1.0, description="Forward command in open space.")
    slow_distance_m: float = Field(
        default=3.0, gt=0.0, description="Forward speed falls below this clearance."
    )
    stop_distance_m: float = Field(default=1.0, gt=0.0, description="Turn in place below this clearance.")
    creep: float = Field(
        default=0.25, ge=0.0, le=1.0, description="Share of cruise kept down to stop_distance_m (then turn)."
    )
    turn_yaw: float = Field(
        default=0.6, gt=0.0, le=1.0, description="Least yaw command while turning in place (blocked ahead)."
    )
    corridor_m: float = Field(
        default=0.5, gt=0.0, description="Half-width of the path checked ahead (above the drone radius)."
    )
    yaw_gain: float = Field(default=1.5, gt=0.0, description="Yaw command per radian of heading error.")
    lateral_gain: float = Field(default=0.5, ge=0.0, description="Side-centring command strength.")
    altitude_gain: float = Field(
        default=0.8, ge=0.0, description="Vertical command per metre of height error."
    )
    cruise_altitude_m: float = Field(
        default=1.5, gt=0.0, description="Wanted height above the floor (mid-height under a lower ceiling)."
    )
    open_distance_m: float = Field(
        default=6.0, gt=0.0, description="Free space at which a direction counts as fully open."
    )
    forward_bias: float = Field(
        default=0.35, ge=0.0, le=1.0, description="Preference for keeping the current heading (0..1)."
    )
    void_penalty: float = Field(
        default=0.6, ge=0.0, description="Score penalty of directions whose level band sees nothing."
    )
    band_deg: float = Field(default=20.0, gt=0.0, le=90.0, description="Elevation band treated as 'level'.")

    @model_validator(mode="after")
    def _check_distances(self) -> AutopilotSettings:
        if self.stop_distance_m >= self.slow_distance_m:
            raise ValueError("autopilot.stop_distance_m must be below autopilot.slow_distance_m")
        return self


class DemoSettings(SettingsGroup):
    """Demonstration files."""

    out_dir: Path | None = Field(
        default=None, description="Where .npz demonstrations go (default: <repo>/artifacts/demonstrations)."
    )
    part_frames: int = Field(
        default=256, ge=1, description="Frames per crash-safe part file (bounds memory and loss on a crash)."
    )


class AuditorSettings(NaviSettings):
    """Every navi-auditor setting (``NAVI_AUDITOR_*``, nested with ``__``)."""

    model_config: ClassVar[SettingsConfigDict] = SettingsConfigDict(env_prefix="NAVI_AUDITOR_")

    recording: RecordingSettings = Field(default_factory=RecordingSettings)
    explore: ExploreSettings = Field(default_factory=ExploreSettings)
    autopilot: AutopilotSettings = Field(default_factory=AutopilotSettings)
    demos: DemoSettings = Field(default_factory=DemoSettings)
    keys: Path | None = Field(
        default=None, description="CURVE keys folder for record/replay/explore sockets (docs/security.md)."
    )

    @model_validator(mode="after")
    def _check_scene_source(self) -> AuditorSettings:
        if self.explore.gmdag_file is not None and self.explore.corpus is not None:
            raise ValueError("explore.gmdag_file and explore.corpus are exclusive: pick one scene source")
        return self
