"""Render one picture of a compiled scene that shows at a glance whether it is the right way up.

Top row, left to right, each square over the whole scene cube:

1. **Top view**: the height of the highest surface in every column (dark = low, yellow = high);
   a building shows its roof and floors, a sideways one shows its wall as a big flat slab.
2. **Section** (z up): the vertical cut through the panorama's spawn along x, solid white, over
   the silhouette seen from the -y side (grey). Floors, furniture and ground are at the bottom of
   a scene that is the right way up.
3. **Plan**: the horizontal cut at the height of the panorama's spawn, solid white, free black.

Qualified spawns are red dots in all three. Bottom row: a **spherical panorama** from the best
spawn (azimuth across, zenith at the top, nadir at the bottom), near = bright, nothing within the
horizon = sky blue: an enclosed scene has no blue, an open one has blue above the horizon line,
and a scene upside down has it below.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from navi_environment.config import EnvironmentSettings
from navi_environment.gmdag.format import GmdagAsset
from navi_environment.gmdag.sample import sample_dense

PANEL = 256
GAP = 4
PANORAMA = (768, 192)  # azimuth x elevation pixels
BACKGROUND = np.array([24, 24, 32], dtype=np.uint8)
SKY = np.array([110, 170, 235], dtype=np.uint8)
SPAWN = np.array([235, 40, 40], dtype=np.uint8)
_MAP = np.array([[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]], dtype=np.float64)


@dataclass(frozen=True)
class Preview:
    """A rendered preview.

    Attributes:
        image: (H, W, 3) uint8 picture.
        spawn: (3,) position of the panorama, metres (the best qualified spawn, or the cube centre).
        spawns: qualified spawns (0 when the scene cannot host drones).
        reason: the qualification's one-line verdict.
    """

    image: np.ndarray
    spawn: np.ndarray
    spawns: int
    reason: str


def colormap(values: np.ndarray) -> np.ndarray:
    """(..., 3) uint8 colours of values in [0, 1] (dark purple -> yellow)."""
    scaled = np.clip(values, 0.0, 1.0) * (len(_MAP) - 1)
    low = np.minimum(scaled.astype(np.int64), len(_MAP) - 2)
    frac = (scaled - low)[..., None]
    return (_MAP[low] * (1 - frac) + _MAP[low + 1] * frac).astype(np.uint8)


def _resize(image: np.ndarray, height: int, width: int) -> np.ndarray:
    rows = (np.arange(height) * image.shape[0] // height).clip(0, image.shape[0] - 1)
    cols = (np.arange(width) * image.shape[1] // width).clip(0, image.shape[1] - 1)
    return image[rows][:, cols]


def _cells(points: np.ndarray, asset: GmdagAsset, level: int) -> np.ndarray:
    """(N, 3) cell indices of points at a level of ``level`` cells per axis."""
    cell = asset.extent_m / level
    return np.clip(((points - asset.bmin) / cell).astype(np.int64), 0, level - 1)


def top_view(solid: np.ndarray) -> np.ndarray:
    """(R, R, 3): rows +y up, columns +x; colour = height of the highest solid cell."""
    level = solid.shape[2]
    occupied = solid.any(axis=2)
    top = level - 1 - np.argmax(solid[:, :, ::-1], axis=2)
    rgb = colormap(top / max(level - 1, 1))
    rgb[~occupied] = BACKGROUND
    return np.ascontiguousarray(rgb.transpose(1, 0, 2)[::-1])


def side_view(solid: np.ndarray, y_index: int) -> np.ndarray:
    """(R, R, 3): rows +z up, columns +x; the vertical section at ``y_index`` (solid white) over
    the silhouette seen from the -y side (grey, near = lighter)."""
    level = solid.shape[1]
    occupied = solid.any(axis=1)
    depth = np.argmax(solid, axis=1) / max(level - 1, 1)
    shade = (120 * (1.0 - 0.6 * depth)).astype(np.uint8)
    rgb = np.stack([shade, shade, (shade * 0.9).astype(np.uint8)], axis=-1)
    rgb[~occupied] = BACKGROUND
    rgb[solid[:, y_index, :]] = np.uint8(230)
    return np.ascontiguousarray(rgb.transpose(1, 0, 2)[::-1])


def plan_view(solid: np.ndarray, z_index: int) -> np.ndarray:
    """(R, R, 3): rows +y up, columns +x; the horizontal slice at ``z_index``, solid white."""
    rgb = np.where(solid[:, :, z_index, None], np.uint8(230), BACKGROUND[None, None, :]).astype(np.uint8)
    return np.ascontiguousarray(rgb.transpose(1, 0, 2)[::-1])


def _mark(panel: np.ndarray, cols: np.ndarray, rows: np.ndarray) -> None:
    for dr in (-1, 0, 1):
        for dc in (-1, 0, 1):
            panel[(rows + dr).clip(0, panel.shape[0] - 1), (cols + dc).clip(0, panel.shape[1] - 1)] = SPAWN


def panorama(asset: GmdagAsset, settings: EnvironmentSettings, origin: np.ndarray) -> np.ndarray:
    """(El, Az, 3) spherical depth image from ``origin``: zenith at the top, misses sky blue."""
    from navi_environment.runtime.atlas import pack_scenes
    from navi_environment.runtime.loader import scene_from_asset
    from navi_environment.tracer import Tracer

    width, height = PANORAMA
    azimuth = (np.arange(width) + 0.5) / width * 2 * math.pi - math.pi
    elevation = math.pi / 2 - (np.arange(height) + 0.5) / height * math.pi
    el, az = np.meshgrid(elevation, azimuth, indexing="ij")
    dirs = np.stack([np.cos(el) * np.cos(az), np.cos(el) * np.sin(az), np.sin(el)], axis=-1).reshape(-1, 3)
    tracer = Tracer(
        pack_scenes([scene_from_asset(asset, settings)]),
        settings.sensor,
        settings.tracer.model_copy(update={"device_kernel": "numba"}),
    )
    count = len(dirs)
    t_max = torch.full((count,), tracer.horizon)
    t, hit = tracer.cast(
        torch.from_numpy(np.repeat(origin[None, :].astype(np.float32), count, axis=0)),
        torch.from_numpy(dirs.astype(np.float32)),
        t_max,
        torch.zeros_like(t_max),
        torch.zeros(count, dtype=torch.int32),
    )
    near = 1.0 - np.sqrt(np.clip(t.numpy() / tracer.horizon, 0.0, 1.0))
    rgb = colormap(near)
    rgb[~hit.numpy()] = SKY
    return rgb.reshape(height, width, 3)


def render_preview(
    asset: GmdagAsset, settings: EnvironmentSettings | None = None, level: int = 128
) -> Preview:
    """Render the preview of an asset (see the module docstring for what each panel shows).

    Args:
        asset: a validated asset.
        settings: environment settings (spawn qualification, sensor horizon).
        level: cells per axis of the views (a power of two, at most the asset's resolution).

    Returns:
        The picture and the spawn it was taken from.
    """
    from navi_environment.runtime.loader import scene_from_asset
    from navi_environment.runtime.spawn import qualify_scene

    settings = settings or EnvironmentSettings()
    level = min(level, asset.resolution)
    sdf, _ = sample_dense(asset, level)
    solid = sdf <= 0.0
    report = qualify_scene(scene_from_asset(asset, settings), settings)
    spawns = report.positions if report.passed else np.zeros((0, 3), np.float32)
    origin = spawns[0] if len(spawns) else (asset.bmin + 0.5 * asset.extent_m).astype(np.float32)
    cells = _cells(np.concatenate([spawns, origin[None, :]]), asset, level)
    panels = [top_view(solid), side_view(solid, int(cells[-1, 1])), plan_view(solid, int(cells[-1, 2]))]
    scale = PANEL / level
    for index, (col_axis, row_axis) in enumerate(((0, 1), (0, 2), (0, 1))):
        panel = _resize(panels[index], PANEL, PANEL)
        cols = (cells[:-1, col_axis] * scale + scale / 2).astype(np.int64)
        rows = (PANEL - 1 - (cells[:-1, row_axis] * scale + scale / 2)).astype(np.int64)
        _mark(panel, cols, rows)
        panels[index] = panel
    width = 3 * PANEL + 2 * GAP
    image = np.empty((PANEL + GAP + width * PANORAMA[1] // PANORAMA[0], width, 3), dtype=np.uint8)
    image[:] = np.array([70, 70, 80], dtype=np.uint8)
    for index, panel in enumerate(panels):
        image[:PANEL, index * (PANEL + GAP) : index * (PANEL + GAP) + PANEL] = panel
    image[PANEL + GAP :] = _resize(panorama(asset, settings, origin), image.shape[0] - PANEL - GAP, width)
    return Preview(image, origin, len(spawns), report.reason)
