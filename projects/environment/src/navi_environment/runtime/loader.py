"""GMDAG asset -> runtime scene, and an LRU cache of loaded scenes for corpus training."""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

import structlog

from navi_environment.config import EnvironmentSettings
from navi_environment.gmdag.format import GmdagAsset
from navi_environment.runtime.scene import (
    RuntimeScene,
    build_runtime_scene,
    coarse_cell_minima,
    dense_grid_query,
)

log = structlog.get_logger()

DENSE_BYTES_PER_VOXEL = 6  # transient decode of gmdag.sample.dense_query (float32 + uint16)


def effective_band_voxels(settings: EnvironmentSettings, voxel_size: float) -> float:
    """Brick band wide enough for the collision sweep: bricks must cover the drone radius + 1 voxel."""
    return max(settings.scene.brick_band_voxels, settings.physics.drone_radius_m / voxel_size + 1.0)


def scene_from_asset(asset: GmdagAsset, settings: EnvironmentSettings) -> RuntimeScene:
    """Decode a validated asset into the brick map (queries only near-surface voxels of the DAG).

    Args:
        asset: from :func:`navi_environment.gmdag.reader.load_gmdag` or the compiler.
        settings: scene budget and band, physics radius.

    Returns:
        The runtime scene (raises :class:`~navi_environment.runtime.scene.SceneBudgetError` if too big).
    """
    from navi_environment.gmdag.sample import query_points, sample_dense_refined

    voxel = float(asset.voxel_size)
    cell_min = None
    if asset.resolution**3 * DENSE_BYTES_PER_VOXEL <= settings.scene.max_scene_bytes:
        # One refined dense decode: void space reads within ~2 voxels of the true distance instead
        # of the octree's void bound, so coarse cells get far larger safe steps (fewer iterations).
        # Only voxel centres inside the cube are queried, so a nearest-voxel lookup is exact here.
        sdf, semantic = sample_dense_refined(asset)
        query = dense_grid_query(sdf, semantic, asset.bmin, voxel)
        cell_min = coarse_cell_minima(sdf)
    else:

        def query(points):  # type: ignore[no-untyped-def]
            return query_points(asset, points)

    return build_runtime_scene(
        query,
        asset.bmin,
        voxel,
        asset.resolution,
        band_voxels=effective_band_voxels(settings, voxel),
        max_bytes=settings.scene.max_scene_bytes,
        name=asset.source,
        cell_min=cell_min,
    )


def load_scene(path: str | Path, settings: EnvironmentSettings) -> RuntimeScene:
    """Read, validate and decode one ``.gmdag`` file."""
    from navi_environment.gmdag.reader import load_gmdag

    asset = load_gmdag(path)
    scene = scene_from_asset(asset, settings)
    log.info("runtime.scene.loaded", path=str(path), resolution=asset.resolution, bytes=scene.nbytes)
    return scene


class SceneCache:
    """Least-recently-used cache of runtime scenes keyed by path.

    Args:
        settings: passed to :func:`load_scene`; ``scene.max_cached_scenes`` is the capacity.
    """

    def __init__(self, settings: EnvironmentSettings) -> None:
        self.settings = settings
        self.capacity = settings.scene.max_cached_scenes
        self._scenes: OrderedDict[Path, RuntimeScene] = OrderedDict()

    def get(self, path: Path) -> RuntimeScene:
        """The scene of ``path``, loading it (and evicting the least recently used) if needed."""
        key = Path(path).resolve()
        if key in self._scenes:
            self._scenes.move_to_end(key)
            return self._scenes[key]
        scene = load_scene(key, self.settings)
        self._scenes[key] = scene
        while len(self._scenes) > self.capacity:
            evicted, _ = self._scenes.popitem(last=False)
            log.info("runtime.scene.evicted", path=str(evicted))
        return scene

    def hold(self, count: int) -> None:
        """Keep at least ``count`` scenes from now on (the capacity only grows).

        Why: a planned evaluation flies every scene of its plan once per policy, one after the
        other; an LRU smaller than the plan evicts each scene before its next turn and decodes it
        again for every policy (about a second a scene at 256^3).
        """
        self.capacity = max(self.capacity, int(count))

    def __len__(self) -> int:
        return len(self._scenes)

    def __contains__(self, path: object) -> bool:
        return isinstance(path, (str, Path)) and Path(path).resolve() in self._scenes
