"""What produced an artifact: package versions and time, recorded in every manifest and beside
every single compiled scene (``<file>.provenance.json``).

The git revision and the version lookup are :mod:`navi_common.provenance`, shared by every package.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from navi_common.provenance import git_revision
from navi_common.provenance import package_versions as installed_versions

if TYPE_CHECKING:
    from navi_environment.corpus.sources import CompiledScene

_PACKAGES = ("navi-environment", "navi-contracts", "numpy", "numba", "trimesh", "scipy")


def package_versions() -> dict[str, str]:
    """Installed versions of the packages that shape compiled output."""
    return installed_versions(_PACKAGES)


def utc_now() -> str:
    """Current time, ISO 8601 UTC with seconds."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def provenance_path(gmdag_path: str | Path) -> Path:
    """``<file>.provenance.json``: the record written beside a compiled ``.gmdag``."""
    path = Path(gmdag_path)
    return path.with_name(path.name + ".provenance.json")


def write_provenance(gmdag_path: str | Path, compiled: CompiledScene, *, repair: bool) -> Path:
    """Write what produced a single compiled scene (source, mesh import and transform, versions).

    The GMDAG header has no room for it; corpus scenes carry the same record in the manifest.
    """
    from navi_common.atomic import atomic_write_json

    record: dict[str, Any] = {
        "file": Path(gmdag_path).name,
        "source": compiled.source,
        "family": compiled.family,
        "seed": compiled.seed,
        "resolution": compiled.asset.resolution,
        "voxel_size_m": float(compiled.asset.voxel_size),
        "source_bounds_m": compiled.source_bounds,
        "repair": repair,
        "mesh_import": compiled.mesh_import,
        "compile_seconds": round(compiled.seconds, 3),
        "created_utc": utc_now(),
        "git_revision": git_revision(),
        "versions": package_versions(),
    }
    return atomic_write_json(provenance_path(gmdag_path), record)
