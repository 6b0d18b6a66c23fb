"""Analytic scenes with exact signed distances: oracles for tests, benchmarks and demos.

A box room (optionally with a thin dividing wall and round pillars) and a corridor. Because
distances are exact, rays from known poses have known hit distances, and a scene of any
resolution (512 included) is built in seconds by querying only the bricks near surfaces.
Semantic ids: 1 side walls, 2 floor, 3 ceiling, 4 thin wall, 5 pillars.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from navi_environment.runtime.scene import RuntimeScene, SdfQuery, build_runtime_scene

PAD_M = 2.0  # same padding as compiled assets (GMDAG bounds = cubified box + 2 m)


@dataclass(frozen=True)
class RoomSpec:
    """An axis-aligned room ``[lo, hi]`` (free inside), with optional features.

    Attributes:
        lo, hi: (3,) interior corners, metres.
        thin_wall_x: x of a full-height wall across the room (None: no wall).
        thin_wall_thickness: its thickness, metres.
        thin_wall_gap: (y0, y1) door in the thin wall (None: no door).
        thin_wall_door_top: height of the door's lintel (None: the door is open to the ceiling).
        pillars: (K,3) rows ``(x, y, radius)`` of vertical cylinders.
    """

    lo: tuple[float, float, float] = (0.0, 0.0, 0.0)
    hi: tuple[float, float, float] = (10.0, 8.0, 3.0)
    thin_wall_x: float | None = None
    thin_wall_thickness: float = 0.1
    thin_wall_gap: tuple[float, float] | None = None
    thin_wall_door_top: float | None = None
    pillars: tuple[tuple[float, float, float], ...] = field(default_factory=tuple)

    def cube(self, resolution: int) -> tuple[np.ndarray, float]:
        """(bmin, voxel_size) of the padded, cubified bounds at ``resolution``."""
        lo, hi = np.asarray(self.lo, np.float64), np.asarray(self.hi, np.float64)
        edge = float((hi - lo).max()) + 2.0 * PAD_M
        centre = 0.5 * (lo + hi)
        return (centre - 0.5 * edge).astype(np.float32), edge / resolution


def corridor_spec(length: float = 20.0, width: float = 2.0, height: float = 3.0) -> RoomSpec:
    """A long narrow room along x."""
    return RoomSpec(lo=(0.0, 0.0, 0.0), hi=(length, width, height))


def room_distance(spec: RoomSpec, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact (for the room box; a safe lower bound where features meet) free-space distance.

    Args:
        spec: the room.
        points: [N,3] points.

    Returns:
        ``(sdf [N] f64, nearest feature id [N] int)``; positive inside the free space.
    """
    p = np.asarray(points, dtype=np.float64)
    lo, hi = np.asarray(spec.lo), np.asarray(spec.hi)
    centre, half = 0.5 * (lo + hi), 0.5 * (hi - lo)
    q = np.abs(p - centre) - half  # [N,3]
    outside = np.linalg.norm(np.maximum(q, 0.0), axis=1)
    box = outside + np.minimum(q.max(axis=1), 0.0)  # < 0 inside the room
    z_side = np.where(p[:, 2] - centre[2] < 0, 2, 3)
    parts = [-box]
    ids = [np.where(np.argmax(q, axis=1) == 2, z_side, 1)]
    if spec.thin_wall_x is not None:
        parts.append(_thin_wall_distance(spec, p))
        ids.append(np.full(len(p), 4))
    for x, y, r in spec.pillars:
        parts.append(np.hypot(p[:, 0] - x, p[:, 1] - y) - r)
        ids.append(np.full(len(p), 5))
    stacked = np.stack(parts, axis=0)
    nearest = np.argmin(stacked, axis=0)
    return stacked.min(axis=0), np.stack(ids, axis=0)[nearest, np.arange(len(p))]


def _box_distance(p: np.ndarray, centre: np.ndarray, half: np.ndarray) -> np.ndarray:
    """Exact signed distance [N] to an axis-aligned box (negative inside)."""
    q = np.abs(p - centre) - half
    return np.linalg.norm(np.maximum(q, 0.0), axis=1) + np.minimum(q.max(axis=1), 0.0)


def _thin_wall_distance(spec: RoomSpec, p: np.ndarray) -> np.ndarray:
    """Distance [N] to the thin wall: a slab across the room, minus an optional door (under an
    optional lintel)."""
    assert spec.thin_wall_x is not None
    big = 1.0e3  # the wall runs through the room's walls; only its faces inside the room matter
    half_t = 0.5 * spec.thin_wall_thickness
    if spec.thin_wall_gap is None:
        return np.abs(p[:, 0] - spec.thin_wall_x) - half_t
    y0, y1 = spec.thin_wall_gap
    segments = []
    for ylo, yhi in ((-big, y0), (y1, big)):
        centre = np.array([spec.thin_wall_x, 0.5 * (ylo + yhi), 0.0])
        segments.append(_box_distance(p, centre, np.array([half_t, 0.5 * (yhi - ylo), big])))
    if spec.thin_wall_door_top is not None:
        centre = np.array([spec.thin_wall_x, 0.5 * (y0 + y1), spec.thin_wall_door_top + big])
        segments.append(_box_distance(p, centre, np.array([half_t, 0.5 * (y1 - y0), big])))
    return np.min(np.stack(segments), axis=0)


def room_query(spec: RoomSpec, voxel: float) -> SdfQuery:
    """A point query for :func:`build_runtime_scene`: semantic ids only within 2 voxels of a surface."""

    def query(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        sdf, ids = room_distance(spec, points)
        semantic = np.where(np.abs(sdf) < 2.0 * voxel, ids, 0).astype(np.uint16)
        return sdf.astype(np.float32), semantic

    return query


def room_scene(
    spec: RoomSpec, resolution: int = 64, *, band_voxels: float = 2.0, min_band_m: float = 0.4
) -> RuntimeScene:
    """Build the runtime scene of ``spec`` at ``resolution``.

    ``min_band_m`` keeps bricks around surfaces at least that deep (the default covers the default
    drone radius of 0.3 m plus a margin, as :func:`~navi_environment.runtime.loader.scene_from_asset` does).
    """
    bmin, voxel = spec.cube(resolution)
    return build_runtime_scene(
        room_query(spec, voxel), bmin, voxel, resolution,
        band_voxels=max(band_voxels, min_band_m / voxel), name=f"analytic-room-{resolution}",
    )  # fmt: skip


def room_ray_distance(spec: RoomSpec, origin: np.ndarray, dirs: np.ndarray) -> np.ndarray:
    """Exact distance from ``origin`` (inside the room box) along unit ``dirs`` [N,3] to its walls.

    Only the box (no features): the oracle for rays inside a plain room.
    """
    lo, hi = np.asarray(spec.lo), np.asarray(spec.hi)
    with np.errstate(divide="ignore", invalid="ignore"):
        t_hi = np.where(dirs > 0, (hi - origin) / dirs, np.inf)
        t_lo = np.where(dirs < 0, (lo - origin) / dirs, np.inf)
    return np.minimum(t_hi, t_lo).min(axis=1)
