"""Scene atlas: several runtime scenes packed into one set of flat arrays.

Drones of one batch may fly in different scenes (corpus training). Packing lets a single kernel
launch trace all of them: each drone carries a scene id, and the id selects bounds and offsets.
Packing copies arrays (tens of MiB at most) and happens only when the set of scenes in use changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from navi_environment.runtime.scene import BRICK_SAMPLES, RuntimeScene


@dataclass(frozen=True)
class SceneAtlas:
    """Packed scenes. Array roles: see :mod:`navi_environment.tracer.scalar`.

    Attributes:
        scenes: the packed scenes; atlas id ``i`` is ``scenes[i]``.
        scene_f: (S,4) float32 bmin xyz and voxel size.
        scene_i: (S,3) int64 resolution, coarse cells per axis, coarse offset.
        coarse_dist, coarse_sem, brick_index: concatenated coarse arrays (brick ids offset).
        bricks_sdf, bricks_sem: flattened concatenated brick pools.
    """

    scenes: tuple[RuntimeScene, ...]
    scene_f: np.ndarray
    scene_i: np.ndarray
    coarse_dist: np.ndarray
    coarse_sem: np.ndarray
    brick_index: np.ndarray
    bricks_sdf: np.ndarray
    bricks_sem: np.ndarray

    def kernel_args(self) -> tuple[np.ndarray, ...]:
        """The seven atlas arrays in kernel argument order."""
        return (
            self.scene_f,
            self.scene_i,
            self.coarse_dist,
            self.coarse_sem,
            self.brick_index,
            self.bricks_sdf,
            self.bricks_sem,
        )

    def torch_arrays(self, device: torch.device) -> dict[str, torch.Tensor]:
        """The atlas as tensors on ``device`` for the torch tracer (semantic ids widened to int32)."""
        return {
            "scene_f": torch.from_numpy(self.scene_f).to(device),
            "scene_i": torch.from_numpy(self.scene_i).to(device),
            "coarse_dist": torch.from_numpy(self.coarse_dist).to(device),
            "coarse_sem": torch.from_numpy(self.coarse_sem.astype(np.int32)).to(device),
            "brick_index": torch.from_numpy(self.brick_index.astype(np.int64)).to(device),
            "bricks_sdf": torch.from_numpy(self.bricks_sdf).to(device),  # int16 quanta
            "bricks_sem": torch.from_numpy(self.bricks_sem.astype(np.int32)).to(device),
        }


def pack_scenes(scenes: Sequence[RuntimeScene]) -> SceneAtlas:
    """Pack ``scenes`` (at least one) into a :class:`SceneAtlas`."""
    if not scenes:
        raise ValueError("an atlas needs at least one scene")
    scene_f = np.zeros((len(scenes), 4), dtype=np.float32)
    scene_i = np.zeros((len(scenes), 3), dtype=np.int64)
    brick_parts: list[np.ndarray] = []
    coarse_offset = 0
    brick_offset = 0
    for i, scene in enumerate(scenes):
        scene_f[i, :3] = scene.bmin
        scene_f[i, 3] = scene.voxel_size
        scene_i[i] = (scene.resolution, scene.coarse_cells, coarse_offset)
        coarse_offset += scene.coarse_dist.size
        shifted = np.where(scene.brick_index >= 0, scene.brick_index + brick_offset, -1).astype(np.int32)
        brick_parts.append(shifted)
        brick_offset += scene.bricks_sdf.shape[0]
    return SceneAtlas(
        scenes=tuple(scenes),
        scene_f=scene_f,
        scene_i=scene_i,
        coarse_dist=np.concatenate([s.coarse_dist for s in scenes]),
        coarse_sem=np.concatenate([s.coarse_sem for s in scenes]),
        brick_index=np.concatenate(brick_parts),
        bricks_sdf=_flat_pool([s.bricks_sdf for s in scenes], np.int16),
        bricks_sem=_flat_pool([s.bricks_sem for s in scenes], np.uint16),
    )


def _flat_pool(parts: list[np.ndarray], dtype: type) -> np.ndarray:
    """Concatenate brick pools; an all-empty pool keeps one dummy brick so kernels get a real array."""
    flat: np.ndarray = np.concatenate([p.reshape(-1) for p in parts]).astype(dtype, copy=False)
    return flat if flat.size else np.zeros(BRICK_SAMPLES, dtype=dtype)
