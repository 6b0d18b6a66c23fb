"""What produced an artifact: git revision, package versions, time. Recorded in every manifest and
beside every single compiled scene."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from navi_contracts.paths import repo_root

if TYPE_CHECKING:
    from navi_environment.corpus.sources import CompiledScene

_PACKAGES = ("navi-environment", "navi-contracts", "numpy", "numba", "trimesh", "scipy")


def git_revision() -> str:
    """``git rev-parse HEAD`` of the repository (``+dirty`` when the tree has changes), or ``unknown``."""
    try:
        root = str(repo_root())
        revision = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{revision}+dirty" if status else revision


def package_versions() -> dict[str, str]:
    """Installed versions of the packages that shape compiled output."""
    versions: dict[str, str] = {}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


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
    from navi_contracts.atomic import atomic_write_json

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
