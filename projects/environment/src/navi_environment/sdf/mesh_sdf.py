"""Signed distance grid of a triangle mesh: exact near the surface, robust sign, filled everywhere.

1. Exact unsigned point-triangle distance in a narrow band (``BAND_VOXELS``) around the surface.
2. Sign inside the band from the fast generalised winding number at every band voxel: right for
   thin walls, holes smaller than the band, triangle soups and inverted normals.
3. Outside the band, space splits into connected regions that no surface crosses (6-connected
   components of the non-band voxels); each region takes one sign from a majority vote of winding
   numbers at a few of its voxels. Enclosed air (rooms of a closed building) stays outside; solid
   interiors come out inside.
4. Magnitude outside the band from a Euclidean distance transform to the band: the distance to the
   nearest band voxel plus the band width minus one voxel, within about a voxel of the truth.
5. Optionally every surface is thickened by ``shell_voxels`` (the field is offset by that
   distance): a zero-thickness surface (a ground plane, a single-sided wall) has a distance that
   never goes below half a voxel between voxel centres, so rays would pass through it; as a
   shell at least a voxel thick it is solid to the tracer.
6. Voxels near the surface get a semantic class from their nearest triangle: floor (a horizontal
   triangle seen from above), ceiling (seen from below) or wall, as procedural scenes label them.
"""

from __future__ import annotations

import numpy as np
import structlog
import trimesh
from scipy import ndimage

from navi_environment.scenes.layout import SemanticClass
from navi_environment.scenes.rasterize import SEMANTIC_BAND_VOXELS, cube_for_bounds
from navi_environment.sdf._triangles import splat_unsigned_distance, triangle_index_ranges
from navi_environment.sdf._winding import build_bvh, winding_numbers
from navi_environment.sdf.edt import distance_to_features

log = structlog.get_logger()

BAND_VOXELS = 2.5
"""Exact distances and per-voxel signs are computed within this many voxels of the surface."""
_REGION_SAMPLES = 7
WINDING_EDGE_VOXELS = 8.0


def _centres(flat_indices: np.ndarray, resolution: int, bmin: np.ndarray, voxel: float) -> np.ndarray:
    ijk = np.stack(np.unravel_index(flat_indices, (resolution,) * 3), axis=1)
    return bmin.astype(np.float64) + (ijk + 0.5) * voxel


def _region_samples(labels: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Up to ``_REGION_SAMPLES`` voxels per region: (flat voxel indices, their region ids)."""
    resolution = labels.shape[0]
    stride = max(1, resolution // 64)
    sub = labels[::stride, ::stride, ::stride]
    sub_flat = sub.ravel()
    present = np.flatnonzero(sub_flat)
    ids = sub_flat[present]
    order = np.argsort(ids, kind="stable")
    ids, present = ids[order], present[order]
    starts = np.searchsorted(ids, np.arange(1, count + 1))
    ends = np.searchsorted(ids, np.arange(1, count + 1), side="right")
    sub_ijk = np.stack(np.unravel_index(present, sub.shape), axis=1) * stride
    flat_full = np.ravel_multi_index(tuple(sub_ijk.T), labels.shape) if len(present) else present
    samples: list[np.ndarray] = []
    owners: list[np.ndarray] = []
    missing = np.flatnonzero(ends == starts) + 1
    for index, (start, end) in enumerate(zip(starts, ends, strict=True)):
        region = index + 1
        if end > start:
            picks = np.unique(np.linspace(start, end - 1, _REGION_SAMPLES).astype(np.int64))
            samples.append(flat_full[picks])
            owners.append(np.full(len(picks), region, dtype=np.int64))
    if len(missing):  # small regions the coarse lattice missed: one voxel each
        slices = ndimage.find_objects(labels)
        for missing_region in missing:
            window = slices[missing_region - 1]
            assert window is not None
            local = np.argwhere(labels[window] == missing_region)[0]
            corner = np.array([s.start for s in window])
            samples.append(np.array([np.ravel_multi_index(tuple(local + corner), labels.shape)]))
            owners.append(np.array([missing_region], dtype=np.int64))
    if not samples:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(samples), np.concatenate(owners)


HORIZONTAL_NORMAL_Z = 0.7
"""A triangle whose unit normal has ``|z|`` at least this (within about 45 degrees of horizontal) is a
floor seen from above it and a ceiling seen from below; any other is a wall."""


def surface_classes(triangles: np.ndarray, owner: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """Semantic class of each point ``centres [N, 3]`` from its nearest triangle ``owner [N]``.

    Why: a mesh file carries no labels, but procedural scenes, on which policies are trained, tell
    floors and ceilings from walls in the observation's semantic channel; a mesh written as one
    class shows a policy walls below and above it. The side of the triangle's plane the point lies
    on decides floor or ceiling, so the file's winding does not matter.
    """
    a = triangles[owner, 0]
    normal = np.cross(triangles[owner, 1] - a, triangles[owner, 2] - a)
    length = np.linalg.norm(normal, axis=1)
    nz = np.divide(normal[:, 2], length, out=np.zeros_like(length), where=length > 0)
    above = np.einsum("ij,ij->i", centres - a, normal) * normal[:, 2] > 0
    classes = np.full(len(owner), int(SemanticClass.WALL), dtype=np.uint16)
    horizontal = np.abs(nz) >= HORIZONTAL_NORMAL_Z
    classes[horizontal & above] = int(SemanticClass.FLOOR)
    classes[horizontal & ~above] = int(SemanticClass.CEILING)
    return classes


def mesh_grids(
    mesh: trimesh.Trimesh, resolution: int, *, shell_voxels: float = 0.0
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Rasterise a mesh into the compiler's dense inputs.

    Args:
        mesh: validated mesh in metres (see :func:`navi_environment.mesh.load.load_mesh`).
        resolution: voxels per axis (power of two).
        shell_voxels: thicken every surface by this many voxels (0: exact geometry).

    Voxels near a surface get the class of their nearest triangle (:func:`surface_classes`: floor,
    ceiling or wall); the rest 0.

    Returns:
        (sdf (R, R, R) float32, semantic (R, R, R) uint16, bmin (3,) float32, voxel size).
    """
    triangles = np.ascontiguousarray(mesh.triangles, dtype=np.float64)
    bmin, voxel = cube_for_bounds(mesh.bounds[0], mesh.bounds[1], resolution)
    origin = bmin.astype(np.float64)
    band = BAND_VOXELS * voxel
    udf = np.full((resolution,) * 3, np.inf, dtype=np.float32)
    owner = np.full((resolution,) * 3, -1, dtype=np.int32)
    ranges = triangle_index_ranges(triangles, origin, voxel, band, resolution)
    splat_unsigned_distance(triangles, ranges, origin, voxel, udf, owner)
    in_band = udf < np.float32(band)

    # Winding numbers use a copy split into triangles of at most WINDING_EDGE_VOXELS: large flat
    # faces (floors, walls) otherwise give the hierarchy clusters too wide for its far-field
    # expansion, and every query degenerates to the exact sum (measured 2x slower).
    vertices, faces = trimesh.remesh.subdivide_to_size(
        mesh.vertices, mesh.faces, max_edge=WINDING_EDGE_VOXELS * voxel, max_iter=20
    )
    winding_triangles = np.ascontiguousarray(vertices[faces], dtype=np.float64)
    bvh = build_bvh(winding_triangles)
    band_flat = np.flatnonzero(in_band)
    band_winding = winding_numbers(_centres(band_flat, resolution, bmin, voxel), winding_triangles, *bvh)
    labels, regions = ndimage.label(~in_band)
    sample_flat, sample_region = _region_samples(labels, regions)
    sample_winding = winding_numbers(_centres(sample_flat, resolution, bmin, voxel), winding_triangles, *bvh)
    votes = np.bincount(sample_region, weights=np.abs(sample_winding) > 0.5, minlength=regions + 1)
    totals = np.bincount(sample_region, minlength=regions + 1)
    region_inside = votes > 0.5 * np.maximum(totals, 1)
    region_inside[0] = False

    far = distance_to_features(in_band, voxel)
    sdf = np.where(in_band, udf, np.maximum(np.float32(band), far + np.float32(band - voxel)))
    del far
    inside = region_inside[labels]
    inside.ravel()[band_flat] = np.abs(band_winding) > 0.5
    np.negative(sdf, out=sdf, where=inside)
    if shell_voxels > 0:
        sdf -= np.float32(shell_voxels * voxel)
    semantic = np.zeros((resolution,) * 3, dtype=np.uint16)
    near = np.flatnonzero(udf < np.float32(SEMANTIC_BAND_VOXELS * voxel))
    semantic.ravel()[near] = surface_classes(
        triangles, owner.ravel()[near], _centres(near, resolution, bmin, voxel)
    )
    del owner
    log.debug(
        "sdf.mesh.rasterised",
        triangles=len(triangles),
        band_voxels=len(band_flat),
        regions=int(regions),
        inside_regions=int(region_inside.sum()),
    )
    return sdf.astype(np.float32), semantic.astype(np.uint16), bmin, voxel
