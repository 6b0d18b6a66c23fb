"""The demonstration file schema (``artifacts/demonstrations/*.npz``), shared by writers and readers.

It lives in navi_common because two packages write the format and may not import each other: the
auditor (``explore --record``, its batch recorder) and the actor (the trainer's frontier-planner warm
start, ``navi_actor.bc.frontier_recording``); the actor's BC loader reads it.

One file holds N frames. Frame ``i`` is: the observation the pilot saw, the action actually passed
to ``backend.step`` (already clipped to [-1, 1], the space the environment executes), and what that
step returned. Frames are grouped into *segments* (one scene visit started by ``reset(seed)``), so
replaying a segment's actions from its scene and seed reproduces its observations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

DEMO_SCHEMA_VERSION = 1

FRAME_FIELDS: dict[str, tuple[np.dtype[Any], tuple[int, ...] | None]] = {
    "observations": (np.dtype(np.float32), None),  # (3, Az, El): filled from the matrix shape
    "actions": (np.dtype(np.float32), (4,)),
    "episode_starts": (np.dtype(np.bool_), ()),
    "episode_ids": (np.dtype(np.int64), ()),
    "segment_ids": (np.dtype(np.int32), ()),
    "rewards": (np.dtype(np.float32), ()),
    "terminated": (np.dtype(np.bool_), ()),
    "truncated": (np.dtype(np.bool_), ()),
    "collisions": (np.dtype(np.bool_), ()),
    "positions": (np.dtype(np.float32), (3,)),
    "yaw": (np.dtype(np.float32), ()),
    "timestamps": (np.dtype(np.float64), ()),
}
"""Per-frame arrays: name -> (dtype, shape after the leading N axis)."""

SEGMENT_FIELDS = ("segment_scenes", "segment_seeds")
"""Per-segment arrays: scene path or id (unicode), reset seed (int64)."""


class DemoFormatError(ValueError):
    """A demonstration file is missing arrays, has wrong dtypes or shapes, or inconsistent lengths."""


@dataclass(frozen=True)
class Demonstration:
    """A loaded demonstration (numpy arrays; see :data:`FRAME_FIELDS`).

    Attributes:
        frames: per-frame arrays, each with leading axis N.
        segment_scenes: (S,) scene of each segment. segment_seeds: (S,) reset seed of each segment.
        metadata: the JSON metadata (schema version, settings, versions, pilot, ...).
    """

    frames: dict[str, np.ndarray]
    segment_scenes: np.ndarray
    segment_seeds: np.ndarray
    metadata: dict[str, Any]

    def __len__(self) -> int:
        return int(self.frames["actions"].shape[0])

    @property
    def observations(self) -> np.ndarray:
        """(N, 3, Az, El) float32."""
        return self.frames["observations"]

    @property
    def actions(self) -> np.ndarray:
        """(N, 4) float32 executed actions in [-1, 1]."""
        return self.frames["actions"]

    @property
    def episode_starts(self) -> np.ndarray:
        """(N,) bool: frame starts an episode (recurrent state resets before it)."""
        return self.frames["episode_starts"]


def frame_shape(name: str, matrix_shape: tuple[int, int]) -> tuple[int, ...]:
    """Shape of one frame of field ``name`` for sensor ``(Az, El)``."""
    shape = FRAME_FIELDS[name][1]
    return (3, *matrix_shape) if shape is None else shape


def validate_demonstration(demo: Demonstration, source: str) -> Demonstration:
    """Check dtypes, shapes, lengths, action range and segment references.

    Args:
        demo: the loaded arrays.
        source: file name for messages.

    Returns:
        ``demo`` unchanged.

    Raises:
        DemoFormatError: naming the file and the rule broken.
    """
    version = demo.metadata.get("schema_version")
    if version != DEMO_SCHEMA_VERSION:
        raise DemoFormatError(
            f"{source}: schema_version {version!r}, this reader reads {DEMO_SCHEMA_VERSION}"
        )
    matrix_shape = tuple(demo.metadata.get("matrix_shape", ()))
    if len(matrix_shape) != 2:
        raise DemoFormatError(f"{source}: metadata.matrix_shape must be (Az, El), got {matrix_shape!r}")
    count = len(demo)
    for name, (dtype, _) in FRAME_FIELDS.items():
        if name not in demo.frames:
            raise DemoFormatError(f"{source}: missing array {name!r}")
        array = demo.frames[name]
        expected = (count, *frame_shape(name, matrix_shape))  # type: ignore[arg-type]
        if array.dtype != dtype or array.shape != expected:
            raise DemoFormatError(
                f"{source}: {name} must be {dtype} {expected}, got {array.dtype} {array.shape}"
            )
    actions = demo.frames["actions"]
    if count and (not np.isfinite(actions).all() or np.abs(actions).max() > 1.0):
        raise DemoFormatError(f"{source}: actions must be finite and within [-1, 1] (the executed space)")
    segments = len(demo.segment_seeds)
    if len(demo.segment_scenes) != segments:
        raise DemoFormatError(f"{source}: segment_scenes and segment_seeds differ in length")
    ids = demo.frames["segment_ids"]
    if count and (ids.min() < 0 or ids.max() >= segments or (np.diff(ids) < 0).any()):
        raise DemoFormatError(
            f"{source}: segment_ids must be non-decreasing indices into {segments} segments"
        )
    if count and not demo.frames["episode_starts"][0]:
        raise DemoFormatError(f"{source}: the first frame must start an episode")
    return demo
