"""One entry point from a source string to a compiled asset: procedural spec or mesh file."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import structlog

from navi_environment.corpus.settings import CompileSettings
from navi_environment.gmdag.format import GmdagAsset
from navi_environment.gmdag.writer import compile_sdf_to_gmdag
from navi_environment.scenes.registry import generate, is_procedural, parse_procedural

log = structlog.get_logger()


@dataclass(frozen=True)
class CompiledScene:
    """A compiled asset and where it came from.

    Attributes:
        asset: the GMDAG asset.
        family: procedural family, or ``"mesh"`` for imported files.
        seed: generator seed (None for meshes).
        source: canonical source string (``procedural:<family>:seed=<n>`` or the mesh path).
        seconds: wall time of rasterising + compiling.
        source_bounds: ((3,), (3,)) min/max corner of the source geometry, metres.
        mesh_import: meshes: triangles read and dropped, up axis (and why), scale; else None.
    """

    asset: GmdagAsset
    family: str
    seed: int | None
    source: str
    seconds: float
    source_bounds: tuple[tuple[float, float, float], tuple[float, float, float]]
    mesh_import: dict[str, Any] | None = None


def compile_source(
    source: str,
    settings: CompileSettings,
    *,
    resolution: int | None = None,
    repair: bool = False,
    up_axis: str = "auto",
    scale: float = 1.0,
) -> CompiledScene:
    """Compile a procedural spec (``procedural:<family>[:seed=<n>]``) or a mesh file.

    Args:
        source: the spec or a path to .glb/.gltf/.obj/.ply/.stl.
        settings: compile settings (tolerance, cutoff, mesh limits).
        resolution: voxels per axis; default ``settings.resolution``.
        repair: repair the mesh before rasterising (ignored for procedural sources).
        up_axis: meshes: the file's up direction, or ``auto`` (see :mod:`navi_environment.mesh.orient`).
        scale: meshes: coordinate multiplier, file units -> metres.

    Returns:
        The compiled scene.

    Raises:
        ValueError: bad spec or resolution; ``MeshImportError`` (a ValueError) for bad meshes.
    """
    mesh_import = None
    size = settings.resolution if resolution is None else CompileSettings(resolution=resolution).resolution
    started = time.perf_counter()
    if is_procedural(source):
        from navi_environment.scenes.rasterize import layout_grids

        spec = parse_procedural(source)
        layout = generate(spec.family, spec.seed)
        sdf, semantic, bmin, voxel = layout_grids(
            layout, size, settings.cutoff_m, min_solid_voxels=settings.min_solid_voxels
        )
        family, seed, canonical = spec.family, spec.seed, str(spec)
        lo, hi = layout.bounds
    else:
        from navi_environment.mesh.load import import_mesh
        from navi_environment.sdf.mesh_sdf import mesh_grids

        imported = import_mesh(
            source, repair=repair, max_extent_m=settings.max_mesh_extent_m, up_axis=up_axis, scale=scale
        )
        mesh, mesh_import = imported.mesh, imported.record()
        # Half of min_solid_voxels on each side: an open ground plane or a single-sided wall
        # becomes a solid shell min_solid_voxels thick, as thin procedural boxes do.
        sdf, semantic, bmin, voxel = mesh_grids(mesh, size, shell_voxels=0.5 * settings.min_solid_voxels)
        family, seed, canonical = "mesh", None, str(Path(source))
        lo, hi = mesh.bounds
    # Stage progress for long single compiles (512^3 meshes take minutes): one event per stage.
    log.info(
        "corpus.scene.rasterised",
        source=canonical,
        resolution=size,
        seconds=round(time.perf_counter() - started, 2),
    )
    asset = compile_sdf_to_gmdag(
        sdf,
        semantic,
        bmin,
        voxel,
        far_tolerance_voxels=settings.far_tolerance_voxels,
        exact_clearance_m=settings.exact_clearance_m,
        source=canonical,
    )
    seconds = time.perf_counter() - started
    log.info(
        "corpus.scene.compiled",
        source=canonical,
        resolution=size,
        node_count=int(asset.nodes.shape[0]),
        seconds=round(seconds, 2),
    )
    bounds = (_triple(lo), _triple(hi))
    return CompiledScene(asset, family, seed, canonical, seconds, bounds, mesh_import)


def _triple(values: np.ndarray) -> tuple[float, float, float]:
    return (float(values[0]), float(values[1]), float(values[2]))
