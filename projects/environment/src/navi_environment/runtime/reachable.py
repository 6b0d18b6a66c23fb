"""How much of a scene can a drone reach? The denominator of coverage as a share of the scene.

Coverage counts the visit cells (edge ``reward.visit_cell_m``, aligned to the world origin) a
drone's position passed through in one episode. To say what share of the scene that is, the scene
is sampled on a grid of half a visit cell: a sample is free when its distance to the nearest
surface exceeds the drone radius, free samples connected (6-neighbours) to a qualified spawn are
reachable, and a visit cell counts when any of its samples is reachable. The finer grid keeps
doors a little wider than the drone open, which a grid of whole cells would close. Open scenes
count their reachable sky up to the scene cube, so a share there is small by construction.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from scipy import ndimage

from navi_environment.config import EnvironmentSettings
from navi_environment.runtime.atlas import pack_scenes
from navi_environment.runtime.scene import RuntimeScene
from navi_environment.tracer import Tracer

MAX_SAMPLES = 16_000_000  # a bigger scene is sampled on a coarser grid (still <= one visit cell)
QUERY_CHUNK = 1 << 20


def _sample_step(extent: np.ndarray, cell_m: float) -> float:
    """Half a visit cell, coarsened (up to one cell) until the grid has at most MAX_SAMPLES points."""
    step = cell_m / 2.0
    while step < cell_m and float(np.prod(np.ceil(extent / step))) > MAX_SAMPLES:
        step = min(cell_m, step * 1.25)
    return step


def scene_distances(scene: RuntimeScene, settings: EnvironmentSettings, points: np.ndarray) -> np.ndarray:
    """(N,) float32 distance field of ``scene`` at world ``points`` (N, 3), queried on the CPU in chunks.

    The tracer's own point query (the one the collision checks use), on a one-scene atlas: for
    offline questions about a scene (its reachable cells, the walls under a picture of flights).
    """
    tracer = Tracer(
        pack_scenes([scene]), settings.sensor, settings.tracer.model_copy(update={"device_kernel": "numba"})
    )
    points = np.ascontiguousarray(points, dtype=np.float32)
    distance = np.empty(len(points), dtype=np.float32)
    for start in range(0, len(points), QUERY_CHUNK):
        chunk = torch.from_numpy(points[start : start + QUERY_CHUNK])
        ids = torch.zeros(len(chunk), dtype=torch.int32)
        distance[start : start + QUERY_CHUNK] = tracer.query(chunk, ids).numpy()
    return distance


def reachable_cell_count(
    scene: RuntimeScene, spawns: np.ndarray, settings: EnvironmentSettings, cell_m: float | None = None
) -> int:
    """Visit cells of ``scene`` reachable by a drone from any of ``spawns``.

    Args:
        scene: the runtime scene.
        spawns: [N,3] qualified spawn positions (metres), at least one.
        settings: environment settings (drone radius, visit cell edge, tracer rules).
        cell_m: visit cell edge (default ``settings.reward.visit_cell_m``).

    Returns:
        The number of reachable visit cells (>= 1 when a spawn is free).
    """
    cell = float(cell_m or settings.reward.visit_cell_m)
    extent = scene.bmax.astype(np.float64) - scene.bmin.astype(np.float64)
    step = _sample_step(extent, cell)
    shape = tuple(math.ceil(e / step) for e in extent)
    axes = [scene.bmin[i] + (np.arange(n) + 0.5) * step for i, n in enumerate(shape)]
    points = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3).astype(np.float32)
    free = (scene_distances(scene, settings, points) > settings.physics.drone_radius_m).reshape(shape)
    labels, _ = ndimage.label(free)  # 6-connectivity
    spawn_index = np.floor((np.asarray(spawns, dtype=np.float64) - scene.bmin) / step).astype(np.int64)
    spawn_index = np.clip(spawn_index, 0, np.array(shape) - 1)
    seeds = np.unique(labels[tuple(spawn_index.T)])
    seeds = seeds[seeds > 0]
    reachable = np.isin(labels, seeds).reshape(-1)
    cells = np.floor(points[reachable].astype(np.float64) / cell).astype(np.int64)
    return len(np.unique(cells, axis=0))
