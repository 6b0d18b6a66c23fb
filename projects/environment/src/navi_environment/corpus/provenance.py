"""What produced an artifact: git revision, package versions, time. Recorded in every manifest."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime
from importlib import metadata

from navi_contracts.paths import repo_root

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
